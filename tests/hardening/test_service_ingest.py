"""``hcep run`` dead-letters bad numbers (counted, with a reason naming the offset) instead of crashing (issue 18).

The service runs over the in-memory source (app.stream.memory): no broker is needed to show that a huge,
infinite or NaN time, an absurd delta or an oversized integer goes to the dead letters, on both of its paths (the
events the queries read, built by the fast parser, and the types no query reads, only clocked)."""

from __future__ import annotations

from pathlib import Path

from app.store import Store, store_path
from app.stream import Service, ServiceConfig
from app.stream.memory import MemoryBroker, MemorySource
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
    broker = MemoryBroker()
    broker.create("t", 1)
    good = b'{"type": "A", "ts": 10.0, "delta": 0.5}'
    for value in [good, *BAD]:
        broker.append("t", value)
    broker.append("t", b"\n".join(BAD))  # one packed message
    svc = Service(cfg, pack, source=MemorySource(broker, ["t"]))
    svc.start()
    try:
        while svc.epoch.position.get(("t", 0), 0) < len(BAD) + 2:
            svc.step()
        assert svc.metrics.total("hcep_deadletter_total") == 2 * len(BAD)
        assert svc.metrics.total("hcep_events_total") == 2 * len(BAD) + 1
        svc.finish()
    finally:
        svc.close()
    store = Store(store_path(str(tmp_path)))
    dead = store.db.execute('SELECT "offset", idx, reason FROM deadletter ORDER BY "offset", idx').fetchall()
    store.close()
    assert [(o, i) for o, i, _r in dead] == [(i, 0) for i in range(1, len(BAD) + 1)] + [
        (len(BAD) + 1, i) for i in range(len(BAD))
    ]
    reasons = [r for _o, _i, r in dead[: len(BAD)]]
    assert reasons[-1] == "too_wide"
    assert all(r.startswith("invalid: ") for r in reasons[:-1]), reasons
