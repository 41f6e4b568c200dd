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
