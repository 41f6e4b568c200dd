"""PackRunner.of: the one driver built from compiled queries (no pack object) gives the records a pack-built runner
gives, and feed_many gives the records of feed on each event in turn (issue 26: one driver)."""

from __future__ import annotations

import random

from engine.evaluate import PackRunner
from engine.events import Event
from engine.language.packs import parse_pack
from engine.limits import Limits
from engine.plan.compiler import compile_spec

PACK = """
pack: p
tick: 0.01
queries:
  - name: S
    strategy: skip_till_next_match
    query: PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND c.v > 2 * avg(b[].v) WITHIN 60 s
  - name: N
    strategy: skip_till_next_match
    query: PATTERN SEQ(A a, !D d, C c) WHERE [k] WITHIN 60 s
  - name: I
    strategy: skip_till_any_match
    query: PATTERN SEQ(A a, C c) WHERE [k] WITHIN 2 s
"""


def _events(n: int) -> list[Event]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        etype = rng.choice("AABBBBBBCDE")
        v = rng.uniform(1, 10) if etype != "C" else rng.uniform(5, 40)
        out.append(Event(etype, i * 0.01, {"k": rng.randrange(4), "v": v}, id=f"e{i}", seq=i + 1, tick=0.01))
    return out


def _ids(pairs: list) -> list:
    return [(spec.name, rec) for spec, rec in pairs]


def test_of_matches_the_pack_runner_and_feed_many_matches_feed() -> None:
    pack = parse_pack(PACK)
    events = _events(600)
    by_pack = PackRunner(pack, 0, shedding=False)
    want = [p for ev in events for p in by_pack.feed(ev)] + by_pack.flush()
    assert want
    cqs = [compile_spec(q, pack.tick) for q in pack.queries]
    one = PackRunner.of(cqs, 0)
    assert _ids([p for ev in events for p in one.feed(ev)] + one.flush()) == _ids(want)
    many = PackRunner.of(cqs, 0, specs=list(pack.queries))
    got = many.feed_many(events[:250]) + many.feed_many(events[250:]) + many.flush()
    assert _ids(got) == _ids(want)
    assert all(spec in pack.queries for spec, _ in got)
    assert many.runs_alive().keys() == {"S", "N", "I"}
    assert many.limits == Limits()


def test_of_applies_limits_and_restores_its_snapshot() -> None:
    pack = parse_pack(PACK)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries]
    events = _events(600)
    tight = PackRunner.of(cqs, 0, limits=Limits(runs_per_key=2, runs=4))
    tight.feed_many(events)
    assert sum(tight.limit_drops().values()) > 0
    a = PackRunner.of(cqs, 0)
    first = a.feed_many(events[:300])
    b = PackRunner.of(cqs, 0)
    b.restore(a.snapshot())
    assert _ids(first + b.feed_many(events[300:]) + b.flush()) == _ids(first + a.feed_many(events[300:]) + a.flush())


def test_fresh_runners_start_empty_and_run_as_built_ones() -> None:
    """PackRunner.fresh (the Spark operator's new groups) gives what a newly built runner gives, with its own state:
    feeding one copy leaves the runner it came from, and the next copy, as they were."""
    pack = parse_pack(PACK)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries]
    events = _events(600)
    template = PackRunner.of(cqs, 3, limits=Limits(50, None), increments=True, specs=list(pack.queries))
    empty = template.snapshot()
    built = PackRunner.of(cqs, 3, limits=Limits(50, None), increments=True, specs=list(pack.queries))
    want = _ids([p for ev in events for p in built.feed(ev)] + built.flush())
    assert want
    first = template.fresh()
    assert first.snapshot() == empty and first.matchers is not template.matchers
    assert _ids([p for ev in events for p in first.feed(ev)] + first.flush()) == want
    assert first.limit_drops() == built.limit_drops() and first.types == built.types
    assert first.dropped() == sum(built.limit_drops().values())
    assert first.feeder.routes is template.feeder.routes  # decided once for the queries, shared by the copies
    assert template.snapshot() == empty
    third = first.fresh()  # a copy of a runner fed already: nothing of its state
    assert third.snapshot() == empty
    assert _ids([p for ev in events for p in third.feed(ev)] + third.flush()) == want
    second = template.fresh()
    assert second.snapshot() == empty
    half = [p for ev in events[:300] for p in second.feed(ev)]
    again = PackRunner.of(cqs, 3, limits=Limits(50, None), increments=True, specs=list(pack.queries))
    again.restore(second.snapshot())
    assert _ids(half + [p for ev in events[300:] for p in again.feed(ev)] + again.flush()) == want
