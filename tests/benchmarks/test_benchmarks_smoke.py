"""Smoke tests of the benchmark scripts: each main runs in-process on a tiny size and prints its tables.

Timings are never asserted: only that the script ran and printed a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_detection, bench_hotpath, bench_strategies


def _tables(text: str) -> list[str]:
    """Header lines of the Markdown tables in ``text``."""
    lines = text.splitlines()
    return [ln for ln, nxt in zip(lines, lines[1:], strict=False) if ln.startswith("| ") and nxt.startswith("|-")]


def test_bench_strategies_quick(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--quick",
        "--plain",
        "--budget",
        "0.02",
        "--scale",
        "0.01",
        "--abc-events",
        "300",
        "--abc-windows",
        "10",
        "--any-windows",
        "8",
    ]
    assert bench_strategies.main(argv) == 0
    out = capsys.readouterr().out
    headers = _tables(out)
    assert len(headers) == 3  # stock detail, stock pivot, SEQ(A, B+, C)
    assert all("events/s" in h or "W=" in h for h in headers)
    assert "Stock (SASE+ paper)" in out and "SEQ(A a, B+ b[], C c)" in out
    for strategy in ("| any ", "| next ", "| part ", "| strict ", "any/collapsed"):
        assert strategy in out


def test_bench_hotpath_quick(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--quick", "--plain", "--events", "2000", "--profile", "--profile-events", "500", "--top", "5"]
    assert bench_hotpath.main(argv) == 0
    out = capsys.readouterr().out
    headers = _tables(out)
    assert len(headers) == 1 and "events/s" in headers[0]
    assert "hot-path figure:" in out
    assert "100 events overall" in out


def test_bench_hotpath_pack_on_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    """``--pack`` (issue 20): each row in its own process, the bare decode beside it, then the profile."""
    sample = Path(__file__).resolve().parents[2] / "queries" / "samples" / "hadoop_sample.jsonl"
    argv = ["--pack", "--plain", "--events-file", str(sample), "--repeat", "1", "--rows", "Q1,pack-Q4"]
    assert bench_hotpath.main([*argv, "--profile", "--top", "3"]) == 0
    out = capsys.readouterr().out
    headers = _tables(out)
    assert len(headers) == 1 and "ratio" in headers[0] and "peak RSS MiB" in headers[0]
    assert "| Q1 " in out and "| pack-Q4 " in out
    assert "Profile: the whole pack" in out


def test_bench_detection_one_small_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """One 20-node hour through the whole detection benchmark (semantics section 9): the table has a row per fault kind
    with Dr. Elephant's columns beside ours, and its verdict line (the figures themselves are the README's, not a
    test's)."""
    assert bench_detection.main(["--seeds", "6", "--traces", "fb2010", "--sizes", "20", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert len(_tables(out)) == 1 and "Dr.E F1" in _tables(out)[0]
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith("| kind")
    }
    assert set(rows) == set(bench_detection.KINDS)
    assert sum(int(cells[0]) for cells in rows.values()) >= 1  # the default mix injected faults
    assert "overall, ours:" in out and "targets: " in out
