"""Smoke test of ``benchmarks/bench_stream.py``: a tiny input through the test run's Spark session, the table
printed.  Timings are never asserted."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_bench_stream_tiny(spark, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import bench_stream

    assert bench_stream.main(["--events", "1500", "--files", "3", "--masters", "current", "--no-run"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("| hcep stream")]
    assert len(lines) == 1
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[1] == "current" and float(cells[5].replace(",", "")) > 0  # ev/s
    assert "python operator" in out
