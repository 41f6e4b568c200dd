"""The imprecise evaluator against the possible-worlds oracle: signatures, exact confidence, time ranges."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Event, compile_query, match_events
from engine.language.parser import parse_query
from tests.possible_worlds import possible_worlds
from tests.strategies import by_signature, interval_streams

TICK = 1.0
#: Where each type's interval starts: mostly in pattern order, with overlaps, so that most streams have matches.

QUERIES = [
    "PATTERN SEQ(A a, B b, C c)",
    "PATTERN SEQ(A a, B b, C c) WITHIN 4 s",
    "PATTERN SEQ(A a, B+ b[], C c)",
    "PATTERN SEQ(A a, B+ b[], C c) WITHIN 5 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > avg(b[..i-1].v) WITHIN 6 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE c.v > max(b[].v)",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE c.v < max(b[].v) AND b.len >= 2",
    "PATTERN SEQ(A a, B+ b[]) WHERE min(b[].v) <= a.v WITHIN 6 s",
    "PATTERN SEQ(A a, B+ b[])",
    "PATTERN SEQ(A a, B+ b[]) WHERE b[b.len].v > b[1].v",
    "PATTERN SEQ(B+ b[], C c) WITHIN 4 s",
    "PATTERN SEQ(A a, ~D d, C c)",
    "PATTERN SEQ(A a, ~D d, C c) WHERE d.v > a.v WITHIN 5 s",
    "PATTERN SEQ(A a, B+ b[], ~D d, C c)",
    "PATTERN SEQ(A a, B b, C c) WHERE [k]",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > a.v",
    "PATTERN SEQ(A a, A b) WHERE b.v > a.v",
    "PATTERN SEQ(A+ a[], A+ b[]) WITHIN 6 s",
    "PATTERN SEQ(A+ a[], B+ b[], C c) WHERE b[i].v > a[a.len].v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v <= c.v",
    "PATTERN SEQ(A a, ~D d, B+ b[], C c) WHERE d.v > b[1].v",
    # One event per component and negations: the predicates and negation checks are decided once per signature,
    # outside the DP (Q7's shape: two negations, a ts difference, a later negation check deferred).
    "PATTERN SEQ(A a, ~D x1, B b, ~D x2, C c) WHERE b.v >= a.v AND b.ts - a.ts < 3 AND c.v != b.v WITHIN 6 s",
    "PATTERN SEQ(A a, ~D d, B b, C c) WHERE d.v < c.v WITHIN 5 s",
    "PATTERN SEQ(A a, ~D d, C c) WHERE d.v > a.v AND c.v > a.v",
]

# Equality joins between singletons: candidates looked up by the later component's value (k is sometimes missing:
# never equal), with and without a partition key, across a Kleene set and a negation.
JOIN_QUERIES = [
    "PATTERN SEQ(A a, B b, C c) WHERE a.v = c.v WITHIN 6 s",
    "PATTERN SEQ(A a, ~D d, B b, C c) WHERE c.k = b.k AND a.v = b.v",
    "PATTERN SEQ(A a, B b) WHERE [k] AND a.v = b.v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE a.k = c.k",
    "PATTERN SEQ(B a, B b) WHERE b.v = a.v",
]


@settings(max_examples=360, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(QUERIES), events=interval_streams(6), threshold=st.sampled_from([0.0, 0.0, 0.3]))
def test_all_signatures_with_exact_confidence(query: str, events: list[Event], threshold: float) -> None:
    check_against_worlds(query, events, threshold)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(JOIN_QUERIES), events=interval_streams(7), threshold=st.sampled_from([0.0, 0.3]))
def test_equality_joins_with_exact_confidence(query: str, events: list[Event], threshold: float) -> None:
    check_against_worlds(query, events, threshold)


def check_against_worlds(query: str, events: list[Event], threshold: float) -> None:
    """The records of ``query`` over ``events`` are the possible-worlds signatures, confidences and spans."""
    ast_query = parse_query(query, "q")
    expected = {
        k: v
        for k, v in possible_worlds(ast_query, events, TICK).items()
        if v.confidence > 1e-12 and v.confidence >= threshold - 1e-12
    }
    got = by_signature(match_events(compile_query(ast_query, confidence=threshold, tick=TICK), events))
    assert set(got) == set(expected), (query, events)
    for key, rec in got.items():
        want = expected[key]
        assert math.isclose(rec["confidence"], want.confidence, abs_tol=1e-9), (key, rec, want)
        assert rec["start"] == want.first_tick * TICK and rec["end"] == want.last_tick * TICK, (key, rec, want)


#: Two negations of one type, so that one event can be a candidate of both gaps.
SHARED_NEGATION_QUERIES = [
    "PATTERN SEQ(A a, ~D x1, B b, ~D x2, C c)",
    "PATTERN SEQ(A a, ~D x1, B b, ~D x2, C c) WHERE x2.v >= b.v WITHIN 6 s",
    "PATTERN SEQ(A a, ~D x1, B+ b[], ~D x2, C c) WITHIN 7 s",
    "PATTERN SEQ(A a, ~D x1, B b, C c, ~D x2, A d)",
]


@st.composite
def shared_negation_streams(draw: st.DrawFn) -> list[Event]:
    """A, B, C and a later A around ticks 0-2, 3-6, 7-10, 11-13, and one or two D anywhere from 1 to 10 (up to 5
    points wide): a D often spans a B or C point, where it may fall into the gap before or the gap after."""
    events: list[Event] = []
    worlds = 1
    spec = [("A", 0, 2), ("B", 3, 6), ("C", 7, 10)]
    spec += [("B", 3, 6)] if draw(st.booleans()) else []
    spec += [("A", 11, 13)] if draw(st.booleans()) else []
    spec = [("D", 1, 10)] * draw(st.integers(1, 2)) + spec  # the D first: theirs are the wide intervals
    for i, (etype, lo_min, lo_max) in enumerate(spec):
        lo = draw(st.integers(lo_min, lo_max))
        width = draw(st.integers(0, (4 if etype == "D" else 2) if worlds < 20 else 0))  # at most 300 worlds
        worlds *= width + 1
        attrs = {"v": draw(st.integers(0, 2))}
        events.append(
            Event(etype, lo + width / 2, attrs, id=f"e{i}", seq=i, lo=float(lo), hi=float(lo + width), tick=TICK)
        )
    return sorted(events, key=lambda e: (e.lo, e.seq))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(SHARED_NEGATION_QUERIES), events=shared_negation_streams())
def test_an_event_that_may_fall_into_either_of_two_negation_gaps(query: str, events: list[Event]) -> None:
    check_against_worlds(query, events, 0.0)


def test_one_negated_event_between_two_gaps_counts_once() -> None:
    """D over ticks 3-7 around b at 5: the match survives only where D lies at 5 itself, 1/5 (was 9/25: the
    chances of the two gaps were taken as independent)."""
    events = [
        Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=0.0, tick=TICK),
        Event("D", 5.0, {}, id="x", seq=1, lo=3.0, hi=7.0, tick=TICK),
        Event("B", 5.0, {}, id="b", seq=2, lo=5.0, hi=5.0, tick=TICK),
        Event("C", 10.0, {}, id="c", seq=3, lo=10.0, hi=10.0, tick=TICK),
    ]
    (record,) = match_events(compile_query("PATTERN SEQ(A a, ~D x1, B b, ~D x2, C c)", tick=TICK), events)
    assert math.isclose(record["confidence"], 0.2)


DISTINCT_QUERIES = [
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v RETURN a.k AS k",
    "PATTERN SEQ(A a, B b, C c) RETURN b.v AS v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] RETURN a.v AS v",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] RETURN c.v AS v",
    "PATTERN SEQ(A a, B b, C c) WITHIN 5 s RETURN c.k AS k",
    "PATTERN SEQ(A a, B+ b[], D d, C c) WITHIN 8 s RETURN d.v AS v",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(DISTINCT_QUERIES), events=interval_streams(6), threshold=st.sampled_from([0.0, 0.4]))
def test_distinct_carries_the_best_confidence_per_value(query: str, events: list[Event], threshold: float) -> None:
    ast_query = parse_query(query, "q")
    best: dict = {}
    for res in possible_worlds(ast_query, events, TICK).values():
        if res.confidence <= 1e-12:
            continue
        key = tuple(res.returns.values())
        best[key] = max(best.get(key, 0.0), res.confidence)
    best = {k: v for k, v in best.items() if v >= threshold - 1e-12}
    records = match_events(compile_query(ast_query, output="distinct", confidence=threshold, tick=TICK), events)
    got = {tuple(r["return"].values()): r["confidence"] for r in records}
    assert len(got) == len(records), "one record per distinct RETURN value"
    assert set(got) == set(best)
    for key, conf in got.items():
        assert math.isclose(conf, best[key], abs_tol=1e-9)


def test_worked_examples_of_the_digests() -> None:
    """digest-imprecise 3.3 (25/225 and 27/225) and digest-sasepp 6.4 (2/3, 7/9; window: 10/27, 4/9)."""

    def ev(etype: str, lo: int, hi: int, i: int) -> Event:
        return Event(etype, (lo + hi) / 2, {}, id=f"{etype.lower()}{i}", seq=i, lo=lo, hi=hi, tick=TICK)

    events = [ev("A", 1, 5, 1), ev("C", 3, 5, 2), ev("B", 3, 5, 3), ev("C", 4, 8, 4)]
    got = {
        tuple(r["match"]["c"]): r
        for r in match_events(compile_query("PATTERN SEQ(A a, B b, C c) WITHIN 4 s", tick=TICK), events)
    }
    assert math.isclose(got[("c2",)]["confidence"], 25 / 225)
    assert (got[("c2",)]["start"], got[("c2",)]["end"]) == (1.0, 5.0)
    assert math.isclose(got[("c4",)]["confidence"], 27 / 225)
    assert (got[("c4",)]["start"], got[("c4",)]["end"]) == (1.0, 7.0)

    events = [ev("A", 1, 3, 1), ev("B", 2, 4, 1), ev("B", 3, 5, 2), ev("C", 5, 7, 1)]
    plain = {
        tuple(r["match"]["b"]): r["confidence"]
        for r in match_events(compile_query("PATTERN SEQ(A a, B+ b[], C c)", tick=TICK), events)
    }
    assert math.isclose(plain[("b1",)], 2 / 3) and math.isclose(plain[("b2",)], 7 / 9)
    # Both orders of b1, b2 are worlds of the set {b1, b2}: 8/27 in order b1<b2 plus 2/27 in order b2<b1.
    assert math.isclose(plain[("b1", "b2")], 10 / 27)
    windowed = {
        tuple(r["match"]["b"]): r["confidence"]
        for r in match_events(compile_query("PATTERN SEQ(A a, B+ b[], C c) WITHIN 5 s", tick=TICK), events)
    }
    assert math.isclose(windowed[("b1",)], 10 / 27) and math.isclose(windowed[("b2",)], 4 / 9)
    pruned = match_events(compile_query("PATTERN SEQ(A a, B+ b[], C c)", confidence=0.5, tick=TICK), events)
    assert sorted(tuple(r["match"]["b"]) for r in pruned) == [("b1",), ("b2",)]


def test_negation_reading_a_later_set_is_applied_on_the_whole_match() -> None:
    query = "PATTERN SEQ(A+ a[], ~A b, A+ c[]) WHERE [k] AND c[c.len].v < b.v"
    events = [
        Event("A", 1, {"k": 1, "v": 1}, id="a1", seq=0, lo=0, hi=2, tick=TICK),
        Event("A", 2, {"k": 1, "v": 5}, id="n", seq=1, lo=1, hi=3, tick=TICK),
        Event("A", 3, {"k": 1, "v": 2}, id="c1", seq=2, lo=2, hi=4, tick=TICK),
        Event("A", 4, {"k": 1, "v": 0}, id="c2", seq=3, lo=4, hi=5, tick=TICK),
    ]
    ast_query = parse_query(query, "q")
    expected = {k: v for k, v in possible_worlds(ast_query, events, TICK).items() if v.confidence > 1e-12}
    got = by_signature(match_events(compile_query(ast_query, tick=TICK), events))
    assert set(got) == set(expected) and expected
    for key, rec in got.items():
        assert math.isclose(rec["confidence"], expected[key].confidence, abs_tol=1e-9)


COLLAPSED_QUERIES = [
    "PATTERN SEQ(A a, B+ b[], C c) RETURN count(b[].v) AS n",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > a.v WITHIN 7 s",
    "PATTERN SEQ(A a, B+ b[], D d, C c) WHERE b[i].v < 3",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(COLLAPSED_QUERIES), events=interval_streams(6), threshold=st.sampled_from([0.0, 0.5]))
def test_collapsed_is_the_union_per_singleton_assignment(query: str, events: list[Event], threshold: float) -> None:
    """One record per assignment of the singleton components: every Kleene event of its qualifying signatures,
    with the best confidence among them."""
    ast_query = parse_query(query, "q")
    kleene = {c.var for c in ast_query.components if c.kleene}
    groups: dict = {}
    for sig, res in possible_worlds(ast_query, events, TICK).items():
        if res.confidence <= 1e-12 or res.confidence < threshold - 1e-12:
            continue
        singles = tuple((var, ids) for var, ids in sig if var not in kleene)
        union, best = groups.get(singles, ({}, 0.0))
        for var, ids in sig:
            if var in kleene:
                union.setdefault(var, set()).update(ids)
        groups[singles] = (union, max(best, res.confidence))
    records = match_events(compile_query(ast_query, output="collapsed", confidence=threshold, tick=TICK), events)
    got = {}
    for r in records:
        singles = tuple((var, tuple(ids)) for var, ids in r["match"].items() if var not in kleene)
        assert singles not in got
        got[singles] = ({var: set(ids) for var, ids in r["match"].items() if var in kleene}, r["confidence"])
    assert set(got) == set(groups)
    for key, (union, conf) in got.items():
        assert union == groups[key][0]
        assert math.isclose(conf, groups[key][1], abs_tol=1e-9)


def test_consistency_classes_and_the_previous_element_rewrite() -> None:
    from engine.plan.consistency import classify, false_consistent, rewrite_previous

    q = parse_query(
        "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v AND b[i].v > 5 AND "
        "b[i].v > avg(b[..i-1].v) AND c.v < max(b[].v) AND b[i].v > max(b[..i-1].v)",
        "q",
    )
    prev, const, avg, whole, running_max = q.where
    assert classify(prev, "b") == "inconsistent-rewritable"
    assert classify(rewrite_previous(prev), "b") == "true"
    assert classify(const, "b") == "true-false"
    assert classify(avg, "b") == "inconsistent"
    assert classify(running_max, "b") == "true"
    assert false_consistent(whole, "b") and not false_consistent(avg, "b")
    rewritten = compile_query(q, tick=TICK).ast.where[0]
    assert "agg_before" in str(rewritten) or "before" in str(rewritten)
