"""GRETA trend aggregation (engine.greta): the paper's worked examples, the language front-end, windows, groups,
negation, exactness, the Fenwick fast path, evaluator choice, the trends pack and the benchmark script.

The property tests compare GRETA with an oracle built independently of the engine: every trend enumerated by the
test suite's brute-force reference (:func:`tests.reference.reference_any`, docs/semantics.md section 3), assigned to
the windows it fits in and the group its events bind, and aggregated directly with exact arithmetic.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.evaluate import make_matcher, match_events
from engine.events import Event
from engine.greta import (
    Graph,
    GretaMatcher,
    Layout,
    NotGreta,
    State,
    Template,
    Transition,
    TrendAgg,
    TrendEnumerator,
    plan_greta,
)
from engine.greta.fenwick import RangeIndex
from engine.greta.graph import NO_WINDOWS
from engine.language import ast
from engine.language.packs import load_pack
from engine.language.parser import parse_query
from engine.plan.choose import choose_evaluator, explain_plan
from engine.plan.compiler import compile_query
from engine.runtime.matcher import OutOfOrderError
from tests.reference import reference_any

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- helpers


def paper_event(name: str, **attrs: Any) -> Event:
    """``a4`` -> an event of type A at tick 4 with id "a4" (the paper's notation)."""
    return Event(name[0].upper(), int(name[1:]), attrs, id=name, seq=int(name[1:]), tick=1.0)


def paper_template(negations: list[Template] | None = None) -> Template:
    """``(SEQ(A+, B))+`` (digest section 3): A -> A (+), A -> B (SEQ), B -> A (the outer +); START A, END B."""
    states = [State(0, "a", "A", kleene=True), State(1, "b", "B")]
    transitions = [
        Transition(0, 0, "plus"),
        Transition(0, 1, "seq", negations=negations or []),
        Transition(1, 0, "seq"),
    ]
    return Template(states, transitions, frozenset({0}), frozenset({1}))


def single(var: str, type_: str) -> Template:
    return Template([State(0, var, type_)], [], frozenset({0}), frozenset({0}))


def run_graph(tpl: Template, events: list[Event], aggs: tuple[TrendAgg, ...] = ()) -> tuple[Layout, list[Any]]:
    """Feed the graph tick by tick; return the layout and the final aggregate after each tick (None before any)."""
    layout = Layout(aggs, [s.var for s in tpl.states])
    graph = Graph(tpl, layout, NO_WINDOWS)
    finals = []
    for _t, group in itertools.groupby(events, key=lambda e: e.t):
        graph.step(list(group))
        finals.append(graph.results.get(0, {}).get(()))
    return layout, finals


def run(matcher: Any, events: list[Event]) -> list[dict]:
    out: list[dict] = []
    for ev in events:
        out.extend(matcher.feed(ev))
    out.extend(matcher.flush())
    return out


def keyed(records: list[dict]) -> dict[tuple, dict]:
    """Records by (start, end, group); asserts each appears once."""
    out: dict[tuple, dict] = {}
    for r in records:
        key = (r["start"], r["end"], tuple(sorted(r["match"].items(), key=repr)))
        assert key not in out, f"duplicate record {r}"
        assert r["confidence"] == 1.0
        out[key] = r["return"]
    return out


def events_from(spec: str, **common: Any) -> list[Event]:
    """``"A1 v=1, B2 v=3 k=x"`` -> events (type, tick, attributes); ids are the tokens' first word."""
    out = []
    for seq, item in enumerate(s.strip() for s in spec.split(",") if s.strip()):
        head, *pairs = item.split()
        attrs: dict[str, Any] = dict(common)
        for pair in pairs:
            k, v = pair.split("=")
            attrs[k] = json.loads(v) if v[0].isdigit() or v[0] == "-" else v
        out.append(Event(head[0], float(head[1:]), attrs, id=f"{head}", seq=seq, tick=1.0))
    return out


GRETA_MODES = [("incremental", False), ("incremental", True), ("deferred", False), ("deferred", True)]


def all_modes(cq: Any, events: list[Event]) -> dict[tuple, dict]:
    """Run GRETA in every mode and the two-step enumerator; all must agree; return the records by key."""
    results = [keyed(run(GretaMatcher(cq, fast=fast, mode=mode), events)) for mode, fast in GRETA_MODES]
    results.append(keyed(run(TrendEnumerator(cq), events)))
    for other in results[1:]:
        assert other == results[0]
    return results[0]


# --------------------------------------------------------------------------- the paper's worked examples

PAPER_STREAM = ["a1", "b2", "c2", "a3", "e3", "a4", "c5", "d6", "b7", "a8", "b9"]


def test_paper_count_43() -> None:
    """Digest section 4: (SEQ(A+,B))+ over I has 43 trends; the END vertices b2, b7, b9 count 1, 10 and 32."""
    events = [paper_event(x) for x in PAPER_STREAM]
    _layout, finals = run_graph(paper_template(), events)
    assert finals[-1] == 43
    # The running final after each END event: b2 -> 1, b7 -> 1 + 10, b9 -> 11 + 32.
    by_tick = dict(zip(sorted({e.t for e in events}), finals, strict=True))
    assert (by_tick[2], by_tick[7], by_tick[9]) == (1, 11, 43)


def test_paper_figure_12_aggregates() -> None:
    """Digest section 5: a1 b2 a3 a4 b7 (attr 5, 6, 4): COUNT(*) 11, COUNT(A) 20, MIN 4, MAX 6, SUM 100, AVG 5."""
    events = [
        paper_event("a1", attr=5),
        paper_event("b2"),
        paper_event("a3", attr=6),
        paper_event("a4", attr=4),
        paper_event("b7"),
    ]
    aggs = (
        TrendAgg("count"),
        TrendAgg("count", "a"),
        TrendAgg("min", "a", "attr"),
        TrendAgg("max", "a", "attr"),
        TrendAgg("sum", "a", "attr"),
        TrendAgg("avg", "a", "attr"),
    )
    layout, finals = run_graph(paper_template(), events, aggs)
    values = {a.text: layout.value(finals[-1], a) for a in aggs}
    assert values == {
        "COUNT(*)": 11,
        "COUNT(a)": 20,
        "MIN(a.attr)": 4,
        "MAX(a.attr)": 6,
        "SUM(a.attr)": 100,
        "AVG(a.attr)": 5,
    }
    # The per-vertex table of Figure 12 through the final aggregate after b2 (= b2's vertex): count 1, countA 1, sum 5.
    assert layout.value(finals[1], aggs[0]) == 1 and layout.value(finals[1], aggs[4]) == 5


def test_paper_negation_13() -> None:
    """Digest section 6: (SEQ(A+, NOT SEQ(C, NOT E, D), B))+ over I has 13 trends (43 without the negation).

    e3 cancels (c2, d6); (c5, d6) invalidates a1, a3, a4 for b's after d6, so b7 has no valid predecessor (the total
    stays at b2's 1) while a8 (1 + 1 + 1 + 3 + 6 = 12) and b9 (= a8) still use them."""
    cd = Template(
        [State(0, "c", "C"), State(1, "d", "D")],
        [Transition(0, 1, "seq", negations=[single("e", "E")])],
        frozenset({0}),
        frozenset({1}),
    )
    events = [paper_event(x) for x in PAPER_STREAM]
    _layout, finals = run_graph(paper_template([cd]), events)
    by_tick = dict(zip(sorted({e.t for e in events}), finals, strict=True))
    assert (by_tick[2], by_tick[7], by_tick[9]) == (1, 1, 13)


def test_paper_negation_without_inner_negation() -> None:
    """Without NOT E, (c2, d6) also finishes a negative trend: it reaches back to a1 as well (same count here)."""
    cd = Template([State(0, "c", "C"), State(1, "d", "D")], [Transition(0, 1, "seq")], frozenset({0}), frozenset({1}))
    events = [paper_event(x) for x in PAPER_STREAM]
    _layout, finals = run_graph(paper_template([cd]), events)
    assert finals[-1] == 13


def test_paper_example_in_our_language() -> None:
    """The flat part of the example, SEQ(A+ a[], B b), written as a query: trends = non-empty subsets of the a's
    before a b, i.e. over a1 b2 a3 a4 b7: 1 + 7 = 8; COUNT(a) = 1 + 12; SUM(a.attr) = 5 + 4*15 = 65."""
    cq = compile_query(
        "PATTERN SEQ(A+ a[], B b) RETURN COUNT(*) AS n, COUNT(a) AS na, SUM(a.attr) AS s, "
        "MIN(a.attr) AS lo, MAX(a.attr) AS hi, AVG(a.attr) AS avg",
        name="P",
        tick=1.0,
    )
    events = [
        paper_event("a1", attr=5),
        paper_event("b2"),
        paper_event("a3", attr=6),
        paper_event("a4", attr=4),
        paper_event("b7"),
    ]
    records = all_modes(cq, events)
    [(key, ret)] = records.items()
    assert key == (1.0, 7.0, ())  # unbounded: first and last relevant events
    assert ret == {"n": 8, "na": 13, "s": 65, "lo": 4, "hi": 6, "avg": 5.0}


# --------------------------------------------------------------------------- the language front-end


def test_parse_trend_aggregates() -> None:
    q = parse_query(
        "PATTERN SEQ(ReducerStart a, LoadStd+ b[]) WHERE [host] AND b[i].val > b[i-1].val "
        "WITHIN 10 minutes SLIDE 1 minute RETURN COUNT(*) AS trends, SUM(b.cpu) AS cpu, count(b), "
        "max(b.val) - min(b.val) AS spread, AVG(a.cpu)"
    )
    assert q.returns == ()
    assert [i.name for i in q.aggregates] == ["trends", "cpu", "count(b)", "spread", "AVG(a.cpu)"]
    assert q.aggregates[0].expr == ast.TrendAggregate("count")
    assert q.aggregates[1].expr == ast.TrendAggregate("sum", "b", "cpu")
    assert q.aggregates[2].expr == ast.TrendAggregate("count", "b")
    assert (q.within, q.slide) == (600.0, 60.0)


def test_per_match_aggregates_unchanged() -> None:
    q = parse_query("PATTERN SEQ(A a, B+ b[]) RETURN sum(b[].x) AS s, count(b[].x) AS n")
    assert q.aggregates == () and [type(i.expr) for i in q.returns] == [ast.Aggregate, ast.Aggregate]


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("PATTERN SEQ(A a, B+ b[])\nRETURN COUNT(*), a.x", 2, 18, "cannot mix trend aggregates"),
        ("PATTERN SEQ(A a, B+ b[])\nRETURN a.x, COUNT(*)", 2, 8, "cannot mix trend aggregates"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*), sum(b[].x)", 1, 43, "cannot mix"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*), 5", 1, 43, "cannot mix"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*) > 3", 1, 33, "may only combine"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE COUNT(*) > 1 RETURN COUNT(*)", 1, 32, "only be used in RETURN"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN SUM(b)", 1, 33, "needs an attribute"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(b.x)", 1, 33, "COUNT takes * or a variable"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN SUM(*)", 1, 33, "only COUNT(*) takes '*'"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN MEDIAN(b.x)", 1, 33, "unknown trend aggregate"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(c)", 1, 33, "unknown variable 'c'"),
        ("PATTERN SEQ(A a, ~C c, B+ b[]) RETURN SUM(c.x)", 1, 39, "negated variable"),
        ("PATTERN SEQ(A a, B+ b[]) WITHIN 5 s SLIDE 1 s RETURN a.x", 1, 37, "SLIDE applies only"),
        ("PATTERN SEQ(A a, B+ b[]) SLIDE 1 s RETURN COUNT(*)", 1, 26, "SLIDE needs WITHIN"),
        ("PATTERN SEQ(A a, B+ b[]) WITHIN 5 s SLIDE 0 s RETURN COUNT(*)", 1, 43, "SLIDE must be a positive"),
        ("PATTERN SEQ(A a, B+ b[]) WITHIN 5 s SLIDE 2 weeks RETURN COUNT(*)", 1, 45, "unknown time unit"),
    ],
)
def test_trend_query_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ast.QueryError) as info:
        parse_query(text, "T")
    err = info.value
    assert (err.query, err.line, err.column) == ("T", line, column), str(err)
    assert message in str(err)


