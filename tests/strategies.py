"""Hypothesis generators for the differential tests: tiny precise streams and random SASE+ queries.

A generated query comes twice: as TEXT for the engine's parser and as the :class:`engine.language.ast.Query` the text
should parse to, built here directly, so the reference can be tested without the parser and the parser can be
checked against the generator.  Time is in whole seconds with ``tick = 1.0``, so an event's point is its ``ts``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from engine.events import Event
from engine.language import ast

TYPES = ("A", "B", "C", "D")
NOISE_TYPE = "E"  #: a type no generated query names
OPS = ("<", "<=", ">", ">=", "=", "!=")
AGGS = ("avg", "min", "max", "sum", "count", "median")
ARITH = ("+", "-", "*", "/", "%")
TICK = 1.0


@dataclass(frozen=True)
class Comp:
    var: str
    type: str
    kleene: bool = False
    negated: bool = False


@dataclass(frozen=True)
class GenQuery:
    """A generated query: its text and the AST it must parse to."""

    text: str
    query: ast.Query

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(sorted({c.type for c in self.query.components}))

    def __repr__(self) -> str:  # hypothesis prints this for a falsifying example
        return f"GenQuery({self.text!r})"

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        p.text(repr(self))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- rendering


def render(expr: ast.Expr) -> str:
    """Query text for an expression (fully parenthesised where precedence could matter)."""
    if isinstance(expr, ast.Number):
        return repr(expr.value)
    if isinstance(expr, ast.String):
        return f"'{expr.value}'"
    if isinstance(expr, ast.Bool):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.AttrRef):
        index = {None: "", "i": "[i]", "prev": "[i-1]", "first": "[1]", "last": f"[{expr.var}.len]"}[expr.index]
        return f"{expr.var}{index}.{expr.attr}"
    if isinstance(expr, ast.Aggregate):
        scope = "[]" if expr.scope == "all" else "[..i-1]"
        return f"{expr.func}({expr.var}{scope}.{expr.attr})"
    if isinstance(expr, ast.KleeneLen):
        return f"{expr.var}.len"
    if isinstance(expr, ast.BinOp):
        return f"{_wrap(expr.left)} {expr.op} {_wrap(expr.right)}"
    if isinstance(expr, ast.Neg):
        return f"-{_wrap(expr.operand)}"
    if isinstance(expr, ast.Compare):
        return f"{render(expr.left)} {expr.op} {render(expr.right)}"
    if isinstance(expr, ast.Not):
        return f"NOT ({render(expr.operand)})"
    if isinstance(expr, ast.And):
        return " AND ".join(f"({render(i)})" for i in expr.items)
    if isinstance(expr, ast.Or):
        return " OR ".join(f"({render(i)})" for i in expr.items)
    raise TypeError(expr)


def _wrap(expr: ast.Expr) -> str:
    text = render(expr)
    return f"({text})" if isinstance(expr, (ast.BinOp, ast.Neg, ast.Compare, ast.And, ast.Or, ast.Not)) else text


def _render_component(c: Comp, neg_style: int) -> str:
    if c.kleene:
        return f"{c.type}+ {c.var}[]"
    if c.negated:
        return (f"~{c.type} {c.var}", f"!{c.type} {c.var}", f"~({c.type} {c.var})")[neg_style]
    return f"{c.type} {c.var}"


# --------------------------------------------------------------------------- expressions


def _attr(var: str, attr: str = "v", index: ast.Index = None) -> ast.AttrRef:
    return ast.AttrRef(var, index, attr)


@st.composite
def _base_predicate(draw: st.DrawFn, comps: list[Comp]) -> ast.Expr:
    singles = [c.var for c in comps if not c.kleene]
    kleenes = [c.var for c in comps if c.kleene]
    op = draw(st.sampled_from(OPS))
    num = ast.Number(draw(st.integers(0, 4)))
    forms: list[str] = ["single_const"] if singles else []
    if len(singles) >= 2:
        forms += ["single_single", "arith", "key", "ts"]
    if singles:
        forms += ["string"]
    if kleenes:
        forms += ["prev", "agg_before", "len", "iter_const"]
        if singles:
            forms += ["first_single", "single_agg_all", "last_single", "iter_single"]
    form = draw(st.sampled_from(forms))
    x = draw(st.sampled_from(singles)) if singles else ""
    y = draw(st.sampled_from([s for s in singles if s != x])) if len(singles) >= 2 else ""
    b = draw(st.sampled_from(kleenes)) if kleenes else ""
    agg = draw(st.sampled_from(AGGS))
    if form == "single_const":
        return ast.Compare(op, _attr(x), num)
    if form == "single_single":
        return ast.Compare(op, _attr(x), _attr(y))
    if form == "arith":
        arith = ast.BinOp(draw(st.sampled_from(ARITH)), _attr(x), _attr(y))
        return ast.Compare(op, arith, num)
    if form == "key":
        return ast.Compare(draw(st.sampled_from(("=", "!="))), _attr(x, "k"), _attr(y, "k"))
    if form == "ts":
        return ast.Compare(op, ast.BinOp("-", _attr(y, "ts"), _attr(x, "ts")), num)
    if form == "string":
        right: ast.Expr = ast.String(draw(st.sampled_from(("p", "q"))))
        if len(singles) >= 2 and draw(st.booleans()):
            # attribute against attribute: sometimes a string against a number (unknown at run time)
            right = _attr(y, draw(st.sampled_from(("h", "v"))))
        return ast.Compare(draw(st.sampled_from(("=", "!=", "<"))), _attr(x, "h"), right)
    if form == "prev":
        return ast.Compare(op, _attr(b, "v", "i"), _attr(b, "v", "prev"))
    if form == "agg_before":
        return ast.Compare(op, _attr(b, "v", "i"), ast.Aggregate(agg, b, "before", "v"))
    if form == "len":
        return ast.Compare(op, ast.KleeneLen(b), ast.Number(draw(st.integers(1, 3))))
    if form == "iter_const":
        return ast.Compare(op, _attr(b, "v", "i"), num)
    if form == "first_single":
        return ast.Compare(op, _attr(b, "v", "first"), _attr(x))
    if form == "single_agg_all":
        return ast.Compare(op, _attr(x), ast.Aggregate(agg, b, "all", "v"))
    if form == "last_single":
        return ast.Compare(op, _attr(b, "v", "last"), _attr(x))
    if form == "iter_single":  # a negated variable cannot meet an iterator (a compile error)
        positive = [c.var for c in comps if not c.kleene and not c.negated]
        if not positive:
            return ast.Compare(op, _attr(b, "v", "i"), num)
        return ast.Compare(op, _attr(b, "v", "i"), _attr(draw(st.sampled_from(positive))))
    raise AssertionError(form)


@st.composite
def predicate(draw: st.DrawFn, comps: list[Comp]) -> ast.Expr:
    """One WHERE conjunct (never a top-level AND: the parser splits those)."""
    base = draw(_base_predicate(comps))
    shape = draw(st.sampled_from(("plain", "plain", "plain", "not", "or", "and")))
    if shape == "not":
        return ast.Not(base)
    if shape in ("or", "and"):
        other = draw(_base_predicate(comps))
        combined = ast.Or((base, other)) if shape == "or" else ast.Not(ast.And((base, other)))
        return combined if _checkable(combined, comps) else base
    return base


def _checkable(expr: ast.Expr, comps: list[Comp]) -> bool:
    """The engine's compile-time rules for a conjunct: a negated variable never meets an iterator form; one negated
    variable; iterator forms of one Kleene variable only, and not together with ``b[b.len]``/``b[]``/``b.len`` of it."""
    negated = {c.var for c in comps if c.negated}
    refs = [n for n in ast.walk(expr) if isinstance(n, (ast.AttrRef, ast.Aggregate, ast.KleeneLen))]
    iters = {n.var for n in refs if _is_iter(n)}
    wholes = {n.var for n in refs if _is_whole(n)}
    named_negated = {n.var for n in refs if n.var in negated}
    if named_negated and iters or len(named_negated) > 1 or len(iters) > 1:
        return False
    return not (iters & wholes)


def _is_iter(n: ast.Expr) -> bool:
    return (isinstance(n, ast.AttrRef) and n.index in ("i", "prev")) or (
        isinstance(n, ast.Aggregate) and n.scope == "before"
    )


def _is_whole(n: ast.Expr) -> bool:
    return (
        (isinstance(n, ast.AttrRef) and n.index == "last")
        or (isinstance(n, ast.Aggregate) and n.scope == "all")
        or isinstance(n, ast.KleeneLen)
    )


@st.composite
def _return_expr(draw: st.DrawFn, comps: list[Comp]) -> ast.Expr:
    singles = [c.var for c in comps if not c.kleene and not c.negated]
    kleenes = [c.var for c in comps if c.kleene]
    forms = []
    if singles:
        forms += ["single", "single_ts", "single_k"]
    if len(singles) >= 2:
        forms += ["diff"]
    if kleenes:
        forms += ["agg", "agg", "len", "first", "last", "last_ts"]
    form = draw(st.sampled_from(forms))
    x = draw(st.sampled_from(singles)) if singles else ""
    b = draw(st.sampled_from(kleenes)) if kleenes else ""
    if form == "single":
        return _attr(x)
    if form == "single_ts":
        return _attr(x, "ts")
    if form == "single_k":
        return _attr(x, "k")
    if form == "diff":
        y = draw(st.sampled_from([s for s in singles if s != x]))
        return ast.BinOp(draw(st.sampled_from(ARITH)), _attr(x), _attr(y))
    if form == "agg":
        return ast.Aggregate(draw(st.sampled_from(AGGS)), b, "all", draw(st.sampled_from(("v", "v", "k"))))
    if form == "len":
        return ast.KleeneLen(b)
    if form == "first":
        return _attr(b, "v", "first")
    if form == "last":
        return _attr(b, "v", "last")
    if form == "last_ts":
        return _attr(b, "ts", "last")
    raise AssertionError(form)


# --------------------------------------------------------------------------- queries


@st.composite
def queries(
    draw: st.DrawFn,
    *,
    kleene: bool | None = None,
    trailing: bool | None = None,
    negation: bool | None = None,
    equivalence: bool | None = None,
    window: bool | None = None,
    aggregates: bool | None = None,
    returns: bool | None = None,
) -> GenQuery:
    """A random query of 2-4 components; each flag forces (True) or forbids (False) a feature, None leaves it random.

    ``aggregates=True`` forces an aggregate predicate and an aggregate RETURN item (and so a Kleene component).
    """
    want_kleene = kleene or trailing or aggregates
    max_pos = 3 if negation else 4
    n_pos = draw(st.integers(2, max_pos))
    kinds = [False if kleene is False else draw(st.integers(0, 2)) == 0 for _ in range(n_pos)]
    if trailing:
        kinds[-1] = True
    elif trailing is False:
        kinds[-1] = False
    if want_kleene and not any(kinds):
        kinds[draw(st.integers(0, n_pos - 2 if trailing is False else n_pos - 1))] = True
    # at most two Kleene components keeps the brute force fast
    while sum(kinds) > 2:
        kinds[kinds.index(True)] = False
    types = [draw(st.sampled_from(TYPES)) for _ in range(n_pos)]
    positives = list(zip(types, kinds, strict=True))
    neg_at = None
    if negation or (negation is None and n_pos < 4 and draw(st.booleans())):
        neg_at = draw(st.integers(1, n_pos - 1))  # insert before positive number neg_at
    layout: list[tuple[str, bool, bool]] = [(t, k, False) for t, k in positives]
    if neg_at is not None:
        layout.insert(neg_at, (draw(st.sampled_from(TYPES)), False, True))
    comps = [Comp(var="abcd"[i], type=t, kleene=k, negated=n) for i, (t, k, n) in enumerate(layout)]

    n_preds = draw(st.sampled_from((0, 1, 1, 2, 3)))
    preds = [draw(predicate(comps)) for _ in range(n_preds)]
    if aggregates:
        b = draw(st.sampled_from([c.var for c in comps if c.kleene]))
        singles = [c.var for c in comps if not c.kleene]
        agg = ast.Aggregate(draw(st.sampled_from(AGGS)), b, draw(st.sampled_from(("all", "before"))), "v")
        if agg.scope == "before":
            preds.append(ast.Compare(draw(st.sampled_from(OPS)), _attr(b, "v", "i"), agg))
        elif singles:
            preds.append(ast.Compare(draw(st.sampled_from(OPS)), _attr(draw(st.sampled_from(singles))), agg))
        else:
            preds.append(ast.Compare(draw(st.sampled_from(OPS)), agg, ast.Number(draw(st.integers(0, 6)))))
    if negation:
        # make the negated variable matter more often: a predicate naming it
        neg = next(c for c in comps if c.negated)
        if draw(st.booleans()):
            other = draw(st.sampled_from([c.var for c in comps if not c.kleene and not c.negated] or [neg.var]))
            if other == neg.var:
                preds.append(
                    ast.Compare(draw(st.sampled_from(OPS)), _attr(neg.var), ast.Number(draw(st.integers(0, 4))))
                )
            else:
                preds.append(ast.Compare(draw(st.sampled_from(OPS)), _attr(neg.var), _attr(other)))

    eq: tuple[str, ...] = ()
    if equivalence or (equivalence is None and draw(st.booleans())):
        eq = draw(st.sampled_from((("k",), ("k",), ("k",), ("h",), ("k", "h"))))

    within: float | None = None
    within_text = ""
    if window or (window is None and draw(st.booleans())):
        n = draw(st.integers(1, 10)) if draw(st.booleans()) else draw(st.integers(3, 8))
        unit = draw(st.sampled_from(("s", "seconds", "ms")))
        within = float(n)
        within_text = f"{n * 1000} ms" if unit == "ms" else f"{n} {unit}"

    items: list[ast.ReturnItem] = []
    if returns or aggregates or (returns is None and draw(st.booleans())):
        exprs = draw(st.lists(_return_expr(comps), min_size=1, max_size=3))
        if aggregates:
            b = draw(st.sampled_from([c.var for c in comps if c.kleene]))
            exprs.append(ast.Aggregate(draw(st.sampled_from(AGGS)), b, "all", "v"))
        names: set[str] = set()
        for i, expr in enumerate(exprs):
            name = f"r{i}" if draw(st.booleans()) else render(expr)
            if name in names:
                continue
            names.add(name)
            items.append(ast.ReturnItem(expr, name))

    neg_style = draw(st.integers(0, 2))
    lines = ["PATTERN SEQ(" + ", ".join(_render_component(c, neg_style) for c in comps) + ")"]
    conj = [f"[{', '.join(eq)}]"] if eq else []
    conj += [f"({render(p)})" if isinstance(p, ast.Or) else render(p) for p in preds]
    if conj:
        lines.append("WHERE " + " AND ".join(conj))
    if within_text:
        lines.append(f"WITHIN {within_text}")
    if items:
        parts = [render(it.expr) if render(it.expr) == it.name else f"{render(it.expr)} AS {it.name}" for it in items]
        lines.append("RETURN " + ", ".join(parts))
    text = "\n".join(lines)
    query = ast.Query(
        name="Q",
        components=tuple(ast.Component(c.type, c.var, kleene=c.kleene, negated=c.negated) for c in comps),
        where=tuple(preds),
        equivalence=eq,
        within=within,
        returns=tuple(items),
        text=text,
    )
    return GenQuery(text=text, query=query)


# --------------------------------------------------------------------------- streams


@st.composite
def streams(
    draw: st.DrawFn,
    types: tuple[str, ...] = TYPES,
    *,
    min_size: int = 2,
    max_size: int = 8,
    plant: tuple[tuple[str, bool, bool], ...] = (),
    imprecise: bool = False,
) -> list[Event]:
    """2-8 precise events at integer seconds 0..14 (ties frequent), in input order; ``seq`` = input position.

    ``plant`` (``(type, kleene, negated)`` per PATTERN component) makes the types often follow the pattern's order,
    so that matches are frequent: 1 event per singleton, 1-3 per Kleene, 0-1 per negation, noise in between.
    ``imprecise`` gives events an uncertainty half-width of 0-2 s (their midpoint ``t`` may be a half tick).
    """
    alphabet = tuple(types) + (NOISE_TYPE,)
    if plant and draw(st.integers(0, 2)) > 0:
        etypes: list[str] = []
        for typ, kleene, negated in plant:
            etypes += [typ] * draw(st.integers(0 if negated else 1, 3 if kleene else 1))
        for _ in range(draw(st.integers(0, 3))):
            etypes.insert(draw(st.integers(0, len(etypes))), draw(st.sampled_from(alphabet)))
        etypes = etypes[:max_size]
        while len(etypes) < min_size:
            etypes.append(draw(st.sampled_from(types)))
        n = len(etypes)
    else:
        n = draw(st.integers(min_size, max_size))
        etypes = [
            draw(st.sampled_from(alphabet)) if draw(st.integers(0, 9)) == 0 else draw(st.sampled_from(types))
            for _ in range(n)
        ]
    gaps = draw(st.lists(st.sampled_from((1, 0, 1, 2, 1)), min_size=n, max_size=n))
    points = [sum(gaps[1 : i + 1]) for i in range(n)]  # ties (gap 0) are deliberate and frequent
    specs = []
    for etype, p in zip(etypes, points, strict=True):
        attrs: dict[str, object] = {}
        k = draw(st.sampled_from((1, 2, None)))
        if k is not None:
            attrs["k"] = k
        v = draw(st.one_of(st.integers(0, 4), st.none())) if draw(st.integers(0, 5)) == 0 else draw(st.integers(0, 4))
        if v is not None:
            attrs["v"] = v
        h = draw(st.sampled_from((None, "p", "q")))
        if h is not None:
            attrs["h"] = h
        delta = draw(st.sampled_from((0.0, 0.5, 1.0, 1.5, 2.0))) if imprecise else 0.0
        specs.append((etype, p, attrs, delta))
    if draw(st.integers(0, 3)) == 0:  # sometimes feed them out of time order
        specs = draw(st.permutations(specs))
    return [Event(t, float(p), attrs, seq=i, lo=p - d, hi=p + d, tick=TICK) for i, (t, p, attrs, d) in enumerate(specs)]


@st.composite
def cases(draw: st.DrawFn, imprecise: bool = False, **flags: bool | None) -> tuple[GenQuery, list[Event]]:
    """A query and a stream over (mostly) the query's types, often laid out in the pattern's order."""
    gq = draw(queries(**flags))
    plant = tuple((c.type, c.kleene, c.negated) for c in gq.query.components)
    n_pos = sum(not c.negated for c in gq.query.components)
    events = draw(streams(gq.types, plant=plant, min_size=n_pos, imprecise=imprecise))
    return gq, events


def describe_events(events: list[Event]) -> str:
    """Compact, copy-pasteable description of a stream."""
    parts = []
    for e in events:
        span = "" if e.lo == e.hi else f", lo={e.lo}, hi={e.hi}"
        parts.append(f"Event({e.type!r}, {e.ts}, {e.attrs!r}, seq={e.seq}{span}, tick=1.0)")
    return "[" + ", ".join(parts) + "]"


#: Where the intervals of each type may start (ticks): A early, C late, so that sequences are likely.
INTERVAL_STARTS = {"A": (0, 5), "B": (2, 8), "C": (5, 10), "D": (2, 8)}


@st.composite
def interval_streams(draw: st.DrawFn, max_events: int, tick: float = 1.0) -> list[Event]:
    """2..``max_events`` events of types A-D with an attribute ``v`` and sometimes ``k``, each over an interval of 1-5
    points; once the possible worlds pass 300, the remaining events are points (the brute force stays fast)."""
    n = draw(st.integers(2, max_events))
    events = []
    worlds = 1
    for i in range(n):
        etype = draw(st.sampled_from("AABBBCCD"))
        lo = draw(st.integers(*INTERVAL_STARTS[etype]))
        width = draw(st.integers(0, 4 if worlds < 300 else 0))
        worlds *= width + 1
        attrs = {"v": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            attrs["k"] = draw(st.integers(1, 2))
        events.append(
            Event(etype, lo + width / 2, attrs, id=f"e{i}", seq=i, lo=float(lo), hi=float(lo + width), tick=tick)
        )
    return events


def by_signature(records: list[dict]) -> dict:
    """Match records keyed by their signature (variable -> sorted ids); a repeated signature fails the test."""
    out = {}
    for r in records:
        key = tuple((var, tuple(sorted(ids))) for var, ids in r["match"].items())
        assert key not in out, f"duplicate signature {key}"
        out[key] = r
    return out
