"""Exact confidence on wide intervals (issue 18): the segment sweep of :mod:`engine.imprecise.segments` against the
possible-worlds oracle, against the tick DP, and against closed forms at a million ticks.

The sweep's window handling sums a polynomial over ranges of first points by interpolation once a range is longer than
``n + 1`` points, so intervals of 10-20 points already exercise every path of it; the brute force stays small."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Event, compile_query, match_events
from engine.imprecise import confidence, segments
from engine.language.parser import parse_query
from tests.engine import test_imprecise_vs_worlds as vs_worlds
from tests.possible_worlds import possible_worlds
from tests.strategies import by_signature

TICK = 1.0


@pytest.fixture
def segments_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every signature without negation candidates through the segment sweep; a broken interpolation fails."""
    monkeypatch.setattr(confidence, "METHOD", "segments")
    monkeypatch.setattr(segments, "STRICT", True)


# ------------------------------------------------------------------ the existing differential tests, by segments


def test_all_signatures_by_segments(segments_only: None) -> None:
    vs_worlds.test_all_signatures_with_exact_confidence()


def test_distinct_by_segments(segments_only: None) -> None:
    vs_worlds.test_distinct_carries_the_best_confidence_per_value()


def test_collapsed_by_segments(segments_only: None) -> None:
    vs_worlds.test_collapsed_is_the_union_per_singleton_assignment()


def test_worked_examples_by_segments(segments_only: None) -> None:
    vs_worlds.test_worked_examples_of_the_digests()


# ------------------------------------------------------------------ wider intervals against the possible worlds

WIDE_QUERIES = [
    "PATTERN SEQ(A a, B b) WITHIN 4 s",
    "PATTERN SEQ(A a, B b) WITHIN 17 s",
    "PATTERN SEQ(A a, B b, C c) WITHIN 6 s",
    "PATTERN SEQ(A a, B b, C c) WITHIN 25 s",
    "PATTERN SEQ(A a, B b, C c)",
    "PATTERN SEQ(A a, B+ b[], C c) WITHIN 7 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 9 s",
    "PATTERN SEQ(A a, B+ b[]) WHERE b[b.len].v > b[1].v WITHIN 8 s",
    "PATTERN SEQ(A+ a[], B b) WITHIN 5 s",
    "PATTERN SEQ(A a, B b, C c) WHERE c.v > a.v WITHIN 10 s",
]


@st.composite
def wide_streams(draw: st.DrawFn) -> list[Event]:
    """2-4 events over intervals of up to 70 points (at most ~6,000 worlds), starting anywhere in 0..30."""
    n = draw(st.sampled_from([2, 2, 3, 3, 4]))
    events = []
    worlds = 1
    for i in range(n):
        etype = draw(st.sampled_from("AABBCC"))
        lo = draw(st.integers(0, 30))
        cap = max(0, min(69, 6000 // worlds - 1))
        width = draw(st.integers(0, cap))
        worlds *= width + 1
        events.append(
            Event(
                etype,
                lo + width / 2,
                {"v": draw(st.integers(0, 2))},
                id=f"e{i}",
                seq=i,
                lo=float(lo),
                hi=float(lo + width),
                tick=TICK,
            )
        )
    return events


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(WIDE_QUERIES), events=wide_streams())
def test_wide_intervals_against_possible_worlds(query: str, events: list[Event]) -> None:
    ast_query = parse_query(query, "q")
    expected = {k: v for k, v in possible_worlds(ast_query, events, TICK).items() if v.confidence > 1e-12}
    for forced in (False, True):
        confidence.METHOD = "segments" if forced else "auto"
        segments.STRICT = True
        try:
            got = by_signature(match_events(compile_query(ast_query, tick=TICK), events))
        finally:
            confidence.METHOD = "auto"
            segments.STRICT = False
        assert set(got) == set(expected), (query, events)
        for key, rec in got.items():
            want = expected[key]
            assert math.isclose(rec["confidence"], want.confidence, abs_tol=1e-9), (key, rec, want)
            assert (rec["start"], rec["end"]) == (want.first_tick * TICK, want.last_tick * TICK), (key, rec, want)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    data=st.data(),
    shape=st.sampled_from(
        ["SEQ(A a, B b)", "SEQ(A a, B b, C c)", "SEQ(A a, B+ b[])", "SEQ(A a, B+ b[], C c)", "SEQ(A+ a[], B b)"]
    ),
    window=st.integers(2, 45),
)
def test_wide_windows_against_possible_worlds(data: st.DataObject, shape: str, window: int) -> None:
    """Events in pattern order over wide intervals with a window shorter than them: the window's ranges of first
    points are long, so their sums come from interpolation."""
    query = f"PATTERN {shape} WITHIN {window} s"
    ast_query = parse_query(query, "q")
    types = [c.type for c in ast_query.components for _ in range(2 if c.kleene else 1)]
    budget = 6000
    events = []
    for i, etype in enumerate(types):
        lo = data.draw(st.integers(0, 25)) + 10 * i
        width = data.draw(st.integers(0, max(0, min(70, budget - 1))))
        budget //= width + 1
        events.append(Event(etype, lo, {"v": 0}, id=f"e{i}", seq=i, lo=float(lo), hi=float(lo + width), tick=TICK))
    expected = {k: v for k, v in possible_worlds(ast_query, events, TICK).items() if v.confidence > 1e-12}
    confidence.METHOD = "segments"
    segments.STRICT = True
    try:
        got = by_signature(match_events(compile_query(ast_query, tick=TICK), events))
    finally:
        confidence.METHOD = "auto"
        segments.STRICT = False
    assert set(got) == set(expected), (query, events)
    for key, rec in got.items():
        want = expected[key]
        assert math.isclose(rec["confidence"], want.confidence, abs_tol=1e-9), (key, rec, want)
        assert (rec["start"], rec["end"]) == (want.first_tick * TICK, want.last_tick * TICK), (key, rec, want)


