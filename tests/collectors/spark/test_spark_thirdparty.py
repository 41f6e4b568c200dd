"""Real event logs from other people's clusters (``fixtures/``: NVIDIA/spark-rapids-tools' test logs, Apache 2.0; each
folder's README names its source) and the five defects of issue 27 they showed.  The figures asserted here are the
issue's, counted on the raw logs; the History Server comparison (``test_spark_history.py``) checks every figure of
these logs against Spark's own parser."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from collectors.spark import events as ev
from tests.collectors.spark.conftest import run_collect
from tests.queries.spark_pack.conftest import PACK, firing, match_alerts, write_events

FIXTURES = Path(__file__).parent / "fixtures"


def logs_of(name: str) -> list[Path]:
    """The event-log files of one fixture folder (not its README)."""
    return sorted(p for p in (FIXTURES / name).iterdir() if p.name != "README.md")


def collect_fixture(name: str) -> tuple[list[dict[str, Any]], int]:
    """The events of every log of ``name`` (log by log) and the number of dead letters."""
    events: list[dict[str, Any]] = []
    dead = 0
    for path in logs_of(name):
        got, _, sink = run_collect(path)
        events += got
        dead += sink.count
    return events, dead


def match_records(events: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    """``hcep match`` of the product pack over ``events`` (sorted by time, as ``hcep collect spark`` writes them)."""
    path = write_events(sorted(events, key=lambda e: e["ts"]), tmp_path / "events.jsonl")
    code = main(["match", str(path), "--pack", str(PACK)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return [json.loads(line) for line in out.out.splitlines() if line.strip()]


def _stage(events: list[dict[str, Any]], etype: str, stage: int) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == etype and e.get("stage_id") == stage]


def test_stages_completing_after_application_end_keep_their_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 1: the context stopped with stages 31 and 32 running; their StageCompleted come after ApplicationEnd."""
    events, dead = collect_fixture("gpu_oom")
    assert dead == 0
    order = [e["type"] for e in events]
    (done,) = _stage(events, ev.STAGE_COMPLETED, 31)
    assert events.index(done) > order.index(ev.APP_END)
    assert done["status"] == "FAILED" and done["tasks"] == 31 and done["failed_tasks"] == 8
    assert done["memory_spill"] == 24_669_884_784
    alerts = firing(match_alerts(write_events(events, tmp_path / "gpu.jsonl"), PACK, capsys))
    fired = {a["labels"]["alertname"] for a in alerts if a["labels"]["stage_id"] == "31"}
    assert {"StageTaskFailures", "StageSpill"} <= fired


def test_spark_2_2_stage_submitted_without_its_time() -> None:
    """Defect 2: Spark 2.2.3 logs StageSubmitted without "Submission Time": it takes the log's latest time."""
    events, dead = collect_fixture("spark2")
    assert dead == 0
    submitted = [e for e in events if e["type"] == ev.STAGE_SUBMITTED]
    assert len(submitted) == 6 and all(e["ts_estimated"] for e in submitted)
    for sub in submitted:
        (done,) = [e for e in events if e["type"] == ev.STAGE_COMPLETED and e["stage_key"] == sub["stage_key"]]
        tasks = [e for e in events if e["type"] == ev.TASK and e["stage_key"] == sub["stage_key"]]
        assert done["tasks"] == len(tasks) == done["num_tasks"] > 0
        (job,) = [e for e in events if e["type"] == ev.JOB_START and e["spark_job_id"] == sub["spark_job_id"]]
        assert job["ts"] <= sub["ts"] <= min(t["ts"] for t in tasks)  # no later than its first task's end
        assert "ts_estimated" not in done and done["duration"] >= 0


def test_spark_1_2_jobs_without_their_times(tmp_path: Path) -> None:
    """Spark 1.2 logged JobStart without "Submission Time" and JobEnd without "Completion Time".  No Spark 1.2 log
    is at hand: the real Spark 2.2 log with those two fields taken out (what 1.2 wrote) stands in."""
    (path,) = logs_of("spark2")
    import zstandard

    lines = []
    for line in zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().decode().splitlines():
        obj = json.loads(line)
        obj.pop("Submission Time" if obj["Event"] == "SparkListenerJobStart" else "", None)
        obj.pop("Completion Time" if obj["Event"] == "SparkListenerJobEnd" else "", None)
        lines.append(json.dumps(obj))
    old = tmp_path / "local-1634253215009"
    old.write_text("\n".join(lines) + "\n")
    events, _, dead = run_collect(old)
    assert dead.count == 0
    jobs = [e for e in events if e["type"] in (ev.JOB_START, ev.JOB_END)]
    assert len(jobs) == 12 and all(e["ts_estimated"] for e in jobs)
    for end in (e for e in jobs if e["type"] == ev.JOB_END):
        assert end["status"] == "SUCCEEDED" and end["duration"] >= 0


