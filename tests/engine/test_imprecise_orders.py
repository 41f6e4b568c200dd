"""The run-based evaluation orders (sorting, any-state, selectivity, auto) against the possible-worlds oracle and the
closing-event evaluator: the same signatures, confidences and time ranges, on sorted and on out-of-order arrival."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.research import imprecise_orders as orders
from benchmarks.research.imprecise_orders import SKEW, OrderedImpreciseMatcher, choose_order
from engine import Event, compile_query, match_events
from engine.language.parser import parse_query
from engine.runtime.matcher import sort_events
from tests.possible_worlds import possible_worlds
from tests.strategies import by_signature, interval_streams

TICK = 1.0
ORDERS = ("sorting", "any-state", "selectivity", "auto", "sel0", "sel1", "sel2", "sel3")

QUERIES = [
    "PATTERN SEQ(A a, B b, C c)",
    "PATTERN SEQ(A a, B b, C c) WITHIN 4 s",
    "PATTERN SEQ(A a, B b, C c) WHERE [k]",
    "PATTERN SEQ(A a, B b, C c) WHERE a.v < 2 AND c.v > 0 WITHIN 6 s",
    "PATTERN SEQ(A a, B b, C c) WHERE b.v > a.v",
    "PATTERN SEQ(A a, B b)",
    "PATTERN SEQ(A a, A b) WHERE b.v > a.v",
    "PATTERN SEQ(A a, B b, A c) WITHIN 7 s",
    "PATTERN SEQ(B a, B b, B c) WHERE a.v % 2 = 0 AND [k] WITHIN 5 s",
    "PATTERN SEQ(A a, B b, D d, C c) WITHIN 8 s",
]


def _run(cq, events: list[Event], order: str, arrival: list[Event] | None = None) -> list[dict]:
    """``order`` is an order name, or ``selN``: selectivity order with component N as pivot (no warm-up)."""
    widest = max((e.thi - e.tlo for e in events), default=0)
    if order.startswith("sel") and order[3:].isdigit():
        m = OrderedImpreciseMatcher(cq, widest, order="selectivity", pivot=min(int(order[3:]), len(cq.components) - 1))
    else:
        m = OrderedImpreciseMatcher(cq, widest, order=order)
    got = [r for e in (arrival if arrival is not None else sort_events(events)) for r in m.feed(e)]
    return got + m.flush()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(query=st.sampled_from(QUERIES), events=interval_streams(7), threshold=st.sampled_from([0.0, 0.0, 0.3]))
def test_every_order_gives_the_possible_worlds_signatures(query: str, events: list[Event], threshold: float) -> None:
    ast_query = parse_query(query, "q")
    expected = {
        k: v
        for k, v in possible_worlds(ast_query, events, TICK).items()
        if v.confidence > 1e-12 and v.confidence >= threshold - 1e-12
    }
    cq = compile_query(ast_query, confidence=threshold, tick=TICK)
    closing = by_signature(match_events(cq, events))
    for order in ORDERS:
        got = by_signature(_run(cq, events, order))
        assert set(got) == set(expected), (order, query, events)
        for key, rec in got.items():
            want = expected[key]
            assert math.isclose(rec["confidence"], want.confidence, abs_tol=1e-9), (order, key, rec, want)
            assert rec["start"] == want.first_tick * TICK and rec["end"] == want.last_tick * TICK, (order, key)
            assert rec == closing[key], (order, key)  # the same record as the closing-event evaluator


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("seed", range(6))
def test_out_of_order_arrival_within_the_bound(order: str, seed: int) -> None:
    """Arrival in any order consistent with the intervals (each event at some point of its interval): the held,
    buffered and any-state orders still find every signature once, as the closing-event evaluator does."""
    rng = random.Random(seed)
    events = []
    for i in range(40):
        etype = rng.choice("AABBBCCD")
        lo = rng.randint(0, 60)
        width = rng.randint(0, 6)
        events.append(
            Event(
                etype,
                lo + width / 2,
                {"v": rng.randint(0, 3), "k": rng.randint(1, 2)},
                id=f"e{i}",
                seq=i,
                lo=float(lo),
                hi=float(lo + width),
                tick=TICK,
            )
        )
    for query in (
        "PATTERN SEQ(A a, B b, C c) WITHIN 12 s",
        "PATTERN SEQ(A a, B b, C c) WHERE [k] AND a.v < 3 WITHIN 15 s",
        "PATTERN SEQ(B a, B b) WHERE b.v >= a.v WITHIN 6 s",
    ):
        cq = compile_query(query, tick=TICK)
        expected = by_signature(match_events(cq, events))
        arrival = sorted(events, key=lambda e: rng.randint(e.tlo, e.thi))
        got = by_signature(_run(cq, events, order, arrival))
        assert got == expected, (order, query)


def test_skewed_rates_pick_selectivity_order() -> None:
    assert choose_order([100, 100, 100])[0] == "sorting"
    assert choose_order([100, 50, 100])[0] == "sorting"
    assert choose_order([int(100 * SKEW) - 1, 100, 100])[0] == "sorting"
    assert choose_order([int(100 * SKEW), 50, 100])[0] == "selectivity"
    assert choose_order([10, 10, 1000])[0] == "sorting"  # a rare first component: sorting starts few runs anyway


def test_auto_chooses_after_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orders, "WARMUP", 20)
    events = [
        Event("A" if i % 10 else "C", float(i), {}, id=f"e{i}", seq=i, lo=float(i - 1), hi=float(i + 1), tick=TICK)
        for i in range(200)
    ]
    cq = compile_query("PATTERN SEQ(A a, C c) WITHIN 5 s", tick=TICK)
    m = OrderedImpreciseMatcher(cq, 2, order="auto")
    got = [r for e in events for r in m.feed(e)] + m.flush()
    assert m.order == "selectivity" and m.reason.startswith("auto:")
    assert by_signature(got) == by_signature(match_events(cq, events))


def test_scope_is_a_sequence_of_singletons() -> None:
    with pytest.raises(ValueError, match="singleton"):
        OrderedImpreciseMatcher(compile_query("PATTERN SEQ(A a, B+ b[], C c)", tick=TICK))
    with pytest.raises(ValueError, match="singleton"):
        OrderedImpreciseMatcher(compile_query("PATTERN SEQ(A a, ~D d, C c)", tick=TICK))
    with pytest.raises(ValueError, match="output all"):
        OrderedImpreciseMatcher(compile_query("PATTERN SEQ(A a, C c) RETURN a.v AS v", output="distinct", tick=TICK))
    with pytest.raises(ValueError, match="order"):
        OrderedImpreciseMatcher(compile_query("PATTERN SEQ(A a, C c)", tick=TICK), order="random")
