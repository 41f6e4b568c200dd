"""Fixtures of the Spark pack's tests: the pack, its test copy, the real event logs with planted problems
(``data/``, ``make_fixtures.py`` regenerates them) and the alerts ``hcep match --alerts`` gives on collected events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACK = SPARK_PACK_PATH = ROOT / "queries" / "spark.yaml"
DATA = Path(__file__).parent / "data"
SMALL = DATA / "spark_small.yaml"
LOGS = DATA / "eventlogs"


def manifest(name: str) -> dict[str, Any]:
    """The manifest entry of one fixture application (``local`` or ``cluster``)."""
    entries: list[dict[str, Any]] = json.loads((DATA / "manifest.json").read_text())
    (entry,) = [e for e in entries if e["name"] == name]
    return entry


def stages_of(counted: dict[str, Any]) -> set[int]:
    """The stage ids Spark's status tracker counted for one job group (``planted.accounting``)."""
    return {int(s) for s in counted["stages"]}


@cache
def collected(name: str) -> tuple[dict[str, Any], ...]:
    """The events ``hcep collect spark`` reads from one fixture log (batch collection, log order)."""
    from collectors.spark.collect import collect

    return tuple(collect(str(LOGS / manifest(name)["path"])))


def write_events(events: Iterable[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def match_alerts(events: Path, pack: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """``hcep match EVENTS --pack PACK --alerts``: every alert transition, as printed."""
    from app.cli import main

    code = main(["match", str(events), "--pack", str(pack), "--alerts"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return [json.loads(line) for line in out.out.splitlines() if line.strip()]


def firing(alerts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transitions that fire (not the resolutions)."""
    return [a for a in alerts if "endsAt" not in a]


def by_stage(alerts: Iterable[dict[str, Any]], app_id: str) -> dict[int, set[str]]:
    """Stage id -> the rules that fired on it, for one application."""
    out: dict[int, set[str]] = {}
    for alert in alerts:
        labels = alert["labels"]
        if labels.get("app_id") == app_id:
            out.setdefault(int(labels["stage_id"]), set()).add(labels["alertname"])
    return out
