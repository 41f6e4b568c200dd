"""Live: real PySpark jobs with planted problems, their event log read back, checked against Spark's own accounting.

The planted jobs run in the test run's one SparkSession (``spark``, tests/conftest.py), which writes its event log to
``spark_event_dir`` as one growing ``.inprogress`` file (zstd, Spark's default codec).  Executor loss needs executors
that are not the driver, so it runs as one separate ``local-cluster`` application (``lost_executor_app.py``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from collectors.spark import events as ev
from tests.collectors.spark import planted
from tests.collectors.spark.conftest import check_against_spark, run_collect
from tests.collectors.spark.followers import LostExecutorRun, collector, read, stop, wait

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]


def _logging(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    if conf.get("spark.eventLog.enabled", "false") != "true":
        pytest.fail("the shared SparkSession was built without event logging (see tests/conftest.py::spark)")


def _job_events(events: list[dict[str, Any]], counted: dict[str, Any], etype: str) -> list[dict[str, Any]]:
    jobs = set(counted["jobs"])
    return [e for e in events if e["type"] == etype and e.get("spark_job_id") in jobs]


def test_planted_problems_are_read_in_full(spark: Any, spark_event_dir: Path) -> None:
    _logging(spark)
    planted.skewed_groupby(spark, "live-skew")
    planted.slow_task(spark, "live-slow")
    planted.spilling_window(spark, "live-spill")
    planted.drain(spark)
    app = spark.sparkContext.applicationId
    events, summary, dead = run_collect(spark_event_dir)
    assert dead.count == 0 and summary.stats.unknown == 0
    counted = {group: planted.accounting(spark, group) for group in ("live-skew", "live-slow", "live-spill")}
    for group, accounting in counted.items():
        assert accounting["jobs"], group
        check_against_spark(events, app, accounting)

    # Skew: one reduce task read the hot key -- its shuffle read and its duration stand far above the median.
    skew = counted["live-skew"]
    (reduce,) = [e for e in _job_events(events, skew, ev.STAGE_COMPLETED) if e["shuffle_read_bytes"] > 0]
    assert reduce["shuffle_read_max"] > 20 * reduce["shuffle_read_median"]
    assert reduce["task_duration_max"] > 2 * reduce["task_duration_median"]
    tasks = [e for e in events if e["type"] == ev.TASK and e["stage_key"] == reduce["stage_key"]]
    hot = max(tasks, key=lambda t: t["shuffle_read_bytes"])
    assert hot["duration"] == reduce["task_duration_max"]  # the task with the hot key is the slowest
    assert hot["shuffle_read_bytes"] > 0.8 * reduce["shuffle_read_bytes"]  # (PySpark shuffles pickled batches, so
    # shuffle_records_read counts batches, not rows: bytes are the measure here)

    # A straggler without data skew: the sleeping partition's task, and only it, is slow.
    slow = counted["live-slow"]
    (stage,) = _job_events(events, slow, ev.STAGE_COMPLETED)
    tasks = [e for e in events if e["type"] == ev.TASK and e["stage_key"] == stage["stage_key"]]
    (straggler,) = [t for t in tasks if t["duration"] >= planted.SLOW_SECONDS]
    assert straggler["partition"] == planted.SLOW_PARTITION and straggler["run_time"] >= planted.SLOW_SECONDS - 0.1
    assert stage["task_duration_max"] == straggler["duration"] > 5 * stage["task_duration_median"]

    # Spill: the window buffer spilled, to memory and disk, and the stage totals add up.
    spill = counted["live-spill"]
    spill_tasks = _job_events(events, spill, ev.TASK)
    assert sum(t["memory_spill"] for t in spill_tasks) > 0 and sum(t["disk_spill"] for t in spill_tasks) > 0
    for stage in _job_events(events, spill, ev.STAGE_COMPLETED):
        mine = [t for t in spill_tasks if t["stage_key"] == stage["stage_key"]]
        assert stage["memory_spill"] == sum(t["memory_spill"] for t in mine)
        assert stage["disk_spill"] == sum(t["disk_spill"] for t in mine)


def test_follow_reads_the_growing_log_while_a_job_runs(spark: Any, spark_event_dir: Path, tmp_path: Path) -> None:
    _logging(spark)
    app = spark.sparkContext.applicationId
    out = tmp_path / "followed.jsonl"
    proc = collector(spark_event_dir, out)
    try:
        job = threading.Thread(target=planted.two_stage_slow, args=(spark, "live-follow"), daemon=True)
        job.start()
        tracker = spark.sparkContext.statusTracker()
        wait(lambda: bool(tracker.getJobIdsForGroup("live-follow")), 30, "the job did not start")
        (job_id,) = tracker.getJobIdsForGroup("live-follow")

        def first_stage_seen() -> bool:
            return any(e["type"] == ev.STAGE_COMPLETED and e.get("spark_job_id") == job_id for e in read(out))

        wait(first_stage_seen, 60, "the collector did not see the first stage finish")
        assert job.is_alive()  # read from the .inprogress log while the job still runs
        assert not [e for e in read(out) if e["type"] == ev.JOB_END and e["spark_job_id"] == job_id]
        job.join(timeout=120)
        planted.drain(spark)
        wait(
            lambda: any(e["type"] == ev.JOB_END and e.get("spark_job_id") == job_id for e in read(out)),
            30,
            "the collector did not see the job end",
        )
    finally:
        err = stop(proc)
    assert "0 dead-lettered" in err and "1 logs (1 unfinished)" in err
    followed = read(out)
    ids = [e["id"] for e in followed]
    assert len(ids) == len(set(ids))  # nothing read twice
    batch, _, _ = run_collect(spark_event_dir)
    assert [e for e in followed if e["app_id"] == app] == [e for e in batch if e["id"] in set(ids)]
    check_against_spark(followed, app, planted.accounting(spark, "live-follow"))


@pytest.mark.slow
def test_executor_lost_in_a_local_cluster(lost_executor_run: LostExecutorRun) -> None:
    """A separate application on ``local-cluster[2,1,1024]`` loses an executor during a stage; the collector follows
    its log from start to finish, through the rename of ``.inprogress`` (``tests/conftest.py::lost_executor_run``:
    the Spark pack's tests read the same log)."""
    logdir, out, err = lost_executor_run.logdir, lost_executor_run.out, lost_executor_run.err
    assert "0 dead-lettered" in err and "(0 unfinished)" in err
    counted = lost_executor_run.counted
    assert counted["killed"] and counted["jobs"]["0"]["status"] == "SUCCEEDED"
    events = read(out)
    app = counted["app_id"]
    check_against_spark(events, app, counted)
    (name,) = os.listdir(logdir)
    assert not name.endswith(".inprogress")
    batch, _, _ = run_collect(logdir / name)
    assert events == batch  # followed through the rename: the same events and ids as reading the finished log
    removed = [e for e in events if e["type"] == ev.EXECUTOR_REMOVED]
    lost = [e for e in events if e["type"] == ev.TASK and e["end_reason"] == "ExecutorLostFailure"]
    assert lost and lost[0]["executor_id"] in {e["executor_id"] for e in removed}
    (gone,) = [e for e in removed if e["executor_id"] == lost[0]["executor_id"]]
    assert "137" in gone["reason"] and gone["host"]  # SIGKILL
    assert lost[0]["failure_reason"].startswith(f"executor {gone['executor_id']} lost")
    # The lost executor took its map output with it: a stage ran again (attempt 1).
    retried = [e for e in events if e["type"] == ev.STAGE_SUBMITTED and e["stage_attempt"] >= 1]
    assert retried
    assert [e for e in events if e["type"] == ev.STAGE_COMPLETED and e["status"] == "FAILED"] or any(
        s["attempt"] >= 1 for s in counted["stages"].values()
    )
    added = [e for e in events if e["type"] == ev.EXECUTOR_ADDED]
    # Two at the start; the worker's replacement for the killed one comes only if the application still runs when the
    # worker has relaunched it (a loaded machine finishes the job on the surviving executor first).
    assert len(added) >= 2 and gone["executor_id"] in {e["executor_id"] for e in added}
    assert [e["type"] for e in events].count(ev.APP_END) == 1