def test_slide_is_a_name_elsewhere() -> None:
    q = parse_query("PATTERN SEQ(Slide slide, B b) WHERE slide.slide > 1 WITHIN 5 s RETURN slide.slide AS slide")
    assert q.components[0].type == "Slide" and q.returns[0].name == "slide" and q.slide is None


# --------------------------------------------------------------------------- plans and evaluator choice


@pytest.mark.parametrize(
    ("text", "strategy", "expected"),
    [
        ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x RETURN COUNT(*)", None, "greta"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x >= max(b[..i-1].x) RETURN COUNT(*)", None, "greta"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > avg(b[..i-1].x) RETURN COUNT(*)", None, "enumerate"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > a.x RETURN COUNT(*)", None, "enumerate"),
        ("PATTERN SEQ(A a, B+ b[], C c) WHERE c.x > a.x RETURN COUNT(*)", None, "enumerate"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE b.len > 2 RETURN COUNT(*)", None, "enumerate"),
        ("PATTERN SEQ(A a, ~C n, B b) WHERE n.x = a.x RETURN COUNT(*)", None, "enumerate"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*)", "skip_till_next_match", "enumerate"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN a.x", None, "imprecise"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN a.x", "partition_contiguity", "nfa"),
    ],
)
def test_choose_evaluator(text: str, strategy: str | None, expected: str) -> None:
    cq = compile_query(text, name="q", strategy=strategy)
    assert choose_evaluator(cq) == expected
    matcher = make_matcher(cq)
    kind = {"greta": "GretaMatcher", "enumerate": "TrendEnumerator", "imprecise": "ImpreciseMatcher", "nfa": "Matcher"}[
        expected
    ]
    assert type(matcher).__name__ == kind
    assert expected in explain_plan(cq)


