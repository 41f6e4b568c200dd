"""Spark tests share ONE SparkSession per test run (a JVM start costs about 12 s here): the session-scoped ``spark``
fixture of ``tests/conftest.py``.  Tests that use it are marked ``spark`` (``-m "not spark"`` skips them); without
PySpark, pandas or pyarrow they are skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "queries" / "samples" / "hadoop_sample.jsonl"
HANDCHECK = ROOT / "tests" / "data" / "hadoop_handcheck.jsonl"
PACK = ROOT / "queries" / "hadoop.yaml"
SPARK_PACK = ROOT / "queries" / "spark.yaml"
EDGE_PACK = Path(__file__).parent / "data" / "edge_pack.yaml"


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few thousand events: 60 jobs x (8 maps, 2 reduces) and the Ganglia rounds over them, ids = positions."""
    from app.spark.tracegen import TraceConfig, trace

    path = tmp_path_factory.mktemp("trace") / "generated.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in trace(TraceConfig(jobs=60, seed=7))))
    return path
