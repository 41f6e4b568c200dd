"""Memory bounds on partial matches (:mod:`engine.runtime.limits`, issue 18): held under the bound, counted, lossy
only where they bind, and never binding on the Hadoop pack's traces."""

from __future__ import annotations

import pytest

from engine import Event, compile_query, match_events
from engine.evaluate import StreamedMatch, make_matcher
from engine.language.packs import load_pack
from engine.runtime import limits as run_limits
from engine.runtime.limits import Limits, LimitsError, from_settings
from engine.runtime.matcher import Matcher, sort_events
from tests.queries.test_hadoop_pack import HANDCHECK, PACK, SAMPLE, read_events

TICK = 1.0


def blowup(n: int, keys: int = 1) -> list[Event]:
    """Per key: one A, then ``n`` B with rising values, then a C: 2**n Kleene subsets under skip_till_any_match."""
    events = []
    seq = 0
    for k in range(keys):
        for t, etype, v in [(0, "A", 0), *((i, "B", i) for i in range(1, n + 1)), (n + 1, "C", 0)]:
            events.append(Event(etype, float(t), {"k": k, "v": v}, id=f"{etype}{k}_{t}", seq=seq, tick=TICK))
            seq += 1
    return events


def test_nfa_runs_stay_under_the_bounds_and_are_counted() -> None:
    cq = compile_query(
        "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 100 s", strategy="skip_till_any_match", tick=TICK
    )
    events = sort_events(blowup(12, keys=3))
    free = Matcher(cq)
    want = [r for ev in events for r in free.feed(ev)]
    m = run_limits.apply(Matcher(cq), Limits(runs_per_key=300, runs=500))
    got = []
    peak = 0
    for ev in events:
        got.extend(m.feed(ev))
        peak = max(peak, m.alive)
        assert m.alive == sum(len(p) for p in m.pools.values())
        assert all(len(p) <= 300 for p in m.pools.values())
    assert peak <= 500 and m.dropped_runs > 0
    assert run_limits.dropped(m) == m.dropped_runs == m.stats().dropped
    keyed = {tuple(tuple(ids) for ids in r["match"].values()) for r in want}
    assert {tuple(tuple(ids) for ids in r["match"].values()) for r in got} <= keyed  # lossy, never invented
    unbounded = run_limits.apply(Matcher(cq), Limits(None, None))
    assert [r for ev in events for r in unbounded.feed(ev)] == want and unbounded.dropped_runs == 0


def test_trend_enumeration_is_bounded() -> None:
    """A trend query GRETA cannot evaluate is enumerated by the NFA^b runtime: 2**n runs without a bound."""
    cq = compile_query(
        "PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 100 s RETURN count(*)", tick=TICK
    )
    m = run_limits.apply(make_matcher(cq, 0), Limits(runs_per_key=1000, runs=1000))
    for ev in sort_events(blowup(20)):
        m.feed(ev)
        assert m.runs_alive() <= 1000
    m.flush()
    assert run_limits.dropped(m) == m.stats().dropped > 0


def test_imprecise_enumeration_is_cut_short_and_counted() -> None:
    cq = compile_query("PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 100 s", tick=TICK)
    events = blowup(12, keys=2)
    full = match_events(cq, events)
    assert len(full) == 2 * (2**12 - 1)
    streamed = StreamedMatch([cq], events, Limits(runs_per_key=1000, runs=1500))
    got = list(streamed)
    assert len(got) == 1000 + 500  # the first closing stops at 1000, the second at the step's remaining 500
    assert streamed.dropped() == {cq.name: 2}
    assert [m.dropped() for m in streamed.matchers] == [m.stats().dropped for m in streamed.matchers] == [2]
    assert all(r in full for r in got)
    assert list(StreamedMatch([cq], events, Limits(None, None))) == full


def test_streamed_match_equals_match_events_on_the_pack() -> None:
    pack = load_pack(PACK)
    from engine.plan.compiler import compile_spec

    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    for path in (HANDCHECK, SAMPLE):
        events = read_events(path, pack.tick)
        streamed = StreamedMatch(cqs, events)  # the default bounds: they never bind on the pack's traces
        assert list(streamed) == match_events(cqs, events)
        assert streamed.dropped() == {}


