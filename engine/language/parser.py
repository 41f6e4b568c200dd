"""SASE+ query text -> checked :class:`engine.language.ast.Query` (docs/semantics.md section 2).

The grammar (``grammar.lark``) only fixes the shape of the text; this module turns lark's parse tree into AST nodes,
validates the small sub-languages lark leaves open (``b[...]`` indexes, aggregate names, WITHIN units), and runs the
semantic checks of :mod:`engine.language.checks`.  Every error is a :class:`QueryError` with the line and column of
the offending text, because a query usually lives inside a YAML pack and the user must be able to find the spot.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypedDict, cast

import lark
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from engine.language import ast, checks

__all__ = ["parse_condition", "parse_query", "UNITS"]

#: WITHIN units (lower-case) -> seconds.
UNITS: dict[str, float] = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
}

#: The longest WITHIN or SLIDE: the largest time an event may carry (engine.events.MAX_SECONDS, about 3,170 years).
MAX_DURATION = 1e11
#: At most this many sliding windows (WITHIN / SLIDE) overlap each event: GRETA keeps a sub-graph per window an event
#: falls in, so ``WITHIN 1e30 minutes SLIDE 5 minutes`` never finished (found by fuzzing).
MAX_OVERLAPPING_WINDOWS = 10_000

AGG_FUNCS = ("avg", "min", "max", "sum", "count", "median")

#: Trend aggregates (GRETA) that take ``v.attr``; ``count`` takes ``*`` or a bare variable instead.
TREND_ATTR_FUNCS = ("sum", "min", "max", "avg")

_COMPARE_OPS = {
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "=": "=",
    "==": "=",
    "!=": "!=",
    "<>": "!=",
    "≥": ">=",
    "≤": "<=",
    "≠": "!=",
}
_MUL_OPS = {"*": "*", "×": "*", "/": "/", "%": "%"}

#: How syntax errors name the grammar's terminals.
_TERMINAL_NAMES = {
    "PATTERN": "PATTERN",
    "SEQ": "SEQ",
    "WHERE": "WHERE",
    "WITHIN": "WITHIN",
    "RETURN": "RETURN",
    "SLIDE": "SLIDE",
    "AS": "AS",
    "_AND": "AND",
    "_OR": "OR",
    "_NOT": "NOT",
    "TRUE": "TRUE",
    "FALSE": "FALSE",
    "STRATEGY": "a selection strategy",
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "COMP_OP": "a comparison",
    "MUL_OP": "'*'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "NEG": "'~'",
    "DOTDOT": "'..'",
    "$END": "the end of the query",
}


@functools.cache
def _lark() -> lark.Lark:
    """Build the LALR parser once (about 50 ms); parsing a query afterwards takes about a millisecond."""
    grammar = (Path(__file__).with_name("grammar.lark")).read_text(encoding="utf-8")
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "condition"],
    )


def parse_query(text: str, name: str = "") -> ast.Query:
    """Parse and check one query; raises :class:`ast.QueryError` naming ``name``, the line and the column."""
    if not isinstance(text, str):
        raise ast.QueryError(f"query text must be a string, not {type(text).__name__}", query=name)
    try:
        tree = _lark().parse(text, start="start")
    except UnexpectedInput as exc:
        _syntax_error(exc, text, name)
    builder = _Builder(text, name)
    query, strategy_vars = builder.query(tree)
    checks.check_strategy_vars(query, strategy_vars)
    checks.check_query(query)
    return query


def parse_condition(text: str, name: str = "") -> ast.Expr:
    """Parse one expression over bare names (an alert rule's condition or graded value, semantics section 6): the query
    language's arithmetic, comparisons, ``AND``/``OR``/``NOT``, numbers, strings and booleans, where a bare ``name``
    is a RETURN value of the rule's query (:class:`ast.Name`).  Pattern references (``a.x``, ``b[i].x``, aggregates)
    are errors here.  Raises :class:`ast.QueryError` naming ``name``, the line and the column."""
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        raise ast.QueryError(f"expected an expression, not {type(text).__name__}", query=name)
    text = str(text)
    try:
        tree = _lark().parse(text, start="condition")
    except UnexpectedInput as exc:
        _syntax_error(exc, text, name)
    builder = _Builder(text, name, names=True)
    expr: ast.Expr = builder.expr(cast(Tree[Any], tree.children[0]))
    if isinstance(expr, _Equiv):
        builder.error("an equivalence test [attr] is not an expression", expr)
    for node in ast.walk(expr):
        if isinstance(node, ast.AttrRef | ast.Aggregate | ast.KleeneLen | ast.TrendAggregate):
            builder.error("only RETURN names, numbers, strings and operators are allowed here", node)
    return expr


# --------------------------------------------------------------------------- syntax errors


def _end_position(text: str) -> tuple[int, int]:
    """Line and column just after the last non-blank character: where 'the end of the query' is reported."""
    body = text.rstrip()
    line = body.count("\n") + 1
    column = len(body) - (body.rfind("\n") + 1) + 1
    return line, column


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'"


#: Terminals that can start an expression; when a name, a number and a string are all acceptable the syntax error
#: says "an expression" instead of listing them.
_EXPR_START = frozenset({"NAME", "NUMBER", "STRING", "LPAR", "LSQB", "MINUS", "TRUE", "FALSE", "_NOT"})


def _expected(names: Any) -> str:
    names = set(names or ())
    items = set()
    if {"NAME", "NUMBER", "STRING"} <= names:
        names -= _EXPR_START
        items.add("an expression")
    if {"PLUS", "MINUS", "MUL_OP"} <= names:
        names -= {"PLUS", "MINUS", "MUL_OP"}
        items.add("an arithmetic operator")
    shown = sorted(items | {_describe_terminal(n) for n in names})
    if not shown:
        return ""
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + " or " + shown[-1]


def _syntax_error(exc: UnexpectedInput, text: str, name: str) -> NoReturn:
    """Re-raise lark's error as a QueryError that says what was expected at which token."""
    if isinstance(exc, UnexpectedToken):
        try:  # the exact set for this state; exc.expected may hold look-aheads LALR merged from other states
            expected = _expected(exc.interactive_parser.accepts())  # type: ignore[no-untyped-call]  # lark: untyped
        except Exception:  # pragma: no cover - older lark
            expected = _expected(exc.expected)
        if exc.token.type == "$END":
            line, column = _end_position(text)
            got = "the end of the query"
        else:
            line, column = exc.line, exc.column
            got = f"'{exc.token.value}'"
        message = f"syntax error: expected {expected}, got {got}" if expected else f"syntax error: unexpected {got}"
    elif isinstance(exc, UnexpectedCharacters):
        line, column = exc.line, exc.column
        message = f"syntax error: unexpected character {exc.char!r}"
    elif isinstance(exc, UnexpectedEOF):
        line, column = _end_position(text)
        message = f"syntax error: unexpected end of the query, expected {_expected(exc.expected)}"
    else:  # pragma: no cover - lark has no other kinds
        line, column = getattr(exc, "line", 0), getattr(exc, "column", 0)
        message = f"syntax error: {exc}"
    raise ast.QueryError(message, query=name, line=max(line, 1), column=max(column, 1)) from None


# --------------------------------------------------------------------------- tree -> AST


@dataclass(frozen=True)
class _Equiv:
    """An ``[attr, ...]`` test while building; it only survives as a top-level WHERE conjunct."""

    attrs: tuple[str, ...]
    line: int
    column: int


class _Pos(TypedDict):
    line: int
    column: int


def _pos(item: Tree[Any] | Token) -> _Pos:
    if isinstance(item, Token):
        return {"line": item.line or 0, "column": item.column or 0}
    return {"line": getattr(item.meta, "line", 0), "column": getattr(item.meta, "column", 0)}


def _unescape(literal: str) -> str:
    """The value of a quoted string token (no eval: only the common backslash escapes)."""
    escapes = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(1)), literal[1:-1], flags=re.S)


