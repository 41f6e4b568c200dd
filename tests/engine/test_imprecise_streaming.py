"""Valid-interval test vectors and arrival out of order within the uncertainty bound."""

from __future__ import annotations

import random

import pytest

from engine import Event, compile_query, match_events
from engine.imprecise.bounds import valid_intervals
from engine.imprecise.evaluator import ImpreciseMatcher

TICK = 1.0


def ev(etype: str, lo: int, hi: int, name: str, seq: int = 0, **attrs) -> Event:
    return Event(etype, (lo + hi) / 2, attrs, id=name, seq=seq, lo=lo, hi=hi, tick=TICK)


def test_valid_intervals_of_the_paper_figure_3() -> None:
    # Fig. 3(a, b): a1 [1,5], b3 [3,5], c2 [3,5] in query order -> a1 [1,3], b3 [3,4], c2 [4,5].
    chain = [ev("A", 1, 5, "a1"), ev("B", 3, 5, "b3"), ev("C", 3, 5, "c2")]
    assert valid_intervals(chain) == [(1, 3), (3, 4), (4, 5)]
    # Fig. 3(c), W = 4: a1, b5, c6 is pruned (c6 cannot be within 4 of a1).
    assert valid_intervals([ev("A", 1, 5, "a1"), ev("B", 2, 3, "b5"), ev("C", 6, 7, "c6")], window=4) is None
    # digest-imprecise 5.1 (derived): (a1, b3, c4) with W = 4 -> a1 [1,4], b3 [3,5], c4 [4,7].
    chain = [ev("A", 1, 5, "a1"), ev("B", 3, 5, "b3"), ev("C", 4, 8, "c4")]
    assert valid_intervals(chain, window=4) == [(1, 4), (3, 5), (4, 7)]
    # Gap I4: a = [1,10], b = [9,10], W = 2 -> the window also lifts a's lower bound.
    assert valid_intervals([ev("A", 1, 10, "a"), ev("B", 9, 10, "b")], window=2) == [(8, 9), (9, 10)]


QUERIES = [
    ("PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 8 s", "all"),
    ("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 10 s RETURN a.k AS k", "distinct"),
    ("PATTERN SEQ(A a, ~D d, C c) WHERE [k]", "all"),
    ("PATTERN SEQ(A a, B+ b[], C c) WHERE [k] RETURN a.k AS k, count(b[].v) AS n", "collapsed"),
    ("PATTERN SEQ(A a, B b, C c) WHERE a.v = c.v AND b.k = c.k WITHIN 8 s", "all"),  # joins, buckets filled late
]


@pytest.mark.parametrize(("query", "output"), QUERIES)
@pytest.mark.parametrize("seed", range(8))
def test_arrival_out_of_order_within_the_bound(query: str, output: str, seed: int) -> None:
    """Events arriving in any order consistent with their intervals (each at some point of its interval) give the
    same records as the sorted stream, once the safe-emit bound ``now.lower - U_max`` has passed."""
    rng = random.Random(seed)
    events = []
    for i in range(14):
        etype = rng.choice("AABBBCCD")
        lo = rng.randint(0, 30)
        events.append(ev(etype, lo, lo + rng.randint(0, 4), f"e{i}", i, k=rng.randint(1, 2), v=rng.randint(0, 3)))
    cq = compile_query(query, output=output, tick=TICK)
    expected = match_events(cq, events)
    arrival = sorted(events, key=lambda e: rng.randint(e.tlo, e.thi))
    m = ImpreciseMatcher(cq, max_uncertainty=max(e.thi - e.tlo for e in events))
    got = [r for e in arrival for r in m.feed(e)] + m.flush()

    def key(r: dict) -> tuple:
        return (tuple((v, tuple(ids)) for v, ids in r["match"].items()), round(r["confidence"], 9))

    if output == "distinct":
        assert {tuple(r["return"].items()): round(r["confidence"], 9) for r in got} == {
            tuple(r["return"].items()): round(r["confidence"], 9) for r in expected
        }
    else:
        assert sorted(map(key, got)) == sorted(map(key, expected))


def test_distinct_without_a_window_waits_for_the_best_signature() -> None:
    events = [ev("A", 0, 3, "a1", 0, v=0), ev("B", 2, 4, "b1", 1), ev("B", 9, 9, "b2", 2)]
    records = match_events(compile_query("PATTERN SEQ(A a, B b) RETURN a.v AS x", output="distinct", tick=TICK), events)
    assert [(r["return"]["x"], r["confidence"]) for r in records] == [(0, 1.0)]


def test_buffers_are_pruned_even_when_every_event_closes_something() -> None:
    m = ImpreciseMatcher(compile_query("PATTERN SEQ(E a, E b) WHERE a.v > 100 WITHIN 10 s", tick=TICK), 0)
    for i in range(5000):
        m.feed(Event("E", float(i), {"v": 0}, seq=i, tick=TICK))
    assert m.runs_alive() < 2000  # buffered events: a window's worth plus one pruning period, not the whole stream
