"""The parsed form of a SASE+ query (docs/semantics.md section 2).

The parser (``engine.language.parser``) builds these nodes from the query text; semantic checks run over them; the
planner compiles predicates to closures from them and the test suite's reference matcher interprets them directly.
Every node carries the ``line``/``column`` of its first character in the query text so errors can point at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

# --------------------------------------------------------------------------- expressions

#: How a variable is indexed in an attribute reference.
#:  ``None``   singleton variable: ``a.attr``
#:  ``"i"``    current Kleene element: ``b[i].attr``
#:  ``"prev"`` previous Kleene element: ``b[i-1].attr``
#:  ``"first"`` first Kleene element: ``b[1].attr``
#:  ``"last"`` last Kleene element: ``b[b.len].attr``
Index = Literal["i", "prev", "first", "last"] | None

#: Aggregate scope: ``"all"`` is ``b[]`` (every element), ``"before"`` is ``b[..i-1]`` (elements before the current).
Scope = Literal["all", "before"]

AggFunc = Literal["avg", "min", "max", "sum", "count", "median"]
CompareOp = Literal["<", "<=", ">", ">=", "=", "!="]
ArithOp = Literal["+", "-", "*", "/", "%"]


@dataclass(frozen=True)
class Node:
    line: int = field(default=0, kw_only=True, compare=False)
    column: int = field(default=0, kw_only=True, compare=False)


@dataclass(frozen=True)
class Number(Node):
    value: int | float


@dataclass(frozen=True)
class String(Node):
    value: str


@dataclass(frozen=True)
class Bool(Node):
    value: bool


@dataclass(frozen=True)
class AttrRef(Node):
    """``var.attr`` or ``var[index].attr``; ``attr == "ts"`` is the reported timestamp."""

    var: str
    index: Index
    attr: str


@dataclass(frozen=True)
class Aggregate(Node):
    """``func(var[].attr)`` or ``func(var[..i-1].attr)``; elements lacking ``attr`` are skipped."""

    func: AggFunc
    var: str
    scope: Scope
    attr: str


@dataclass(frozen=True)
class Name(Node):
    """A bare name: only in an alert rule's condition (:func:`engine.language.parser.parse_condition`), where it
    stands for a RETURN value of the rule's query."""

    name: str


@dataclass(frozen=True)
class KleeneLen(Node):
    """``var.len``: the number of events bound to a Kleene variable."""

    var: str


@dataclass(frozen=True)
class BinOp(Node):
    """Arithmetic: ``op`` is one of ``+ - * / %``."""

    op: ArithOp
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Neg(Node):
    """Unary minus."""

    operand: Expr


@dataclass(frozen=True)
class Compare(Node):
    """Comparison: ``op`` is one of ``< <= > >= = !=`` (``==``, ``<>``, ``≥``, ``≤``, ``≠`` are normalised)."""

    op: CompareOp
    left: Expr
    right: Expr


@dataclass(frozen=True)
class And(Node):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Or(Node):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Not(Node):
    operand: Expr


@dataclass(frozen=True)
class TrendAggregate(Node):
    """A GRETA trend aggregate in RETURN, over *every trend* (match) of a group and window, not over one match.

    ``COUNT(*)``: ``func="count"``, ``var=None``; ``COUNT(v)``: occurrences of events bound to ``v`` summed over the
    trends (``attr=None``); ``SUM|MIN|MAX|AVG(v.attr)``: over those occurrences (AVG is occurrence-weighted).  ``v`` is
    a pattern variable written bare, which tells these apart from the per-match ``sum(b[].attr)``.
    """

    func: AggFunc
    var: str | None = None
    attr: str | None = None


Expr = (
    Number
    | String
    | Bool
    | AttrRef
    | Aggregate
    | KleeneLen
    | BinOp
    | Neg
    | Compare
    | And
    | Or
    | Not
    | TrendAggregate
    | Name
)

# --------------------------------------------------------------------------- query


@dataclass(frozen=True)
class Component(Node):
    """One PATTERN component: ``Type v`` / ``Type+ v[]`` / ``~Type v`` (``!Type v``, ``~(Type v)``)."""

    type: str
    var: str
    kleene: bool = False
    negated: bool = False


@dataclass(frozen=True)
class ReturnItem(Node):
    """``expr [AS name]``; without AS the name is the expression's source text, whitespace-normalised."""

    expr: Expr
    name: str


@dataclass(frozen=True)
class Query(Node):
    """A parsed and checked query.

    ``where`` holds the top-level conjuncts of WHERE (a top-level AND is split); ``equivalence`` the attributes of
    every ``[attr, ...]`` test, in order of appearance, without duplicates.  ``within`` is the window in seconds
    (``None``: unbounded).  ``strategy`` is set when the text uses the papers' ``WHERE strategy(vars) {...}`` form.

    A *trend-aggregate query* (GRETA) has RETURN items built from :class:`TrendAggregate` nodes: they are kept in
    ``aggregates`` (and ``returns`` stays empty, so the per-match planner never sees them); ``slide`` is its optional
    ``SLIDE d`` in seconds (``None``: tumbling windows, SLIDE = WITHIN).
    """

    name: str
    components: tuple[Component, ...]
    where: tuple[Expr, ...] = ()
    equivalence: tuple[str, ...] = ()
    within: float | None = None
    returns: tuple[ReturnItem, ...] = ()
    strategy: str | None = None
    text: str = ""
    aggregates: tuple[ReturnItem, ...] = ()
    slide: float | None = None


STRATEGIES = (
    "skip_till_any_match",
    "skip_till_next_match",
    "partition_contiguity",
    "strict_contiguity",
)

OUTPUT_MODES = ("all", "distinct", "collapsed")


class QueryError(ValueError):
    """A query that does not parse or check; the message names the query, the line and the column."""

    def __init__(self, message: str, query: str = "", line: int = 0, column: int = 0) -> None:
        self.reason = message
        self.query = query
        self.line = line
        self.column = column
        where = f"query {query}" if query else "query"
        if line:
            where += f", line {line}, column {column}"
        super().__init__(f"{where}: {message}")


def walk(expr: Expr) -> Iterator[Expr]:
    """Yield ``expr`` and every sub-expression, depth first."""
    yield expr
    if isinstance(expr, (BinOp, Compare)):
        yield from walk(expr.left)
        yield from walk(expr.right)
    elif isinstance(expr, (Neg, Not)):
        yield from walk(expr.operand)
    elif isinstance(expr, (And, Or)):
        for item in expr.items:
            yield from walk(item)
