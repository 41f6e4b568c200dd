"""pSPICE inside ``hcep run``: a pack with ``settings.shedding`` sheds partial matches when events wait longer than the
latency bound, counts them in the metrics and the store's ``query_stats``, and never reports a match the unshed
engine would not (no false positives).  Real broker; the overload is a backlog published before the service starts."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
from pathlib import Path

from tests.pipeline.conftest import Broker, free_port, run_command, scrape, start_service, wait_until

BASE = 1_700_000_000.0
QUERY = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND c.v > 2 * avg(b[].v) WITHIN 60 s"
N_EVENTS = 12_000


def _pack(path: Path, shedding: dict) -> Path:
    import yaml

    pack = {
        "pack": "shed",
        "tick": 0.01,
        "settings": {"shedding": shedding},
        "queries": [{"name": "S", "strategy": "skip_till_next_match", "output": "all", "query": QUERY}],
    }
    path.write_text(yaml.safe_dump(pack))
    return path


def _events(n: int, seed: int = 3) -> list[dict]:
    """Many A's per key start many runs; B's extend them, rare big C's close some."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = rng.random()
        etype = "A" if r < 0.3 else "B" if r < 0.93 else "C"
        v = rng.uniform(1, 10) if etype != "C" else rng.uniform(5, 40)
        out.append(
            {
                "type": etype,
                "ts": round(BASE + i * 0.01, 2),
                "delta": 0.0,
                "id": f"e{i}",
                "k": f"k{rng.randrange(8)}",
                "v": round(v, 3),
            }
        )
    return out


def _scrape(port: int) -> dict[str, float]:
    """The service's metrics; empty while its endpoint is not up yet."""
    try:
        return scrape(port)
    except OSError:
        return {}


def _signatures(records: list[dict]) -> set[tuple]:
    return {tuple(sorted((var, tuple(sorted(ids))) for var, ids in r["match"].items())) for r in records}


def test_service_sheds_under_backlog_without_false_positives(kafka_broker: Broker, tmp_path: Path) -> None:
    from app import kafka_io
    from app.publish import publish
    from engine import compile_query, match_events
    from engine.events import event_from_json

    prefix = "shed"
    events = _events(N_EVENTS)
    pack = _pack(tmp_path / "shed.yaml", {"enabled": True, "latency_bound_ms": 50, "min_observations": 50})
    kafka_io.ensure_topics(kafka_broker.bootstrap, {f"{prefix}.events": 2, f"{prefix}.bcast": 1})
    assert publish(events, kafka_broker.bootstrap, "x", topic=f"{prefix}.events", pack=50) == N_EVENTS

    port = free_port()
    data = tmp_path / "data"
    cmd = run_command(
        kafka_broker.bootstrap,
        str(pack),
        data,
        topics=f"{prefix}.events",
        broadcast=f"{prefix}.bcast",
        group=prefix,
        metrics_port=port,
        extra=["--max-delta", "0", "--allowed-lateness", "0"],
        shedding=True,
    )
    proc = start_service(cmd, tmp_path / "run.log")
    try:
        wait_until(
            lambda: _scrape(port).get("hcep_engine_events_total", 0) >= N_EVENTS, 120, "every event fed to the engine"
        )
        wait_until(lambda: _scrape(port).get('hcep_shed_runs_total{query="S"}', 0) > 0, 30, "a shed counter")
        metrics = _scrape(port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert metrics["hcep_shed_latency_bound_seconds"] == 0.05

    db = sqlite3.connect(data / "hcep.sqlite")
    got = [json.loads(r[0]) for r in db.execute("SELECT record FROM matches WHERE query = 'S'")]
    stats = db.execute("SELECT query, MAX(shed) FROM query_stats GROUP BY query").fetchall()
    db.close()
    assert stats and stats[0][0] == "S" and stats[0][1] == metrics['hcep_shed_runs_total{query="S"}']

    cq = compile_query(QUERY, name="S", strategy="skip_till_next_match", tick=0.01)
    reference = match_events(cq, [event_from_json(e, i, 0.01) for i, e in enumerate(events)])
    assert _signatures(got) <= _signatures(reference), "shedding produced a match the full engine does not"
    assert len(got) < len(reference), "the backlog should have cost some matches"
