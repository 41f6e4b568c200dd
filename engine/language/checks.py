"""Semantic checks of a parsed query (docs/semantics.md section 2).

The grammar accepts more than the engine can evaluate; these checks reject, at compile time and with a position, what
would otherwise fail (or silently mean something else) at run time: unknown or misused variables, negations that
cannot be evaluated on a finished match, Kleene iterator predicates the NFA^b cannot place on one edge, and type clashes
that are visible without data.  They run over AST nodes only, so the planner can rely on every checked query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NoReturn

from engine.language import ast

__all__ = ["check_query", "check_strategy_vars"]

# Static types of expressions: "any" is an attribute whose type is only known at run time.
NUM, STR, BOOL, ANY = "number", "string", "boolean", "any"


def check_query(query: ast.Query) -> None:
    """Raise :class:`ast.QueryError` (query name, line, column) at the first problem, in source order."""
    _Checker(query).run()


def check_strategy_vars(query: ast.Query, variables: Sequence[tuple[str, bool, int, int]]) -> None:
    """Check the variable list of the papers' ``WHERE strategy(a, b[], c) {...}`` form: ``(name, has [], line, col)``.

    The list is informational (the pattern already fixes the variables), so it only has to name real components,
    with ``[]`` on Kleene ones if at all.
    """
    kinds = {c.var: c for c in query.components}
    for name, brackets, line, column in variables:
        comp = kinds.get(name)
        if comp is None:
            raise ast.QueryError(f"unknown variable '{name}'", query=query.name, line=line, column=column)
        if brackets and not comp.kleene:
            raise ast.QueryError(
                f"{name} is not a Kleene variable: write {name}, not {name}[]",
                query=query.name,
                line=line,
                column=column,
            )


def _is_iterator(node: object) -> bool:
    """``b[i]``, ``b[i-1]`` and ``b[..i-1]``: forms whose value depends on the element being taken."""
    return (isinstance(node, ast.AttrRef) and node.index in ("i", "prev")) or (
        isinstance(node, ast.Aggregate) and node.scope == "before"
    )


def _is_whole(node: object) -> bool:
    """``b[b.len]``, ``b[]`` aggregates and ``b.len``: forms that need the finished Kleene sequence."""
    return (
        (isinstance(node, ast.AttrRef) and node.index == "last")
        or (isinstance(node, ast.Aggregate) and node.scope == "all")
        or isinstance(node, ast.KleeneLen)
    )


def _show(node: ast.Expr) -> str:
    """A reference as the user wrote it (canonically), for messages."""
    if isinstance(node, ast.AttrRef):
        index = {None: "", "i": "[i]", "prev": "[i-1]", "first": "[1]", "last": f"[{node.var}.len]"}[node.index]
        return f"{node.var}{index}.{node.attr}"
    if isinstance(node, ast.Aggregate):
        scope = "[]" if node.scope == "all" else "[..i-1]"
        return f"{node.func}({node.var}{scope}.{node.attr})"
    if isinstance(node, ast.KleeneLen):
        return f"{node.var}.len"
    if isinstance(node, ast.TrendAggregate):
        return show_trend(node)
    return type(node).__name__


def show_trend(node: ast.TrendAggregate) -> str:
    """``COUNT(*)``, ``COUNT(b)``, ``SUM(b.cpu)``: a trend aggregate as written (canonically)."""
    if node.var is None:
        return "COUNT(*)"
    inner = node.var if node.attr is None else f"{node.var}.{node.attr}"
    return f"{node.func.upper()}({inner})"


def _refs(expr: ast.Expr) -> Iterable[ast.AttrRef | ast.Aggregate | ast.KleeneLen]:
    for node in ast.walk(expr):
        if isinstance(node, (ast.AttrRef, ast.Aggregate, ast.KleeneLen)):
            yield node


class _Checker:
    def __init__(self, query: ast.Query) -> None:
        self.query = query
        self.components = {c.var: c for c in query.components}

    def error(self, message: str, at: ast.Node) -> NoReturn:
        raise ast.QueryError(message, query=self.query.name, line=at.line, column=at.column)

    def run(self) -> None:
        self.check_pattern()
        for conjunct in self.query.where:
            self.reject_trend(conjunct)
            self.check_variables(conjunct)
            kind = self.type_of(conjunct)
            if kind not in (BOOL, ANY):
                self.error(f"a WHERE condition must be boolean, not a {kind}", conjunct)
            self.check_negation(conjunct)
            self.check_iterators(conjunct)
        for item in self.query.returns:
            self.check_variables(item.expr)
            self.type_of(item.expr)
            self.check_return(item.expr)
        for item in self.query.aggregates:
            self.check_trend_item(item)

    # ------------------------------------------------------------------ pattern

    def check_pattern(self) -> None:
        comps = self.query.components
        if not comps:
            self.error("the pattern needs at least one component", self.query)
        seen: set[str] = set()
        for comp in comps:
            if comp.var in seen:
                self.error(f"duplicate variable '{comp.var}'", comp)
            seen.add(comp.var)
        if all(c.negated for c in comps):
            self.error("the pattern needs at least one positive (not negated) component", comps[0])
        if comps[0].negated:
            self.error(f"a pattern cannot start with a negated component (~{comps[0].type} {comps[0].var})", comps[0])
        if comps[-1].negated:
            self.error(f"a pattern cannot end with a negated component (~{comps[-1].type} {comps[-1].var})", comps[-1])

    # ------------------------------------------------------------------ variables

    def check_variables(self, expr: ast.Expr) -> None:
        """Every reference names a component and indexes it as its kind (singleton or Kleene) requires."""
        for ref in _refs(expr):
            comp = self.components.get(ref.var)
            if comp is None:
                self.error(f"unknown variable '{ref.var}'", ref)
            v = ref.var
            if comp.kleene:
                if isinstance(ref, ast.AttrRef) and ref.index is None:
                    self.error(
                        f"{v} is a Kleene variable: use {v}[i].attr, {v}[1].attr, {v}[{v}.len].attr "
                        f"or an aggregate over {v}[]",
                        ref,
                    )
            elif not (isinstance(ref, ast.AttrRef) and ref.index is None):
                self.error(f"{v} is not a Kleene variable: {_show(ref)} needs a Kleene component; use {v}.attr", ref)

    # ------------------------------------------------------------------ types

    def type_of(self, expr: ast.Expr) -> str:
        """The static type of ``expr``; raises on a clash visible without data."""
        if isinstance(expr, (ast.Number, ast.KleeneLen)):
            return NUM
        if isinstance(expr, ast.String):
            return STR
        if isinstance(expr, ast.Bool):
            return BOOL
        if isinstance(expr, ast.AttrRef):
            return ANY
        if isinstance(expr, ast.Aggregate):
            return NUM if expr.func in ("avg", "sum", "count", "median") else ANY
        if isinstance(expr, ast.TrendAggregate):
            return NUM if expr.func in ("avg", "sum", "count") else ANY
        if isinstance(expr, (ast.BinOp, ast.Neg)):
            operands: tuple[ast.Expr, ...] = (expr.left, expr.right) if isinstance(expr, ast.BinOp) else (expr.operand,)
            for operand in operands:
                kind = self.type_of(operand)
                if kind in (STR, BOOL):
                    self.error(f"arithmetic on a {kind}", operand)
            return NUM
        if isinstance(expr, ast.Compare):
            left, right = self.type_of(expr.left), self.type_of(expr.right)
            if ANY not in (left, right) and left != right:
                self.error(f"cannot compare a {left} with a {right}", expr)
            if expr.op not in ("=", "!=") and BOOL in (left, right):
                self.error(f"'{expr.op}' cannot order booleans", expr)
            return BOOL
        if isinstance(expr, (ast.And, ast.Or, ast.Not)):
            word = {ast.And: "AND", ast.Or: "OR", ast.Not: "NOT"}[type(expr)]
            operands = expr.items if isinstance(expr, (ast.And, ast.Or)) else (expr.operand,)
            for operand in operands:
                kind = self.type_of(operand)
                if kind not in (BOOL, ANY):
                    self.error(f"{word} needs boolean operands, not a {kind}", operand)
            return BOOL
        raise AssertionError(f"unknown expression {expr!r}")  # pragma: no cover

    # ------------------------------------------------------------------ negation and iterators

    def check_negation(self, conjunct: ast.Expr) -> None:
        """A predicate on a negated variable is tested on the finished match: no iterator, one negated variable."""
        negated = [r for r in _refs(conjunct) if self.components[r.var].negated]
        if not negated:
            return
        first = negated[0]
        for ref in negated[1:]:
            if ref.var != first.var:
                self.error(f"a predicate cannot name two negated variables ({first.var} and {ref.var})", ref)
        for ref in _refs(conjunct):
            if _is_iterator(ref):
                self.error(
                    f"a predicate on the negated variable {first.var} cannot use the iterator form {_show(ref)}", ref
                )

    def check_iterators(self, conjunct: ast.Expr) -> None:
        """An iterator predicate is evaluated at each take of one Kleene variable, before the sequence is complete."""
        iterators = [r for r in _refs(conjunct) if _is_iterator(r)]
        if not iterators:
            return
        var = iterators[0].var
        for ref in iterators[1:]:
            if ref.var != var:
                self.error(f"a predicate cannot use iterator forms of two Kleene variables ({var} and {ref.var})", ref)
        for ref in _refs(conjunct):
            if ref.var == var and _is_whole(ref):
                self.error(
                    f"{_show(ref)} cannot be used in an iterator predicate over {var} "
                    f"(one using {var}[i], {var}[i-1] or {var}[..i-1])",
                    ref,
                )

    def check_return(self, expr: ast.Expr) -> None:
        for ref in _refs(expr):
            if self.components[ref.var].negated:
                self.error(f"{ref.var} is a negated variable and cannot be used in RETURN", ref)
            if _is_iterator(ref):
                self.error(f"{_show(ref)} can only be used in WHERE, not in RETURN", ref)

    # ------------------------------------------------------------------ trend aggregates (GRETA)

    def reject_trend(self, expr: ast.Expr) -> None:
        for node in ast.walk(expr):
            if isinstance(node, ast.TrendAggregate):
                self.error(f"the trend aggregate {show_trend(node)} can only be used in RETURN", node)

    def check_trend_item(self, item: ast.ReturnItem) -> None:
        """A trend-aggregate RETURN item: trend aggregates over positive variables, numbers and arithmetic only.

        The group (the equivalence attributes' values) is reported in each record's ``match`` field, so a per-match
        item such as ``a.host`` next to ``COUNT(*)`` is an error rather than a second, different kind of output.
        """
        found = False
        for node in ast.walk(item.expr):
            if isinstance(node, (ast.AttrRef, ast.Aggregate, ast.KleeneLen)):
                self.error(
                    f"cannot mix trend aggregates (COUNT(*), SUM(v.attr), ...) with the per-match RETURN item "
                    f"{_show(node)}; the group key (the equivalence attributes) is in each record's 'match' field",
                    node,
                )
            if isinstance(node, (ast.String, ast.Bool, ast.Compare, ast.And, ast.Or, ast.Not)):
                self.error(
                    "a trend-aggregate RETURN item may only combine trend aggregates and numbers with + - * / %", node
                )
            if isinstance(node, ast.TrendAggregate):
                found = True
                if node.var is None:
                    continue
                comp = self.components.get(node.var)
                if comp is None:
                    self.error(f"unknown variable '{node.var}'", node)
                if comp.negated:
                    self.error(f"{node.var} is a negated variable and cannot be aggregated", node)
        if not found:
            self.error(
                f"cannot mix trend aggregates with the per-match RETURN item '{item.name}': every item of a "
                "trend-aggregate query must aggregate over the trends (COUNT(*), COUNT(v), SUM|MIN|MAX|AVG(v.attr))",
                item,
            )
        self.type_of(item.expr)