def test_not_greta_names_the_predicate() -> None:
    cq = compile_query("PATTERN SEQ(A a, B+ b[])\nWHERE b[i].x > b[1].x RETURN COUNT(*)", name="q")
    with pytest.raises(NotGreta) as info:
        plan_greta(cq)
    assert info.value.node.line == 2 and "not adjacent" in str(info.value)


def test_template_of_a_query() -> None:
    cq = compile_query(
        "PATTERN SEQ(A a, ~N n, B+ b[], C c) WHERE [k] AND a.x > 1 AND b[1].x > a.x AND "
        "b[i].x > b[i-1].x AND b[b.len].y = 2 AND c.x < b[b.len].x AND n.z = 1 RETURN COUNT(*)",
        name="q",
    )
    tpl = plan_greta(cq).template
    assert [(s.var, s.type, s.kleene) for s in tpl.states] == [("a", "A", False), ("b", "B", True), ("c", "C", False)]
    assert (tpl.start, tpl.end, tpl.attrs) == (frozenset({0}), frozenset({2}), ("k",))
    edges = {(t.src, t.dst, t.kind): t for t in tpl.transitions}
    assert set(edges) == {(0, 1, "seq"), (1, 1, "plus"), (1, 2, "seq")}
    assert edges[(0, 1, "seq")].negations and edges[(0, 1, "seq")].range is not None
    assert edges[(1, 1, "plus")].range.op == ">"
    assert [kind for kind, _ in tpl.states[1].notes] == ["last"] and tpl.states[0].notes == [("local", "a.x > 1")]
    text = plan_greta(cq).explain()
    assert "Fenwick tree on b[i-1].x" in text and "not across: ~N n where n.z = 1" in text


