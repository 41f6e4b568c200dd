"""The engine's event-based evaluator against the point-based framework (tests/point_based.py), skip_till_any_match.

Two independent routes to semantics section 3: the engine enumerates signatures over interval events and computes each
confidence by a DP over ticks; the point-based framework expands every event into its points, runs an S3 NFA over the
points and sums Eq. 1 per signature.  They must agree on the signatures, the confidences (to 1e-9) and the time ranges.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Event, compile_query, match_events
from engine.language.parser import parse_query
from tests.point_based import PointBasedMatcher, expand, point_based
from tests.strategies import by_signature

TICK = 1.0
#: Where each type's interval may start: roughly in pattern order with overlaps, so that most streams match.
LO_RANGE = {"A": (0, 4), "B": (1, 7), "C": (4, 9), "D": (1, 7)}

QUERIES = [
    "PATTERN SEQ(A a, B b, C c)",
    "PATTERN SEQ(A a, B b, C c) WITHIN 3 s",
    "PATTERN SEQ(A a, B+ b[], C c)",
    "PATTERN SEQ(A a, B+ b[], C c) WITHIN 4 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > 1",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > b[i-1].v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > max(b[..i-1].v) WITHIN 5 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE c.v < max(b[].v)",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= avg(b[..i-1].v)",
    "PATTERN SEQ(A a, B+ b[])",
    "PATTERN SEQ(A a, B+ b[]) WHERE b[b.len].v >= b[1].v WITHIN 5 s",
    "PATTERN SEQ(A a, A b) WHERE b.v >= a.v",
    "PATTERN SEQ(A+ a[], B b) WHERE a[i].v <= b.v",
    "PATTERN SEQ(A a, ~D d, C c)",
    "PATTERN SEQ(A a, ~D d, C c) WHERE d.v > a.v WITHIN 6 s",
    "PATTERN SEQ(A a, B+ b[], ~D d, C c)",
    "PATTERN SEQ(A a, B b, C c) WHERE [k]",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v >= a.v",
]


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    """2-5 events, each with an interval of 1-5 points; the first is likely an A, the last a C (more matches)."""
    n = draw(st.integers(2, 5))
    events = []
    for i in range(n):
        etype = draw(st.sampled_from("AAAB" if i == 0 else "BCCCD" if i == n - 1 else "ABBBCD"))
        lo = draw(st.integers(*LO_RANGE[etype]))
        width = draw(st.integers(0, 4))
        attrs = {"v": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            attrs["k"] = draw(st.integers(1, 2))
        events.append(
            Event(etype, lo + width / 2, attrs, id=f"e{i}", seq=i, lo=float(lo), hi=float(lo + width), tick=TICK)
        )
    return events


def _agree(query: str, events: list[Event], threshold: float = 0.0) -> None:
    """Same signatures, confidences and time ranges; a signature within 1e-9 of the threshold may go either way."""
    parsed = parse_query(query, "q")
    want = by_signature(point_based(parsed, events, tick=TICK))
    got = by_signature(match_events(compile_query(parsed, confidence=threshold, tick=TICK), events))
    borderline = {k for k, r in want.items() if abs(r["confidence"] - threshold) <= 1e-9}
    want = {k: r for k, r in want.items() if r["confidence"] >= threshold or k in got and k in borderline}
    assert set(got) == set(want), (query, events)
    for key, rec in got.items():
        ref = want[key]
        assert math.isclose(rec["confidence"], ref["confidence"], abs_tol=1e-9), (query, events, key, rec, ref)
        assert (rec["start"], rec["end"]) == (ref["start"], ref["end"]), (query, events, key, rec, ref)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(QUERIES), events=streams(), threshold=st.sampled_from([0.0, 0.0, 0.0, 0.25]))
def test_engine_equals_point_based(query: str, events: list[Event], threshold: float) -> None:
    _agree(query, events, threshold)


def _ev(etype: str, lo: int, hi: int, i: int, **attrs: int) -> Event:
    return Event(etype, (lo + hi) / 2, attrs, id=f"{etype.lower()}{i}", seq=i, lo=lo, hi=hi, tick=TICK)


def test_expansion_is_uniform_over_the_interval() -> None:
    points = expand(_ev("A", 3, 7, 1))
    assert [p.t for p in points] == [3, 4, 5, 6, 7]
    assert math.isclose(sum(p.p for p in points), 1.0)


def test_worked_example_of_the_imprecise_paper() -> None:
    """digest-imprecise 3.3: (a1,b3,c2) 25/225 over [1,5], (a1,b3,c4) 27/225 over [1,7] with W = 4."""
    events = [_ev("A", 1, 5, 1), _ev("C", 3, 5, 2), _ev("B", 3, 5, 3), _ev("C", 4, 8, 4)]
    query = "PATTERN SEQ(A a, B b, C c) WITHIN 4 s"
    for records in (point_based(query, events, tick=TICK), match_events(compile_query(query, tick=TICK), events)):
        got = {r["match"]["c"][0]: r for r in records}
        assert set(got) == {"c2", "c4"}
        assert math.isclose(got["c2"]["confidence"], 25 / 225) and (got["c2"]["start"], got["c2"]["end"]) == (1, 5)
        assert math.isclose(got["c4"]["confidence"], 27 / 225) and (got["c4"]["start"], got["c4"]["end"]) == (1, 7)
    _agree(query, events)


def test_dp_vector_of_the_sasepp_digest() -> None:
    """digest-sasepp 6.4: a=[1,3], b1=[2,4], b2=[3,5], c=[5,7].

    Singletons: 2/3 and 7/9; with "last - first < 5": 10/27 and 4/9.  The set {b1, b2} is a signature whose worlds
    include both orders of b1 and b2: 8/27 (b1 < b2, the digest's figure) + 2/27 (b2 < b1) = 10/27 without the window,
    3/27 + 1/27 = 4/27 with it.  Threshold 0.5 keeps {b1} and {b2} only."""
    events = [_ev("A", 1, 3, 1), _ev("B", 2, 4, 1), _ev("B", 3, 5, 2), _ev("C", 5, 7, 1)]
    plain = {tuple(r["match"]["b"]): r["confidence"] for r in point_based("PATTERN SEQ(A a, B+ b[], C c)", events)}
    assert math.isclose(plain[("b1",)], 2 / 3) and math.isclose(plain[("b2",)], 7 / 9)
    assert math.isclose(plain[("b1", "b2")], 10 / 27)
    windowed = {
        tuple(r["match"]["b"]): r["confidence"] for r in point_based("PATTERN SEQ(A a, B+ b[], C c) WITHIN 5 s", events)
    }
    assert math.isclose(windowed[("b1",)], 10 / 27) and math.isclose(windowed[("b2",)], 4 / 9)
    assert math.isclose(windowed[("b1", "b2")], 4 / 27)
    # Correlated order (b[i] after b[i-1] in value as in time): only the worlds with b1 < b2 count -> 8/27.
    ordered = [_ev("A", 1, 3, 1), _ev("B", 2, 4, 1, v=1), _ev("B", 3, 5, 2, v=2), _ev("C", 5, 7, 1)]
    rising = {
        tuple(r["match"]["b"]): r["confidence"]
        for r in point_based("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > b[i-1].v", ordered)
    }
    assert math.isclose(rising[("b1", "b2")], 8 / 27)
    pruned = point_based("PATTERN SEQ(A a, B+ b[], C c)", events, threshold=0.5)
    assert sorted(tuple(r["match"]["b"]) for r in pruned) == [("b1",), ("b2",)]
    for query in ("PATTERN SEQ(A a, B+ b[], C c)", "PATTERN SEQ(A a, B+ b[], C c) WITHIN 5 s"):
        _agree(query, events)
        _agree(query, events, threshold=0.5)
    _agree("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > b[i-1].v", ordered)


def test_id_check_and_streaming_emission() -> None:
    """One event never fills two components; signatures come out once their last point is safe."""
    events = [_ev("A", 0, 2, 1, v=1), _ev("A", 1, 3, 2, v=2), _ev("A", 10, 10, 3, v=3)]
    m = PointBasedMatcher("PATTERN SEQ(A a, A b) WITHIN 5 s", tick=TICK, max_uncertainty=2)
    out = m.feed(events[0]) + m.feed(events[1])
    assert out == []  # nothing is safe yet
    out += m.feed(events[2])  # now = 10, points < 8 are safe: both signatures over a1/a2 are final
    sigs = {(r["match"]["a"][0], r["match"]["b"][0]): r["confidence"] for r in out}
    # a1 < a2: 3*3 = 9 worlds, pairs t1 < t2: (0,1..3), (1,2..3), (2,3) = 6; a2 < a1: (1,2), = 1.
    assert math.isclose(sigs[("a1", "a2")], 6 / 9) and math.isclose(sigs[("a2", "a1")], 1 / 9)
    assert all(a != b for a, b in sigs)
    assert m.flush() == []
