"""``feed_many`` and :class:`engine.onepass.PackFeeder` output exactly what feeding every event to every
matcher in turn outputs (the same records in the same order), on the Hadoop pack and on random mixed packs."""

from __future__ import annotations

import random

import pytest

from engine import Event, compile_query
from engine.evaluate import PackFeeder, make_matcher
from engine.language.packs import load_pack
from engine.runtime.matcher import OutOfOrderError, sort_events
from tests.queries.test_hadoop_pack import HANDCHECK, PACK, SAMPLE, compiled, read_events

TICK = 1.0

MIXED = [
    ("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 12 s", "skip_till_any_match", "all", 0.0),
    ("PATTERN SEQ(A a, B b, C c) WHERE [k] WITHIN 10 s RETURN a.k AS k", "skip_till_any_match", "distinct", 0.3),
    ("PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 15 s", "skip_till_any_match", "collapsed", 0.0),
    ("PATTERN SEQ(A a, B+ b[]) WHERE [k] WITHIN 10 s RETURN sum(b[].v) AS s", "skip_till_next_match", "all", 0.0),
    ("PATTERN SEQ(A a, ~D d, C c) WITHIN 8 s", "skip_till_any_match", "all", 0.0),
    ("PATTERN SEQ(B a, C b) WHERE [k] WITHIN 6 s", "partition_contiguity", "all", 0.0),
    ("PATTERN SEQ(A a, B b) WITHIN 5 s RETURN COUNT(*) AS n", "skip_till_any_match", "all", 0.0),
]


def _sequential(cqs: list, events: list[Event], widest: int) -> list[dict]:
    ms = [make_matcher(cq, widest) for cq in cqs]
    out = [r for ev in events for m in ms for r in m.feed(ev)]
    return out + [r for m in ms for r in m.flush()]


def _fed(cqs: list, events: list[Event], widest: int, chunk: int) -> list[dict]:
    feeder = PackFeeder([make_matcher(cq, widest) for cq in cqs], widest)
    out = []
    for i in range(0, len(events), chunk):
        out.extend(feeder.feed_many(events[i : i + chunk]))
    return out + feeder.flush()


def _random_stream(seed: int, n: int = 120) -> list[Event]:
    rng = random.Random(seed)
    events = []
    for i in range(n):
        etype = rng.choice("AABBBCCDEE")  # E: named by no query
        t = i * 1.5 + rng.random()
        half = rng.choice([0.0, 0.5, 1.0, 3.0])
        attrs = {"v": rng.randint(0, 5)}
        if etype != "D" and rng.random() < 0.8:
            attrs["k"] = rng.randint(1, 3)
        events.append(Event(etype, t, attrs, id=f"e{i}", seq=i, lo=t - half, hi=t + half, tick=TICK))
    return sort_events(events)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_pack_feeder_equals_feeding_every_matcher(seed: int, chunk: int) -> None:
    events = _random_stream(seed)
    widest = max(e.thi - e.tlo for e in events)
    cqs = [
        compile_query(q, name=f"q{i}", strategy=s, output=o, confidence=c, tick=TICK)
        for i, (q, s, o, c) in enumerate(MIXED)
    ]
    want = _sequential(cqs, events, widest)
    assert want, "the stream should produce records"
    assert _fed(cqs, events, widest, chunk) == want


@pytest.mark.parametrize("seed", range(6))
def test_feed_many_equals_feed(seed: int) -> None:
    events = _random_stream(seed, 200)
    widest = max(e.thi - e.tlo for e in events)
    for i, (q, s, o, c) in enumerate(MIXED):
        cq = compile_query(q, name=f"q{i}", strategy=s, output=o, confidence=c, tick=TICK)
        a = make_matcher(cq, widest)
        want = [r for ev in events for r in a.feed(ev)] + a.flush()
        b = make_matcher(cq, widest)
        if not hasattr(b, "feed_many"):
            continue
        got = [r for j in range(0, len(events), 13) for r in b.feed_many(events[j : j + 13])] + b.flush()
        assert got == want, q


