"""Every form of real Spark event log, collected and checked against what Spark's own status tracker counted while
the log was written (``data/manifest.json``): every job, every stage that ran, every task attempt, nothing extra."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from collectors.spark import events as ev
from tests.collectors.spark.conftest import LOGS, check_against_spark, fixture, load_manifest, run_collect

NAMES = [e["name"] for e in load_manifest()]


@pytest.mark.parametrize("name", NAMES)
def test_every_form_matches_sparks_accounting(name: str) -> None:
    entry = fixture(name)
    events, summary, dead = run_collect(LOGS / entry["path"])
    assert dead.count == 0 and summary.stats.unknown == 0
    check_against_spark(events, entry["app_id"], entry)
    assert {e["app_id"] for e in events} == {entry["app_id"]}
    types = Counter(e["type"] for e in events)
    assert types[ev.APP_START] == 1 and types[ev.EXECUTOR_ADDED] >= 1
    assert types[ev.APP_END] == (0 if name == "inprogress" else 1)
    for event in events:
        assert event["delta"] == ev.DEFAULT_DELTA == 0.0
        assert isinstance(event["ts"], float) and math.isfinite(event["ts"])
        assert "job_id" not in event and "task_id" not in event  # the Hadoop pack's keys stay Hadoop's
        if "stage_id" in event:
            assert event["stage_key"] == f"{event['app_id']}/{event['stage_id']}/{event['stage_attempt']}"


def test_codecs_give_the_same_shape_of_events() -> None:
    """The four codec fixtures ran the same jobs: the same event types and counts come out of each."""
    shapes = set()
    for codec in ("lz4", "lzf", "snappy", "zstd"):
        events, _, _ = run_collect(LOGS / fixture(codec)["path"])
        shapes.add(tuple(sorted(Counter(e["type"] for e in events).items())))
    assert len(shapes) == 1


def test_ids_are_stable_and_unique() -> None:
    first, _, _ = run_collect(LOGS)
    again, _, _ = run_collect(LOGS)
    ids = [e["id"] for e in first]
    assert ids == [e["id"] for e in again]
    assert len(set(ids)) == len(ids)


def test_plain_log_failures_and_skew() -> None:
    """The plain fixture planted a retried task, a job that fails on every attempt and a skewed groupBy."""
    events, _, _ = run_collect(LOGS / fixture("plain")["path"])
    failed = [e for e in events if e["type"] == ev.TASK and e["status"] == "FAILED"]
    assert {e["end_reason"] for e in failed} == {"ExceptionFailure"}
    reasons = " | ".join(e["failure_reason"] for e in failed)
    assert "RuntimeError: planted failure on the first attempt" in reasons
    assert "ValueError: planted permanent failure" in reasons
    retried = [e for e in events if e["type"] == ev.TASK and e["task_attempt"] == 1]
    assert retried and all(e["status"] == "SUCCEEDED" for e in retried if e["spark_job_id"] == 1)
    (job_fail,) = [e for e in events if e["type"] == ev.JOB_END and e["status"] == "FAILED"]
    assert "planted permanent failure" in job_fail["failure_reason"] and job_fail["duration"] >= 0
    (stage_fail,) = [e for e in events if e["type"] == ev.STAGE_COMPLETED and e["status"] == "FAILED"]
    assert "planted permanent failure" in stage_fail["failure_reason"]
    assert stage_fail["failed_tasks"] == 2 and stage_fail["spark_job_id"] == job_fail["spark_job_id"]
    # Job 0's reduce stage read the skewed key: its largest shuffle read is far above the median.
    (reduce,) = [
        e for e in events if e["type"] == ev.STAGE_COMPLETED and e["spark_job_id"] == 0 and e["shuffle_read_bytes"] > 0
    ]
    assert reduce["shuffle_read_max"] > 10 * reduce["shuffle_read_median"]
    tasks = [e for e in events if e["type"] == ev.TASK and e["stage_key"] == reduce["stage_key"]]
    assert max(t["shuffle_read_bytes"] for t in tasks) == reduce["shuffle_read_max"]
    assert sum(t["shuffle_read_bytes"] for t in tasks) == reduce["shuffle_read_bytes"]


def test_task_attributes() -> None:
    events, _, _ = run_collect(LOGS / fixture("zstd")["path"])
    task = next(e for e in events if e["type"] == ev.TASK and e["shuffle_write_bytes"] > 0)
    for key in (
        "spark_task_id",
        "task_index",
        "task_attempt",
        "partition",
        "executor_id",
        "host",
        "duration",
        "run_time",
        "cpu_time",
        "gc_time",
        "shuffle_read_bytes",
        "fetch_wait",
        "shuffle_write_bytes",
        "memory_spill",
        "disk_spill",
        "input_bytes",
        "speculative",
        "status",
        "end_reason",
        "locality",
    ):
        assert key in task, key
    assert task["executor_id"] == "driver" and task["host"] == "localhost" and task["speculative"] is False
    assert 0 <= task["run_time"] <= task["duration"] + 0.001
    added = next(e for e in events if e["type"] == ev.EXECUTOR_ADDED)
    start = next(e for e in events if e["type"] == ev.APP_START)
    assert added["app_id"] == start["app_id"]  # logged before the application start: held until it named the app
    assert start["spark_version"] == fixture("zstd")["spark_version"]


def test_rolling_log_reads_every_file_in_order() -> None:
    entry = fixture("rolling")
    events, summary, _ = run_collect(LOGS / entry["path"])
    assert summary.files == 2 and summary.unfinished == 0
    task_ids = [e["spark_task_id"] for e in events if e["type"] == ev.TASK]
    assert len(task_ids) == len(set(task_ids)) == sum(s["completed"] for s in entry["stages"].values())


def test_inprogress_log_stops_before_the_half_written_line() -> None:
    entry = fixture("inprogress")
    events, summary, dead = run_collect(LOGS / entry["path"])
    assert summary.unfinished == 1 and summary.stats.partial == 1 and dead.count == 0
    assert summary.stats.lines == entry["cut_line"]  # every complete line, and the cut one counted as partial
    assert not [e for e in events if e["type"] == ev.APP_END]


def test_whole_directory_summary() -> None:
    events, summary, dead = run_collect(LOGS)
    assert summary.logs == len(NAMES) and summary.unfinished == 1 and summary.skipped == 0
    assert summary.written == len(events) and dead.count == 0
    assert summary.stats.ignored > 0  # task starts, environment, SQL plans...
