"""Predicates and RETURN expressions compiled to closures from the parse tree (never ``eval``).

A compiled expression is ``f(bind, cur) -> value``:

- ``bind`` is the run's binding, indexed by positive component: an :class:`~engine.events.Event` for a singleton, a
  :class:`KleeneCell` (the last element of a persistent list) for a Kleene component, ``None`` while unbound;
- ``cur`` is the event being considered for the component the expression is placed on (or the candidate event of a
  negated component), ``None`` where nothing is being considered (RETURN, final checks).

Values follow SQL-like three-valued logic: a missing attribute is ``None``; arithmetic or comparison with ``None``, or a
comparison between a string and a number, is ``None`` (unknown); AND/OR/NOT are Kleene's; a predicate holds iff its
value is truthy.
"""

from __future__ import annotations

import operator
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Event
from engine.language import ast

Fn = Callable[[Any, Any], Any]


class KleeneCell:
    """One element of a Kleene binding: a node of a persistent list shared by cloned runs.

    ``aggs`` holds running ``(sum, count, min, max)`` tuples for the attributes the query aggregates, so aggregates over
    ``b[]`` and ``b[..i-1]`` cost O(1) and cloning a run never copies the list.
    """

    # ``ids`` (left unset until the runtime's record builder asks): ``[sorted ids, their sort keys, lo, hi]`` shared
    # along a chain, each new cell inserting its id where it sorts (engine.runtime.matcher._kleene_ids).
    # ``lo``/``hi``: the earliest lower bound and latest upper bound of the binding so far (the record's start/end).
    __slots__ = ("event", "prev", "length", "first", "aggs", "ids", "lo", "hi")
    ids: list[Any]  # set by the record builder, never by the constructor

    def __init__(self, event: Event, prev: KleeneCell | None, aggs: tuple[Any, ...]) -> None:
        self.event = event
        self.prev = prev
        if prev is None:
            self.length = 1
            self.first = event
            self.lo = event.lo
            self.hi = event.hi
        else:
            self.length = prev.length + 1
            self.first = prev.first
            lo, hi = event.lo, event.hi
            self.lo = lo if lo < prev.lo else prev.lo
            self.hi = hi if hi > prev.hi else prev.hi
        self.aggs = aggs

    def events(self) -> list[Event]:
        out = []
        cell: KleeneCell | None = self
        while cell is not None:
            out.append(cell.event)
            cell = cell.prev
        out.reverse()
        return out


def _fold(entry: tuple[Any, ...] | None, value: Any) -> tuple[Any, ...] | None:
    """Add ``value`` to a running ``(sum, count, min, max)``; a sum over non-numbers becomes ``None``."""
    if value is None:
        return entry
    if entry is None:
        numeric = isinstance(value, (int, float))
        return (value if numeric else None, 1, value, value)
    s, n, lo, hi = entry
    if s is not None and isinstance(value, (int, float)):
        try:
            s = s + value
        except OverflowError:  # an integer beyond the float range plus a float: the sum is unknown
            s = None
    else:
        s = None
    try:
        lo = value if value < lo else lo
        hi = value if value > hi else hi
    except TypeError:
        lo = hi = None
    return (s, n + 1, lo, hi)


def make_aggs_step(attrs: tuple[str, ...]) -> Callable[[tuple[Any, ...] | None, Event], tuple[Any, ...]]:
    """Return ``step(prev_aggs, event) -> aggs`` folding ``event``'s values of ``attrs`` into the running tuples."""
    if not attrs:
        return lambda prev, ev: ()
    if len(attrs) == 1 and attrs[0] != "ts":
        (attr,) = attrs

        def step1(prev: tuple[Any, ...] | None, ev: Event) -> tuple[Any, ...]:
            # One aggregated attribute (the Hadoop pack's case), numbers so far: the fold inline.
            v = ev.attrs.get(attr)
            entry = None if prev is None else prev[0]
            if entry is None or entry[0] is None or (type(v) is not float and type(v) is not int):
                return (_fold(entry, v),)
            s, n, lo, hi = entry  # a numeric sum: every value so far was a number, so lo and hi are too
            try:
                s = s + v
            except OverflowError:  # an integer beyond the float range plus a float
                return ((None, n + 1, v if v < lo else lo, v if v > hi else hi),)
            return ((s, n + 1, v if v < lo else lo, v if v > hi else hi),)

        return step1

    def step(prev: tuple[Any, ...] | None, ev: Event) -> tuple[Any, ...]:
        if prev is None:
            prev = (None,) * len(attrs)
        return tuple(_fold(entry, ev.get(a)) for entry, a in zip(prev, attrs, strict=True))

    return step