def _number(token: Token) -> int | float:
    text = str(token)
    if re.fullmatch(r"\d+", text):
        return int(text)
    return float(text)


def _default_name(source: str) -> str:
    """RETURN's default name: the expression text, whitespace normalised (``max( b[].val )`` -> ``max(b[].val)``)."""
    name = " ".join(source.split())
    name = re.sub(r"([(\[])\s+", r"\1", name)
    return re.sub(r"\s+([)\].,])", r"\1", name)


class _Builder:
    """Turns one parse tree into a Query; keeps the text for RETURN names and the query name for errors."""

    def __init__(self, text: str, name: str, names: bool = False) -> None:
        self.text = text
        self.name = name
        self.names = names  # bare names allowed (alert rule conditions), not in queries

    def error(self, message: str, at: Any) -> NoReturn:
        if isinstance(at, (Tree, Token)):
            pos = _pos(at)
        else:
            pos = {"line": getattr(at, "line", 0), "column": getattr(at, "column", 0)}
        raise ast.QueryError(message, query=self.name, **pos)

    # ------------------------------------------------------------------ clauses

    def query(self, tree: Tree[Any]) -> tuple[ast.Query, list[tuple[str, bool, int, int]]]:
        pattern = tree.children[0]
        components = self.components(pattern)
        where: tuple[ast.Expr, ...] = ()
        equivalence: tuple[str, ...] = ()
        within: float | None = None
        slide: float | None = None
        returns: tuple[ast.ReturnItem, ...] = ()
        aggregates: tuple[ast.ReturnItem, ...] = ()
        strategy: str | None = None
        strategy_vars: list[tuple[str, bool, int, int]] = []
        slide_at: Tree[Any] | None = None
        for clause in tree.children[1:]:
            if clause.data == "where_plain":
                where, equivalence = self.where(clause.children[1])
            elif clause.data == "where_strategy":
                strategy = str(clause.children[1]).lower()
                *vars_, body = clause.children[2:]
                for var in vars_:
                    if var is not None:
                        tok = cast(Token, var.children[0])
                        strategy_vars.append((str(tok), var.data == "strat_kleene", tok.line or 0, tok.column or 0))
                if body is not None:
                    where, equivalence = self.where(body)
            elif clause.data == "within":
                within = self.within(clause)
            elif clause.data == "slide":
                slide = self.within(clause, "SLIDE")
                slide_at = clause
            elif clause.data == "returns":
                returns = self.returns(clause)
                if any(isinstance(n, ast.TrendAggregate) for item in returns for n in ast.walk(item.expr)):
                    # A trend-aggregate query: every item is checked to be one (checks.check_query names a mix).
                    returns, aggregates = (), returns
        if slide_at is not None:
            if within is None:
                self.error("SLIDE needs WITHIN: the windows are [k*SLIDE, k*SLIDE + WITHIN)", slide_at)
            if slide is not None and within / slide > MAX_OVERLAPPING_WINDOWS:
                self.error(
                    f"WITHIN / SLIDE puts each event in {within / slide:.3g} windows (at most "
                    f"{MAX_OVERLAPPING_WINDOWS:,}): use a longer SLIDE",
                    slide_at,
                )
            if not aggregates:
                self.error(
                    "SLIDE applies only to trend-aggregate queries (RETURN COUNT(*), SUM(v.attr), ...)", slide_at
                )
        query = ast.Query(
            name=self.name,
            components=components,
            where=where,
            equivalence=equivalence,
            within=within,
            returns=returns,
            strategy=strategy,
            text=self.text,
            aggregates=aggregates,
            slide=slide,
            **_pos(pattern.children[0]),
        )
        return query, strategy_vars

    def components(self, pattern: Tree[Any]) -> tuple[ast.Component, ...]:
        out = []
        for comp in pattern.children:
            if not isinstance(comp, Tree):
                continue  # the PATTERN / SEQ keywords
            if comp.data == "comp_single":
                type_, var = comp.children
                out.append(ast.Component(str(type_), str(var), **_pos(comp)))
            elif comp.data == "comp_kleene":
                type_, _plus, var = comp.children
                out.append(ast.Component(str(type_), str(var), kleene=True, **_pos(comp)))
            else:
                _neg, type_, var = comp.children
                out.append(ast.Component(str(type_), str(var), negated=True, **_pos(comp)))
        return tuple(out)

    def where(self, tree: Tree[Any]) -> tuple[tuple[ast.Expr, ...], tuple[str, ...]]:
        """Split the top-level AND into conjuncts and pull out the equivalence tests."""
        expr = self.expr(tree)
        conjuncts: list[Any] = []
        stack = [expr]
        while stack:  # flatten nested top-level ANDs, keeping source order
            item = stack.pop(0)
            if isinstance(item, ast.And):
                stack[0:0] = list(item.items)
            else:
                conjuncts.append(item)
        where: list[ast.Expr] = []
        equivalence: list[str] = []
        for item in conjuncts:
            if isinstance(item, _Equiv):
                equivalence.extend(a for a in item.attrs if a not in equivalence)
            else:
                self.reject_equiv(item)
                where.append(item)
        return tuple(where), tuple(equivalence)

    def reject_equiv(self, expr: Any) -> None:
        for node in ast.walk(expr):
            if isinstance(node, _Equiv):
                shown = "[" + ", ".join(node.attrs) + "]"
                self.error(f"an equivalence test {shown} may only appear as a top-level conjunct of WHERE", node)

    def within(self, tree: Tree[Any], keyword: str = "WITHIN") -> float:
        """A duration in seconds: WITHIN's, or SLIDE's (same units)."""
        _kw, number, unit = tree.children
        value = _number(cast(Token, number))
        factor = 1.0
        if unit is not None:
            factor = UNITS.get(str(unit).lower(), 0.0)
            if not factor:
                self.error(f"unknown time unit '{unit}' (expected ms, s, min, hours or days)", unit)
        try:
            seconds = float(value * factor)
        except OverflowError:
            seconds = float("inf")
        if not 0 < seconds < float("inf"):
            self.error(f"{keyword} must be a positive, finite duration", number)
        if seconds > MAX_DURATION:
            self.error(f"{keyword} must be at most {MAX_DURATION:g} seconds (about 3,170 years)", number)
        return seconds

    def returns(self, tree: Tree[Any]) -> tuple[ast.ReturnItem, ...]:
        items: list[ast.ReturnItem] = []
        seen: set[str] = set()
        for item in tree.children[1:]:
            expr_tree = item.children[0]
            expr = self.expr(expr_tree)
            self.reject_equiv(expr)
            if len(item.children) > 1:
                label = item.children[2]
                name = _unescape(str(label)) if cast(Token, label).type == "STRING" else str(label)
                at: Any = label
            else:
                name = _default_name(self.text[expr_tree.meta.start_pos : expr_tree.meta.end_pos])
                at = item
            if name in seen:
                self.error(f"duplicate RETURN name '{name}'", at)
            seen.add(name)
            items.append(ast.ReturnItem(expr, name, **_pos(item)))
        return tuple(items)

    # ------------------------------------------------------------------ expressions

    def expr(self, tree: Tree[Any]) -> Any:
        """An AST expression (or an _Equiv marker, rejected by the caller unless it is a top-level conjunct)."""
        kind = tree.data
        ch = tree.children
        pos = _pos(tree)
        if kind == "or_":
            return ast.Or(tuple(self.expr(c) for c in ch), **pos)
        if kind == "and_":
            return ast.And(tuple(self.expr(c) for c in ch), **pos)
        if kind == "not_":
            return ast.Not(self.expr(ch[0]), **pos)
        if kind == "compare":
            op_c = cast(ast.CompareOp, _COMPARE_OPS[str(ch[1])])
            return ast.Compare(op_c, self.expr(ch[0]), self.expr(ch[2]), **pos)
        if kind == "binop":
            op = _MUL_OPS.get(str(ch[1]), str(ch[1]))
            return ast.BinOp(cast(ast.ArithOp, op), self.expr(ch[0]), self.expr(ch[2]), **pos)
        if kind == "neg":
            return ast.Neg(self.expr(ch[1]), **pos)
        if kind == "number":
            return ast.Number(_number(cast(Token, ch[0])), **pos)
        if kind == "string":
            return ast.String(_unescape(str(ch[0])), **pos)
        if kind in ("true", "false"):
            return ast.Bool(kind == "true", **pos)
        if kind == "paren":
            return self.expr(ch[0])
        if kind == "equiv":
            return _Equiv(tuple(str(c) for c in ch), **pos)
        if kind == "bare_name":
            if not self.names:
                self.error(f"'{ch[0]}' alone is not a value: write var.attr, var[i].attr or an aggregate", tree)
            return ast.Name(str(ch[0]), **pos)
        if kind == "dotted":
            var, attr = ch
            if str(attr).lower() == "len":
                return ast.KleeneLen(str(var), **pos)
            return ast.AttrRef(str(var), None, str(attr), **pos)
        if kind == "indexed":
            var, index, attr = ch
            return ast.AttrRef(str(var), self.index(str(var), index), str(attr), **pos)
        if kind == "aggregate":
            func, var, scope, attr = ch
            if str(func).lower() not in AGG_FUNCS:
                self.error(f"unknown aggregate '{func}' (expected avg, min, max, sum, count or median)", func)
            func_name = cast(ast.AggFunc, str(func).lower())
            return ast.Aggregate(func_name, str(var), self.scope(str(var), scope), str(attr), **pos)
        if kind == "trend_star":
            func, star = ch
            if str(star) != "*" or str(func).lower() != "count":
                shown = f"{func}({star})"
                self.error(f"unsupported aggregate '{shown}': only COUNT(*) takes '*'", tree)
            return ast.TrendAggregate("count", None, None, **pos)
        if kind == "trend_var":
            func, var = ch
            if str(func).lower() != "count":
                if str(func).lower() in TREND_ATTR_FUNCS:
                    self.error(f"{func}({var}) needs an attribute: {func}({var}.attr)", tree)
                self.error(f"unknown trend aggregate '{func}' (expected COUNT, SUM, MIN, MAX or AVG)", func)
            return ast.TrendAggregate("count", str(var), None, **pos)
        if kind == "trend_attr":
            func, var, attr = ch
            name = str(func).lower()
            if name == "count":
                self.error(f"COUNT takes * or a variable: COUNT(*) or COUNT({var})", tree)
            if name not in TREND_ATTR_FUNCS:
                self.error(f"unknown trend aggregate '{func}' (expected COUNT, SUM, MIN, MAX or AVG)", func)
            return ast.TrendAggregate(cast(ast.AggFunc, name), str(var), str(attr), **pos)
        raise AssertionError(f"unhandled parse tree node {kind}")  # pragma: no cover

    def index(self, var: str, tree: Tree[Any]) -> ast.Index:
        """``b[i]`` -> "i", ``b[i-1]`` -> "prev", ``b[1]`` -> "first", ``b[b.len]`` -> "last"."""
        ch = tree.children
        hint = f"expected {var}[i], {var}[i-1], {var}[1] or {var}[{var}.len]"
        if tree.data == "idx_name" and str(ch[0]) == "i":
            return "i"
        if tree.data == "idx_minus" and str(ch[0]) == "i" and str(ch[2]) == "1":
            return "prev"
        if tree.data == "idx_number" and str(ch[0]) == "1":
            return "first"
        if tree.data == "idx_len" and str(ch[0]) == var and str(ch[1]).lower() == "len":
            return "last"
        self.error(f"unsupported index: {hint}", tree)

    def scope(self, var: str, tree: Tree[Any] | None) -> ast.Scope:
        """``b[]`` -> "all"; ``b[..i-1]`` and ``b[1..i-1]`` -> "before"."""
        if tree is None:
            return "all"
        tokens = [str(t) for t in tree.children]
        if tokens in (["..", "i", "-", "1"], ["1", "..", "i", "-", "1"]):
            return "before"
        self.error(f"unsupported aggregate range: expected {var}[] or {var}[..i-1]", tree)
