"""The imprecise evaluator's memory of dead ends (``ImpreciseMatcher._assign_singletons``) changes no record: on long
random streams with many closing events, with and without it, for patterns where it applies."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Event, compile_query
from engine.imprecise.evaluator import ImpreciseMatcher
from engine.runtime.matcher import sort_events

TICK = 1.0
QUERIES = [  # the component before the closing one is a singleton, the closing one is named nowhere
    "PATTERN SEQ(A a, B b, C c) WITHIN 6 s",
    "PATTERN SEQ(A a, B b, C c) WHERE [k] WITHIN 8 s",
    "PATTERN SEQ(A a, B b, C+ c[], D d, A e) WHERE [k] WITHIN 12 s",  # Q5's shape
    "PATTERN SEQ(A a, B+ b[], D d, C c) WHERE b[i].v >= a.v WITHIN 10 s",
    "PATTERN SEQ(B b, C+ c[], D d, A e) WHERE [k] WITHIN 9 s RETURN b.k AS k",
]


@st.composite
def long_streams(draw: st.DrawFn) -> list[Event]:
    """10-40 events over a minute, intervals of 0-6 ticks: closings overlap, so their windows' floors interleave.
    Drawn uniformly (from a seeded ``random.Random``): hypothesis's own integers favour the ends of their ranges,
    which seldom makes the interleaving floors this needs."""
    rng = draw(st.randoms(use_true_random=False))
    events = []
    for i in range(rng.randint(10, 40)):
        lo, width = rng.randint(0, 60), rng.randint(0, 6)
        attrs = {"v": rng.randint(0, 3)}
        if rng.random() < 0.8:
            attrs["k"] = rng.randint(1, 2)
        events.append(
            Event(
                rng.choice("AABBBCCD"),
                lo + width / 2,
                attrs,
                id=f"e{i}",
                seq=i,
                lo=float(lo),
                hi=float(lo + width),
                tick=TICK,
            )
        )
    return events


def _records(
    query: str, output: str, events: list[Event], remember: bool, threshold: float = 0.0
) -> tuple[list[dict], ImpreciseMatcher]:
    m = ImpreciseMatcher(compile_query(query, output=output, confidence=threshold, tick=TICK), max_uncertainty=6)
    assert m.remember_dead_ends, query
    m.remember_dead_ends = remember
    return m.feed_many(sort_events(events)) + m.flush(), m


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    query=st.sampled_from(QUERIES),
    output=st.sampled_from(["all", "distinct", "collapsed"]),
    events=long_streams(),
    threshold=st.sampled_from([0.0, 0.0, 0.3]),
)
def test_dead_ends_change_no_record(query: str, output: str, events: list[Event], threshold: float) -> None:
    plain, _ = _records(query, output, events, remember=False, threshold=threshold)
    remembered, _ = _records(query, output, events, remember=True, threshold=threshold)
    assert remembered == plain, (query, output)


def test_dead_ends_are_remembered_and_skipped() -> None:
    """Reducers with no imbalance inside them, closed again and again by later balanced rounds (Q5's case)."""
    events = []
    for i in range(30):  # C (imbalance) at 10i, then A (balance), B (start) and D (end) of reducer i, then A
        for j, (etype, dt) in enumerate((("C", 0), ("A", 1), ("B", 2), ("D", 3), ("A", 5))):
            attrs = {"k": i} if etype in "BD" else {}
            events.append(Event(etype, 10.0 * i + dt, attrs, id=f"{etype}{i}.{j}", seq=5 * i + j, tick=TICK))
    q = "PATTERN SEQ(A a, B b, C+ c[], D d, A e) WHERE [k] WITHIN 60 s"
    plain, p = _records(q, "all", events, remember=False)
    remembered, m = _records(q, "all", events, remember=True)
    assert plain == remembered == []
    assert m._dead_ends and m.signatures == p.signatures == 0