def _agg_value(func: str, entry: tuple[Any, ...] | None) -> Any:
    if entry is None:
        return 0 if func == "count" else None
    s, n, lo, hi = entry
    if func == "count":
        return n
    if func == "sum":
        return s
    if func == "avg":
        try:
            return None if s is None else s / n
        except OverflowError:  # an integer sum beyond the float range
            return None
    if func == "min":
        return lo
    return hi


@dataclass(frozen=True)
class Placement:
    """Where an expression is evaluated, which decides how each reference is read.

    ``cur_var`` is the variable that ``cur`` stands for; ``mode`` is ``"begin"`` (cur is the component's singleton
    event or its Kleene variable's first element), ``"take"`` (cur is Kleene element i >= 2) or ``"complete"`` (every
    named positive variable is fully bound; ``cur`` is a negated candidate or unused).
    """

    cur_var: str | None
    mode: str
    index: dict[str, int]  # positive variable -> component position in ``bind``
    agg_slots: dict[tuple[str, str], int]  # (kleene var, attr) -> position in KleeneCell.aggs


def _getter(attr: str) -> Callable[[Event], Any]:
    if attr == "ts":
        return lambda ev: ev.ts
    return lambda ev: ev.attrs.get(attr)


def _ref(node: ast.AttrRef, pl: Placement) -> Fn:
    attr = node.attr
    is_ts = attr == "ts"
    if node.var == pl.cur_var and (node.index in (None, "i") or (node.index == "first" and pl.mode == "begin")):
        if is_ts:
            return lambda b, c: c.ts
        return lambda b, c: c.attrs.get(attr)
    j = pl.index[node.var]
    if node.index is None:
        if is_ts:
            return lambda b, c: b[j].ts
        return lambda b, c: b[j].attrs.get(attr)
    if node.index == "first":
        if is_ts:
            return lambda b, c: b[j].first.ts
        return lambda b, c: b[j].first.attrs.get(attr)
    # "prev" while taking element i, or "last" of a complete Kleene binding: both are the list's head.
    if is_ts:
        return lambda b, c: b[j].event.ts
    return lambda b, c: b[j].event.attrs.get(attr)


def _median(cell: KleeneCell | None, attr: str) -> Any:
    """The median of the numeric values of ``attr`` over a Kleene binding (``None`` when there are none or one is not
    a number).  Unlike the other aggregates it is not folded as elements are taken: it walks the binding, O(n log n)
    per evaluation, so it belongs in RETURN (evaluated once per record) rather than in an iterator predicate."""
    values = []
    while cell is not None:
        v = cell.event.get(attr)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return None
            values.append(v)
        cell = cell.prev
    return statistics.median(values) if values else None


def _aggregate(node: ast.Aggregate, pl: Placement) -> Fn:
    j = pl.index[node.var]
    func = node.func
    if func == "median":
        attr = node.attr

        def median(b: Any, c: Any) -> Any:
            return _median(b[j], attr)

        return median
    slot = pl.agg_slots[(node.var, node.attr)]
    if func in ("sum", "avg", "max"):  # one closure per function: these run per event in Q3's and Q4's hot paths

        def agg_avg(b: Any, c: Any) -> Any:
            cell = b[j]
            entry = None if cell is None else cell.aggs[slot]
            if entry is None or entry[0] is None:
                return None
            try:
                return entry[0] / entry[1]
            except OverflowError:  # an integer sum beyond the float range
                return None

        def agg_sum(b: Any, c: Any) -> Any:
            cell = b[j]
            entry = None if cell is None else cell.aggs[slot]
            return None if entry is None else entry[0]

        def agg_max(b: Any, c: Any) -> Any:
            cell = b[j]
            entry = None if cell is None else cell.aggs[slot]
            return None if entry is None else entry[3]

        return {"sum": agg_sum, "avg": agg_avg, "max": agg_max}[func]

    def agg(b: Any, c: Any) -> Any:
        cell = b[j]
        return _agg_value(func, None if cell is None else cell.aggs[slot])

    return agg


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "%": operator.mod}
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


#: Arithmetic is on numbers only: ``"ab" * 10**9`` or a list times a number would build huge values, and a string
#: ``%`` would format; anything else is unknown (None), like a comparison between a string and a number.
_NUMBERS = frozenset({int, float, bool})


def _arith(op: str, left: Fn, right: Fn) -> Fn:
    fn = _ARITH[op]

    def arith(b: Any, c: Any) -> Any:
        lv = left(b, c)
        if lv is None:
            return None
        rv = right(b, c)
        if rv is None:
            return None
        if lv.__class__ not in _NUMBERS or rv.__class__ not in _NUMBERS:
            return None
        try:
            return fn(lv, rv)
        except (ZeroDivisionError, OverflowError, ValueError):  # 10**400 / 3: beyond the float range
            return None

    return arith


