"""Which evaluator runs a compiled query, and why (shown by ``hcep explain``).

=============  ==========================================================================================
evaluator      runs
=============  ==========================================================================================
``greta``      a trend-aggregate query (RETURN only COUNT(*), COUNT(v), SUM|MIN|MAX|AVG(v.attr)) under
               skip_till_any_match whose predicates GRETA can check (one event, or two adjacent events):
               :class:`engine.greta.GretaMatcher`, polynomial instead of exponential
``enumerate``  any other trend-aggregate query: every match is enumerated by the NFA^b runtime and aggregated
               (:class:`engine.greta.TrendEnumerator`) -- exponential under skip_till_any_match
``imprecise``  per-match output under skip_till_any_match: exact possible-worlds confidences
               (:class:`engine.imprecise.evaluator.ImpreciseMatcher`)
``nfa``        per-match output under the other strategies: the NFA^b runtime (:class:`engine.runtime.matcher.Matcher`)
=============  ==========================================================================================

The imprecise-timestamp paper's run-based evaluation orders and their rule (``choose_order``) are research baselines:
``benchmarks/research/imprecise_orders.py``.  :func:`engine.evaluate.make_matcher` builds the evaluator named here.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.plan.compiler import CompiledQuery

__all__ = ["EVALUATORS", "Choice", "choose", "choose_evaluator", "explain_plan"]

EVALUATORS = ("greta", "enumerate", "imprecise", "nfa")


@dataclass(frozen=True)
class Choice:
    evaluator: str
    reason: str


def choose(cq: CompiledQuery) -> Choice:
    """The evaluator for ``cq`` with a one-line reason."""
    if cq.ast.aggregates:
        from engine.plan.trends import NotGreta, plan_greta

        try:
            plan_greta(cq)
        except NotGreta as exc:
            return Choice(
                "enumerate",
                f"trend aggregates, but not GRETA: {exc}; every trend is enumerated by "
                "the NFA^b runtime, then aggregated (exponential under skip_till_any_match)",
            )
        return Choice(
            "greta",
            "trend aggregates over every skip_till_any_match trend, with predicates on single or "
            "adjacent events: aggregated without building any trend",
        )
    if cq.strategy == "skip_till_any_match":
        return Choice(
            "imprecise",
            "per-match output under skip_till_any_match: every signature with its exact possible-worlds confidence",
        )
    return Choice(
        "nfa", f"per-match output under {cq.strategy}: the NFA^b runtime, imprecise events at their midpoints"
    )


def choose_evaluator(cq: CompiledQuery) -> str:
    """``"greta"``, ``"enumerate"``, ``"imprecise"`` or ``"nfa"``."""
    return choose(cq).evaluator


def explain_plan(cq: CompiledQuery) -> str:
    """The compiled plan, the evaluator chosen and why; for GRETA, its template graph too."""
    choice = choose(cq)
    lines = [cq.explain(), f"evaluator: {choice.evaluator} -- {choice.reason}"]
    if cq.ast.aggregates:
        if choice.evaluator == "greta":
            from engine.plan.trends import plan_greta

            lines.append(plan_greta(cq).explain())
        else:
            from engine.plan.trends import describe_windows, trend_spec

            spec = trend_spec(cq)
            lines.append(f"  windows: {describe_windows(spec)}")
        if cq.output != "all":
            lines.append(f"  output mode {cq.output!r} does not apply: one record per group and window")
        if cq.confidence > 0:
            lines.append(f"  confidence threshold {cq.confidence} does not apply: every record has confidence 1.0")
    return "\n".join(lines)