@pytest.mark.parametrize("chunk", [1, 13])
def test_a_one_query_pack_is_fed_through_the_same_loop(chunk: int) -> None:
    """One matcher: the feeder gives the records of feeding it every event, and counts them as it would for
    several."""
    events = _random_stream(3, 200)
    widest = max(e.thi - e.tlo for e in events)
    for i, (q, s, o, c) in enumerate(MIXED):
        cq = compile_query(q, name=f"q{i}", strategy=s, output=o, confidence=c, tick=TICK)
        want = _sequential([cq], events, widest)
        feeder = PackFeeder([make_matcher(cq, widest)], widest)
        got = [r for j in range(0, len(events), chunk) for r in feeder.feed_many(events[j : j + chunk])]
        assert got + feeder.flush() == want, q
        assert feeder.fed == len(events)


@pytest.mark.parametrize("path", [HANDCHECK, SAMPLE])
def test_pack_feeder_on_the_hadoop_pack(path) -> None:
    pack = load_pack(PACK)
    events = sort_events(read_events(path, pack.tick))
    widest = max(e.thi - e.tlo for e in events)
    cqs = compiled(pack)
    assert _fed(cqs, events, widest, 50) == _sequential(cqs, events, widest)


def test_pack_feeder_rejects_out_of_order_like_the_nfa() -> None:
    cq = compile_query("PATTERN SEQ(A a, B b)", strategy="skip_till_next_match", tick=TICK)
    feeder = PackFeeder([make_matcher(cq)])
    feeder.feed(Event("E", 5.0, {}, seq=0, tick=TICK))
    with pytest.raises(OutOfOrderError):
        feeder.feed(Event("E", 4.0, {}, seq=1, tick=TICK))


class ContractOnly:
    """An evaluator seen through :class:`engine.evaluator.Evaluator` alone: any other attribute is an error, so a
    feeder that reads an evaluator's insides (its buffers, its types, its clock fields) fails here."""

    __slots__ = ("_m", "name", "tick", "ordered", "bounds")

    def __init__(self, m: object) -> None:
        self._m = m
        self.name = m.name  # type: ignore[attr-defined]
        self.tick = m.tick  # type: ignore[attr-defined]
        self.ordered = m.ordered  # type: ignore[attr-defined]
        self.bounds = m.bounds  # type: ignore[attr-defined]

    def __getattr__(self, attr: str) -> object:
        if attr in CONTRACT:
            return getattr(self._m, attr)
        raise AttributeError(f"the feeder read {attr!r}, which is not part of the evaluator contract")


CONTRACT = frozenset(
    {
        "feed",
        "feed_many",
        "advance",
        "flush",
        "snapshot",
        "restore",
        "stats",
        "dropped",
        "runs_alive",
        "horizon",
        "set_limits",
        "set_output",
        "wants",
        "due",
        "clock",
        "set_clock",
    }
)


@pytest.mark.parametrize("seed", range(4))
def test_the_feeder_uses_the_evaluator_contract_only(seed: int) -> None:
    """Issue 26 item 1: the one-pass feeder gives the records of feeding every evaluator in turn while it sees each
    only through the contract (and its snapshot restores through it too)."""
    from engine.evaluator import Evaluator

    events = _random_stream(seed, 200)
    widest = max(e.thi - e.tlo for e in events)
    cqs = [
        compile_query(q, name=f"q{i}", strategy=s, output=o, confidence=c, tick=TICK)
        for i, (q, s, o, c) in enumerate(MIXED)
    ]
    want = _sequential(cqs, events, widest)
    wrapped = [ContractOnly(make_matcher(cq, widest)) for cq in cqs]
    assert all(isinstance(w, Evaluator) for w in wrapped)
    feeder = PackFeeder(wrapped, widest)
    got = feeder.feed_many(events[:90])
    again = PackFeeder([ContractOnly(make_matcher(cq, widest)) for cq in cqs], widest)
    again.restore(feeder.snapshot())
    got += again.feed_many(events[90:]) + again.flush()
    assert got == want
