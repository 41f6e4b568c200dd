"""Smoke test of benchmarks/bench_spark.py: one tiny in-process run with the shared session prints its table."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.spark


def test_bench_spark_tiny(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import bench_spark

    argv = ["--events", "2000", "--in-process", "--plain", "--data", str(tmp_path), "--reference", "500"]
    assert bench_spark.main(argv) == 0
    out = capsys.readouterr().out
    assert "| master " in out and "events/s" in out and "local[2]" in out
    assert "single-process engine" in out
    assert (tmp_path / next(p.name for p in tmp_path.iterdir()) / "_DONE").exists()  # the trace is kept for reuse