def test_application_attempts_are_kept_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 3: four attempts of one application (same App ID, same stage ids) in one directory.  Every event names
    its attempt, stage keys differ per attempt, and the pack finds in the four logs together exactly what it finds in
    each alone (the issue counted 74 SlowTask records together against 32 alone, 42 of them mixing attempts)."""
    events, dead = collect_fixture("multiple_attempts")
    assert dead == 0
    assert {e["app_id"] for e in events} == {"application_1724877841851_0016"}
    assert Counter(e["app_attempt"] for e in events if e["type"] == ev.APP_START) == Counter("1234")
    keys = {e["app_attempt"]: set() for e in events}
    for e in events:
        if "stage_key" in e:
            assert e["stage_key"].startswith(f"application_1724877841851_0016_{e['app_attempt']}/")
            keys[e["app_attempt"]].add(e["stage_id"])
    assert len({frozenset(v) for v in keys.values()}) == 1  # the attempts ran the same stage ids
    together = match_records(events, tmp_path, capsys)
    alone: list[dict] = []
    for path in logs_of("multiple_attempts"):
        alone += match_records(run_collect(path)[0], tmp_path, capsys)

    def slow(records: list[dict]) -> list[str]:
        return sorted(json.dumps(r["match"], sort_keys=True) for r in records if r["query"] == "SlowTask")

    assert slow(together) == slow(alone) and len(slow(alone)) == 32
    assert all(r["return"]["tasks_before"] < 30 for r in together if r["query"] == "SlowTask")


def test_every_executor_lost_in_a_stage_and_late_task_ends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 4: executors 2 and 1 were lost in stage 238, 0.15 s apart: both are reported.  The failed stage's
    StageCompleted came while tasks still ran: their ends count (280 task ends, as Spark's status store counts)."""
    events, dead = collect_fixture("tasks_executors_fail")
    assert dead == 0
    removed = [e for e in events if e["type"] == ev.EXECUTOR_REMOVED]
    assert [e["executor_id"] for e in removed] == ["2", "1"]
    assert round(removed[1]["ts"] - removed[0]["ts"], 3) == 0.152
    (done,) = _stage(events, ev.STAGE_COMPLETED, 238)
    tasks = _stage(events, ev.TASK, 238)
    late = [t for t in tasks if events.index(t) > events.index(done)]
    assert done["status"] == "FAILED" and done["tasks"] == len(tasks) == 280
    assert Counter(t["status"] for t in tasks) == {"SUCCEEDED": 227, "RESUBMITTED": 50, "FAILED": 3}
    assert done["failed_tasks"] == 3 and not late  # held until its last running task ended, then emitted after it
    lost = [e for e in events if e["type"] == ev.STAGE_EXECUTOR_LOST]
    assert [(e["stage_id"], e["executor_id"], e["ts"]) for e in lost] == [
        (238, x["executor_id"], x["ts"]) for x in removed
    ]
    records = [r for r in match_records(events, tmp_path, capsys) if r["query"] == "ExecutorLost"]
    assert sorted((r["return"]["stage_id"], r["return"]["executor_id"]) for r in records) == [(238, "1"), (238, "2")]


def test_formats_not_read_are_named_and_strict_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 5: a Databricks rotated part (real, gzip), a Hadoop job history file (real), a Spark 1.0-1.2 legacy
    directory (its layout only: no such log is at hand) and a stray file are named on stderr with why; the summary
    counts them; ``--strict`` exits 2; the logs that are readable are still read."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    (gz,) = logs_of("databricks_rotated")
    shutil.copy(gz, logdir)
    legacy = logdir / "app-20140917100000-0001"
    legacy.mkdir()
    (legacy / "EVENT_LOG_1").write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"1.2.0"}\n')
    (legacy / "SPARK_VERSION_1.2.0").touch()
    (legacy / "APPLICATION_COMPLETE").touch()
    (logdir / "notes.txt").write_text("not a log\n")
    (jhist,) = logs_of("hadoop_jhist")  # real, from linkedin/dr-elephant
    shutil.copy(jhist, logdir)
    shutil.copy(logs_of("spark2")[0], logdir)
    out = tmp_path / "events.jsonl"
    for strict, code in (([], 0), (["--strict"], 2)):
        assert main(["collect", "spark", str(logdir), "--out", str(out), "--no-progress", *strict]) == code
        err = capsys.readouterr().err
        assert "1 logs (0 unfinished), 1 files (4 skipped)" in err
        assert f"not read: {logdir / jhist.name}: a Hadoop 2 MapReduce job history file (.jhist)" in err
        assert f"not read: {logdir / gz.name}: gzip-compressed (a Databricks rotated" in err
        assert f"not read: {legacy}: a Spark 1.0-1.2 log directory" in err
        assert f"not read: {logdir / 'notes.txt'}: unknown suffix '.txt'" in err
        assert ("--strict: 4 files or directories not read" in err) == bool(strict)
        assert len(out.read_text().splitlines()) == 33
    # the legacy directory given as LOGDIR itself is refused alike
    assert main(["collect", "spark", str(legacy), "--out", str(out), "--strict"]) == 2
    assert f"not read: {legacy}: a Spark 1.0-1.2 log directory" in capsys.readouterr().err


def test_unknown_listener_events_are_named_with_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 5: listener events of kinds the collector does not know are named in the summary, most frequent first
    (Spark's catalog events and an EMR metrics event here); the folder's README is named as not read."""
    assert main(["collect", "spark", str(FIXTURES / "multiple_attempts"), "--out", "/dev/null"]) == 0
    err = capsys.readouterr().err
    assert "18 unknown listener events (5 kinds: org.apache.spark.sql.catalyst.catalog.CreateT" in err
    assert "org.apache.spark.sql.catalyst.catalog.CreateTableEvent 4" in err
    assert "org.apache.spark.sql.catalyst.catalog.DropTableEvent 3" in err
    assert "not read: " + str(FIXTURES / "multiple_attempts" / "README.md") in err
