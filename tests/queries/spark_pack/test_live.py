"""Live: the Spark pack on the event logs of real jobs run now, collected with ``hcep collect spark`` and judged with
``hcep match --alerts`` (the test copy's scaled gates: the jobs last seconds).

The local jobs run in the test run's one SparkSession (``tests/conftest.py::spark``, event log in
``spark_event_dir``); executor loss reads the log of the run's one ``local-cluster`` application
(``tests/conftest.py::lost_executor_run``), the one the collector's live test follows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.queries.spark_pack import planted
from tests.queries.spark_pack.conftest import SMALL, by_stage, firing, match_alerts, stages_of

pytestmark = pytest.mark.spark


def _collect(logdir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    from app.cli import main

    code = main(["collect", "spark", str(logdir), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0 and "0 dead-lettered" in err, err
    return out


def test_planted_problems_alert_and_the_clean_job_is_quiet(
    spark: Any, spark_event_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    jobs = {
        "pack-skew": planted.skewed_groupby,
        "pack-slow": planted.slow_task,
        "pack-spill": planted.spilling_window,
        "pack-clean": planted.clean_job,
    }
    for group, job in jobs.items():
        job(spark, group)
    planted.drain(spark)
    counted = {group: planted.accounting(spark, group) for group in jobs}
    ran = time.monotonic() - started
    events = _collect(spark_event_dir, tmp_path / "events.jsonl", capsys)
    alerts = firing(match_alerts(events, SMALL, capsys))
    fired = by_stage(alerts, spark.sparkContext.applicationId)

    skew = max(stages_of(counted["pack-skew"]))
    (slow,) = stages_of(counted["pack-slow"])
    assert {"StageSkew", "TaskStraggler"} <= fired.get(skew, set()), fired
    assert {"StageSkew", "TaskStraggler"} <= fired.get(slow, set()), fired
    assert any("StageSpill" in fired.get(s, set()) for s in stages_of(counted["pack-spill"])), fired
    assert not stages_of(counted["pack-clean"]) & set(fired), fired
    print(f"planted jobs ran in {ran:.1f} s; {len(alerts)} alerts on the session's log")


@pytest.mark.slow
def test_executor_loss_alerts(lost_executor_run: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The executor killed during a stage (followed live by the collector): the pack names the stage it ran in and
    the executor, and the stage retries that followed."""
    counted = lost_executor_run.counted
    alerts = firing(match_alerts(lost_executor_run.out, SMALL, capsys))
    fired = by_stage(alerts, counted["app_id"])
    (loss,) = [a for a in alerts if a["labels"]["alertname"] == "ExecutorLostInStage"]
    assert int(loss["labels"]["stage_id"]) in stages_of(counted)
    assert "137" in loss["annotations"]["summary"]
    retried = {int(s) for s, st in counted["stages"].items() if st["attempt"] >= 1}
    # A retry attempt runs only the partitions whose output was lost: the rule's gate (the test copy's 2 tasks) lets
    # a one-task retry pass quietly, so which retried stages warn depends on how many tasks the killed executor held.
    attempts = [
        e
        for e in map(json.loads, lost_executor_run.out.read_text().splitlines())
        if e.get("type") == "StageSubmitted" and e.get("app_id") == counted["app_id"] and e.get("stage_attempt", 0) >= 1
    ]
    assert retried and retried == {int(e["stage_id"]) for e in attempts}
    gated = {int(e["stage_id"]) for e in attempts if e.get("num_tasks", 0) >= 2}
    assert gated == {s for s, rules in fired.items() if "StageRetried" in rules}, (attempts, fired)
