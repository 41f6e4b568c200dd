"""``hcep collect hadoop`` names the formats it does not read (issue 27, item 5): each file on stderr with why, a count
per format in the summary, ``--strict`` exits 2 -- as ``hcep collect spark`` does.  Companion files (a job's conf
XML, checksums, a container's empty stdout) stay merely counted as skipped.

The Hadoop 1 (MRv1) JobTracker history is written here in its real format (``JobHistory.java`` of Hadoop 1.x: a
``Meta VERSION="1" .`` line, then ``RecordType KEY="value" ... .`` lines whose values escape ``.``, ``"`` and ``=``
with a backslash; named ``<jobtracker host>_<its start ms>_<job id>_<user>_<job name>``); no third-party file."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

import pytest

from app.commands import collect_hadoop
from tests.collectors.hadoop_testkit import sample

JOB = "job_201301011200_0001"
MRV1_NAME = f"jt1.example.com_1357041600000_{JOB}_alice_word+count"
MRV1_WHY = "a Hadoop 1 (MRv1) JobTracker history file: not read by any hcep collector"


def mrv1_history(job: str = JOB, meta: bool = True) -> str:
    """A small MRv1 JobTracker history file: a job of one map and one reduce (and its setup task), all succeeded."""
    t = "task_" + job[4:]
    a = "attempt_" + job[4:]
    tracker = 'TRACKER_NAME="tracker_w1\\.example\\.com:localhost/127\\.0\\.0\\.1:40123" HTTP_PORT="50060"'
    counters = 'COUNTERS="{(FileSystemCounters)(FileSystemCounters)[(FILE_BYTES_WRITTEN)(FILE_BYTES_WRITTEN)(4096)]}"'
    lines = [
        'Meta VERSION="1" .' if meta else None,
        f'Job JOBID="{job}" JOBNAME="word count" USER="alice" SUBMIT_TIME="1357041600123" '
        f'JOBCONF="hdfs://nn\\.example\\.com:8020/mapred/staging/alice/\\.staging/{job}/job\\.xml" '
        'VIEW_JOB="*" MODIFY_JOB="*" JOB_QUEUE="default" .',
        f'Job JOBID="{job}" JOB_PRIORITY="NORMAL" .',
        f'Job JOBID="{job}" LAUNCH_TIME="1357041601000" TOTAL_MAPS="1" TOTAL_REDUCES="1" JOB_STATUS="PREP" .',
        f'Task TASKID="{t}_m_000002" TASK_TYPE="SETUP" START_TIME="1357041601500" SPLITS="" .',
        f'MapAttempt TASK_TYPE="SETUP" TASKID="{t}_m_000002" TASK_ATTEMPT_ID="{a}_m_000002_0" '
        f'START_TIME="1357041601600" {tracker} .',
        f'MapAttempt TASK_TYPE="SETUP" TASKID="{t}_m_000002" TASK_ATTEMPT_ID="{a}_m_000002_0" TASK_STATUS="SUCCESS" '
        f'FINISH_TIME="1357041602100" HOSTNAME="/default-rack/w1\\.example\\.com" STATE_STRING="setup" {counters} .',
        f'Task TASKID="{t}_m_000002" TASK_TYPE="SETUP" TASK_STATUS="SUCCESS" FINISH_TIME="1357041602200" {counters} .',
        f'Job JOBID="{job}" JOB_STATUS="RUNNING" .',
        f'Task TASKID="{t}_m_000000" TASK_TYPE="MAP" START_TIME="1357041602300" '
        'SPLITS="/default-rack/w1\\.example\\.com" .',
        f'MapAttempt TASK_TYPE="MAP" TASKID="{t}_m_000000" TASK_ATTEMPT_ID="{a}_m_000000_0" '
        f'START_TIME="1357041602400" {tracker} .',
        f'MapAttempt TASK_TYPE="MAP" TASKID="{t}_m_000000" TASK_ATTEMPT_ID="{a}_m_000000_0" TASK_STATUS="SUCCESS" '
        f'FINISH_TIME="1357041610000" HOSTNAME="/default-rack/w1\\.example\\.com" '
        f'STATE_STRING="hdfs://nn\\.example\\.com:8020/in/a\\.txt:0+1048576" {counters} .',
        f'Task TASKID="{t}_m_000000" TASK_TYPE="MAP" TASK_STATUS="SUCCESS" FINISH_TIME="1357041610100" {counters} .',
        f'Task TASKID="{t}_r_000000" TASK_TYPE="REDUCE" START_TIME="1357041610200" SPLITS="" .',
        f'ReduceAttempt TASK_TYPE="REDUCE" TASKID="{t}_r_000000" TASK_ATTEMPT_ID="{a}_r_000000_0" '
        f'START_TIME="1357041610300" {tracker} .',
        f'ReduceAttempt TASK_TYPE="REDUCE" TASKID="{t}_r_000000" TASK_ATTEMPT_ID="{a}_r_000000_0" '
        'TASK_STATUS="SUCCESS" SHUFFLE_FINISHED="1357041613000" SORT_FINISHED="1357041613100" '
        f'FINISH_TIME="1357041615000" HOSTNAME="/default-rack/w1\\.example\\.com" STATE_STRING="reduce > reduce" '
        f"{counters} .",
        f'Task TASKID="{t}_r_000000" TASK_TYPE="REDUCE" TASK_STATUS="SUCCESS" FINISH_TIME="1357041615100" {counters} .',
        f'Job JOBID="{job}" FINISH_TIME="1357041616000" JOB_STATUS="SUCCESS" FINISHED_MAPS="1" FINISHED_REDUCES="1" '
        f'FAILED_MAPS="0" FAILED_REDUCES="0" {counters} .',
    ]
    return "".join(line + "\n" for line in lines if line is not None)


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    collect_hadoop.configure(parser)
    return collect_hadoop.run(parser.parse_args([*argv, "--no-progress"]))


@pytest.fixture
def mixed(tmp_path: Path) -> dict[str, Path]:
    """A log tree with one file read (a Hadoop 2 .jhist), four in formats not read and three companions."""
    root = tmp_path / "logs"
    files = {
        "jhist": root / "done" / sample("jhist").name,
        "mrv1": root / "history" / "done" / MRV1_NAME,
        "conf": root / "history" / "done" / f"jt1.example.com_1357041600000_{JOB}_conf.xml",
        "spark": root / "spark-events" / "application_1357041600000_0002",
        "nodemanager": root / "yarn" / "yarn-yarn-nodemanager-w1.example.com.log",
        "gzip": root / "archive" / (sample("jhist").name + ".gz"),
        "stdout": root / "userlogs" / "container_1357041600000_0003_01_000002" / "stdout",
        "crc": root / "done" / f".{sample('jhist').name}.crc",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(sample("jhist"), files["jhist"])
    files["mrv1"].write_text(mrv1_history())
    files["conf"].write_text('<?xml version="1.0"?>\n<configuration></configuration>\n')
    files["spark"].write_text('{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}\n')
    files["nodemanager"].write_text(
        "2024-01-01 12:00:00,123 INFO org.apache.hadoop.yarn.server.nodemanager.NodeManager: STARTUP_MSG:\n"
        "2024-01-01 12:00:01,456 INFO org.apache.hadoop.yarn.server.nodemanager.containermanager."
        "ContainerManagerImpl: Start request for container_1357041600000_0003_01_000002\n"
    )
    files["gzip"].write_bytes(gzip.compress(sample("jhist").read_bytes()))
    files["stdout"].write_text("")
    files["crc"].write_bytes(b"crc\x00\x01")
    return files


def test_formats_not_read_are_named_counted_and_strict(
    mixed: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = mixed["jhist"].parent.parent
    alone, together = tmp_path / "alone.jsonl", tmp_path / "together.jsonl"
    assert _run([str(mixed["jhist"]), "--out", str(alone)]) == 0
    capsys.readouterr()
    assert _run([str(root), "--out", str(together)]) == 0
    assert together.read_text() == alone.read_text() != ""  # what is read is read as before
    err = capsys.readouterr().err.splitlines()
    named = {line.split(": ", 3)[2]: line.split(": ", 3)[3] for line in err if line.startswith("collect hadoop: not ")}
    assert set(named) == {str(mixed[k]) for k in ("mrv1", "spark", "nodemanager", "gzip")}
    assert named[str(mixed["mrv1"])].startswith(MRV1_WHY)
    assert "hcep collect spark" in named[str(mixed["spark"])]
    assert "neither an ApplicationMaster log nor a map or reduce task log" in named[str(mixed["nodemanager"])]
    assert named[str(mixed["gzip"])].startswith("gzip-compressed (a Hadoop 2 MapReduce job history file (.jhist))")
    assert err[-1].startswith(
        "collect hadoop: 1 files (7 skipped; 4 in formats not read: gzip-compressed history or log 1, "
        "Hadoop 1 (MRv1) JobTracker history 1, Spark event log 1, log4j log of another kind 1), "
    )
    assert _run([str(root), "--out", str(together), "--strict"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "collect hadoop: --strict: 4 files not read"
    assert _run([str(mixed["jhist"]), str(mixed["conf"]), "--out", str(together), "--strict"]) == 0  # companions


def test_a_jobtracker_history_directory_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Hadoop 1 cluster's done directory: nothing is read, and the operator is told so (every file; 0.20's files
    without the Meta line too); past 20 files the rest are counted."""
    done = tmp_path / "done"
    done.mkdir()
    for i in range(22):
        job = f"job_201301011200_{i + 1:04d}"
        (done / f"jt1.example.com_1357041600000_{job}_alice_word+count").write_text(mrv1_history(job, meta=i % 2 == 0))
    out = tmp_path / "events.jsonl"
    assert _run([str(done), "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert out.read_text() == ""
    assert sum(1 for line in err if line.startswith("collect hadoop: not read: ") and MRV1_WHY in line) == 20
    assert "collect hadoop: not read: 2 more" in err
    assert err[-1].startswith("collect hadoop: 0 files (22 skipped; 22 in formats not read: Hadoop 1 (MRv1) JobTracker")
    given = done / f"jt1.example.com_1357041600000_{JOB}_alice_word+count"
    assert _run([str(given), "--out", str(out), "--strict"]) == 2  # a file given by name as well
    assert f"collect hadoop: not read: {given}: {MRV1_WHY}" in capsys.readouterr().err


def test_follow_names_them_when_stopped(
    mixed: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--follow: a file is re-sniffed until the collector stops (a log's first lines may lack its kind's markers);
    those still unrecognised then are named as in batch mode."""
    root = mixed["jhist"].parent.parent
    out, state = tmp_path / "events.jsonl", tmp_path / "state.json"
    argv = [str(root), "--follow", "--out", str(out), "--state", str(state), "--poll", "0", "--max-polls", "1"]
    assert _run([*argv, "--strict"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith(f"collect hadoop: not read: {mixed['mrv1']}: {MRV1_WHY}") for line in err)
    assert "4 in formats not read" in err[-2] and err[-1] == "collect hadoop: --strict: 4 files not read"
    assert out.read_text() != ""


def test_real_spark_logs_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real third-party files (``tests/collectors/spark/fixtures``: NVIDIA/spark-rapids-tools and linkedin/dr-elephant,
    Apache-2.0): the zstd Spark event logs and Databricks' gzip part are named, pointing at ``hcep collect spark``;
    the Hadoop 2 .jhist among them is read; the fixtures' READMEs are merely skipped."""
    fixtures = Path(__file__).parent / "spark" / "fixtures"
    out = tmp_path / "events.jsonl"
    assert _run([str(fixtures), "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    named = {line.split(": ", 3)[2]: line.split(": ", 3)[3] for line in err if line.startswith("collect hadoop: not ")}
    zstd = {str(p) for p in fixtures.glob("*/*.zstd")}
    assert len(zstd) == 7 and set(named) == zstd | {str(next(fixtures.glob("databricks_rotated/*.gz")))}
    assert all(named[p] == "a Spark event log (zstd-compressed): read it with 'hcep collect spark'" for p in zstd)
    assert [w for p, w in named.items() if p not in zstd] == [
        "gzip-compressed (a Spark event log: read it with 'hcep collect spark'); decompress it first"
    ]
    assert err[-1].startswith("collect hadoop: 1 files (14 skipped; 8 in formats not read: ")
    assert {json.loads(line)["type"] for line in out.read_text().splitlines()} >= {"JobStart", "JobEnd"}
