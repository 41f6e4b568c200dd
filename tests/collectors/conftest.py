"""Fixtures for the collector tests (helpers live in hadoop_testkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.collectors.hadoop_testkit import JOB, json_jhist_to_binary, sample


@pytest.fixture
def binary_jhist(tmp_path: Path) -> Path:
    path = tmp_path / f"{JOB}.jhist"
    path.write_bytes(json_jhist_to_binary(sample("jhist").read_text()))
    return path
