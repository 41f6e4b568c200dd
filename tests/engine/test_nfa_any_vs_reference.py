"""The NFA^b runtime's own skip_till_any_match (run cloning; the "plain SASE+" baseline of the benchmarks) against the
brute-force reference, and its distinct/collapsed modes against the exact evaluator on precise events."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Event, compile_query, match_events
from engine.language.parser import parse_query
from engine.runtime.matcher import Matcher, sort_events
from tests.reference import reference_any
from tests.strategies import cases

NFA = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def run_nfa(cq, events: list[Event]) -> list[dict]:
    m = Matcher(cq)
    out = [r for e in sort_events(events) for r in m.feed(e)]
    return out + m.flush()


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"kleene": True},
        {"trailing": True},
        {"negation": True},
        {"equivalence": True},
        {"window": True},
        {"aggregates": True, "returns": True},
    ],
)
@NFA
@given(data=st.data())
def test_nfa_any_match_equals_reference(flags: dict, data: st.DataObject) -> None:
    gen, events = data.draw(cases(**flags))
    query = parse_query(gen.text, "T")
    expected = reference_any(query, events, tick=1.0)
    records = run_nfa(compile_query(query, strategy="skip_till_any_match", tick=1.0), events)
    got = {tuple((v, tuple(ids)) for v, ids in r["match"].items()): r["return"] for r in records}
    assert len(got) == len(records), "no signature twice"
    assert set(got) == set(expected), gen.text
    for sig, returns in got.items():
        for name, value in expected[sig].items():
            other = returns[name]
            if isinstance(value, float) or isinstance(other, float):
                assert other is not None and value is not None and math.isclose(other, value, abs_tol=1e-9)
            else:
                assert other == value


DISTINCT = [
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v >= b[i-1].v WITHIN 6 s RETURN a.k AS k",
    "PATTERN SEQ(A a, B b, C c) RETURN b.v AS v",
    "PATTERN SEQ(A a, B+ b[], D d, C c) WHERE [k] RETURN d.v AS v",
]
COLLAPSED = [
    "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] RETURN count(b[].v) AS n",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v > a.v WITHIN 6 s",
]


@st.composite
def precise_streams(draw: st.DrawFn) -> list[Event]:
    n = draw(st.integers(2, 9))
    return [
        Event(
            draw(st.sampled_from("AABBBCD")),
            float(draw(st.integers(0, 10))),
            {"k": draw(st.integers(1, 2)), "v": draw(st.integers(0, 3))},
            id=f"e{i}",
            seq=i,
            tick=1.0,
        )
        for i in range(n)
    ]


@NFA
@given(query=st.sampled_from(DISTINCT), events=precise_streams())
def test_nfa_distinct_with_merged_runs_equals_exact_evaluator(query: str, events: list[Event]) -> None:
    cq = compile_query(query, output="distinct", tick=1.0)
    nfa = {tuple(r["return"].values()) for r in run_nfa(cq, events)}
    exact = {tuple(r["return"].values()) for r in match_events(cq, events)}
    assert nfa == exact


@NFA
@given(query=st.sampled_from(COLLAPSED), events=precise_streams())
def test_nfa_collapsed_equals_exact_evaluator(query: str, events: list[Event]) -> None:
    cq = compile_query(query, output="collapsed", tick=1.0)

    def norm(records: list[dict]) -> set:
        return {
            (tuple((v, tuple(sorted(ids))) for v, ids in r["match"].items()), tuple(r["return"].items()))
            for r in records
        }

    assert norm(run_nfa(cq, events)) == norm(match_events(cq, events))
