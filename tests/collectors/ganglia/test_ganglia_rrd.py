"""RRD files without daemons: write_rrd (gmetad's layout) -> rrd.read_history round trip, and ``collect --rrd``."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from types import ModuleType

import pytest

from app.cli import CommandError
from app.commands import collect_ganglia
from collectors.ganglia.rrd import discover, fetch, read_history
from collectors.hadoop.deadletter import DeadLetterSink
from simulator.ganglia_out import STEP, spoof_ip, write_rrd

T0 = 1_700_000_100  # a multiple of 15: values written at row boundaries read back exactly


def _samples(n: int = 12) -> list[tuple[float, str, str, float]]:
    rows = []
    for i in range(n):
        ts = float(T0 + i * STEP)
        rows += [(ts, "n1", "load_one", 0.25 * i), (ts, "n2", "load_one", 4.0 - 0.25 * i), (ts, "n1", "cpu_user", 10.0)]
    return rows


def test_round_trip(tmp_path: Path, rrdtool: ModuleType) -> None:
    write_rrd(str(tmp_path), "hc", _samples())
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.rrd")) == [
        "hc/n1/cpu_user.rrd", "hc/n1/load_one.rrd", "hc/n2/load_one.rrd",
    ]  # fmt: skip
    info = rrdtool.info(str(tmp_path / "hc/n1/load_one.rrd"))
    assert info["step"] == STEP and info["ds[sum].type"] == "GAUGE" and info["ds[sum].minimal_heartbeat"] == 120
    rows = read_history(tmp_path, T0, T0 + 11 * STEP)
    assert rows == sorted((ts, "hc", h, m, v) for ts, h, m, v in _samples())


def test_since_until_and_filters(tmp_path: Path, rrdtool: ModuleType) -> None:
    write_rrd(str(tmp_path), "hc", _samples())
    rows = read_history(tmp_path, T0 + 3 * STEP, T0 + 5 * STEP, metrics={"load_one"})
    assert [(ts - T0) / STEP for ts, *_ in rows] == [3, 3, 4, 4, 5, 5]
    assert read_history(tmp_path, T0, cluster="other") == []
    assert [f.host for f in discover(tmp_path, metrics={"cpu_user"})] == ["n1"]
    assert fetch(tmp_path / "hc/n1/cpu_user.rrd", T0 + 100 * STEP) == []


def test_appending_skips_old_times_and_unknowns(tmp_path: Path, rrdtool: ModuleType) -> None:
    write_rrd(str(tmp_path), "hc", [(T0, "n", "m", 1.0), (T0 + STEP, "n", "m", 2.0)])
    more = [(T0, "n", "m", 99.0), (T0 + 2 * STEP, "n", "m", 3.0), (T0 + 3 * STEP, "n", "m", math.nan)]
    write_rrd(str(tmp_path), "hc", more)
    assert [v for *_, v in read_history(tmp_path, T0, T0 + 4 * STEP)] == [1.0, 2.0, 3.0]


def test_bad_names_and_summary_dirs(tmp_path: Path, rrdtool: ModuleType) -> None:
    with pytest.raises(ValueError, match="host"):
        write_rrd(str(tmp_path), "hc", [(T0, "../x", "m", 1.0)])
    write_rrd(str(tmp_path), "__SummaryInfo__", [(T0, "n", "m", 1.0)])
    write_rrd(str(tmp_path), "hc", [(T0, "__SummaryInfo__", "m", 1.0), (T0, "n", "m", 2.0)])
    assert [(f.cluster, f.host) for f in discover(tmp_path)] == [("hc", "n")]


def test_unreadable_rrd_is_dead_lettered(tmp_path: Path, rrdtool: ModuleType) -> None:
    write_rrd(str(tmp_path), "hc", [(T0, "n", "good", 1.0)])
    (tmp_path / "hc/n/bad.rrd").write_bytes(b"not an rrd")
    dead = DeadLetterSink.memory()
    rows = read_history(tmp_path, T0, T0 + STEP, deadletter=dead)
    assert [r[3] for r in rows] == ["good"]
    assert dead.count == 1 and (dead.records or [])[0]["location"].endswith("bad.rrd")
    with pytest.raises(FileNotFoundError):
        read_history(tmp_path / "missing", T0)


def test_collect_rrd_command(tmp_path: Path, rrdtool: ModuleType) -> None:
    now = time.time()
    start = math.floor(now / STEP) * STEP - 20 * STEP
    samples = [(float(start + i * STEP), h, "load_one", v + i) for i in range(20) for h, v in (("a", 0.0), ("b", 4.0))]
    write_rrd(str(tmp_path / "rrds"), "hc", samples)
    parser = argparse.ArgumentParser()
    collect_ganglia.configure(parser)
    out = tmp_path / "events.jsonl"
    rrds = str(tmp_path / "rrds")
    args = parser.parse_args(["--rrd", rrds, "--since", "1h", "--out", str(out), "--threshold", "1.5"])
    assert collect_ganglia.run(args) == 0
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(e["type"] == "Metric" for e in events) == 40
    stds = [e for e in events if e["type"] == "LoadStd"]
    assert len(stds) == 20 and all(e["val"] == 2.0 and e["hosts"] == 2 for e in stds)
    assert {e["type"] for e in events} == {"Metric", "LoadStd", "Imbalance"}
    assert [e["ts"] for e in stds] == sorted(e["ts"] for e in stds)

    missing = parser.parse_args(["--rrd", str(tmp_path / "nope"), "--out", str(out)])
    with pytest.raises(CommandError, match="no RRD directory"):
        collect_ganglia.run(missing)


def test_parse_time() -> None:
    now = 1_000_000.0
    assert collect_ganglia.parse_time("2h", now) == now - 7200
    assert collect_ganglia.parse_time("-600", now) == now - 600
    assert collect_ganglia.parse_time("-1.5m", now) == now - 90
    assert collect_ganglia.parse_time("1700000000") == 1_700_000_000
    assert collect_ganglia.parse_time("2023-11-14T22:13:20+00:00") == 1_700_000_000
    with pytest.raises(ValueError):
        collect_ganglia.parse_time("soon")


def test_spoof_ip_is_stable_loopback() -> None:
    ips = {spoof_ip(f"h{i}") for i in range(200)}
    assert all(ip.startswith("127.") and ip != "127.0.0.1" for ip in ips) and len(ips) > 190
    assert spoof_ip("x") == spoof_ip("x")
