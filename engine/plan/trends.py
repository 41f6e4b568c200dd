"""A trend-aggregate query (docs/semantics.md sections 2-3 plus ``RETURN COUNT(*)``, ``SLIDE``) -> a GRETA template.

Our patterns are flat: ``SEQ(c1, ..., cm)`` of singleton and Kleene components with negations between positive ones.
The template has one state per positive component, a ``"seq"`` transition ``c(j-1) -> cj`` and, for a Kleene ``cj``,
a ``"plus"`` transition ``cj -> cj`` (paper Algorithm 1).  GRETA can only check predicates on one event or on two
*adjacent* events of a trend, so each WHERE conjunct must be one of:

=================================================  ===========================================================
conjunct names                                     becomes
=================================================  ===========================================================
only ``a.x`` (singleton) / only ``b[i].x``         a local predicate of the state (filters events)
only ``b[1].x``                                    an entry predicate (the first element of ``b``)
only ``b[b.len].x``                                an exit predicate (the last element of ``b``)
``b[i]`` and ``b[i-1]``                            the predicate of the ``+`` transition ``b -> b``
``a`` / ``b[b.len]`` and the next ``c`` / ``d[1]``  the predicate of the ``seq`` transition between them
only the negated ``n.x``                           a predicate of the negative sub-pattern ``n``
=================================================  ===========================================================

Anything else (``b[..i-1]``, ``b[]``, ``b.len``, ``b[i]`` against ``b[1]`` or another component, components that are
not adjacent, a negation predicate naming a positive variable) depends on more than two adjacent events: the query is
not a GRETA query, :class:`NotGreta` says why and where, and the engine enumerates its trends instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.language import ast
from engine.language.checks import show_trend
from engine.plan.compiler import CompiledQuery
from engine.plan.predicates import Placement, compile_expr, conjunction, references
from engine.plan.trend_template import RangeSpec, State, Template, Transition, TrendAgg, Windows, is_single_event

__all__ = ["NotGreta", "TrendSpec", "GretaPlan", "trend_spec", "plan_greta", "render"]

STAM = "skip_till_any_match"
_FLIP: dict[str, ast.CompareOp] = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


class NotGreta(ValueError):
    """The query cannot run on GRETA; ``node`` (if any) is the offending part of the query text."""

    def __init__(self, reason: str, node: ast.Node | None = None) -> None:
        self.reason = reason
        self.node = node
        where = f" (line {node.line}, column {node.column})" if node is not None and node.line else ""
        super().__init__(reason + where)


@dataclass
class TrendSpec:
    """What every trend-aggregate evaluator needs: aggregates, RETURN expressions, windows and groups."""

    name: str
    aggs: tuple[TrendAgg, ...]
    returns: list[tuple[str, ast.Expr]]
    windows: Windows
    tick: float
    attrs: tuple[str, ...]
    state_vars: list[str]
    within: float | None
    slide: float | None


@dataclass
class GretaPlan:
    """A trend query compiled for GRETA: its :class:`TrendSpec` and template."""

    spec: TrendSpec
    template: Template
    notes: list[str] = field(default_factory=list)

    @property
    def has_range_index(self) -> bool:
        """Some transition can use the Fenwick fast path (one range predicate, no negation check per edge)."""
        return any(t.range is not None and (not t.negations or not self.spec.attrs) for t in self.template.transitions)

    def explain(self) -> str:
        return _explain(self)


def trend_spec(cq: CompiledQuery) -> TrendSpec:
    """The trend-aggregate part of a compiled query (raises :class:`NotGreta` if it has none)."""
    q = cq.ast
    if not q.aggregates:
        raise NotGreta("the query returns no trend aggregate (COUNT(*), SUM(v.attr), ...)")
    aggs: list[TrendAgg] = []
    for item in q.aggregates:
        for node in ast.walk(item.expr):
            if isinstance(node, ast.TrendAggregate):
                agg = TrendAgg(node.func, node.var, node.attr)
                if agg not in aggs:
                    aggs.append(agg)
    tick = cq.tick
    if cq.window is None:
        windows = Windows(None, 1)
    else:
        slide = cq.window if q.slide is None else max(1, round(q.slide / tick))
        windows = Windows(cq.window, slide)
    return TrendSpec(
        name=cq.name,
        aggs=tuple(aggs),
        returns=[(item.name, item.expr) for item in q.aggregates],
        windows=windows,
        tick=tick,
        attrs=tuple(q.equivalence),
        state_vars=[c.var for c in q.components if not c.negated],
        within=q.within,
        slide=q.slide,
    )


def plan_greta(cq: CompiledQuery) -> GretaPlan:
    """Build the GRETA template of a trend-aggregate query, or raise :class:`NotGreta` naming the obstacle."""
    spec = trend_spec(cq)
    if cq.strategy != STAM:
        raise NotGreta(
            f"GRETA aggregates the trends of skip_till_any_match; under {cq.strategy} the matches are "
            "selected run by run (digest-greta ambiguity 7), so they are enumerated"
        )
    q = cq.ast
    positives = [c for c in q.components if not c.negated]
    index = {c.var: i for i, c in enumerate(positives)}
    negated = {}
    after = -1
    for c in q.components:
        if c.negated:
            negated[c.var] = (c, after)
        else:
            after += 1
    states = [State(i, c.var, c.type, c.kleene) for i, c in enumerate(positives)]
    local: dict[int, list[Any]] = {i: [] for i in index.values()}
    entry: dict[int, list[Any]] = {i: [] for i in index.values()}
    exit_: dict[int, list[Any]] = {i: [] for i in index.values()}
    seq_preds: dict[int, list[Any]] = {i: [] for i in range(1, len(positives))}
    plus_preds: dict[int, list[Any]] = {i: [] for i, c in enumerate(positives) if c.kleene}
    neg_preds: dict[str, list[Any]] = {v: [] for v in negated}

    for expr in q.where:
        expr = _adjacent_form(expr)
        refs = references(expr)
        negs = [v for v in refs if v in negated]
        if negs:
            v = negs[0]
            if set(refs) != {v}:
                raise NotGreta(
                    f"a predicate on the negated variable {v} names another variable: GRETA checks a "
                    f"negative sub-pattern on its own events only",
                    expr,
                )
            neg_preds[v].append(expr)
            continue
        if not refs:
            local[0].append(expr)  # a constant: true or false for every trend
            continue
        named = sorted(refs, key=index.__getitem__)
        if len(named) == 1:
            v = named[0]
            i = index[v]
            forms = refs[v]
            if not positives[i].kleene or forms <= {"i"}:
                local[i].append(expr)
            elif forms == {"first"}:
                entry[i].append(expr)
            elif forms == {"last"}:
                exit_[i].append(expr)
            elif forms <= {"i", "prev"}:
                plus_preds[i].append(expr)
            else:
                raise NotGreta(_why_not(expr, v, forms), expr)
            continue
        if len(named) > 2:
            raise NotGreta(f"a predicate names {', '.join(named)}: GRETA checks one event or two adjacent ones", expr)
        u, v = named
        j, k = index[u], index[v]
        if k != j + 1:
            raise NotGreta(
                f"a predicate compares {u} and {v}, which are not adjacent components: GRETA checks "
                f"predicates on adjacent events only",
                expr,
            )
        if refs[u] != ({"last"} if positives[j].kleene else {"single"}):
            raise NotGreta(
                f"a predicate between {u} and {v} must use the last element of {u} "
                f"({u}[{u}.len].attr), the one adjacent to {v}",
                expr,
            )
        if refs[v] != ({"first"} if positives[k].kleene else {"single"}):
            raise NotGreta(
                f"a predicate between {u} and {v} must use the first element of {v} ({v}[1].attr), "
                f"the one adjacent to {u}: a predicate on every {v}[i] relates non-adjacent events",
                expr,
            )
        seq_preds[k].append(expr)

    def pl(var: str | None, mode: str) -> Placement:
        return Placement(var, mode, index, {})

    def compiled(exprs: list[Any], placement: Placement) -> Any:
        return conjunction([compile_expr(e, placement) for e in exprs])

    for st in states:
        i = st.index
        st.local = compiled(local[i], pl(st.var, "begin"))
        st.entry = compiled(entry[i], pl(st.var, "begin"))
        st.exit = compiled(exit_[i], pl(None, "complete"))
        st.notes = (
            [("local", render(e)) for e in local[i]]
            + [("first", render(e)) for e in entry[i]]
            + [("last", render(e)) for e in exit_[i]]
        )

    transitions: list[Transition] = []
    for k in range(1, len(positives)):
        v = positives[k].var
        placement = pl(v, "begin")
        tr = Transition(k - 1, k, "seq", compiled(seq_preds[k], placement), texts=[render(e) for e in seq_preds[k]])
        if len(seq_preds[k]) == 1:
            src_forms = {"last"} if positives[k - 1].kleene else {"single"}
            dst_forms = {"first"} if positives[k].kleene else {"single"}
            tr.range = _range_spec(seq_preds[k][0], positives[k - 1].var, src_forms, v, dst_forms, placement)
        for nv, (comp, pos) in negated.items():
            if pos == k - 1:
                neg_state = State(
                    0,
                    comp.var,
                    comp.type,
                    False,
                    local=compiled(neg_preds[nv], pl(comp.var, "complete")),
                    notes=[("local", render(e)) for e in neg_preds[nv]],
                )
                tr.negations.append(Template([neg_state], [], frozenset({0}), frozenset({0}), tuple(q.equivalence)))
                shown = f"~{comp.type} {comp.var}" + (
                    f" where {' AND '.join(render(e) for e in neg_preds[nv])}" if neg_preds[nv] else ""
                )
                tr.neg_texts.append(shown)
        transitions.append(tr)
    for i, c in enumerate(positives):
        if c.kleene:
            placement = pl(c.var, "take")
            tr = Transition(i, i, "plus", compiled(plus_preds[i], placement), texts=[render(e) for e in plus_preds[i]])
            if len(plus_preds[i]) == 1:
                tr.range = _range_spec(plus_preds[i][0], c.var, {"prev"}, c.var, {"i"}, placement)
            transitions.append(tr)
    transitions.sort(key=lambda t: (t.dst, t.src))
    template = Template(states, transitions, frozenset({0}), frozenset({len(states) - 1}), tuple(q.equivalence))
    return GretaPlan(spec, template)


_PREFIX_AGG = {">": "max", ">=": "max", "<": "min", "<=": "min"}


def _adjacent_form(expr: ast.Expr) -> ast.Expr:
    """``b[i].x > max(b[..i-1].x)`` -> ``b[i].x > b[i-1].x`` (and min with < / <=, either orientation).

    On a time-ordered Kleene set the two hold for the same sets (both say the sequence is monotone); the planner
    writes the previous-element comparison in the prefix form for skip_till_any_match, GRETA needs the adjacent one.
    """
    if not isinstance(expr, ast.Compare) or expr.op not in _FLIP:
        return expr
    left, right, op = expr.left, expr.right, expr.op
    if isinstance(left, ast.Aggregate):
        left, right, op = right, left, _FLIP[op]
    if (
        isinstance(left, ast.AttrRef)
        and left.index == "i"
        and isinstance(right, ast.Aggregate)
        and right.scope == "before"
        and right.var == left.var
        and right.attr == left.attr
        and right.func == _PREFIX_AGG[op]
    ):
        prev = ast.AttrRef(right.var, "prev", right.attr, line=right.line, column=right.column)
        return ast.Compare(op, left, prev, line=expr.line, column=expr.column)
    return expr


def _why_not(expr: ast.Expr, v: str, forms: set[str]) -> str:
    if forms & {"agg_before", "agg_all", "len"}:
        return (
            f"{render(expr)} depends on the whole Kleene set {v}[] ({v}[..i-1], {v}[] or {v}.len), "
            "not on adjacent events"
        )
    return f"{render(expr)} relates elements of {v}[] that are not adjacent ({v}[1] or {v}[{v}.len] with {v}[i])"


def _range_spec(
    expr: ast.Expr, src_var: str, src_forms: set[str], dst_var: str, dst_forms: set[str], placement: Placement
) -> RangeSpec | None:
    """``q OP key`` if ``expr`` compares a value of the new event with a value of the predecessor, else None."""
    if not isinstance(expr, ast.Compare) or expr.op not in _FLIP:
        return None

    def side(node: ast.Expr) -> str | None:
        refs = references(node)
        if not refs:
            return None
        if set(refs) == {dst_var} and refs[dst_var] <= dst_forms:
            return "dst"
        if set(refs) == {src_var} and refs[src_var] <= src_forms:
            return "src"
        return None

    left, right = side(expr.left), side(expr.right)
    if (left, right) == ("dst", "src"):
        dst, src, op = expr.left, expr.right, expr.op
    elif (left, right) == ("src", "dst"):
        dst, src, op = expr.right, expr.left, _FLIP[expr.op]
    else:
        return None
    return RangeSpec(compile_expr(dst, placement), compile_expr(src, placement), op, render(src))


# --------------------------------------------------------------------------- explain


def render(expr: ast.Expr) -> str:
    """An expression as query text (canonical spacing), for explain and messages."""
    if isinstance(expr, ast.Number):
        return str(expr.value)
    if isinstance(expr, ast.String):
        return json.dumps(expr.value)
    if isinstance(expr, ast.Bool):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.AttrRef):
        index = {None: "", "i": "[i]", "prev": "[i-1]", "first": "[1]", "last": f"[{expr.var}.len]"}[expr.index]
        return f"{expr.var}{index}.{expr.attr}"
    if isinstance(expr, ast.Aggregate):
        return f"{expr.func}({expr.var}{'[]' if expr.scope == 'all' else '[..i-1]'}.{expr.attr})"
    if isinstance(expr, ast.KleeneLen):
        return f"{expr.var}.len"
    if isinstance(expr, ast.TrendAggregate):
        return show_trend(expr)
    if isinstance(expr, ast.Neg):
        return f"-{_wrap(expr.operand)}"
    if isinstance(expr, (ast.BinOp, ast.Compare)):
        return f"{_wrap(expr.left)} {expr.op} {_wrap(expr.right)}"
    if isinstance(expr, ast.Not):
        return f"NOT {_wrap(expr.operand)}"
    if isinstance(expr, (ast.And, ast.Or)):
        word = " AND " if isinstance(expr, ast.And) else " OR "
        return word.join(_wrap(item) for item in expr.items)
    return type(expr).__name__


def _wrap(expr: ast.Expr) -> str:
    text = render(expr)
    return f"({text})" if isinstance(expr, (ast.BinOp, ast.Compare, ast.And, ast.Or, ast.Not)) else text


def _seconds(x: float) -> str:
    return f"{x:g} s"


def describe_windows(spec: TrendSpec) -> str:
    w = spec.windows
    if w.size is None:
        return "no WITHIN: one window over the whole input, emitted at the end of the input"
    size, slide = w.size * spec.tick, w.slide * spec.tick
    kind = "tumbling (SLIDE = WITHIN)" if spec.slide is None else f"SLIDE {_seconds(slide)}"
    per = -(-w.size // w.slide)
    return (
        f"WITHIN {_seconds(size)}, {kind}: windows [k*{_seconds(slide)}, k*{_seconds(slide)} + {_seconds(size)}), "
        f"up to {per} per event; each emitted when the stream passes its end"
    )


def _mode(tr: Transition, keyed: bool) -> str:
    """How the runtime finds this transition's predecessors (mirrors :class:`engine.greta.graph.Graph`)."""
    if tr.negations and (keyed or not all(is_single_event(n) for n in tr.negations)):
        return "scan of the predecessors (the negation is checked per edge, per group), O(n)"
    reset = " (emptied by each negated event)" if tr.negations else ""
    if tr.pred is None:
        return "running total, O(1)" + reset
    if tr.range is not None:
        return f"Fenwick tree on {tr.range.key_text}, O(log n)" + reset
    return "scan of the predecessors, O(n)"