def test_settings_and_overrides() -> None:
    assert from_settings(None) == Limits()
    assert from_settings({"limits": {"runs": 10}}) == Limits(run_limits.DEFAULT_RUNS_PER_KEY, 10)
    assert from_settings({"limits": {"runs_per_key": None}}).runs_per_key is None
    assert Limits(5, 6).with_overrides(0, None) == Limits(None, 6)
    assert Limits(5, 6).with_overrides(7, 8) == Limits(7, 8)
    for bad in (
        {"limits": []},
        {"limits": {"runz": 1}},
        {"limits": {"runs": 0}},
        {"limits": {"runs": "many"}},
        {"limits": {"runs_per_key": True}},
    ):
        with pytest.raises(LimitsError):
            from_settings(bad)


def test_pack_runner_applies_the_pack_limits_and_reports_drops() -> None:
    from app.pack_runner import PackRunner
    from engine.language.packs import parse_pack

    text = (
        "pack: t\ntick: 1.0\nsettings: {limits: {runs_per_key: 50, runs: 80}}\nqueries:\n  - name: t\n"
        "    query: PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 100 s RETURN count(*)\n"
    )
    runner = PackRunner(parse_pack(text, "t.yaml"), 0, shedding=False)
    assert runner.limits == Limits(50, 80)
    for ev in sort_events(blowup(12)):
        runner.feed(ev)
    assert runner.limit_drops()["t"] > 0 and runner.runs_alive()["t"] <= 50
    assert runner.dropped() == runner.limit_drops()["t"] == runner.pairs[0][1].stats().dropped


def test_a_signature_too_costly_to_be_exact_is_skipped_and_counted() -> None:
    """Ten mutually overlapping Kleene elements under an order-dependent predicate: the confidence DP has thousands
    of placement states for the larger sets; past the work budget a signature is skipped, not computed for seconds."""
    from engine.imprecise import evaluator

    cq = compile_query("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 1 minute", tick=0.1)
    events = [Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=0.5)]
    events += [Event("B", 1.0 + 0.1 * i, {"v": i % 3}, id=f"b{i}", seq=i + 1, lo=0.6, hi=9.0) for i in range(10)]
    events.append(Event("C", 10.0, {}, id="c", seq=99, lo=9.5, hi=10.0))
    old = evaluator.SIGNATURE_WORK
    evaluator.SIGNATURE_WORK = 20_000
    try:
        streamed = StreamedMatch([cq], events, Limits(runs_per_key=5000, runs=5000))
        got = list(streamed)
    finally:
        evaluator.SIGNATURE_WORK = old
    (m,) = streamed.matchers
    assert m.skipped > 10 and m.truncated == 0  # the largest sets (nine or ten elements, some of eight)
    assert streamed.dropped() == {cq.name: m.skipped}
    assert 2**10 - 1 - m.skipped - 5 <= len(got) <= 2**10 - 1 - m.skipped


def test_a_wide_negation_without_window_is_bounded_by_the_work_budget() -> None:
    """With a negation candidate the tick DP stays; without a window it cannot be clipped, so intervals of
    2,000,001 points would be walked: the signature is skipped (counted) before the tick lists are built."""
    import time

    cq = compile_query("PATTERN SEQ(A a, ~D d, B b)", tick=1.0)
    events = [
        Event("A", 0.0, {}, id="a", seq=0, lo=0.0, hi=2e6, tick=1.0),
        Event("D", 0.0, {}, id="d", seq=1, lo=1e6, hi=1e6 + 10, tick=1.0),
        Event("B", 0.0, {}, id="b", seq=2, lo=5e5, hi=2.5e6, tick=1.0),
    ]
    start = time.process_time()
    streamed = StreamedMatch([cq], events)
    assert list(streamed) == []
    assert streamed.dropped() == {cq.name: 1}
    assert time.process_time() - start < 2.0