# --------------------------------------------------------------------------- windows, groups, negation, records


def test_windows_tumbling_by_default_and_emitted_on_close() -> None:
    cq = compile_query("PATTERN B+ b[] WITHIN 10 s RETURN COUNT(*) AS n", name="W", tick=1.0)
    m = GretaMatcher(cq)
    assert m.feed(Event("B", 1, {}, tick=1.0)) == [] and m.feed(Event("B", 9, {}, tick=1.0)) == []
    out = m.feed(Event("B", 10, {}, tick=1.0))  # the first event at or after 10 closes [0, 10)
    assert out == [{"query": "W", "match": {}, "confidence": 1.0, "start": 0.0, "end": 10.0, "return": {"n": 3}}]
    assert m.flush() == [{"query": "W", "match": {}, "confidence": 1.0, "start": 10.0, "end": 20.0, "return": {"n": 1}}]


def test_sliding_windows() -> None:
    """WITHIN 4 SLIDE 2: windows [2k, 2k+4); a trend counts in every window it fits in."""
    cq = compile_query("PATTERN B+ b[] WITHIN 4 s SLIDE 2 s RETURN COUNT(*) AS n, SUM(b.v) AS s", name="S", tick=1.0)
    events = events_from("B1 v=1, B2 v=2, B3 v=4, B5 v=8")
    got = all_modes(cq, events)
    assert got == {
        (-2.0, 2.0, ()): {"n": 1, "s": 1},  # {b1}
        (0.0, 4.0, ()): {"n": 7, "s": 28},  # subsets of {1, 2, 4}: each value in 4 of them
        (2.0, 6.0, ()): {"n": 7, "s": 56},  # subsets of {2, 4, 8}
        (4.0, 8.0, ()): {"n": 1, "s": 8},
    }


def test_groups_with_shared_events() -> None:
    """[k]: events lacking k join every group; a trend of only such events has no group value (null)."""
    cq = compile_query("PATTERN SEQ(A a, B+ b[]) WHERE [k] RETURN COUNT(*) AS n, COUNT(b) AS nb", name="G", tick=1.0)
    events = events_from("A1 k=x, A2, A3 k=y, B4, B5 k=x")
    got = all_modes(cq, events)
    assert got == {
        # a1 then {b4}, {b5}, {b4, b5}; a2 then a set with b5 (a2 b4 alone binds no k)
        (1.0, 5.0, (("k", "x"),)): {"n": 5, "nb": 7},
        (1.0, 5.0, (("k", "y"),)): {"n": 1, "nb": 1},  # a3 b4
        (1.0, 5.0, (("k", None),)): {"n": 1, "nb": 1},  # a2 b4
    }