# ------------------------------------------------------------------ the segment sweep against the tick DP

SWEEP_QUERIES = [
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 40 s",
    "PATTERN SEQ(A a, B+ b[], C c) WITHIN 25 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > avg(b[..i-1].v)",
    "PATTERN SEQ(A+ a[], B+ b[]) WITHIN 30 s",
    "PATTERN SEQ(A a, B+ b[]) WHERE b[b.len].v > b[1].v WITHIN 60 s",
    "PATTERN SEQ(A a, B b, C c) WITHIN 50 s",
]


@st.composite
def assignments(draw: st.DrawFn, cq) -> list[list[Event]]:
    out = []
    i = 0
    for comp in cq.components:
        evs = []
        for _ in range(draw(st.integers(1, 3)) if comp.kleene else 1):
            lo = draw(st.integers(0, 120))
            width = draw(st.integers(0, 150))
            evs.append(
                Event(
                    comp.type,
                    lo,
                    {"v": draw(st.integers(0, 3))},
                    id=f"e{i}",
                    seq=i,
                    lo=float(lo),
                    hi=float(lo + width),
                    tick=TICK,
                )
            )
            i += 1
        out.append(evs)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=st.data(), query=st.sampled_from(SWEEP_QUERIES))
def test_segment_sweep_equals_tick_dp(data: st.DataObject, query: str) -> None:
    """Up to 151 points per interval and windows shorter than the intervals: the sweep's ranges are long."""
    cq = compile_query(query, tick=TICK)
    assignment = data.draw(assignments(cq))
    confidence.METHOD = "ticks"
    try:
        ticks = confidence.signature_confidence(cq, assignment)
    finally:
        confidence.METHOD = "auto"
    segments.STRICT = True
    try:
        count, first, last, worlds = segments.signature_count(cq, assignment)
    finally:
        segments.STRICT = False
    assert math.isclose(count / worlds, ticks.value, rel_tol=1e-12, abs_tol=1e-15)
    if count:
        assert (first, last) == (ticks.first_tick, ticks.last_tick)


GAP_QUERIES = [
    "PATTERN SEQ(A a, ~D x1, B b, ~D x2, C c) WITHIN 60 s",  # Q7's shape
    "PATTERN SEQ(A a, ~D x, B b, C c)",
    "PATTERN SEQ(A a, B b, ~D x, C c) WITHIN 40 s",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=st.data(), query=st.sampled_from(GAP_QUERIES))
def test_gap_matrices_equal_the_tick_dp(data: st.DataObject, query: str) -> None:
    """One event per component with negation candidates, up to 151 points per interval (a Ganglia event at tick
    0.1): the gap matrices' exact count against the tick DP, value and span.  A candidate of both gaps goes through
    the conditioning in both."""
    cq = compile_query(query, tick=TICK)
    assignment = data.draw(assignments(cq))
    cands = []
    for n in range(len(cq.negations)):
        if n and data.draw(st.booleans()):
            cands.append(cands[0])  # the same events are candidates of both negations (Q7's ReducerEnd)
            continue
        mid = assignment[1][0]  # near the middle event, where a candidate may fall into either gap
        starts = st.integers(mid.tlo - 12, mid.thi) | st.integers(0, 200)
        spans = data.draw(st.lists(st.tuples(starts, st.integers(0, 12)), min_size=1, max_size=2))
        cands.append(
            [
                Event("D", lo, {}, id=f"d{n}{i}", seq=100 + i, lo=lo, hi=lo + w, tick=TICK)
                for i, (lo, w) in enumerate(spans)
            ]
        )
    confidence.METHOD = "ticks"
    try:
        ticks = confidence.signature_confidence(cq, assignment, cands)
    finally:
        confidence.METHOD = "auto"
    got = confidence.signature_confidence(cq, assignment, cands)
    assert math.isclose(got.value, ticks.value, rel_tol=1e-9, abs_tol=1e-15)
    if got.value:
        assert (got.first_tick, got.last_tick) == (ticks.first_tick, ticks.last_tick)


