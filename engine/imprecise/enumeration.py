"""The imprecise evaluator's enumeration plan: what of a query's WHERE clause can run while signatures are
enumerated, before the confidence DP, and how candidates are found.

Kept apart from the evaluator because it is decided once per query from the compiled plan alone (no events): the
singleton-only predicates, checked as soon as their earliest variable is chosen; the true-false consistent Kleene
filters (SASE++ on-the-fly early filters) and the false-value consistent set filters; the components whose events
matter only through time; and the equality joins that replace a scan of the window by a look-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.language import ast
from engine.plan.compiler import CompiledQuery
from engine.plan.consistency import classify, false_consistent
from engine.plan.predicates import Placement, compile_expr, references


@dataclass
class EnumerationPlan:
    """See :func:`plan_enumeration`; component positions are indices into the query's components."""

    singleton_order: list[int]
    kleene_order: list[int]
    #: position -> predicates over singletons only, checked once that component is chosen (its earliest variable)
    singleton_checks: dict[int, list[Any]] = field(default_factory=dict)
    #: Kleene position -> true-false consistent filters on each element
    kleene_filters: dict[int, list[Any]] = field(default_factory=dict)
    #: Kleene position -> false-value consistent filters: false on all candidates -> no subset
    set_filters: dict[int, list[Any]] = field(default_factory=dict)
    #: true-false filters naming only a trailing Kleene variable: tried on the closing event first
    z_filters: list[Any] = field(default_factory=list)
    #: components whose variable no predicate or RETURN names, with no negation beside them
    free: set[int] = field(default_factory=set)
    #: distinct output: the earliest component after which the RETURN values are known (-1: none)
    return_ready: int = -1
    #: position -> (its attribute, the later singleton's position, that one's attribute) of an equality join
    joins: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    #: event type -> per component of that type, the predicates that name only its variable (as ``f(bind, event)``):
    #: an event that fails every component's is never a candidate and need not be buffered.  A type without an entry
    #: is buffered whole (a component of it without such predicates, or a negation of it).
    type_filters: dict[str, list[list[Any]]] = field(default_factory=dict)


#: Plans made, per compiled query (held, so its id is not reused) and flags: ``hcep stream`` and ``hcep batch`` build
#: the same queries' evaluators for every group, and planning was most of that (compiling the WHERE clause).
_PLANS: dict[tuple[int, bool, bool], tuple[CompiledQuery, EnumerationPlan]] = {}
_PLANS_MAX = 1024


def plan_enumeration(cq: CompiledQuery, *, distinct_singles: bool, early_filters: bool) -> EnumerationPlan:
    """:func:`make_plan`, once per compiled query and flags: the plan depends on the query alone and evaluators only
    read it (its predicates are pure functions), so evaluators of one query share it."""
    key = (id(cq), distinct_singles, early_filters)
    got = _PLANS.get(key)
    if got is not None and got[0] is cq:
        return got[1]
    plan = make_plan(cq, distinct_singles=distinct_singles, early_filters=early_filters)
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.pop(next(iter(_PLANS)))
    _PLANS[key] = (cq, plan)
    return plan


