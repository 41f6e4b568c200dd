"""Against a real gmond and gmetad (session fixture ``ganglia``): poll, derive, spoof hosts, read gmetad's RRDs."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from app.commands import collect_ganglia
from collectors.ganglia.derive import Deduplicator, round_events, rounds_from_document, rounds_from_samples
from collectors.ganglia.poll import PollError, poll
from collectors.ganglia.rrd import discover, read_history
from collectors.ganglia.xml import GangliaDocument, XmlParser, parse_document
from simulator.ganglia_out import send_gmetric
from tests.collectors.ganglia.helpers import Ganglia, wait_for


def _doc(address: str, **kw: object) -> GangliaDocument:
    return parse_document(poll(address, timeout=5, **kw))  # type: ignore[arg-type]


def _cluster_hosts(doc: GangliaDocument, cluster: str) -> dict[str, dict[str, float | str]]:
    (c,) = [c for c in doc.clusters if c.name == cluster]
    return {h.name: {m.name: m.val for m in h.metrics.values()} for h in c.hosts}


def _real_host(ganglia: Ganglia) -> str:
    """The name gmond gives this machine (it reports itself from 127.0.0.1) once its load_one is in."""

    def found() -> str | None:
        for c in _doc(ganglia.gmond).clusters:
            for h in c.hosts:
                if h.ip == "127.0.0.1" and "load_one" in h.metrics:
                    return h.name
        return None

    return wait_for(found, what="gmond to report this host's load_one")


def test_daemons_listen_on_loopback_only(ganglia: Ganglia) -> None:
    if subprocess.run(["sh", "-c", "command -v ss"], capture_output=True).returncode != 0:
        pytest.skip("ss (iproute2) not available")
    out = subprocess.run(["ss", "-H", "-ltunp"], capture_output=True, text=True, check=True).stdout
    pids = (f"pid={ganglia.gmond_pid},", f"pid={ganglia.gmetad_pid},")
    mine = [line for line in out.splitlines() if any(p in line for p in pids)]
    local = [line.split()[4] for line in mine]
    assert len(local) >= 4, out  # gmond tcp + udp, gmetad xml + interactive
    assert all(addr.startswith("127.") or addr.startswith("[::1]") for addr in local), local


def test_poll_gmond_real_metrics(ganglia: Ganglia) -> None:
    host = _real_host(ganglia)
    doc = _doc(ganglia.gmond)
    assert doc.source == "gmond"
    metrics = _cluster_hosts(doc, ganglia.cluster)[host]
    for name in ("load_one", "load_five", "cpu_user", "mem_free", "proc_total"):
        assert isinstance(metrics.get(name), float), name
    assert metrics["os_name"] == "Linux"

    rounds = rounds_from_document(doc, cluster=ganglia.cluster)
    events = [e for r in rounds for e in round_events(r)]
    mine = {e["metric"]: e for e in events if e["type"] == "Metric" and e["host"] == host}
    assert {"load_one", "load_five", "load_fifteen", "cpu_user", "mem_free"} <= set(mine)
    load = mine["load_one"]
    assert load["val"] == metrics["load_one"] and load["delta"] == 7.5 and load["cluster"] == ganglia.cluster
    assert abs(load["ts"] - time.time()) < 60
    assert "os_name" not in mine  # text metrics are not events


def test_spoofed_hosts_give_imbalance_from_a_real_poll(ganglia: Ganglia) -> None:
    _real_host(ganglia)
    fakes = {"imb-a": 0.5, "imb-b": 12.0, "imb-c": 24.0}

    def polled() -> GangliaDocument | None:
        send_gmetric(ganglia.gmond, [(0.0, h, "load_one", v) for h, v in fakes.items()])  # again: UDP
        doc = _doc(ganglia.gmond)
        hosts = _cluster_hosts(doc, ganglia.cluster)
        return doc if all(hosts.get(h, {}).get("load_one") == v for h, v in fakes.items()) else None

    doc = wait_for(polled, what="gmond to show the spoofed hosts' load_one")
    (rnd,) = rounds_from_document(doc, cluster=ganglia.cluster)
    loads = {s.host: s.val for s in rnd.samples if s.metric == "load_one"}
    assert set(fakes) <= set(loads)
    events = round_events(rnd, threshold=1.0)
    (std,) = [e for e in events if e["type"] == "LoadStd"]
    assert std["hosts"] == len(loads)
    assert std["val"] == pytest.approx(statistics.pstdev(loads.values()), rel=1e-9)
    assert std["mean"] == pytest.approx(statistics.fmean(loads.values()), rel=1e-9)
    assert std["val"] > 4.0  # 0.5, 12, 24 dominate this machine's own load and other tests' fake hosts
    (verdict,) = [e for e in events if e["type"] in ("Balance", "Imbalance")]
    assert verdict["type"] == "Imbalance" and verdict["val"] == std["val"] and verdict["threshold"] == 1.0
    # The same poll against a threshold above the spread is balanced.
    assert [e["type"] for e in round_events(rnd, threshold=100.0, raw=False)] == ["LoadStd", "Balance"]


def test_poll_gmetad_xml_and_interactive(ganglia: Ganglia) -> None:
    host = _real_host(ganglia)
    doc = wait_for(
        lambda: (d := _doc(ganglia.gmetad)) and d.clusters and host in _cluster_hosts(d, ganglia.cluster) and d,
        what="gmetad to poll gmond",
    )
    assert doc.source == "gmetad"
    (cluster,) = doc.clusters
    assert cluster.grid == f"{ganglia.cluster}-grid"
    one = _doc(ganglia.interactive, request=f"/{ganglia.cluster}")
    assert host in _cluster_hosts(one, ganglia.cluster)
    summary = _doc(ganglia.interactive, request="/?filter=summary")
    assert summary.clusters == [] or all(not c.hosts for c in summary.clusters)


def test_gmetad_writes_rrds_that_rrd_reads_back(ganglia: Ganglia, rrdtool: object) -> None:
    since = time.time() - 5
    fakes = {"rrd-a": 1.5, "rrd-b": 6.5}
    deadline = time.monotonic() + 30

    def history() -> list[tuple[float, str, str, str, float]] | None:
        # Keep the fake hosts alive and their values current while gmetad polls every second.
        send_gmetric(ganglia.gmond, [(0.0, h, "load_one", v) for h, v in fakes.items()])
        rows = read_history(ganglia.rrd_rootdir, since, metrics={"load_one"})
        per_host: dict[str, list[float]] = {}
        for _ts, _cluster, host, _metric, value in rows:
            per_host.setdefault(host, []).append(value)
        ok = all(per_host.get(h, [])[-2:] == [v, v] for h, v in fakes.items())
        return rows if ok or time.monotonic() > deadline else None

    rows = wait_for(history, timeout=40, interval=1.0, what="gmetad RRD rows for the spoofed hosts")
    files = discover(ganglia.rrd_rootdir, cluster=ganglia.cluster)
    assert {"rrd-a", "rrd-b"} <= {f.host for f in files}
    assert all("__SummaryInfo__" not in str(f.path) for f in files)
    for host, value in fakes.items():
        values = [v for _ts, c, h, m, v in rows if h == host and c == ganglia.cluster and m == "load_one"]
        assert values[-2:] == [value, value], (host, values)
    times = sorted({ts for ts, *_ in rows})
    assert all(ts >= since for ts in times)
    # History rounds derive LoadStd over the hosts known at each row time.
    rounds = rounds_from_samples(rows)
    assert all(e["type"] != "Metric" or e["metric"] == "load_one" for r in rounds for e in round_events(r))


def test_collect_command_once_against_gmond(ganglia: Ganglia, tmp_path: Path) -> None:
    _real_host(ganglia)
    parser = argparse.ArgumentParser()
    collect_ganglia.configure(parser)
    out = tmp_path / "events.jsonl"
    args = parser.parse_args(["--gmond", ganglia.gmond, "--once", "--out", str(out), "--threshold", "0.25"])
    assert collect_ganglia.run(args) == 0
    events = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = {e["type"] for e in events}
    assert {"Metric", "LoadStd"} <= kinds and kinds & {"Balance", "Imbalance"}
    assert all(e["delta"] == 7.5 and isinstance(e["ts"], float) and e["id"] for e in events)
    assert len({e["id"] for e in events}) == len(events)

    from engine.events import event_from_json  # the engine accepts every event as is

    for i, e in enumerate(events):
        event_from_json(e, i)


def test_collect_command_polls_repeatedly_without_duplicates(ganglia: Ganglia, tmp_path: Path) -> None:
    _real_host(ganglia)
    parser = argparse.ArgumentParser()
    collect_ganglia.configure(parser)
    out = tmp_path / "events.jsonl"
    args = parser.parse_args(["--gmond", ganglia.gmond, "--interval", "0.4", "--rounds", "6", "--out", str(out)])
    assert collect_ganglia.run(args) == 0
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({e["id"] for e in events}) == len(events)
    assert sum(e["type"] == "LoadStd" for e in events) >= 2  # new rounds as gmond's clock moves


def test_dedup_of_repeated_polls(ganglia: Ganglia) -> None:
    _real_host(ganglia)
    parser = XmlParser()
    dedup = Deduplicator()
    data = poll(ganglia.gmond)
    doc = parser.parse(data)
    assert doc is not None
    (rnd,) = rounds_from_document(doc, cluster=ganglia.cluster)
    assert dedup.fresh(rnd)
    assert dedup.fresh(rounds_from_document(parser.parse(data), cluster=ganglia.cluster)[0]) is None  # type: ignore[arg-type]


def test_poll_errors_are_reported() -> None:
    with pytest.raises(PollError, match="cannot connect"):
        poll("127.0.0.1:1", timeout=1)
