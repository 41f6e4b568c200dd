"""``hcep run`` dead-letters bad numbers (counted, with a reason naming the offset) instead of crashing (issue 18).

The service's ingest step is driven directly with fake Kafka records: no broker is needed to show that a huge,
infinite or NaN time, an absurd delta or an oversized integer goes to the dead letters, on both of its paths (the
events the queries read, built by the fast parser, and the types no query reads, only clocked)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from app.service import Service, ServiceConfig
from engine.language.packs import parse_pack

PACK = """
pack: t
tick: 0.1
queries:
  - name: q
    query: PATTERN SEQ(A a, B b) WITHIN 1 minute
"""

BAD = [
    b'{"type": "A", "ts": 1e308}',
    b'{"type": "A", "ts": NaN}',  # orjson rejects NaN: invalid JSON
    b'{"type": "A", "ts": 5, "delta": 1e300}',
    b'{"type": "A", "ts": 5, "delta": -1}',
    b'{"type": "A", "ts": 5, "lo": 6, "hi": 4}',
    b'{"type": "A", "ts": 99999999999.9, "delta": 0.5}',
    b'{"type": "A", "ts": 1' + b"0" * 400 + b"}",
    b'{"type": "Other", "ts": 1e308}',  # a type no query reads: the clock-only path
    b'{"type": "Other", "ts": 5, "delta": 1e300}',
    b'{"type": "Other", "ts": 1' + b"0" * 400 + b"}",
    b'{"type": {"a": 1}, "ts": 1}',  # an object as the type: TypeError in the clock-only path (fuzzing)
    b'{"type": "A", "ts": 5, "delta": 100}',  # too wide for max_delta 7.5
]


def test_bad_numbers_are_dead_lettered_not_fatal(tmp_path: Path) -> None:
    pack = parse_pack(PACK, "t.yaml")
    cfg = ServiceConfig(
        pack="t.yaml",
        bootstrap="unused:9092",
        data_dir=str(tmp_path),
        metrics_port=None,
        shared_topics=["t"],
        broadcast_topics=[],
        matches_topic=None,
        shedding=False,
    )
    svc = Service(cfg, pack)
    tp = ("t", 0)
    svc.assignment = {tp}
    svc.position[tp] = 0
    svc.replayed_until[tp] = 0
    svc.skip[tp] = set()
    svc.wm.add(tp, 0, 0, 0, float("-inf"), 0.0)
    svc.epoch_active = True
    good = b'{"type": "A", "ts": 10.0, "delta": 0.5}'
    records = [
        SimpleNamespace(topic="t", partition=0, offset=i, value=v, timestamp=0) for i, v in enumerate([good, *BAD])
    ]
    packed = SimpleNamespace(topic="t", partition=0, offset=len(records), value=b"\n".join(BAD), timestamp=0)
    assert svc._ingest([*records, packed]) == len(records) + 1
    dead = svc.pending_dead
    assert len(dead) == 2 * len(BAD)
    assert {(d[2], d[3]) for d in dead[: len(BAD)]} == {(i, 0) for i in range(1, len(BAD) + 1)}
    assert {(d[2], d[3]) for d in dead[len(BAD) :]} == {(len(records), i) for i in range(len(BAD))}
    assert svc.metrics.total("hcep_deadletter_total") == 2 * len(BAD)
    reasons = [d[4] for d in dead[: len(BAD)]]
    assert reasons[-1] == "too_wide"
    assert all(r.startswith("invalid: ") for r in reasons[:-1]), reasons
    svc.store.close() if hasattr(svc.store, "close") else None