def _compare(op: str, left: Fn, right: Fn, const: Any = None, has_const: bool = False) -> Fn:
    if op in ("=", "!="):
        negate = op == "!="

        def equal(b: Any, c: Any) -> Any:
            lv = left(b, c)
            if lv is None:
                return None
            rv = const if has_const else right(b, c)
            if rv is None or (type(lv) is str) != (type(rv) is str):
                return None
            return (lv != rv) if negate else (lv == rv)

        return equal
    fn = _ORDER[op]
    if has_const:

        def order_const(b: Any, c: Any) -> Any:
            lv = left(b, c)
            if lv is None:
                return None
            try:
                return fn(lv, const)
            except TypeError:
                return None

        return order_const

    def order(b: Any, c: Any) -> Any:
        lv = left(b, c)
        if lv is None:
            return None
        rv = right(b, c)
        if rv is None:
            return None
        try:
            return fn(lv, rv)
        except TypeError:
            return None

    return order


def _and(fns: list[Fn]) -> Fn:
    def conj(b: Any, c: Any) -> Any:
        unknown = False
        for f in fns:
            v = f(b, c)
            if v is None:
                unknown = True
            elif not v:
                return False
        return None if unknown else True

    return conj


def _or(fns: list[Fn]) -> Fn:
    def disj(b: Any, c: Any) -> Any:
        unknown = False
        for f in fns:
            v = f(b, c)
            if v is None:
                unknown = True
            elif v:
                return True
        return None if unknown else False

    return disj


def compile_expr(node: ast.Expr, pl: Placement) -> Fn:
    """Compile one expression for one placement."""
    if isinstance(node, (ast.Number, ast.String, ast.Bool)):
        value = node.value
        return lambda b, c: value
    if isinstance(node, ast.AttrRef):
        return _ref(node, pl)
    if isinstance(node, ast.Aggregate):
        return _aggregate(node, pl)
    if isinstance(node, ast.KleeneLen):
        j = pl.index[node.var]
        return lambda b, c: 0 if b[j] is None else b[j].length
    if isinstance(node, ast.BinOp):
        return _arith(node.op, compile_expr(node.left, pl), compile_expr(node.right, pl))
    if isinstance(node, ast.Neg):
        inner = compile_expr(node.operand, pl)

        def neg(b: Any, c: Any) -> Any:
            v = inner(b, c)
            try:
                return None if v is None else -v
            except TypeError:
                return None

        return neg
    if isinstance(node, ast.Compare):
        left = compile_expr(node.left, pl)
        if isinstance(node.right, (ast.Number, ast.String, ast.Bool)):
            return _compare(node.op, left, left, node.right.value, True)
        return _compare(node.op, left, compile_expr(node.right, pl))
    if isinstance(node, ast.And):
        return _and([compile_expr(i, pl) for i in node.items])
    if isinstance(node, ast.Or):
        return _or([compile_expr(i, pl) for i in node.items])
    if isinstance(node, ast.Not):
        inner = compile_expr(node.operand, pl)

        def negation(b: Any, c: Any) -> Any:
            v = inner(b, c)
            return None if v is None else not v

        return negation
    raise TypeError(f"cannot compile {type(node).__name__}")


def conjunction(fns: list[Fn]) -> Fn | None:
    """All of ``fns`` truthy (short-circuit); ``None`` when there is nothing to check."""
    if not fns:
        return None
    if len(fns) == 1:
        return fns[0]
    if len(fns) == 2:
        f, g = fns
        return lambda b, c: bool(f(b, c)) and bool(g(b, c))
    return lambda b, c: all(f(b, c) for f in fns)


# --------------------------------------------------------------------------- reference analysis

#: A reference form: how a predicate reads a variable.
FORM_OF_INDEX = {None: "single", "i": "i", "prev": "prev", "first": "first", "last": "last"}


def references(expr: ast.Expr) -> dict[str, set[str]]:
    """Map each variable named in ``expr`` to its forms: single, i, prev, first, last, agg_all, agg_before, len."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(expr):
        if isinstance(node, ast.AttrRef):
            out.setdefault(node.var, set()).add(FORM_OF_INDEX[node.index])
        elif isinstance(node, ast.Aggregate):
            out.setdefault(node.var, set()).add("agg_all" if node.scope == "all" else "agg_before")
        elif isinstance(node, ast.KleeneLen):
            out.setdefault(node.var, set()).add("len")
    return out


def aggregated_attrs(exprs: list[ast.Expr]) -> dict[str, tuple[str, ...]]:
    """Kleene variable -> the attributes aggregated over it anywhere in ``exprs`` (order of first appearance)."""
    out: dict[str, list[str]] = {}
    for expr in exprs:
        for node in ast.walk(expr):
            if isinstance(node, ast.Aggregate) and node.func != "median":  # median walks the binding (_median)
                attrs = out.setdefault(node.var, [])
                if node.attr not in attrs:
                    attrs.append(node.attr)
    return {k: tuple(v) for k, v in out.items()}
