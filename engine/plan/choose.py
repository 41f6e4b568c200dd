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

:func:`choose_order` is the rule for the imprecise-timestamp paper's run-based evaluation orders
(:class:`engine.imprecise.orders.OrderedImpreciseMatcher`, ``order="auto"``): selectivity order when the component
rates are skewed, query-order sorting otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.plan.compiler import CompiledQuery

__all__ = ["EVALUATORS", "SKEW", "Choice", "choose", "choose_evaluator", "choose_order", "explain_plan"]

EVALUATORS = ("greta", "enumerate", "imprecise", "nfa")

#: ``choose_order`` picks selectivity order when the first component has at least this many times the events of the
#: rarest one (digest-imprecise 7.2 and 8: sorting wins on even rates, Fig. 4(c); selectivity order on skewed rates,
#: Fig. 4(d) and the Hadoop case study).  Calibrated by ``python3 -m benchmarks.bench_imprecise --only fig4d``
#: (benchmarks/README.md): a tie at 8x (80:30:10), selectivity ahead by ~30 % at 110x; sorting ahead on even rates.
SKEW = 8.0


@dataclass(frozen=True)
class Choice:
    evaluator: str
    reason: str


def choose(cq: CompiledQuery) -> Choice:
    """The evaluator for ``cq`` with a one-line reason."""
    if cq.ast.aggregates:
        from engine.greta.plan import NotGreta, plan_greta

        try:
            plan_greta(cq)
        except NotGreta as exc:
            return Choice("enumerate", f"trend aggregates, but not GRETA: {exc}; every trend is enumerated by "
                                       "the NFA^b runtime, then aggregated (exponential under skip_till_any_match)")
        return Choice("greta", "trend aggregates over every skip_till_any_match trend, with predicates on single or "
                               "adjacent events: aggregated without building any trend")
    if cq.strategy == "skip_till_any_match":
        return Choice("imprecise", "per-match output under skip_till_any_match: every signature with its exact "
                                   "possible-worlds confidence")
    return Choice("nfa", f"per-match output under {cq.strategy}: the NFA^b runtime, imprecise events at their "
                         "midpoints")


def choose_order(rates: list[int] | list[float]) -> tuple[str, str]:
    """The evaluation order of :class:`engine.imprecise.orders.OrderedImpreciseMatcher` for per-component event
    counts (or rates) ``rates``, with a one-line reason: ``selectivity`` when the first component is at least
    :data:`SKEW` times as frequent as the rarest (sorting would start a run at every first-component event, most of
    which expire before a rare later event comes), else ``sorting`` (runs start only at the first component and
    events are fed once, in query order).  ``any-state`` is never chosen: it starts a run at every event of every
    component and loses to both (Fig. 4(b)-(d))."""
    first = rates[0] if rates else 0
    least = min(rates, default=0)
    if len(rates) > 1 and first > 0 and first >= SKEW * max(least, 1e-9) and least < first:
        return "selectivity", (f"first component {first:g} events vs {least:g} for the rarest: skewed "
                               f"(>= {SKEW:g}x), buffered first-component events expire unread")
    return "sorting", (f"component rates {', '.join(f'{r:g}' for r in rates)}: not skewed (< {SKEW:g}x), query "
                       "order from the first component")


def choose_evaluator(cq: CompiledQuery) -> str:
    """``"greta"``, ``"enumerate"``, ``"imprecise"`` or ``"nfa"``."""
    return choose(cq).evaluator


def explain_plan(cq: CompiledQuery) -> str:
    """The compiled plan, the evaluator chosen and why; for GRETA, its template graph too."""
    choice = choose(cq)
    lines = [cq.explain(), f"evaluator: {choice.evaluator} -- {choice.reason}"]
    if cq.ast.aggregates:
        if choice.evaluator == "greta":
            from engine.greta.plan import plan_greta

            lines.append(plan_greta(cq).explain())
        else:
            from engine.greta.plan import describe_windows, trend_spec

            spec = trend_spec(cq)
            lines.append(f"  windows: {describe_windows(spec)}")
        if cq.output != "all":
            lines.append(f"  output mode {cq.output!r} does not apply: one record per group and window")
        if cq.confidence > 0:
            lines.append(f"  confidence threshold {cq.confidence} does not apply: every record has confidence 1.0")
    return "\n".join(lines)
