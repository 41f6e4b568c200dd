"""The conformance suite: every registered evaluator (``engine.evaluator.register``) passes every check here, in the
manner of River's estimator checks.  A new evaluator gets all of it by registering itself.

Per evaluator, against the brute-force references (records, order of a restored run, confidences):

- records for random queries and streams (per-match kinds: every strategy they evaluate; trend kinds: GRETA queries
  against the enumeration oracle), and exact confidences on interval events for the kinds that compute them;
- window edges (``t_last - t_first < W``; GRETA's window grid), negation;
- out-of-order arrival under a watermark: kinds that need time order behind a reorder buffer (and refusing an older
  event), the others as the events come, within their uncertainty bound; ``advance`` at each watermark;
- snapshot/restore (through JSON text) after every prefix of a stream, then the rest: exactly the uninterrupted
  run's records, in order, and the same final state;
- the same-tick rule of semantics sections 3-4: the NFA strategies read (tick, arrival) order, skip_till_any_match (and
  GRETA) take same-tick events as concurrent;
- the contract itself: ``feed_many`` = ``feed``, ``advance`` = feeding events of types the query does not name,
  ``stats`` (and ``dropped``, its count of what the bounds dropped), ``horizon``, ``set_limits``.

The checks that feed, advance, snapshot and restore run each kind three ways (``harness.VIAS``): bare, inside the
one-pass pack feeder and inside the shedding wrapper, both as :meth:`engine.evaluate.PackRunner.of` (the one driver)
builds them -- so the composites and the shedder's snapshot/restore pass the same checks (fewer examples there).

``HCEP_CONFORMANCE_EXAMPLES`` sets the examples per hypothesis check (default 40).
"""

from __future__ import annotations

import inspect
import json
import math
import os
import pkgutil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
import engine.evaluate  # noqa: F401 - imports (and so registers) every evaluator
from engine.evaluator import Clock, Evaluator, EvaluatorKind, Stats, registered
from engine.events import Event
from engine.language.parser import parse_query
from engine.limits import Limits
from engine.plan.compiler import compile_query
from engine.runtime.matcher import sort_events
from tests.engine.conformance import harness as h
from tests.engine.test_greta import oracle, trend_cases
from tests.engine.test_imprecise_vs_worlds import DISTINCT_QUERIES, JOIN_QUERIES
from tests.engine.test_imprecise_vs_worlds import QUERIES as PLAIN_QUERIES
from tests.strategies import NOISE_TYPE, cases, interval_streams

QUERIES = PLAIN_QUERIES + JOIN_QUERIES  # the imprecise evaluator's equality joins too

EXAMPLES = int(os.environ.get("HCEP_CONFORMANCE_EXAMPLES", "40"))
CHECK = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

