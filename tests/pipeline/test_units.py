"""The pipeline's pieces without Kafka: watermark merge, rebuild points, ids, alert payloads, metrics, store."""

from __future__ import annotations

import json
import random
import urllib.request

from app.alerts import backoff, parse_webhooks, payload, sign, verify
from app.checkpoint import horizon, offset_metadata, parse_offset_metadata, record_id
from app.metrics import MetricsServer, Registry
from app.store import Batch, CheckpointRow, OffsetRow, Store
from app.watermark import INF, RebuildTracker, Watermark
from engine.events import event_from_json


def ev(ts: float, delta: float = 0.0, **attrs: object):
    return event_from_json({"type": "X", "ts": ts, "delta": delta, **attrs}, 0, 0.1)


# ------------------------------------------------------------------------------------------------ watermark
def test_release_is_in_key_order_across_partitions() -> None:
    wm = Watermark(bound=20, idle_timeout=1e9)  # 2 s at tick 0.1
    wm.add("a", 0, 0, 0, float("-inf"), 0.0)
    wm.add("b", 1, 0, 0, float("-inf"), 0.0)
    rng = random.Random(1)
    times = {"a": sorted(rng.uniform(0, 100) for _ in range(200)), "b": sorted(rng.uniform(0, 100) for _ in range(200))}
    released = []
    offsets = {"a": 0, "b": 0}
    for i in range(200):
        for tp in ("a", "b"):
            assert wm.offer(tp, offsets[tp], 0, ev(round(times[tp][i], 1)), 0.0) is None
            offsets[tp] += 1
        released += wm.release(wm.live_frontier(0.0, lambda _tp: False))
    released += wm.release(INF)
    keys = [r[:5] for r in released]
    assert keys == sorted(keys) and len(keys) == 400


def test_late_events_are_judged_per_partition() -> None:
    wm = Watermark(bound=20, idle_timeout=1e9)
    wm.add("a", 0, 0, 0, float("-inf"), 0.0)
    assert wm.offer("a", 0, 0, ev(10.0), 0.0) is None
    assert wm.offer("a", 1, 0, ev(8.5), 0.0) is None  # 1.5 s behind: within the bound
    assert wm.offer("a", 2, 0, ev(7.9), 0.0) == "late"  # 2.1 s behind the partition's newest
    # The same partition read again from a checkpoint's newest gives the same answer.
    again = Watermark(bound=20, idle_timeout=1e9)
    again.add("a", 0, 0, 2, 100.0, 0.0)
    assert again.offer("a", 2, 0, ev(7.9), 0.0) == "late"


def test_idle_partition_stops_holding_the_watermark_and_is_late_after() -> None:
    wm = Watermark(bound=0, idle_timeout=5.0)
    wm.add("a", 0, 0, 0, float("-inf"), 0.0)
    wm.add("b", 1, 0, 0, float("-inf"), 0.0)
    wm.offer("a", 0, 0, ev(50.0), now=0.0)
    wm.offer("b", 0, 0, ev(10.0), now=0.0)
    wm.offer("b", 1, 0, ev(20.0), now=0.0)
    assert [r[0] for r in wm.release(wm.live_frontier(1.0, lambda tp: True))] == [100]  # strictly before 200
    out = wm.release(wm.live_frontier(10.0, lambda tp: True))  # both idle and read up: everything goes
    assert [r[0] for r in out] == [200, 500]
    assert wm.offer("b", 2, 0, ev(30.0), now=11.0) == "behind_watermark"