def make_plan(cq: CompiledQuery, *, distinct_singles: bool, early_filters: bool) -> EnumerationPlan:
    """Which predicates can run before the confidence DP, and where candidates are looked up rather than scanned.

    ``distinct_singles``: the output is ``distinct`` and one record per value is enough (its RETURN values can be
    checked against those already out as soon as they are bound).  ``early_filters``: use the SASE++ filters."""
    comps = cq.components
    index = {c.var: c.index for c in comps}
    kleene = {c.var for c in comps if c.kleene}
    p = EnumerationPlan(
        singleton_order=[c.index for c in comps if not c.kleene],
        kleene_order=[c.index for c in comps if c.kleene],
    )
    complete = Placement(None, "complete", index, {})
    negated = {n.var for n in cq.negations}
    # Components whose variable no predicate or RETURN names, with no negation beside them: their candidates matter
    # only through time, which distinct output exploits (dominance, interchangeable middles).
    named = {v for e in cq.ast.where for v in references(e)} | {v for r in cq.ast.returns for v in references(r.expr)}
    beside_negation = {n.after for n in cq.negations} | {n.after + 1 for n in cq.negations}
    p.free = {c.index for c in comps if c.var not in named and c.index not in beside_negation}
    returned = {index[v] for r in cq.ast.returns for v in references(r.expr) if v in index}
    if returned and not (returned & {c.index for c in comps if c.kleene}) and distinct_singles:
        p.return_ready = min(returned)
    # Equality joins between two singleton components (``h.host = m.host``): the earlier one's candidates are looked
    # up by the later one's value (bound first: singletons are chosen backwards), not scanned.  Q7 tested every Metric
    # of its window against each closing one.  The predicate itself is still checked.
    singleton = {c.var: c.index for c in comps if not c.kleene}
    for expr in cq.ast.where:
        if (
            isinstance(expr, ast.Compare)
            and expr.op == "="
            and isinstance(expr.left, ast.AttrRef)
            and isinstance(expr.right, ast.AttrRef)
            and expr.left.index is None
            and expr.right.index is None
            and expr.left.var in singleton
            and expr.right.var in singleton
            and expr.left.var != expr.right.var
            and "ts" not in (expr.left.attr, expr.right.attr)
            and id(expr) not in cq.forall
        ):
            (j, attr), (k, kattr) = sorted(
                [(singleton[expr.left.var], expr.left.attr), (singleton[expr.right.var], expr.right.attr)]
            )
            p.joins.setdefault(j, (attr, k, kattr))
    if early_filters:
        p.type_filters = _type_filters(cq, index)
    last = comps[-1]
    for expr in cq.ast.where:
        refs = references(expr)
        if set(refs) & negated or id(expr) in cq.forall:
            continue
        kvars = set(refs) & kleene
        if (
            last.kleene
            and early_filters
            and set(refs) == {last.var}
            and not (refs[last.var] - {"i"})
            and classify(expr, last.var) == "true-false"
        ):
            p.z_filters.append(compile_expr(expr, Placement(last.var, "begin", index, {})))
        if not kvars and refs:
            earliest = min(index[v] for v in refs)
            p.singleton_checks.setdefault(earliest, []).append(compile_expr(expr, complete))
        elif len(kvars) == 1 and early_filters:
            var = kvars.pop()
            k = index[var]
            if classify(expr, var) == "true-false" and not (refs[var] - {"i"}):
                p.kleene_filters.setdefault(k, []).append(compile_expr(expr, Placement(var, "begin", index, {})))
            elif false_consistent(expr, var):
                p.set_filters.setdefault(k, []).append(
                    compile_expr(expr, Placement(None, "complete", index, cq.agg_slots))
                )
    return p


def _type_filters(cq: CompiledQuery, index: dict[str, int]) -> dict[str, list[list[Any]]]:
    """:attr:`EnumerationPlan.type_filters`: per component, the WHERE predicates that name only its variable, as a
    plain attribute of a singleton or element-wise (``b[i]``, true-false consistent) of a Kleene variable -- every
    event of a match must pass those of its component.  Q7 buffered all 58,800 Ganglia samples for ``h`` and ``m``;
    only those of ``load_one`` can be either."""
    by_var: dict[str, list[Any]] = {c.var: [] for c in cq.components}
    for expr in cq.ast.where:
        refs = references(expr)
        if len(refs) != 1 or id(expr) in cq.forall:
            continue
        ((var, forms),) = refs.items()
        comp = next((c for c in cq.components if c.var == var), None)
        if comp is None:  # a negated variable
            continue
        if comp.kleene:
            if forms != {"i"} or classify(expr, var) != "true-false":
                continue
        elif forms != {"single"}:
            continue
        by_var[var].append(compile_expr(expr, Placement(var, "begin", index, {})))
    negated = {n.type for n in cq.negations}
    out: dict[str, list[list[Any]]] = {}
    for etype in {c.type for c in cq.components} - negated:
        alts = [by_var[c.var] for c in cq.components if c.type == etype]
        if all(alts):
            out[etype] = alts
    return out