#: The composites (each kind inside the feeder and the shedder the one driver builds) with fewer examples: they add
#: the routing, the shared clock and the wrapper's snapshot to what the bare runs check.
COMPOSITE = settings(CHECK, max_examples=max(4, EXAMPLES // 4))

KINDS = registered()
ALL = sorted(KINDS)
MATCHING = sorted(n for n, k in KINDS.items() if not k.trends)
TRENDS = sorted(n for n, k in KINDS.items() if k.trends)
IMPRECISE = sorted(n for n, k in KINDS.items() if k.imprecise)
#: (evaluator, how it is built and fed: harness.VIAS) for the checks that run through the composites too.
VIA = [pytest.param(n, v, id=f"{n}-{v}") for n in ALL for v in h.VIAS]
IMPRECISE_VIA = [pytest.param(n, v, id=f"{n}-{v}") for n in IMPRECISE for v in h.VIAS]


def checked(via: str) -> Any:
    return CHECK if via == "evaluator" else COMPOSITE


def test_the_registry_holds_every_evaluator() -> None:
    """Every class of the engine that implements the contract is registered, so the suite runs it (the pack
    feeder and the shedding wrapper compose registered evaluators and are checked through them)."""
    composites = {"Evaluator", "PackFeeder", "SheddingMatcher", "PackRunner", "_TrendOutput", "_Capture"}
    found = set()
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        module = __import__(info.name, fromlist=["_"])
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == info.name
                and name not in composites
                and all(hasattr(cls, a) for a in ("feed", "feed_many", "advance", "flush", "snapshot", "restore"))
            ):
                found.add(cls)
    assert found == {k.cls for k in KINDS.values()}, found
    assert {"nfa", "imprecise", "greta", "enumerate"} <= set(KINDS)
    # The composites implement the contract too (and the tests below run every kind inside them: harness.VIAS).
    from engine.onepass import PackFeeder
    from engine.shedding import SheddingMatcher

    for cls in (PackFeeder, SheddingMatcher):
        missing = [
            a
            for a in ("wants", "due", "clock", "set_clock", "horizon", "stats", "dropped", "set_limits")
            if not hasattr(cls, a)
        ]
        assert not missing, (cls.__name__, missing)


# ------------------------------------------------------------------------------------------------ cases


@st.composite
def match_cases(draw: st.DrawFn, kind: EvaluatorKind, **flags: Any) -> tuple[str, list[Event], str]:
    gq, events = draw(cases(**flags))
    return gq.text, events, draw(st.sampled_from(kind.strategies))


def compiled(text: str, strategy: str, output: str = "all", confidence: float = 0.0) -> Any:
    return compile_query(
        parse_query(text, name="T"), strategy=strategy, output=output, confidence=confidence, tick=h.TICK
    )


def check_match_records(
    kind: EvaluatorKind, text: str, events: list[Event], strategy: str, records: list[dict] | None = None
) -> None:
    cq = compiled(text, strategy)
    got = h.run(kind, cq, events) if records is None else records
    context = f"\nevaluator {kind.name}, strategy {strategy}\nquery:\n{text}\nevents: {events}\n"
    h.check_matches(got, cq.ast, events, strategy, context)


def trend_expected(text: str, events: list[Event], within: int | None, slide: int | None) -> dict[Any, Any]:
    return oracle(text, events, within, slide)


def trend_got(records: list[dict], events: list[Event], within: int | None) -> dict[Any, Any]:
    got = h.trend_records(records)
    if within is None:  # unbounded: the window bounds are the first and last relevant events, not a grid
        got = {(min(e.t for e in events), max(e.t for e in events), g): v for (_s, _e, g), v in got.items()}
    return got


def some_case(kind: EvaluatorKind, **flags: Any) -> st.SearchStrategy[Any]:
    """A (query, events, strategy or window spec) case for ``kind``."""
    if kind.trends:
        base = trend_cases()
        if flags.get("negation"):
            base = base.filter(lambda c: "~" in c[0])
        if flags.get("window"):
            base = base.filter(lambda c: c[2] is not None)
        return base
    return match_cases(kind, **flags)


def records_of_case(kind: EvaluatorKind, case: Any) -> tuple[Any, list[Event]]:
    if kind.trends:
        text, events, _within, _slide = case
        return compile_query(text, name="q", tick=h.TICK), events
    text, events, strategy = case
    return compiled(text, strategy), events


def check_case(kind: EvaluatorKind, case: Any, records: list[dict]) -> None:
    if kind.trends:
        text, events, within, slide = case
        assert trend_got(records, events, within) == trend_expected(text, events, within, slide), text
    else:
        text, events, strategy = case
        check_match_records(kind, text, events, strategy, records)


# ------------------------------------------------------------------------------------------------ records


@pytest.mark.parametrize(("name", "via"), VIA)
def test_records_equal_the_reference(name: str, via: str) -> None:
    kind = KINDS[name]

    @checked(via)
    @given(some_case(kind))
    def check(case: Any) -> None:
        cq, events = records_of_case(kind, case)
        check_case(kind, case, h.run(kind, cq, events, via=via))

    check()


@pytest.mark.parametrize(("name", "via"), IMPRECISE_VIA)
def test_exact_confidences_on_interval_events(name: str, via: str) -> None:
    kind = KINDS[name]

    @checked(via)
    @given(query=st.sampled_from(QUERIES), events=interval_streams(6), threshold=st.sampled_from([0.0, 0.0, 0.3]))
    def check(query: str, events: list[Event], threshold: float) -> None:
        cq = compile_query(parse_query(query, "q"), confidence=threshold, tick=h.TICK)
        h.check_worlds(h.run(kind, cq, events, via=via), cq.ast, events, threshold, f"\n{query}\n{events}\n")

    check()


@pytest.mark.parametrize("name", ALL)
def test_window_edges(name: str) -> None:
    kind = KINDS[name]
    if kind.trends:
        text = "PATTERN SEQ(A a, B b) WITHIN 3 s RETURN COUNT(*) AS n"
        events = [
            Event(t, float(p), {}, id=f"{t}{p}", seq=i, tick=h.TICK)
            for i, (t, p) in enumerate([("A", 0), ("B", 2), ("B", 3), ("A", 3), ("B", 5), ("B", 6)])
        ]
        got = h.trend_records(h.run(kind, compile_query(text, name="q", tick=h.TICK), events))
        assert got == trend_expected(text, events, 3, 3) == {(0.0, 3.0, ()): {"n": 1}, (3.0, 6.0, ()): {"n": 1}}
    else:
        text = "PATTERN SEQ(A a, B b) WITHIN 3 s"
        events = [
            Event(t, float(p), {}, id=f"{t}{p}", seq=i, tick=h.TICK)
            for i, (t, p) in enumerate([("A", 0), ("B", 2), ("B", 3)])
        ]
        for strategy in kind.strategies:
            got = h.run(kind, compiled(text, strategy), events)
            assert [r["match"] for r in got] == [{"a": ["A0"], "b": ["B2"]}], (strategy, got)  # 3 - 0 is not < 3

    @CHECK
    @given(some_case(kind, window=True))
    def check(case: Any) -> None:
        cq, events = records_of_case(kind, case)
        check_case(kind, case, h.run(kind, cq, events))

    check()


@pytest.mark.parametrize("name", ALL)
def test_negation(name: str) -> None:
    kind = KINDS[name]

    @CHECK
    @given(some_case(kind, negation=True))
    def check(case: Any) -> None:
        cq, events = records_of_case(kind, case)
        check_case(kind, case, h.run(kind, cq, events))

    check()


# ------------------------------------------------------------------------------------------------ arrival order


@pytest.mark.parametrize(("name", "via"), VIA)
def test_out_of_order_arrival_under_a_watermark(name: str, via: str) -> None:
    kind = KINDS[name]

    @checked(via)
    @given(some_case(kind), st.integers(0, 3), st.integers(0, 2**16))
    def check(case: Any, lateness: int, seed: int) -> None:
        cq, events = records_of_case(kind, case)
        records = h.run_watermarked(kind, cq, events, lateness, seed, via)
        check_case(kind, case, records)
        if kind.ordered:  # released in time order: exactly the uninterrupted run
            assert h.canonical(records) == h.canonical(h.run(kind, cq, events, via=via))
            assert h.refuses_time_travel(kind, cq, events, via)

    check()


@pytest.mark.parametrize(("name", "via"), IMPRECISE_VIA)
def test_out_of_order_interval_events(name: str, via: str) -> None:
    """Interval events arriving out of order, within the uncertainty bound: the same confidences."""
    kind = KINDS[name]

    @checked(via)
    @given(st.sampled_from(QUERIES), interval_streams(6), st.integers(0, 3), st.integers(0, 2**16))
    def check(query: str, events: list[Event], lateness: int, seed: int) -> None:
        cq = compile_query(parse_query(query, "q"), tick=h.TICK)
        records = h.run_watermarked(kind, cq, events, lateness, seed, via)
        h.check_worlds(records, cq.ast, events, 0.0, f"\n{query}\n{events}\n")

    check()


# ------------------------------------------------------------------------------------------------ snapshots


def check_every_cut(kind: EvaluatorKind, cq: Any, events: list[Event], via: str = "evaluator") -> None:
    whole = h.canonical(h.run(kind, cq, events, via=via))
    end = h.final_snapshot(kind, cq, events, via)
    for cut in range(len(events) + 1):
        records, state = h.run_restored(kind, cq, events, cut, via)
        assert h.canonical(records) == whole, f"{kind.name}: restored after {cut} of {len(events)} events"
        assert state == end, f"{kind.name}: another final state when restored after {cut} events"


@pytest.mark.parametrize(("name", "via"), VIA)
def test_snapshot_restore_at_every_point(name: str, via: str) -> None:
    """Bare, in the pack feeder (its clock and routing state) and in the shedder (its snapshot: the feeder's and its
    counters), restored after every prefix: the uninterrupted records and final state."""
    kind = KINDS[name]

    @checked(via)
    @given(some_case(kind))
    def check(case: Any) -> None:
        cq, events = records_of_case(kind, case)
        check_every_cut(kind, cq, events, via)

    check()


@pytest.mark.parametrize(("name", "via"), IMPRECISE_VIA)
def test_snapshot_restore_with_held_and_collapsed_output(name: str, via: str) -> None:
    """Interval events, distinct output (held records) and collapsed output: restored runs are exact too."""
    kind = KINDS[name]
    queries = (
        [(q, "distinct") for q in DISTINCT_QUERIES]
        + [(q, "all") for q in QUERIES]
        + [("PATTERN SEQ(A a, B+ b[], C c) WHERE [k]", "collapsed"), ("PATTERN SEQ(A a, B+ b[], C c)", "collapsed")]
    )

    @checked(via)
    @given(st.sampled_from(queries), interval_streams(6), st.sampled_from([0.0, 0.3]))
    def check(query: tuple[str, str], events: list[Event], threshold: float) -> None:
        cq = compile_query(parse_query(query[0], "q"), output=query[1], confidence=threshold, tick=h.TICK)
        check_every_cut(kind, cq, events, via)

    check()


# ------------------------------------------------------------------------------------------------ same tick


def ev(etype: str, point: float, seq: int, **attrs: Any) -> Event:
    return Event(etype, point, attrs, id=f"{etype.lower()}{seq}", seq=seq, tick=h.TICK)


@pytest.mark.parametrize("name", ALL)
def test_the_same_tick_rule(name: str) -> None:
    """semantics sections 3-4: the NFA strategies read (tick, arrival) order; skip_till_any_match and GRETA take events
    of one tick as concurrent."""
    kind = KINDS[name]
    if kind.trends:
        text = "PATTERN SEQ(A+ a[]) RETURN COUNT(*) AS n"
        events = [ev("A", 1, 0), ev("A", 1, 1), ev("A", 2, 2)]
        got = trend_got(h.run(kind, compile_query(text, name="q", tick=h.TICK), events), events, None)
        assert got == trend_expected(text, events, None, None)
        assert [v["n"] for v in got.values()] == [5]  # {a0} {a1} {a2} {a0 a2} {a1 a2}: never a0 with a1
        return
    pair = "PATTERN SEQ(A a, B b)"
    queue = "PATTERN SEQ(J a, D+ b[]) WHERE [k]"
    in_order = [ev("A", 1, 0), ev("B", 1, 1)]
    reversed_ = [ev("B", 1, 0), ev("A", 1, 1)]
    two_io = [ev("J", 0, 0, k=1), ev("D", 1, 1, k=1), ev("D", 1, 2, k=1)]
    for strategy in kind.strategies:
        any_ = strategy == "skip_till_any_match"
        got = [r["match"] for r in h.run(kind, compiled(pair, strategy), in_order)]
        assert got == ([] if any_ else [{"a": ["a0"], "b": ["b1"]}]), (strategy, got)
        assert h.run(kind, compiled(pair, strategy), reversed_) == [], strategy
        got = sorted(json.dumps(r["match"]["b"]) for r in h.run(kind, compiled(queue, strategy), two_io))
        if any_:
            assert got == ['["d1"]', '["d2"]'], got
        elif strategy == "skip_till_next_match":
            assert got == ['["d1", "d2"]', '["d1"]'], got  # Q4: both same-tick DataIO are summed
        for text, events in ((pair, in_order), (pair, reversed_), (queue, two_io)):
            check_match_records(kind, text, events, strategy)


# ------------------------------------------------------------------------------------------------ the contract


def with_noise(events: list[Event], seed: int) -> list[Event]:
    """The stream with events of a type no query names slipped in (at existing times, so the order holds)."""
    out: list[Event] = []
    n = len(events)
    for i, e in enumerate(sort_events(events)):
        out.append(e)
        if (i * 7 + seed) % 3 == 0:
            out.append(Event(NOISE_TYPE, e.ts, {}, id=f"noise{i}", seq=n + i, lo=e.lo, hi=e.hi, tick=h.TICK))
    return out


@pytest.mark.parametrize(("name", "via"), VIA)
def test_advance_is_feeding_events_the_query_does_not_name(name: str, via: str) -> None:
    kind = KINDS[name]

    @checked(via)
    @given(some_case(kind), st.integers(0, 2))
    def check(case: Any, seed: int) -> None:
        cq, events = records_of_case(kind, case)
        if cq.strategy in ("strict_contiguity", "partition_contiguity"):
            return  # contiguity strategies name every event: nothing to advance over
        stream = with_noise(h.fresh(events), seed)
        umax = h.widest(stream)
        fed_all = h.build(kind, cq, umax, via)
        want = [r for e in stream for r in fed_all.feed(e)] + fed_all.flush()
        advanced = h.build(kind, cq, umax, via)
        got: list[dict] = []
        now, width, t = -math.inf, 0, -math.inf
        for i, e in enumerate(stream, 1):
            now, width, t = max(now, e.tlo), max(width, e.thi - e.tlo), e.t
            if e.type == NOISE_TYPE:
                got.extend(advanced.advance(Clock(t, now, width, i)))
            else:
                got.extend(advanced.feed(e))
        got.extend(advanced.flush())
        assert h.canonical(got) == h.canonical(want)

    check()


@pytest.mark.parametrize(("name", "via"), VIA)
def test_feed_many_stats_horizon_and_limits(name: str, via: str) -> None:
    kind = KINDS[name]

    @checked(via)
    @given(some_case(kind))
    def check(case: Any) -> None:
        cq, events = records_of_case(kind, case)
        ordered = sort_events(h.fresh(events))
        m = h.build(kind, cq, h.widest(ordered), via)
        m.set_limits(Limits())
        got = m.feed_many(ordered)
        stats = m.stats()
        assert isinstance(stats, Stats) and stats.fed == len(ordered) and stats.runs_alive == m.runs_alive()
        assert stats.matches == len(got) and stats.shed == 0 and stats.dropped == m.dropped() == 0
        last = ordered[-1].t
        assert m.horizon(last, h.widest(ordered)) <= math.floor(last)
        got += m.flush()
        assert h.canonical(got) == h.canonical(h.run(kind, cq, events))
        assert isinstance(m, Evaluator)

    check()