def test_negation_between_components() -> None:
    cq = compile_query("PATTERN SEQ(A a, ~C n, B+ b[]) WHERE n.v > 1 RETURN COUNT(*) AS n", name="N", tick=1.0)
    events = events_from("A1, B2, C3 v=1, B4, C5 v=2, B6, A7, B8")
    # The negation sits between a and the *first* b (semantics section 3): c3 does not qualify, c5 lies between a1 and
    # b6 / b8.  a1: b[1] = b2 then any subset of {b4, b6, b8} (8), b[1] = b4 then any subset of {b6, b8} (4); a7 b8.
    assert all_modes(cq, events) == {(1.0, 8.0, ()): {"n": 13}}


def test_negation_with_groups_pending_until_bound() -> None:
    """A keyed negated event between two events that lack the key cancels only the trends whose group it joins."""
    cq = compile_query("PATTERN SEQ(A a, ~C n, B b, D d) WHERE [k] RETURN COUNT(*) AS n", name="P", tick=1.0)
    events = events_from("A1, C2 k=x, B3, D4 k=x, D5 k=y, D6")
    got = all_modes(cq, events)
    # (a1 b3 d4) is group x: c2 cancels it; (a1 b3 d5) is group y: c2 does not; (a1 b3 d6) has no k: c2 cancels it.
    assert got == {(1.0, 6.0, (("k", "y"),)): {"n": 1}}


def test_same_tick_events_are_not_adjacent() -> None:
    cq = compile_query("PATTERN B+ b[] RETURN COUNT(*) AS n", name="T", tick=1.0)
    assert all_modes(cq, events_from("B1, B1, B2"))[(1.0, 2.0, ())] == {"n": 5}  # {b1}, {b1'}, {b2}, 2 pairs


def test_out_of_order_is_rejected() -> None:
    m = GretaMatcher(compile_query("PATTERN B+ b[] RETURN COUNT(*)", name="o", tick=1.0))
    m.feed(Event("B", 5, {}, tick=1.0))
    with pytest.raises(OutOfOrderError):
        m.feed(Event("B", 4, {}, tick=1.0))


def test_match_events_and_json_big_ints() -> None:
    """Counts are exact big integers: 200 events with no predicate make 2^200 - 1 trends."""
    cq = compile_query(
        "PATTERN B+ b[] RETURN COUNT(*) AS n, COUNT(b) AS nb, SUM(b.v) AS s, AVG(b.v) AS avg", name="big", tick=1.0
    )
    events = [Event("B", i, {"v": 0.1}, seq=i, tick=1.0) for i in range(200)]
    [record] = match_events(cq, events)
    n = 200
    assert record["return"]["n"] == 2**n - 1
    assert record["return"]["nb"] == n * 2 ** (n - 1)
    assert record["return"]["s"] == float(Fraction(0.1) * n * 2 ** (n - 1))  # exact, then rounded once
    assert record["return"]["avg"] == 0.1
    assert json.loads(json.dumps(record))["return"]["n"] == 2**200 - 1


def test_return_arithmetic_and_missing_values() -> None:
    cq = compile_query(
        "PATTERN B+ b[] RETURN COUNT(*) AS n, SUM(b.v) / COUNT(b) AS mean, MIN(b.w) AS none, "
        "SUM(b.w) AS s, COUNT(*) * 2 - 1 AS odd, MAX(b.v) % 2 AS par",
        name="R",
        tick=1.0,
    )
    events = events_from('B1 v=2, B2 v=4 w="x"')
    got = all_modes(cq, events)
    assert list(got.values()) == [{"n": 3, "mean": 3.0, "none": None, "s": None, "odd": 5, "par": 0}]


def test_imprecise_events_use_their_midpoint() -> None:
    cq = compile_query("PATTERN B+ b[] RETURN COUNT(*) AS n", name="I", tick=1.0)
    events = [Event("B", 10, {}, lo=0, hi=20, tick=1.0, seq=0), Event("B", 11, {}, tick=1.0, seq=1)]
    assert run(GretaMatcher(cq), events)[0]["return"] == {"n": 3}


