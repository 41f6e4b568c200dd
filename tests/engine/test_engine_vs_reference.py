"""Differential tests: the engine against the brute-force reference (tests/reference.py) on random tiny inputs.

Every selection strategy is run over random queries (tests/strategies.py) with each feature forced in turn: Kleene,
trailing Kleene, negation, equivalence, windows, aggregates and RETURN values.  skip_till_any_match is compared as a
set of signatures (and the engine must not repeat one); the NFA strategies as multisets.  RETURN values must agree
(floats within 1e-9); precise events give confidence 1 and start/end = first/last reported time.

The settings profile ``hcep-differential`` is derandomized so CI runs are stable; ``HCEP_DIFF_EXAMPLES`` overrides
the number of examples per test.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from engine import Event, compile_query, match_events
from engine.language import ast
from engine.language.parser import parse_query
from engine.runtime.matcher import Matcher, sort_events
from tests.reference import Signature, reference_any, reference_nfa
from tests.strategies import GenQuery, cases, describe_events, queries

settings.register_profile(
    "hcep-differential",
    max_examples=int(os.environ.get("HCEP_DIFF_EXAMPLES", "200")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
DIFF = settings.get_profile("hcep-differential")

STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")

FEATURES: dict[str, dict[str, bool]] = {
    "general": {},
    "kleene": {"kleene": True, "trailing": False},
    "trailing_kleene": {"trailing": True},
    "negation": {"negation": True},
    "equivalence": {"equivalence": True},
    "window": {"window": True},
    "aggregates_returns": {"aggregates": True, "returns": True},
}

# --------------------------------------------------------------------------- helpers


def _same_value(a: Any, b: Any) -> bool:
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return type(a) is type(b) and a == b


def _same_returns(got: dict[str, Any], expected: dict[str, Any]) -> bool:
    return got.keys() == expected.keys() and all(_same_value(got[k], expected[k]) for k in expected)


def _fmt_sig(sig: Signature) -> str:
    return "{" + ", ".join(f"{v}: [{', '.join(ids)}]" for v, ids in sig) + "}"


def run_engine(text: str, events: list[Event], strategy: str) -> tuple[ast.Query, list[dict]]:
    query = parse_query(text, name="T")
    cq = compile_query(query, strategy=strategy, output="all", confidence=0.0, tick=1.0)
    fresh = [Event(e.type, e.ts, dict(e.attrs), id=e.id, seq=e.seq, lo=e.lo, hi=e.hi, tick=1.0) for e in events]
    check_runs_count(cq, fresh)
    return query, match_events(cq, fresh)


def check_runs_count(cq: Any, events: list[Event]) -> None:
    """The NFA^b runtime's running count of its runs (what a load shedder reads per event) equals its pools, after
    every event, a sweep and a shed."""
    m = Matcher(cq)
    for i, ev in enumerate(sort_events(events)):
        m.feed(ev)
        assert m.alive == m.runs_alive(), f"after event {i} ({ev.id}): counted {m.alive}, pools {m.runs_alive()}"
    m.sweep()
    assert m.alive == m.runs_alive(), "after a sweep"
    m.shed(lambda r: r.k % 2 == 0)
    assert m.alive == m.runs_alive(), "after shedding"


def compare(text: str, events: list[Event], strategy: str) -> None:
    """Assert the engine's records equal the reference's for one query, stream and strategy.

    With imprecise events (NFA strategies only) the confidence and start/end are not checked.
    """
    query, records = run_engine(text, events, strategy)
    context = f"\nstrategy: {strategy}\nquery:\n{text}\nevents: {describe_events(events)}\n"
    positives = [c.var for c in query.components if not c.negated]
    by_id = {e.id: e for e in events}

    got: list[tuple[Signature, dict[str, Any]]] = []
    for rec in records:
        assert set(rec["match"]) == set(positives), f"{context}record binds {sorted(rec['match'])}: {rec}"
        raw = tuple((v, tuple(str(i) for i in rec["match"][v])) for v in positives)
        # a signature is a set of ids per variable; the reference lists them by point (distinct within a Kleene)
        sig = tuple((v, tuple(sorted(ids, key=lambda i: (by_id[i].t, by_id[i].seq)))) for v, ids in raw)
        got.append((sig, rec.get("return", {})))
        assert rec["query"] == "T", f"{context}{rec}"
        if all(e.lo == e.hi for e in events):
            assert raw == sig, f"{context}Kleene ids not in time order: {rec}"
            assert math.isclose(rec["confidence"], 1.0), f"{context}precise match with confidence != 1: {rec}"
            times = [by_id[i].ts for _, ids in sig for i in ids]
            assert math.isclose(rec["start"], min(times)), f"{context}{rec}"
            assert math.isclose(rec["end"], max(times)), f"{context}{rec}"

    if strategy == "skip_till_any_match":
        expected = reference_any(query, events)
        counts = Counter(s for s, _ in got)
        dups = [_fmt_sig(s) for s, n in counts.items() if n > 1]
        assert not dups, f"{context}duplicate signatures: {dups}"
        missing = [_fmt_sig(s) for s in expected if s not in counts]
        extra = [_fmt_sig(s) for s in counts if s not in expected]
        assert not missing and not extra, f"{context}missing (reference only): {missing}\nextra (engine only): {extra}"
        exp_returns = expected
    else:
        ref = reference_nfa(query, events, strategy)
        exp_counts = Counter(s for s, _ in ref)
        got_counts = Counter(s for s, _ in got)
        missing = [f"{_fmt_sig(s)} x{n}" for s, n in (exp_counts - got_counts).items()]
        extra = [f"{_fmt_sig(s)} x{n}" for s, n in (got_counts - exp_counts).items()]
        assert not missing and not extra, f"{context}missing (reference only): {missing}\nextra (engine only): {extra}"
        exp_returns = dict(ref)

    for sig, ret in got:
        assert _same_returns(ret, exp_returns[sig]), (
            f"{context}RETURN of {_fmt_sig(sig)}: engine {ret}, reference {exp_returns[sig]}"
        )


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("feature", sorted(FEATURES))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_engine_matches_reference(strategy: str, feature: str) -> None:
    @DIFF
    @given(cases(**FEATURES[feature]))
    def check(case: tuple[GenQuery, list[Event]]) -> None:
        gq, events = case
        compare(gq.text, events, strategy)

    check()


@pytest.mark.parametrize("strategy", STRATEGIES[1:])
def test_nfa_strategies_use_midpoints_of_imprecise_events(strategy: str) -> None:
    """docs/semantics.md section 4: on imprecise events the NFA strategies order and window by the interval midpoint."""

    @DIFF
    @given(cases(imprecise=True))
    def check(case: tuple[GenQuery, list[Event]]) -> None:
        gq, events = case
        compare(gq.text, events, strategy)

    check()


@DIFF
@given(queries())
def test_parser_builds_the_generated_ast(gq: GenQuery) -> None:
    """The reference runs on the parser's AST, so the parser must build the AST the generator meant."""
    parsed = parse_query(gq.text, name="T")
    want = gq.query
    assert parsed.components == want.components, gq.text
    assert parsed.where == want.where, gq.text
    assert parsed.equivalence == want.equivalence, gq.text
    assert (parsed.within is None) == (want.within is None), gq.text
    if want.within is not None:
        assert math.isclose(parsed.within, want.within), gq.text
    assert [(r.expr, r.name) for r in parsed.returns] == [(r.expr, r.name) for r in want.returns], gq.text
