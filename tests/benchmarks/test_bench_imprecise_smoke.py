"""Smoke tests of the SASE++ / imprecise-timestamp / Hadoop-pack benchmarks: each main runs in-process with --quick
and prints its tables.  Timings and figures are never asserted."""

from __future__ import annotations

import pytest

from benchmarks import bench_hadoop_pack, bench_imprecise, bench_sasepp


def _tables(text: str) -> list[str]:
    """Header lines of the Markdown tables in ``text``."""
    lines = text.splitlines()
    return [ln for ln, nxt in zip(lines, lines[1:], strict=False) if ln.startswith("| ") and nxt.startswith("|-")]


def test_bench_sasepp_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_sasepp.main(["--quick", "--plain", "--events", "400", "--xs", "100", "--windows", "25"]) == 0
    headers = _tables(capsys.readouterr().out)
    assert headers and all("events" in h or "SASE+" in h for h in headers)


def test_bench_imprecise_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        bench_imprecise.main(
            ["--quick", "--plain", "--sparse-events", "500", "--dense-events", "200", "--fig4-events", "150"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert _tables(out) and "point-based" in out and "event-based" in out


def test_bench_hadoop_pack_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_hadoop_pack.main(["--quick", "--plain", "--hours", "0.02"]) == 0
    out = capsys.readouterr().out
    assert _tables(out) and "| pack" in out