# --------------------------------------------------------------------------- the Fenwick fast path


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_range_index_matches_brute_force(op: str) -> None:
    rng = random.Random(op)
    pool = [0, 1, 1.5, 2, 2.0, 3, True, float("nan"), None, "a", "b", "c"]
    keys = [rng.choice(pool) for _ in range(40)]
    index = RangeIndex(keys, op, lambda a, b: a + b)
    for i, k in enumerate(keys):
        index.insert(k, 1 << i)
    compare = {"<": lambda q, k: q < k, "<=": lambda q, k: q <= k, ">": lambda q, k: q > k, ">=": lambda q, k: q >= k}[
        op
    ]
    for q in pool:
        expected = 0
        for i, k in enumerate(keys):
            try:
                if k is not None and q is not None and compare(q, k):
                    expected += 1 << i
            except TypeError:
                pass
        assert (index.query(q) or 0) == expected, (q, op)


def test_fenwick_equals_general_path_on_large_streams() -> None:
    """Hundreds of events (no enumeration possible): the fast path equals the general path, groups and slides."""
    rng = random.Random(7)
    queries = [
        "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > b[i-1].v WITHIN 60 s SLIDE 20 s "
        "RETURN COUNT(*) AS n, SUM(b.v) AS s, MIN(b.v) AS lo, MAX(b.v) AS hi, AVG(b.w) AS avg",
        "PATTERN SEQ(A a, B+ b[]) WHERE b[1].v <= a.v AND b[i].v <= b[i-1].v WITHIN 50 s RETURN COUNT(*) AS n, "
        "COUNT(b) AS nb",
        "PATTERN SEQ(A a, ~C n, B+ b[]) WHERE b[i].v * 2 >= b[i-1].v + 1 WITHIN 40 s SLIDE 10 s RETURN COUNT(*) AS n",
    ]
    for text in queries:
        cq = compile_query(text, name="F", tick=1.0)
        events = []
        t = 0
        for i in range(400):
            t += rng.choice([0, 1, 1, 1, 2])
            attrs: dict[str, Any] = {"v": rng.choice([rng.randint(0, 30), rng.random() * 30]), "w": rng.random()}
            if rng.random() < 0.9:
                attrs["k"] = rng.randrange(3)
            events.append(Event(rng.choice("AABBBBC"), t, attrs, seq=i, tick=1.0))
        fast = keyed(run(GretaMatcher(cq, fast=True), events))
        assert GretaMatcher(cq).mode == "deferred"
        general = keyed(run(GretaMatcher(cq, fast=False), events))
        assert fast == general and len(fast) > 3
        assert max(r["n"] for r in fast.values()) > 1000


def test_fenwick_falls_back_on_unrankable_values() -> None:
    cq = compile_query("PATTERN B+ b[] WHERE b[i].v > b[i-1].v RETURN COUNT(*) AS n", name="U", tick=1.0)
    events = [Event("B", i, {"v": v}, seq=i, tick=1.0) for i, v in enumerate([1, [2], 3, "x", "y", None, 4])]
    assert keyed(run(GretaMatcher(cq), events)) == keyed(run(GretaMatcher(cq, fast=False), events))


# --------------------------------------------------------------------------- property tests against the oracle

#: Patterns with GRETA-expressible predicates to draw from (every one is a local, entry, exit, + or SEQ predicate).
PATTERNS: list[tuple[str, list[str], list[str]]] = [
    (
        "B+ b[]",
        [
            "b[i].v > b[i-1].v",
            "b[i].v <= b[i-1].v",
            "b[i].v != 2",
            "b[1].v >= 1",
            "b[b.len].v < 4",
            "b[i].v + b[i-1].v > 3",
        ],
        ["b"],
    ),
    (
        "SEQ(A a, B+ b[])",
        ["a.v >= 1", "b[1].v > a.v", "b[i].v >= b[i-1].v", "b[i].v < 4", "b[b.len].v > 0"],
        ["a", "b"],
    ),
    ("SEQ(A a, B+ b[], C c)", ["b[i].v > b[i-1].v", "c.v <= b[b.len].v", "b[1].v != a.v", "a.v < 3"], ["a", "b", "c"]),
    ("SEQ(B+ b[], C c)", ["b[i].v < b[i-1].v", "c.v > b[b.len].v", "c.v != 1"], ["b", "c"]),
    ("SEQ(A a, ~C n, B+ b[])", ["n.v > 1", "b[i].v > b[i-1].v", "b[1].v >= a.v"], ["a", "b"]),
    ("SEQ(A a, B b)", ["b.v > a.v", "a.v != 0"], ["a", "b"]),
    ("SEQ(A+ a[], B+ b[])", ["a[i].v > a[i-1].v", "b[1].v < a[a.len].v", "b[i].v != b[i-1].v"], ["a", "b"]),
    ("SEQ(A a, ~B n, C c)", ["n.v = 2", "c.v >= a.v"], ["a", "c"]),
    ("SEQ(A a, ~C n, B b, ~C m, A d)", ["d.v > b.v", "m.v < 3"], ["a", "b", "d"]),
]


