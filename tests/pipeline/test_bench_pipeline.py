"""Smoke test of the pipeline benchmark against the real broker: both streams, one and two services.  Timings are
never asserted: only that every event was read and every alert delivered, and that the tables were printed."""

from __future__ import annotations

import pytest

from benchmarks import bench_pipeline
from tests.conftest import Broker


def _rows(text: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| events")
    ]


def test_bench_pipeline_rows_read_everything(kafka_broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--bootstrap", kafka_broker.bootstrap, "--events", "3000", "--pack-size", "50", "--live-rate", "0"]
    assert bench_pipeline.main([*argv, "--queries", "light", "--processes", "1", "2"]) == 0
    assert bench_pipeline.main([*argv, "--stream", "simulated", "--nodes", "10", "--hours", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "(synthetic stream)" in out and "(simulated stream)" in out
    rows = _rows(out)
    assert len(rows) == 3
    header = ["events", "pack", "procs", "publish", "drain", "e2e", "cpu", "fed", "alerts", "delivered", "p50", "p99"]
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        assert float(cells["drain"].replace(",", "")) > 0 and float(cells["e2e"].replace(",", "")) > 0
        assert int(cells["fed"].replace(",", "")) > 0
    single = [dict(zip(header, r, strict=True)) for r in rows if r[2] == "1"]
    assert all(r["alerts"] == r["delivered"] for r in single)  # every alert reached the receiver