def test_burst_after_a_quiet_spell_waits_for_every_partition() -> None:
    """After idling, partition a's burst is read before b's reaches the broker: b still looks idle and read up, yet
    the watermark holds for b during one idle timeout, so b's burst is not late; then a silent b stops holding it."""
    wm = Watermark(bound=0, idle_timeout=5.0)
    wm.add("a", 0, 0, 0, float("-inf"), 0.0)
    wm.add("b", 1, 0, 0, float("-inf"), 0.0)
    for i, ts in enumerate((100.0, 200.0, 300.0)):  # a catches up on 200 s of events, at wall time 60
        assert wm.offer("a", i, 0, ev(ts), now=60.0) is None
    assert wm.release(wm.live_frontier(60.1, lambda tp: True)) == []  # b silent for 60 s, read up: still held
    assert wm.offer("b", 0, 0, ev(150.0), now=60.2) is None  # b's burst, 0.2 s later: in time
    assert [r[0] for r in wm.release(wm.live_frontier(60.3, lambda tp: True))] == [1000]  # before b's newest
    assert [r[0] for r in wm.release(wm.live_frontier(66.0, lambda tp: True))] == [1500, 2000, 3000]  # both idle


def test_after_a_quiet_spell_a_source_silent_in_real_time_hardly_holds_the_watermark() -> None:
    """During the hold after a quiet spell an idle partition counts at its newest time plus its silence: one whose
    silence is the stream's own (nothing happened) does not stall the others."""
    wm = Watermark(bound=0, idle_timeout=5.0, tick=0.1)
    wm.add("a", 0, 0, 0, float("-inf"), 0.0)
    wm.add("b", 1, 0, 0, float("-inf"), 0.0)
    assert wm.offer("a", 0, 0, ev(10.0), now=10.0) is None
    assert wm.offer("b", 0, 0, ev(10.0), now=10.0) is None
    assert wm.offer("a", 1, 0, ev(59.0), now=60.0) is None  # a speaks again 50 s later, in real time
    assert wm.offer("a", 2, 0, ev(61.0), now=60.0) is None
    # b, silent for 50 s since its event at 10 s, counts at 60 s: what is before 60 s goes
    assert [r[0] for r in wm.release(wm.live_frontier(60.0, lambda tp: True))] == [100, 100, 590]


def test_rebuild_tracker_gives_the_first_offset_still_needed() -> None:
    tr = RebuildTracker(next_offset=0, bucket=10)
    ticks = [100, 105, 130, 90, 200, 210, 205, 400]
    for off, t in enumerate(ticks):
        tr.note(off, t, t)
    start, newest = tr.rebuild_point(150)
    # every event with thi >= 150 is at or after `start`, and `newest` covers everything before it
    assert all(off >= start for off, t in enumerate(ticks) if t >= 150)
    assert newest >= max(t for off, t in enumerate(ticks) if off < start)
    assert tr.rebuild_point(1000) == (8, 400)


# ------------------------------------------------------------------------------------------------ ids, horizon
def test_record_ids_follow_signature_or_distinct_value() -> None:
    r1 = {"query": "Q", "match": {"a": ["1"], "b": ["3", "2"]}, "return": {"task": "t"}, "confidence": 0.5}
    r2 = {"query": "Q", "match": {"b": ["2", "3"], "a": ["1"]}, "return": {"task": "t"}, "confidence": 0.9}
    r3 = {"query": "Q", "match": {"a": ["9"], "b": ["2"]}, "return": {"task": "t"}}
    assert record_id(r1) == record_id(r2) != record_id(r3)
    assert record_id(r1, "distinct") == record_id(r3, "distinct")
    assert record_id({**r3, "query": "P"}, "distinct") != record_id(r3, "distinct")


def test_horizon_covers_windows_uncertainty_and_held_records() -> None:
    class Held:
        """An evaluator holding a distinct record that started at 50 s (tick 0.1), as the evaluator contract tells."""

        def horizon(self, last_t: float, umax: int) -> float:
            return 500 - umax - 1

    assert horizon(10_000, [600, 100], 151, [], 0.1) == 10_000 - 1200 - 604 - 1
    assert horizon(10_000, [600], 151, [Held()], 0.1) == 500 - 151 - 1
    assert horizon(10_000, [600, None], 151, [], 0.1) == float("-inf")
    assert parse_offset_metadata(offset_metadata(12, 34.5)) == (12, 34.5)
    assert parse_offset_metadata("not json") is None


