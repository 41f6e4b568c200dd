"""Predicate consistency classes (SASE++ section 5.2) and what they allow.

For a Kleene component, a predicate is classified by how its truth on an element carries over to subsets of the
elements selected so far:

- ``true-false``: it does not depend on the other elements (``b[i].val > 5``, ``b[i].x = a.x``);
- ``true``: true against all selected implies true against any subset (``b[i].val > max(b[..i-1].val)``);
- ``false``: false against all selected implies false against any subset (``c.val < max(b[].val)``);
- ``inconsistent``: neither (``b[i].val > avg(b[..i-1].val)``).

``b[i].x op b[i-1].x`` with a transitive ``op`` is inconsistent as written but equivalent on valid sequences to
``b[i].x op max/min(b[..i-1].x)``, which is true-consistent: :func:`rewrite_previous` performs that rewrite.

A query is *monotone* when adding an event to a signature can never raise its confidence; then thresholds prune
Kleene enumerations (SASE++ Algorithm 1) and the best signature of a distinct value has one element per Kleene set.
"""

from __future__ import annotations

from engine.language import ast
from engine.plan.predicates import references

TRANSITIVE = {"<", "<=", ">", ">=", "="}
AGG_FOR: dict[str, ast.AggFunc] = {">": "max", ">=": "max", "<": "min", "<=": "min"}
_FLIP: dict[str, ast.CompareOp] = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _is_prev_comparison(expr: ast.Expr, var: str) -> bool:
    """``b[i].x op b[i-1].x`` (either side) with a transitive op on one attribute."""
    if not isinstance(expr, ast.Compare) or expr.op not in TRANSITIVE:
        return False
    left, right = expr.left, expr.right
    if not (isinstance(left, ast.AttrRef) and isinstance(right, ast.AttrRef) and left.var == var == right.var):
        return False
    return {left.index, right.index} == {"i", "prev"} and left.attr == right.attr


def classify(expr: ast.Expr, var: str) -> str:
    """Consistency class of ``expr`` with respect to the Kleene variable ``var``."""
    forms = references(expr).get(var, set())
    if forms <= {"i"}:
        return "true-false"
    if _is_prev_comparison(expr, var):
        return "inconsistent-rewritable"
    if isinstance(expr, ast.Compare) and expr.op in AGG_FOR:
        left, right = expr.left, expr.right
        # b[i].x > max(b[..i-1].x): true against all earlier elements -> true against any subset.
        if (
            isinstance(left, ast.AttrRef)
            and left.var == var
            and left.index == "i"
            and isinstance(right, ast.Aggregate)
            and right.var == var
            and right.scope == "before"
            and right.attr == left.attr
            and right.func == AGG_FOR[expr.op]
        ):
            return "true"
    return "inconsistent"


def rewrite_previous(expr: ast.Expr) -> ast.Expr:
    """``b[i].x op b[i-1].x`` -> ``b[i].x op max|min(b[..i-1].x)`` (true-consistent, same valid sequences)."""
    if not isinstance(expr, ast.Compare) or expr.op not in AGG_FOR:
        return expr
    left, right = expr.left, expr.right
    if not (isinstance(left, ast.AttrRef) and isinstance(right, ast.AttrRef)):
        return expr
    if left.index == "prev" and right.index == "i":
        flipped: ast.CompareOp = _FLIP[expr.op]
        return rewrite_previous(ast.Compare(flipped, right, left, line=expr.line, column=expr.column))
    if left.index != "i" or right.index != "prev" or left.var != right.var or left.attr != right.attr:
        return expr
    agg = ast.Aggregate(AGG_FOR[expr.op], right.var, "before", right.attr, line=right.line, column=right.column)
    return ast.Compare(expr.op, left, agg, line=expr.line, column=expr.column)


_GROWS = {"max": "up", "count": "up", "min": "down"}


def false_consistent(expr: ast.Expr, var: str) -> bool:
    """A predicate over the whole set ``var[]`` that can only turn true as elements are added (``max(b[].x) > c``,
    ``min(b[].x) < c``, ``count(b[].x) >= k``, ``b.len > k``): false for all candidates means false for every subset,
    so the candidates can be discarded before enumeration (SASE++ 5.2, false-value consistent)."""
    if not isinstance(expr, ast.Compare) or expr.op not in _FLIP:
        return False
    left, right, op = expr.left, expr.right, expr.op
    if not _is_set_measure(left, var):
        left, right, op = right, left, _FLIP[op]
    if not _is_set_measure(left, var) or var in references(right):
        return False
    if isinstance(left, ast.KleeneLen):
        grows: str | None = "up"
    else:
        grows = _GROWS.get(left.func) if isinstance(left, ast.Aggregate) else None
    return (grows == "up" and op in (">", ">=")) or (grows == "down" and op in ("<", "<="))


def _is_set_measure(node: ast.Expr, var: str) -> bool:
    if isinstance(node, ast.KleeneLen):
        return node.var == var
    return isinstance(node, ast.Aggregate) and node.var == var and node.scope == "all" and node.func in _GROWS


def kleene_predicates(query: ast.Query, var: str) -> list[ast.Expr]:
    """The WHERE conjuncts that read the Kleene variable ``var``."""
    return [e for e in query.where if var in references(e)]


#: Answers per query (held, so its id is not reused): every evaluator asks at construction, and ``hcep stream`` and
#: ``hcep batch`` build one per group.
_MONOTONE: dict[tuple[int, bool], tuple[ast.Query, bool]] = {}


def is_monotone(query: ast.Query, *, returns_too: bool = False) -> bool:
    """:func:`monotone`, once per query (a parsed query is not changed afterwards)."""
    got = _MONOTONE.get((id(query), returns_too))
    if got is not None and got[0] is query:
        return got[1]
    answer = monotone(query, returns_too=returns_too)
    if len(_MONOTONE) >= 2048:
        _MONOTONE.pop(next(iter(_MONOTONE)))
    _MONOTONE[(id(query), returns_too)] = (query, answer)
    return answer


def monotone(query: ast.Query, *, returns_too: bool = False) -> bool:
    """Adding an event to a Kleene set never raises the confidence of a signature (nor changes RETURN, if asked).

    Needs: every predicate on a Kleene variable subset-closed (true-false consistent, or a transitive comparison with
    the previous element), no predicate over a whole set (``b[b.len]``, ``b[]``, ``b.len``, ``b[1]`` from outside the
    set's own iterator predicates), and no negation next to a Kleene component (a smaller set widens the gap).
    """
    comps = query.components
    kleene = {c.var for c in comps if c.kleene and not c.negated}
    for i, c in enumerate(comps):
        if c.negated:
            for nb in (comps[i - 1], comps[i + 1]):
                if nb.var in kleene:
                    return False
    for expr in query.where:
        for var, forms in references(expr).items():
            if var not in kleene:
                continue
            if forms <= {"i"}:
                continue
            if _is_prev_comparison(expr, var) or classify(expr, var) == "true":
                continue
            return False
    if returns_too:
        for item in query.returns:
            if kleene & set(references(item.expr)):
                return False
    return True
