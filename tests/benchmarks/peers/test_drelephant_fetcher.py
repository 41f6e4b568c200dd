"""Dr. Elephant's MapReduceFSFetcherHadoop2Test.java: ``testFetchData`` on its own history files (copied in
``data/drelephant_history``), ``testGetTaskData``, and the shipped configuration's sampling being off; then what the
port adds: bad history files are counted, never raised."""

from __future__ import annotations

from pathlib import Path

from benchmarks.peers.drelephant.history import fetch, find_history, scan_history, task_data
from benchmarks.peers.drelephant.jhist import AttemptInfo, TaskInfo

HISTORY = Path(__file__).parent / "data" / "drelephant_history"


def _files(job_id: str) -> tuple[str, str | None]:
    return next((j, c) for j, c in find_history(str(HISTORY)) if job_id in j)


def test_fetch_data() -> None:
    data = fetch(*_files("job_1526555215992_0001"))
    assert data.app_id == "application_1526555215992_0001"
    assert data.job_id == "job_1526555215992_0001"
    assert data.conf["map.sort.class"] == "org.apache.hadoop.util.QuickSort"
    assert data.counters.get("FILE_BYTES_READ") == 28
    assert len(data.mappers) == 1
    assert len(data.reducers) == 1
    assert data.succeeded
    # job 0004 is found in the intermediate done directory
    jhist, conf = _files("job_1526555215992_0004")
    assert "done_intermediate" in jhist
    data = fetch(jhist, conf)
    assert data.app_id == "application_1526555215992_0004"
    assert data.job_id == "job_1526555215992_0004"
    assert data.conf["mapreduce.output.fileoutputformat.compress.type"] == "RECORD"
    assert data.counters.get("COMMITTED_HEAP_BYTES") == 346030080
    assert len(data.mappers) == 1
    assert len(data.reducers) == 1
    assert data.succeeded


def _mock_task(i: int, succeeded: bool) -> TaskInfo:
    """``MockTaskInfo``: a map task with a failed-due-to attempt _0 and a successful attempt _1."""
    tid = f"task_job1_0001_m_{i:06d}"
    info = TaskInfo(tid, "MAP", status="SUCCEEDED" if succeeded else "FAILED")
    info.failed_due_to_attempt_id, info.successful_attempt_id = f"{tid}_0", f"{tid}_1"
    info.attempts = {a: AttemptInfo(a) for a in (f"{tid}_0", f"{tid}_1")}
    return info


def test_get_task_data() -> None:
    tasks = [task_data(_mock_task(1, True)), task_data(_mock_task(2, False))]
    assert len(tasks) == 2
    assert sum(t.state == "SUCCEEDED" for t in tasks) == 1


def test_sampling_disabled_by_default() -> None:
    """``testFetcherDefaultConfig``: no sampling, so every task of a 400-task job is analyzed (the port never
    samples: FetcherConf.xml ships ``sampling_enabled`` false)."""
    from benchmarks.peers.drelephant.runtime import ReducerTimeHeuristic
    from tests.benchmarks.peers.conftest import counters, job, tasks_with

    result = ReducerTimeHeuristic().apply(job(reducers=tasks_with([60_000, 0, 0, 0, 0], counters(), 399)))
    assert result is not None and result.details["Number of tasks"] == "400"


def test_bad_history_is_counted_not_raised(tmp_path: Path) -> None:
    (tmp_path / "job_1_0001-1-u-n-2-1-1-SUCCEEDED-q-1.jhist").write_text("Avro-Json\n{}\n{not json\n")
    (tmp_path / "job_1_0002-1-u-n-2-1-1-SUCCEEDED-q-1.jhist").write_text("Avro-Binary\n")
    (tmp_path / "job_1_0003-1-u-n-2-1-1-KILLED-q-1.jhist").write_text(
        'Avro-Json\n{}\n{"type":"JOB_KILLED","event":{"org.apache.hadoop.mapreduce.jobhistory.JobUnsuccessfulCompletion":'
        '{"jobid":"job_1_0003","finishTime":5,"finishedMaps":0,"finishedReduces":0,"jobStatus":"KILLED"}}}\n'
    )
    scan = scan_history(str(tmp_path))
    assert scan.jobs == 3 and scan.analyzed == 0 and scan.results == []
    assert len(scan.errors) == 2 and any(":3:" in e for e in scan.errors)  # names the file and the line
    assert len(scan.skipped) == 1 and "neither succeeded or failed" in scan.skipped[0]