@st.composite
def trend_cases(draw: st.DrawFn) -> tuple[str, list[Event], int | None, int | None]:
    pattern, preds, variables = draw(st.sampled_from(PATTERNS))
    chosen = draw(st.lists(st.sampled_from(preds), unique=True, max_size=3))
    equiv = draw(st.booleans())
    conjuncts = (["[k]"] if equiv else []) + chosen
    where = f" WHERE {' AND '.join(conjuncts)}" if conjuncts else ""
    within = draw(st.one_of(st.none(), st.integers(2, 10)))
    slide = draw(st.integers(1, within)) if within is not None and draw(st.booleans()) else None
    clause = "" if within is None else f" WITHIN {within} s" + ("" if slide is None else f" SLIDE {slide} s")
    items = ["COUNT(*) AS n"]
    for i, (func, var) in enumerate(
        draw(
            st.lists(
                st.tuples(st.sampled_from(["count", "sum", "min", "max", "avg"]), st.sampled_from(variables)),
                max_size=4,
            )
        )
    ):
        arg = var if func == "count" else f"{var}.v"
        items.append(f"{func.upper()}({arg}) AS x{i}")
    text = f"PATTERN {pattern}{where}{clause} RETURN {', '.join(items)}"
    types = sorted({c for c in pattern if c in "ABC"})
    n = draw(st.integers(2, 10))
    events = []
    t = 0
    for i in range(n):
        t += draw(st.sampled_from([0, 1, 1, 2]))
        attrs: dict[str, Any] = {}
        v = draw(st.sampled_from([0, 1, 2, 3, 4, 1, 2, 3, 1.5, None]))
        if v is not None:
            attrs["v"] = v
        k = draw(st.sampled_from(["x", "y", "x", "x", None]))
        if k is not None:
            attrs["k"] = k
        events.append(Event(draw(st.sampled_from(types)), t, attrs, id=f"e{i}", seq=i, tick=1.0))
    return text, events, within, slide or within


def _number(x: Any) -> bool:
    return type(x) is int or (type(x) is float and math.isfinite(x))


def oracle(text: str, events: list[Event], within: int | None, slide: int | None) -> dict[tuple, dict]:
    """Every trend from the brute-force reference, grouped by window and group, aggregated exactly."""
    query = parse_query(text, "q")
    signatures = reference_any(query, events, window_ticks=within, tick=1.0)
    by_id = {e.id: e for e in events}
    cells: dict[tuple, list[dict[str, list[Event]]]] = {}
    for signature in signatures:
        binding = {var: [by_id[i] for i in ids] for var, ids in signature}
        evs = [e for bound in binding.values() for e in bound]
        first, last = min(e.t for e in evs), max(e.t for e in evs)
        group = tuple(next((e.get(a) for e in evs if e.get(a) is not None), None) for a in query.equivalence)
        if within is None:
            keys = [(min(e.t for e in events), max(e.t for e in events))]
        else:
            keys = [
                (float(w * slide), float(w * slide + within))
                for w in range(math.floor((last - within) / slide) + 1, math.floor(first / slide) + 1)
            ]
        for start, end in keys:
            cells.setdefault((start, end, tuple(zip(query.equivalence, group, strict=True))), []).append(binding)
    expected = {}
    for key, trends in cells.items():
        values = {}
        for item in query.aggregates:
            agg = item.expr
            if agg.var is None:
                values[item.name] = len(trends)
                continue
            if agg.func == "count":
                values[item.name] = sum(len(b[agg.var]) for b in trends)
                continue
            xs = [x for b in trends for e in b[agg.var] if _number(x := e.get(agg.attr))]
            if not xs:
                values[item.name] = None
            elif agg.func == "min":
                values[item.name] = min(xs)
            elif agg.func == "max":
                values[item.name] = max(xs)
            else:
                total = sum(Fraction(x) for x in xs)
                if agg.func == "avg":
                    values[item.name] = float(total / len(xs))
                else:
                    values[item.name] = int(total) if all(type(x) is int for x in xs) else float(total)
        expected[key] = values
    return expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trend_cases())
