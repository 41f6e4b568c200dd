"""Fixtures of the Spark collector tests: the real event logs under ``data/`` (``make_fixtures.py`` regenerates them)
and what Spark's status tracker counted while writing them (``data/manifest.json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark.collect import Summary, collect

pytest.register_assert_rewrite("tests.collectors.spark.history")

DATA = Path(__file__).parent / "data"
LOGS = DATA / "eventlogs"


def load_manifest() -> list[dict[str, Any]]:
    return json.loads((DATA / "manifest.json").read_text())


def fixture(name: str) -> dict[str, Any]:
    """The manifest entry of one fixture (``plain``, ``lz4``, ``lzf``, ``snappy``, ``zstd``, ``rolling``, ...)."""
    (entry,) = [e for e in load_manifest() if e["name"] == name]
    return entry


def run_collect(path: Path | str) -> tuple[list[dict[str, Any]], Summary, DeadLetterSink]:
    """Batch-collect ``path``: its events (log order), the summary and the dead letters."""
    summary = Summary()
    dead = DeadLetterSink.memory()
    events = list(collect(str(path), summary=summary, deadletter=dead))
    return events, summary, dead


@pytest.fixture
def logs_copy(tmp_path: Path) -> Path:
    """A private copy of the fixture logs (tests that damage or rename files)."""
    target = tmp_path / "eventlogs"
    shutil.copytree(LOGS, target)
    return target


def check_against_spark(events: list[dict[str, Any]], app_id: str, counted: dict[str, Any]) -> None:
    """The collected events of ``app_id`` against Spark's status tracker (``planted.accounting``): every job with its
    outcome, every stage attempt that ran (the tracker knows the latest attempt of each) with each task attempt
    completed or failed, and nothing the tracker does not know of for those jobs."""
    from collections import Counter

    from collectors.spark import events as ev

    jobs = {int(j): job for j, job in counted["jobs"].items()}
    stages = {int(s): st for s, st in counted["stages"].items()}
    mine = [e for e in events if e["app_id"] == app_id and e.get("spark_job_id") in jobs]
    assert {e["spark_job_id"] for e in mine if e["type"] == ev.JOB_START} == set(jobs)
    assert {e["spark_job_id"]: e["status"] for e in mine if e["type"] == ev.JOB_END} == {
        j: job["status"] for j, job in jobs.items()
    }
    for stage_id, st in stages.items():
        key = f"{app_id}/{stage_id}/{st['attempt']}"
        tasks = [e for e in mine if e["type"] == ev.TASK and e["stage_key"] == key]
        status = Counter(t["status"] for t in tasks)
        assert status["SUCCEEDED"] == st["completed"], (key, status, st)
        assert status["FAILED"] == st["failed"], (key, status, st)
        assert len(tasks) == st["completed"] + st["failed"], key
        (done,) = [e for e in mine if e["type"] == ev.STAGE_COMPLETED and e["stage_key"] == key]
        assert done["num_tasks"] == st["num_tasks"] and done["tasks"] == len(tasks)
        assert [e for e in mine if e["type"] == ev.STAGE_SUBMITTED and e["stage_key"] == key]
    for event in mine:
        if "stage_id" in event:  # no stage, and no attempt, that Spark did not run
            assert event["stage_id"] in stages and event["stage_attempt"] <= stages[event["stage_id"]]["attempt"]


@pytest.fixture(scope="session")
def history_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """ONE Spark History Server per test run (``deploy/spark/history-start.sh``, loopback, a free port) over one
    directory holding a copy of every local and third-party fixture log (it reads one ``logDirectory``); tests may
    copy more logs in (it rescans every second).  Stopped at the end of the session."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java: Spark's History Server needs a JDK")
    from tests.collectors.spark.history import gather_logs, start_history_server

    root = tmp_path_factory.mktemp("spark-history")
    logs = root / "logs"
    copies = gather_logs(logs)
    server = start_history_server(logs, root / "run")
    server.copies = copies
    try:
        yield server
    finally:
        server.stop()
