"""The store's ``events`` table: written with the checkpoint, de-duplicated by id, pruned by event time and by row
count; the service keeps the cluster-level Ganglia events and a downsampled load series, at most a bounded number
per checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from app.store import Batch, Store


def _row(i: int, etype: str = "LoadStd", ts: float | None = None, host: str | None = None) -> tuple:
    ts = float(i) if ts is None else ts
    event = {"type": etype, "ts": ts, "id": f"e{i}", "delta": 7.5, "val": i / 10}
    if host:
        event["host"] = host
    return (f"e{i}", etype, ts, host, json.dumps(event), "0")


def _batch(rows: list[tuple]) -> Batch:
    return Batch([], [], [], [], None, rows)


def test_events_are_committed_deduplicated_and_pruned_by_time(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    store.events_keep_seconds = 100.0
    store.commit(_batch([_row(i) for i in range(50)]))
    store.commit(_batch([_row(i) for i in range(40, 60)]))  # a replay re-sends 40..49: ignored
    assert store.counts()["events"] == 60
    store.commit(_batch([_row(200)]))  # 100 s past: everything before ts 100 goes
    assert [e["id"] for e in store.recent_events()] == ["e200"]
    store.commit(Batch([], [], [], [], None))  # no events: the table is left alone
    assert store.counts()["events"] == 1


def test_events_are_capped_by_rows(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    store.events_max_rows = 100  # checked every 10 inserts
    for start in range(0, 300, 30):
        store.commit(_batch([_row(i) for i in range(start, start + 30)]))
    assert store.counts()["events"] <= 100 + 30
    newest = store.recent_events(limit=5)
    assert [e["id"] for e in newest] == [f"e{i}" for i in range(295, 300)]  # the oldest went first
    assert [e["id"] for e in store.recent_events(types=["Metric"])] == []


def test_service_keeps_load_events_and_downsamples_metrics(tmp_path: Path) -> None:
    from app.metrics import Registry
    from app.service import STORE_EVENTS_PER_CHECKPOINT, Service

    svc = Service.__new__(Service)  # only the event-keeping part, without Kafka
    svc.cfg = SimpleNamespace(
        store_event_types=("LoadStd", "Balance", "Imbalance"),
        store_metric="load_one",
        store_metric_every=60.0,
        instance="0",
    )
    svc.pending_events = []
    svc._metric_last = {}
    svc.metrics = Registry()

    def keep(obj: dict) -> None:
        ev = SimpleNamespace(type=obj["type"], ts=obj["ts"], id=obj["id"])
        svc._keep_event(ev, obj, json.dumps(obj).encode())

    for k in range(20):  # 20 rounds 15 s apart, two hosts
        ts = 1000.0 + 15 * k
        keep({"type": "LoadStd", "ts": ts, "id": f"s{k}", "val": 1.0})
        for host in ("a", "b"):
            keep({"type": "Metric", "ts": ts, "id": f"m{k}{host}", "host": host, "metric": "load_one", "val": 2.0})
            keep({"type": "Metric", "ts": ts, "id": f"c{k}{host}", "host": host, "metric": "cpu_user", "val": 9.0})
    kept = [(r[1], r[3]) for r in svc.pending_events]
    assert kept.count(("LoadStd", None)) == 20
    assert kept.count(("Metric", "a")) == kept.count(("Metric", "b")) == 5  # one per 60 s per host
    assert all(json.loads(r[4])["metric"] == "load_one" for r in svc.pending_events if r[1] == "Metric")
    svc.pending_events = [()] * STORE_EVENTS_PER_CHECKPOINT
    keep({"type": "Balance", "ts": 5000.0, "id": "over", "val": 0.1})
    assert len(svc.pending_events) == STORE_EVENTS_PER_CHECKPOINT
    assert svc.metrics.get("hcep_store_events_dropped_total") == 1