def _explain(plan: GretaPlan) -> str:
    spec, tpl = plan.spec, plan.template
    keyed = bool(spec.attrs)
    lines = [
        "GRETA (graph-based event trend aggregation: the aggregates propagate along the trend graph; no trend is built)"
    ]
    lines.append(f"  windows: {describe_windows(spec)}")
    if keyed:
        lines.append(
            f"  groups: [{', '.join(spec.attrs)}] -- one record per group and window; an event lacking an "
            "attribute joins every group"
        )
    else:
        lines.append("  groups: none -- one record per window")
    lines.append("  states (one vertex per matching event):")
    for st in tpl.states:
        role = [r for r, on in (("START", st.index in tpl.start), ("END", st.index in tpl.end)) if on] or ["MID"]
        shown = f"{st.type}+ {st.var}[]" if st.kleene else f"{st.type} {st.var}"
        notes = "; ".join(f"{kind}: {text}" for kind, text in st.notes) or "no predicate"
        lines.append(f"    {st.var}: {shown} ({'/'.join(role)}) -- {notes}")
    lines.append("  transitions (edges are never stored):")
    for tr in tpl.transitions:
        src, dst = tpl.states[tr.src].var, tpl.states[tr.dst].var
        label = "+" if tr.kind == "plus" else "SEQ"
        pred = " AND ".join(tr.texts) if tr.texts else "true"
        lines.append(f"    {src} -> {dst} ({label}): {pred} -- {_mode(tr, keyed)}")
        for neg in tr.neg_texts:
            lines.append(f"      not across: {neg}")
    lines.append("  aggregates: " + ", ".join(f"{name} = {render(expr)}" for name, expr in spec.returns))
    fast = plan.has_range_index
    lines.append(
        "  cost: "
        + (
            "O(n log n) per window (the window's DP runs when it closes, ranking its values for the Fenwick trees)"
            if fast
            else "O(n^2 k) time, O(n k) space for n events per window and "
            "k windows per event (incremental, one graph shared by all windows)"
        )
    )
    lines.append(
        "  exact: counts are big integers; events are placed at their point (interval midpoint): GRETA on "
        "imprecise intervals is out of scope"
    )
    return "\n".join(lines)
