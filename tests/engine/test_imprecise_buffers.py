"""The possible-worlds evaluator's type buffers prune only the band of lower bounds where an event may or may not
reach the floor (``TypeBuffer.prune``): what is left, in the type buffer, its key index and its attribute index, in
their order, is what a plain filter of every event (``thi >= floor``) leaves."""

from __future__ import annotations

import random

import pytest

from engine.events import Event
from engine.imprecise.buffers import TypeBuffer


def _events(rng: random.Random, n: int) -> list[Event]:
    out = []
    ts = 0.0
    for i in range(n):
        ts += rng.choice([0.0, 0.1, 0.5, 1.0, 3.0])
        delta = rng.choice([0.0, 0.0, 0.5, 2.0, 7.5])
        jitter = rng.choice([0.0, 0.0, -4.0, -9.0])  # some arrive late: inserted before the end
        attrs = {"host": rng.choice(["h1", "h2", "h3", None]), "k": rng.choice([1, 2, 3, None])}
        out.append(Event("X", max(0.0, ts + jitter) + 10, attrs, seq=i, tick=0.1, lo=None, hi=None))
        e = out[-1]
        e.lo, e.hi = e.ts - delta, e.ts + delta
        e.tlo, e.thi = round(e.lo / 0.1), round(e.hi / 0.1)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_prune_keeps_exactly_the_events_that_reach_the_floor(seed: int) -> None:
    rng = random.Random(seed)
    buf = TypeBuffer("k")
    buf.index_on("host")
    added: list[Event] = []
    for e in _events(rng, 400):
        buf.add(e)
        added.append(e)
        if rng.random() < 0.05:
            floor = buf.los[len(buf.los) // 2] + rng.choice([-80, -5, 0, 3, 40]) if buf.los else 0
            expected_order = [x for x in buf.events if x.thi >= floor]
            buf.prune(floor)
            assert buf.events == expected_order
            assert buf.los == [x.tlo for x in expected_order]
            left = set(map(id, expected_order))
            for index in (buf.keyed, *buf.by_attr.values()):
                for sub in index.values():
                    assert sub.events and all(id(x) in left for x in sub.events)
                    assert sub.los == [x.tlo for x in sub.events] == sorted(sub.los)
                    assert len(sub.arrs) == len(sub.events)
            assert sum(len(sub.events) for sub in buf.keyed.values()) == len(expected_order)
            by_host = [x for x in expected_order if x.attrs.get("host") is not None]
            assert sum(len(sub.events) for sub in buf.by_attr["host"].values()) == len(by_host)