# ------------------------------------------------------------------ a million ticks, against closed forms


def _pair_count(a: tuple[int, int], b: tuple[int, int], window: int | None) -> int:
    """#{(x, y): x in a, y in b, x < y, y - x < window}, by a loop over x with a closed-form inner count."""
    total = 0
    for x in range(a[0], a[1] + 1):
        lo = max(b[0], x + 1)
        hi = b[1] if window is None else min(b[1], x + window - 1)
        if hi >= lo:
            total += hi - lo + 1
    return total


@pytest.mark.parametrize(
    "width, gap, window",
    [(200_000, 100_000, 50_000), (200_001, 0, None), (150_000, 400_000, 300_000), (2_000_000, 1_000_000, 10_000)],
)
def test_two_wide_events_exactly(width: int, gap: int, window: int | None) -> None:
    """The issue's case: two events far apart with an uncertainty of that size, exact to the last bit."""
    a = Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=float(width), tick=TICK)
    b = Event("B", 0.0, {}, id="b", seq=1, lo=float(gap), hi=float(gap + width), tick=TICK)
    within = "" if window is None else f" WITHIN {window} s"
    cq = compile_query(f"PATTERN SEQ(A a, B b){within}", tick=TICK)
    start = time.perf_counter()
    got = confidence.signature_confidence(cq, [[a], [b]])
    assert time.perf_counter() - start < 5.0  # a generous bound; the timings are in benchmarks/
    if width <= 200_001:
        want = _pair_count((0, width), (gap, gap + width), window) / ((width + 1) * (width + 1))
        assert got.value == want  # both are the exact count divided once: the same float
    count, _, _, worlds = segments.chain_count([a, b], cq.window)
    assert got.value == count / worlds


def test_three_wide_events_by_sum_over_the_middle() -> None:
    """SEQ(A, B, C) without a window, each interval 300,001 points: the count is sum over b of
    #{a < b} * #{c > b}, a loop over b with closed forms."""
    w = 300_000
    a = Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=float(w), tick=TICK)
    b = Event("B", 0.0, {}, id="b", seq=1, lo=100_000.0, hi=float(100_000 + w), tick=TICK)
    c = Event("C", 0.0, {}, id="c", seq=2, lo=250_000.0, hi=float(250_000 + w), tick=TICK)
    count = 0
    for t in range(b.tlo, b.thi + 1):
        below = max(0, min(a.thi, t - 1) - a.tlo + 1)
        above = max(0, c.thi - max(c.tlo, t + 1) + 1)
        count += below * above
    got = confidence.signature_confidence(compile_query("PATTERN SEQ(A a, B b, C c)", tick=TICK), [[a], [b], [c]])
    assert got.value == count / (w + 1) ** 3
    assert (got.first_tick, got.last_tick) == (0, 250_000 + w)


def test_negation_tick_dp_is_clipped_to_the_window() -> None:
    """With a negation candidate the tick DP stays, but only over ticks within the window of every event: a wide
    interval costs the window, not its width."""
    cq = compile_query("PATTERN SEQ(A a, ~D d, B b) WITHIN 200 s", tick=TICK)
    a = Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=2_000_000.0, tick=TICK)
    b = Event("B", 0.0, {}, id="b", seq=1, lo=1_000_000.0, hi=1_000_050.0, tick=TICK)
    d = Event("D", 0.0, {}, id="d", seq=2, lo=999_990.0, hi=1_000_010.0, tick=TICK)
    start = time.perf_counter()
    got = confidence.signature_confidence(cq, [[a], [b]], [[d]])
    assert time.perf_counter() - start < 5.0
    # a in (b - 200, b), d not strictly between: count over (a, b, d) directly on the small region.
    total = 0
    for tb in range(b.tlo, b.thi + 1):
        for ta in range(tb - 199, tb):
            total += sum(1 for td in range(d.tlo, d.thi + 1) if not ta < td < tb)
    want = total / ((a.thi - a.tlo + 1) * (b.thi - b.tlo + 1) * (d.thi - d.tlo + 1))
    assert math.isclose(got.value, want, rel_tol=1e-9)