# ------------------------------------------------------------------------------------------------ alerts
def test_alertmanager_v4_payload_and_signature() -> None:
    from contracts.alerts import Alert, transition_id

    a = Alert(
        {"alertname": "Rising", "severity": "warning", "task_id": "t_1"}, {"summary": "reducer t_1"}, 1_700_000_000.0
    )
    done = a.resolved(1_700_000_100.0)
    body = payload([a.to_webhook()], "ops")
    assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "ops"
    assert payload([done.to_webhook()], "ops")["status"] == "resolved"
    assert set(body) >= {
        "groupKey",
        "truncatedAlerts",
        "groupLabels",
        "commonLabels",
        "commonAnnotations",
        "externalURL",
        "alerts",
    }
    alert = body["alerts"][0]
    assert alert["labels"]["alertname"] == "Rising" and alert["labels"]["task_id"] == "t_1"
    assert alert["status"] == "firing" and alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert alert["startsAt"].startswith("2023-11-14T22:13:20") and alert["fingerprint"] == a.fingerprint
    assert done.to_webhook()["fingerprint"] == a.fingerprint  # the resolution names the same alert
    assert transition_id(alert) == a.transition_id != done.transition_id
    raw = json.dumps(body).encode()
    assert verify(raw, "s3cret", sign(raw, "s3cret")) and not verify(raw, "other", sign(raw, "s3cret"))
    assert 0.25 <= backoff(1, 0.5, 30) <= 0.5 and backoff(20, 0.5, 30) <= 30
    hooks = parse_webhooks({"ops": "http://127.0.0.1:1/x", "pager": {"url": "https://h/y", "secret_env": "S"}})
    assert hooks["pager"].secret_env == "S"


# ------------------------------------------------------------------------------------------------ metrics, store
def test_metrics_endpoint_serves_prometheus_text() -> None:
    reg = Registry()
    reg.inc("hcep_events_total", 5)
    reg.set("hcep_runs_alive", 3, {"query": "Q1"})
    server = MetricsServer(reg, 0).start()
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read().decode()
    finally:
        server.stop()
    assert "# TYPE hcep_events_total counter" in text and "hcep_events_total 5" in text
    assert 'hcep_runs_alive{query="Q1"} 3' in text


