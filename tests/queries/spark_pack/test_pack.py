"""The Spark pack (queries/spark.yaml) on real event logs with planted problems (``data/``), without a JVM: it alerts
on each planted problem, on the stage Spark says ran it, and stays quiet on the clean jobs and on small stages."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.language.packs import load_pack
from tests.queries.spark_pack.conftest import (
    PACK,
    ROOT,
    SMALL,
    by_stage,
    collected,
    firing,
    manifest,
    match_alerts,
    stages_of,
    write_events,
)

#: The rules whose alerts name an executor (one alert per executor: the one to look at).
EXECUTOR_RULES = {"TaskStraggler", "ShuffleFetchStraggler", "ExecutorLostInStage"}
#: The gates the test copy scales (the product pack's text -> the test copy's); nothing else may differ.
SCALED = {
    "StageSkew": [("task_max >= 150", "task_max >= 1.5"), ("task_median >= 120", "task_median >= 1.2")],
    "TaskStraggler": [("duration >= 150", "duration >= 1.5"), ("avg_before >= 120", "avg_before >= 1.2")],
    "ShuffleFetchStraggler": [
        ("fetch_wait >= 30", "fetch_wait >= 0.3"),
        ("fetch_wait_before >= 30", "fetch_wait_before >= 0.3"),
    ],
    "StageSpill": [("1073741824", "1048576"), ("3298534883328", "3221225472")],
    "StageGcPressure": [("run_time >= 300", "run_time >= 3")],
    "StageTaskFailures": [("tasks >= 20", "tasks >= 3"), ("failed_tasks >= 5", "failed_tasks >= 2")],
    "StageRetried": [("num_tasks >= 10", "num_tasks >= 2")],
}
#: The packs with alert rules (trends.yaml has only the older per-query shorthand over GRETA aggregates).
ALL_PACKS = [ROOT / "queries" / "hadoop.yaml", PACK, SMALL]


# ------------------------------------------------------------------------------------------------ the pack itself


@pytest.mark.parametrize("path", ALL_PACKS, ids=lambda p: p.name)
def test_rule_summaries_name_return_values(path: Path) -> None:
    """Every rule parses (conditions included: load_pack compiles them) and its summary's fields are RETURN names of
    its query (or value / tier / severity), so no summary shows a literal ``{name}``."""
    pack = load_pack(path)
    returns = {q.name: {r.name for r in q.query.returns} for q in pack.queries}
    for rule in pack.rules():
        fields = {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(rule.summary) if f}
        assert fields <= returns[rule.query] | {"value", "tier", "severity"}, (rule.name, fields - returns[rule.query])


def test_pack_shape() -> None:
    pack = load_pack(PACK)
    assert pack.name == "spark" and pack.tick == 0.001
    # NFA^b everywhere: records come out the moment their last event is fed, whatever the service's uncertainty bound
    assert {q.strategy for q in pack.queries} == {"skip_till_next_match"}
    returns = {q.name: {r.name for r in q.query.returns} for q in pack.queries}
    rules = pack.rules()
    assert {r.name for r in rules} == {
        "StageSkew",
        "TaskStraggler",
        "ShuffleFetchStraggler",
        "StageSpill",
        "StageGcPressure",
        "StageTaskFailures",
        "ExecutorLostInStage",
        "StageRetried",
    }
    # Issue 27, defect 3: YARN's attempts of one application reuse its App ID and stage ids; every record names its
    # attempt and every rule groups by it (test_attempts.py: on the real logs of four attempts).
    assert all("app_attempt" in names for names in returns.values()), returns
    for rule in rules:
        assert rule.group_by[:3] == ("app_id", "app_attempt", "stage_id"), rule.name
        assert ("executor_id" in rule.group_by) == (rule.name in EXECUTOR_RULES), rule.name
        assert rule.labels.get("anomaly"), rule.name
        assert rule.when is not None, f"{rule.name} has no gate"
        assert set(rule.group_by) <= returns[rule.query]


def test_the_test_copy_differs_only_in_its_gates() -> None:
    product = yaml.safe_load(PACK.read_text())
    small = yaml.safe_load(SMALL.read_text())
    assert small["queries"] == product["queries"] and small["tick"] == product["tick"]
    assert [r["name"] for r in small["alerts"]] == [r["name"] for r in product["alerts"]]
    for mine, theirs in zip(small["alerts"], product["alerts"], strict=True):
        assert {k: v for k, v in mine.items() if k != "when"} == {k: v for k, v in theirs.items() if k != "when"}
        expected = theirs["when"]
        for old, new in SCALED.get(theirs["name"], []):
            assert old in expected, (theirs["name"], old)
            expected = expected.replace(old, new)
        assert mine["when"] == expected, theirs["name"]
    load_pack(SMALL)


# ------------------------------------------------------------------------------------------------ planted problems


def _alerts(name: str, pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return match_alerts(write_events(collected(name), tmp_path / f"{name}.jsonl"), pack, capsys)


def test_local_job_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """local[2]: a skewed groupBy, a slowed task and a spilling window aggregation alert on their own stages; the
    clean job does not."""
    entry = manifest("local")
    groups = entry["groups"]
    alerts = firing(_alerts("local", SMALL, tmp_path, capsys))
    fired = by_stage(alerts, entry["app_id"])
    skew = max(stages_of(groups["skew"]))  # the reduce stage: the hot key's task
    (slow,) = stages_of(groups["slow"])
    assert {"StageSkew", "TaskStraggler"} <= fired.get(skew, set())
    assert {"StageSkew", "TaskStraggler"} <= fired.get(slow, set())
    assert any("StageSpill" in fired.get(s, set()) for s in stages_of(groups["spill"]))
    assert not stages_of(groups["clean"]) & set(fired), fired
    planted = stages_of(groups["skew"]) | stages_of(groups["slow"]) | stages_of(groups["spill"])
    assert set(fired) <= planted, fired
    for alert in alerts:
        labels = alert["labels"]
        assert labels["pack"] == "spark" and labels["app_id"] == entry["app_id"] and labels["anomaly"]
        assert labels["app_attempt"] == ""  # local mode names no attempt: an empty label, which Alertmanager drops
        assert ("executor_id" in labels) == (labels["alertname"] in EXECUTOR_RULES)
    (straggler,) = [
        a for a in alerts if a["labels"]["alertname"] == "TaskStraggler" and int(a["labels"]["stage_id"]) == slow
    ]
    assert straggler["labels"]["severity"] == "critical" and straggler["labels"]["executor_id"] == "driver"
    assert "task 3 on executor driver" in straggler["annotations"]["summary"]  # planted.SLOW_PARTITION


def test_cluster_job_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """local-cluster: GC pressure, a shuffle fetch from a frozen executor and a killed executor alert on their own
    stages (the lost one also gives a failed stage and its retries); the clean job does not."""
    entry = manifest("cluster")
    groups, app = entry["groups"], entry["app_id"]
    alerts = firing(_alerts("cluster", SMALL, tmp_path, capsys))
    fired = by_stage(alerts, app)
    assert any("StageGcPressure" in fired.get(s, set()) for s in stages_of(groups["gc"]))
    stall = max(stages_of(groups["stall"]))
    assert "ShuffleFetchStraggler" in fired.get(stall, set())
    lost = stages_of(groups["lost"])
    assert any("ExecutorLostInStage" in fired.get(s, set()) for s in lost)
    assert {s for s in lost if "StageRetried" in fired.get(s, set())} == {
        int(s) for s, st in groups["lost"]["stages"].items() if st["attempt"] >= 1
    }
    assert any("StageTaskFailures" in fired.get(s, set()) for s in lost)
    assert not stages_of(groups["clean"]) & set(fired), fired

    events = collected("cluster")
    (removed,) = [e for e in events if e["type"] == "ExecutorRemoved"]
    (loss,) = [a for a in alerts if a["labels"]["alertname"] == "ExecutorLostInStage"]
    assert loss["labels"]["executor_id"] == removed["executor_id"] and "137" in loss["annotations"]["summary"]
    # Found while the stage runs: the stalled fetch's alert comes out when its task ends, seconds before the stage
    # completes (the tasks after it still had to run).
    (done,) = [e for e in events if e["type"] == "StageCompleted" and e["stage_id"] == stall]
    (fetch,) = [a for a in alerts if a["labels"]["alertname"] == "ShuffleFetchStraggler"]
    starts = _epoch(fetch["startsAt"])
    assert starts < done["ts"] - 0.5, (starts, done["ts"])


@pytest.mark.parametrize("name", ["local", "cluster"])
def test_product_pack_keeps_small_stages_quiet(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The product pack's gates are for real clusters: seconds-long stages never warn.  An executor lost during a
    stage is not a matter of size: it still alerts."""
    alerts = firing(_alerts(name, PACK, tmp_path, capsys))
    assert {a["labels"]["alertname"] for a in alerts} == ({"ExecutorLostInStage"} if name == "cluster" else set())


def test_collector_fixtures_are_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The collector's own fixtures (small jobs in every log form) raise nothing with the product pack."""
    from collectors.spark.collect import collect
    from tests.collectors.spark.conftest import LOGS

    events = write_events(collect(str(LOGS)), tmp_path / "collector.jsonl")
    assert match_alerts(events, PACK, capsys) == []


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