def test_greta_equals_enumeration_oracle(case: tuple[str, list[Event], int | None, int | None]) -> None:
    text, events, within, slide = case
    cq = compile_query(text, name="q", tick=1.0)
    assert choose_evaluator(cq) == "greta", text
    expected = oracle(text, events, within, slide)
    got = all_modes(cq, events)
    if within is None:  # unbounded: the window bounds are the first and last relevant events, not a grid
        got = {(min(e.t for e in events), max(e.t for e in events), g): v for (_s, _e, g), v in got.items()}
    assert got == expected, text


def test_greta_equals_two_step_on_longer_streams() -> None:
    """Longer random streams (up to 18 events, trends in the thousands) against the NFA^b two-step enumerator."""
    rng = random.Random(11)
    checked = 0
    for _ in range(120):
        pattern, preds, _variables = rng.choice(PATTERNS)
        conjuncts = (["[k]"] if rng.random() < 0.5 else []) + rng.sample(preds, rng.randint(0, min(2, len(preds))))
        within = rng.randint(4, 14)
        slide = rng.choice([None, rng.randint(1, within)])
        text = (
            f"PATTERN {pattern}{' WHERE ' + ' AND '.join(conjuncts) if conjuncts else ''} WITHIN {within} s"
            f"{'' if slide is None else f' SLIDE {slide} s'} RETURN COUNT(*) AS n, SUM(b.v) AS s, MAX(a.v) AS m"
        )
        text = text.replace("SUM(b.v)", "SUM(c.v)") if " b" not in pattern else text
        text = text.replace("MAX(a.v)", "MAX(b.v)") if "A a" not in pattern and "A+ a[]" not in pattern else text
        types = sorted({c for c in pattern if c in "ABC"})
        events, t = [], 0
        for i in range(rng.randint(8, 18)):
            t += rng.choice([0, 1, 1, 2])
            attrs: dict[str, Any] = {"v": rng.randint(0, 6)}
            if rng.random() < 0.8:
                attrs["k"] = rng.choice("xy")
            events.append(Event(rng.choice(types), t, attrs, seq=i, tick=1.0))
        cq = compile_query(text, name="L", tick=1.0)
        checked += bool(all_modes(cq, events))
    assert checked > 60


# --------------------------------------------------------------------------- the trends pack and the benchmark


def test_trends_pack_runs_on_greta_and_agrees_with_enumeration() -> None:
    pack = load_pack(ROOT / "queries" / "trends.yaml")
    assert len(pack.queries) >= 5
    events_path = ROOT / "queries" / "samples" / "hadoop_sample.jsonl"
    from engine.events import event_from_json

    events = [
        event_from_json(json.loads(line), seq=i, tick=pack.tick)
        for i, line in enumerate(events_path.read_text().splitlines())
        if line.strip()
    ]
    events.sort(key=lambda e: (e.t, e.seq))
    total = 0
    for spec in pack.queries:
        cq = compile_query(spec.query, name=spec.name, strategy=spec.strategy, tick=pack.tick)
        assert choose_evaluator(cq) == "greta", spec.name
        greta = keyed(run(GretaMatcher(cq), events))
        assert greta == keyed(run(TrendEnumerator(cq), events)), spec.name
        total += len(greta)
    assert total > 10


def test_trends_pack_metric_queries() -> None:
    """T1 and T2 over synthetic Ganglia Metric samples: rising load_one per host."""
    pack = load_pack(ROOT / "queries" / "trends.yaml")
    spec = pack.get("T1")
    cq = compile_query(spec.query, name="T1", tick=pack.tick)
    events = []
    for i, (host, load) in enumerate([("h1", 1.0), ("h2", 5.0), ("h1", 2.0), ("h2", 4.0), ("h1", 3.0)]):
        events.append(Event("Metric", 15.0 * (i + 1), {"host": host, "metric": "load_one", "val": load}, seq=i))
        events.append(Event("Metric", 15.0 * (i + 1), {"host": host, "metric": "cpu_user", "val": 50.0}, seq=100 + i))
    events.sort(key=lambda e: (e.t, e.seq))
    records = [r for r in run(GretaMatcher(cq), events) if r["start"] == 0.0]
    by_host = {r["match"]["host"]: r["return"] for r in records}
    assert by_host["h1"] == {"trends": 7, "load_sum": 24.0, "samples": 12, "peak_load": 3.0}
    assert by_host["h2"] == {"trends": 2, "load_sum": 9.0, "samples": 2, "peak_load": 5.0}


def test_bench_greta_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import bench_greta

    argv = ["--plain", "--quiet", "--sizes", "10,15", "--budget", "0.3", "--agg-size", "200"]
    assert bench_greta.main(argv) == 0
    out = capsys.readouterr().out
    assert "GRETA vs trend enumeration" in out and "| events/window" in out and "3,327" in out