def test_store_checkpoint_is_atomic_and_ignores_known_ids(tmp_path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    alert = ("id1", "Q", "ops", "warning", '{"status": "firing"}', "pending", 0.0, 0.0, "0", "fp1", "firing", 5.0, None)
    batch = Batch(
        [("id1", "Q", "p", 1.0, 0.0, 1.0, "{}", 0.0, "0")],
        [alert],
        [],
        [OffsetRow("g", "t", 0, 10, 4, 2.0, "0", 1)],
        CheckpointRow("i", 1, [1, 0, 0, 3, 0], 5.0, [["t", 0]]),
        alert_state=("i", '{"now": 5.0, "groups": []}', "0"),
    )
    assert store.commit(batch) == 1
    assert store.alert_state("i") == {"now": 5.0, "groups": []}
    assert store.open_alerts() == [{"status": "firing"}]
    resolved = (
        "id2",
        "Q",
        "ops",
        "warning",
        '{"status": "resolved"}',
        "pending",
        0.0,
        9.0,
        "0",
        "fp1",
        "resolved",
        5.0,
        7.0,
    )
    assert store.commit(Batch([], [resolved], [], [], None)) == 1
    assert store.open_alerts() == []  # the latest transition of fp1 resolved it
    assert store.commit(Batch([], [alert], [], [], None)) == 0
    assert store.offset("g", "t", 0).rebuild_from == 4
    assert store.checkpoint("i").released == [1, 0, 0, 3, 0]
    assert [row[0] for row in store.due_alerts("0", 1.0)] == ["id1", "id2"]
    store.mark_delivered(["id1"], 2.0)
    assert store.counts()["alerts_delivered"] == 1


def test_store_migrates_a_version_1_store(tmp_path) -> None:
    """A store written before the alert-transition columns (user_version 0/1) gains them, keeping its rows."""
    import sqlite3

    from app.store import SCHEMA_VERSION

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE alerts (id TEXT PRIMARY KEY, query TEXT NOT NULL, webhook TEXT NOT NULL, severity TEXT,"
        " alert TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at REAL NOT NULL,"
        " created_at REAL NOT NULL, delivered_at REAL, last_error TEXT, owner TEXT NOT NULL);"
        "INSERT INTO alerts (id, query, webhook, alert, status, next_at, created_at, owner)"
        " VALUES ('old', 'Q6', 'ops', '{}', 'delivered', 0, 0, '0');"
    )
    db.commit()
    db.close()
    store = Store(str(path))
    assert store.schema_version() == SCHEMA_VERSION
    assert [r["id"] for r in store.alert_rows()] == ["old"]
    cols = {row[1] for row in store.db.execute("PRAGMA table_info(alerts)")}
    assert {"fingerprint", "state", "starts_at", "ends_at"} <= cols
    assert store.alert_state("x") is None


# ------------------------------------------------------------------------------------------------ hcep run options
def test_run_settings_precedence(tmp_path, monkeypatch) -> None:
    import argparse

    import pytest

    from app.commands import CommandError
    from app.commands.run import build_config, configure
    from engine.language.packs import parse_pack

    pack = parse_pack(
        "pack: p\nsettings:\n  allowed_lateness: 4\n  webhooks: {ops: 'http://127.0.0.1:1/pack', pager: 'http://x/y'}\n"
        "queries:\n  - name: Q\n    alert: {severity: info, webhook: ops}\n"
        "    query: PATTERN SEQ(A a, B b) WITHIN 1 s\n"
    )
    config = tmp_path / "hcep.yaml"
    config.write_text("bootstrap: kafka-1:9092,kafka-2:9092\nmax-delta: 3\nwebhooks: {ops: 'http://127.0.0.1:2/cfg'}\n")
    parser = argparse.ArgumentParser()
    configure(parser)
    monkeypatch.delenv("HCEP_BOOTSTRAP", raising=False)
    cfg = build_config(
        parser.parse_args(
            [
                "--pack",
                "x",
                "--config",
                str(config),
                "--max-delta",
                "5",
                "--webhook",
                "pager=http://127.0.0.1:3/cli",
                "--broadcast",
                "",
            ]
        ),
        pack,
    )
    assert cfg.bootstrap == "kafka-1:9092,kafka-2:9092" and cfg.max_delta == 5.0 and cfg.allowed_lateness == 4.0
    assert cfg.webhooks["ops"].url == "http://127.0.0.1:2/cfg" and cfg.webhooks["pager"].url.endswith(":3/cli")
    assert cfg.broadcast_topics == [] and cfg.shared_topics == ["hcep.events.hadoop"]
    config.write_text("bootstrap_servers: x\n")
    with pytest.raises(CommandError, match="unknown setting"):
        build_config(parser.parse_args(["--pack", "x", "--config", str(config)]), pack)
    with pytest.raises(CommandError, match="NAME=URL"):
        build_config(parser.parse_args(["--pack", "x", "--webhook", "nourl"]), pack)


def test_alert_states_of_a_silent_process_are_adopted_once(tmp_path) -> None:
    """The open alerts of a process that died live on in the one that took its partitions (and only in one)."""
    store = Store(str(tmp_path / "s.sqlite"))
    state = '{"now": 9.0, "groups": [["R", ["j1"], {"status": "firing"}]]}'
    store.commit(Batch([], [], [], [], None, alert_state=("instance:g/b", state, "b")))
    store.commit(Batch([], [], [], [], None, alert_state=("instance:g/a", '{"now": 1.0, "groups": []}', "a")))
    store.heartbeat("b", 100.0)
    store.heartbeat("a", 129.0)
    assert store.adopt_alert_states("a", 120.0, 30.0) == []  # b spoke 20 s ago: still alive
    got = store.adopt_alert_states("a", 131.0, 30.0)
    assert got == [{"now": 9.0, "groups": [["R", ["j1"], {"status": "firing"}]]}]
    assert store.adopt_alert_states("c", 131.0, 30.0) == []  # taken: nobody adopts it twice
    assert store.alert_state("instance:g/a") is not None  # a live process's state is never taken
