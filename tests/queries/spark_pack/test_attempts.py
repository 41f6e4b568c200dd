"""Issue 27, defect 3, in the Spark pack: one YARN application's attempts 1-4 reuse its App ID and its stage ids, so
the pack's records name ``app_attempt`` and its rules group by it -- stage 3 of attempt 1 and stage 3 of attempt 2
are two alerts, not one.

The truth is each attempt's own log judged alone (real logs: ``tests/collectors/spark/fixtures/multiple_attempts``,
NVIDIA/spark-rapids-tools, Apache-2.0): judged together, every attempt gets exactly the records and alerts its log
gets alone.  The stages last seconds, so the test copy of the pack (scaled gates) is the one that alerts on them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.queries.spark_pack.conftest import SMALL, firing, match_alerts, write_events

FIXTURE = Path(__file__).resolve().parents[2] / "collectors" / "spark" / "fixtures" / "multiple_attempts"
APP = "application_1724877841851_0016"
#: What identifies an alert apart from its attempt (the labels without app_attempt, when and what it said).
_SHAPE = ("alertname", "severity", "tier", "stage_id", "executor_id", "anomaly")


def _collect(path: Path) -> list[dict[str, Any]]:
    from collectors.spark.collect import collect

    return list(collect(str(path)))


def _records(events: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    from app.cli import main

    code = main(["match", str(events), "--pack", str(SMALL)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return [json.loads(line) for line in out.out.splitlines() if line.strip()]


def _shape(alert: dict[str, Any]) -> tuple[Any, ...]:
    labels = alert["labels"]
    return (*(labels.get(k, "") for k in _SHAPE), alert["startsAt"], alert["annotations"]["summary"])


def test_attempts_are_alerted_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = sorted(FIXTURE.glob("attempt_*_eventlog.zstd"))
    assert len(logs) == 4
    together = write_events(_collect(FIXTURE), tmp_path / "together.jsonl")  # the folder, as a user collects it
    records = _records(together, capsys)
    alerts = firing(match_alerts(together, SMALL, capsys))
    assert {a["labels"]["app_id"] for a in alerts} == {APP}
    assert {a["labels"].get("app_attempt") for a in alerts} == {"1", "2", "3", "4"}
    group = ("alertname", "app_id", "app_attempt", "stage_id", "executor_id")
    groups = Counter(tuple(a["labels"].get(k) for k in group) for a in alerts)
    assert set(groups.values()) == {1}  # each group fired once: one per rule, attempt, stage (and executor)

    total_alerts = total_slow = 0
    for log in logs:
        alone = write_events(_collect(log), tmp_path / f"{log.stem}.jsonl")
        (attempt,) = {e["app_attempt"] for e in map(json.loads, alone.read_text().splitlines())}
        own = firing(match_alerts(alone, SMALL, capsys))
        mine = [a for a in alerts if a["labels"]["app_attempt"] == attempt]
        assert own and sorted(map(_shape, mine)) == sorted(map(_shape, own)), attempt
        assert all(a["labels"]["app_attempt"] == attempt for a in own)

        slow = Counter(r["query"] for r in _records(alone, capsys))
        got = Counter(r["query"] for r in records if r["return"]["app_attempt"] == attempt)
        assert got == slow and slow["SlowTask"] == 8, attempt
        total_alerts += len(own)
        total_slow += slow["SlowTask"]
    # Issue 27: the attempts alone give 32 SlowTask records; mixed, they gave 74 (and attempt-less groups merged the
    # alerts of one stage across attempts: 22 alerts where the attempts alone give 36).
    assert (len(alerts), total_alerts) == (36, 36)
    assert sum(r["query"] == "SlowTask" for r in records) == total_slow == 32
    # Stage 3 is skewed in every attempt: four StageSkew alerts, one per attempt, not one for all of them.
    skew = [a["labels"]["app_attempt"] for a in alerts if a["labels"]["alertname"] == "StageSkew"]
    assert sorted(skew) == ["1", "2", "3", "4"]


def test_logs_without_attempts_keep_their_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Local mode names no attempt: its events carry no ``app_attempt`` (a History Server attempt without an id may
    give an empty one); the records' value is unknown (null) and the alerts' label empty (Alertmanager drops empty
    labels), so the groups are those of App ID and stage, and each stage's alerts are the same either way."""
    from tests.queries.spark_pack.conftest import collected

    events = list(collected("local"))
    assert not any("app_attempt" in e for e in events)
    absent = write_events(events, tmp_path / "absent.jsonl")
    empty = write_events([{**e, "app_attempt": ""} for e in events], tmp_path / "empty.jsonl")
    records = _records(absent, capsys)
    assert records and all(r["return"]["app_attempt"] is None for r in records)
    got = {name: firing(match_alerts(path, SMALL, capsys)) for name, path in (("absent", absent), ("empty", empty))}
    assert got["absent"] and all(a["labels"]["app_attempt"] == "" for a in got["absent"])
    assert sorted(map(_shape, got["absent"])) == sorted(map(_shape, got["empty"]))
