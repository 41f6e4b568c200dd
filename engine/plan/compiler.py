"""Query -> NFA^b plan (SASE+ paper section 4, docs/semantics.md sections 2-5).

The automaton has one state per positive component (a Kleene component is the paper's pair ``p[1]``/``p[i]``: a run
sits at it with or without elements).  Each WHERE conjunct is placed by its *last identifier*:

- on the ``begin`` edge of a singleton component;
- for a Kleene variable ``b``: predicates naming ``b[i]`` go on ``take`` (and also on ``begin`` unless they name
  ``b[i-1]``/``b[..i-1]``, semantics section 2: those hold for i >= 2); predicates naming only ``b[1]`` go on ``begin``;
  predicates over the finished set (``b[b.len]``, ``b[]``, ``b.len``) go on the next component's ``begin`` -- the
  paper's proceed edge -- or, for a trailing Kleene component, on every completion;
- predicates naming a negated variable form that negation's nested check (docs/semantics.md section 3, item 5).

The window is pushed onto every edge by the runtime (a run dies once ``t - t_first >= W``).  Ignore edges come from the
strategy.  Equivalence tests become partitioning by the first attribute plus per-run checks of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from engine.events import DEFAULT_TICK
from engine.language import ast
from engine.language.ast import Expr
from engine.plan.predicates import (
    Fn,
    KleeneCell,
    Placement,
    aggregated_attrs,
    compile_expr,
    conjunction,
    make_aggs_step,
    references,
)

ITERATOR_FORMS = {"i", "prev", "agg_before"}
COMPLETE_FORMS = {"last", "agg_all", "len"}


@dataclass
class PlanComponent:
    """One state of the automaton."""

    var: str
    type: str
    kleene: bool
    index: int
    begin: Fn | None = None  # begin edge (singleton, or first Kleene element)
    take: Fn | None = None  # take edge (Kleene element i >= 2)
    begin_exprs: list[ast.Expr] = field(default_factory=list)
    take_exprs: list[ast.Expr] = field(default_factory=list)
    aggs_step: Any = None  # Kleene only: folds an element into KleeneCell.aggs


@dataclass
class PlanNegation:
    """A negated component between positive components ``after`` and ``after + 1``."""

    var: str
    type: str
    after: int
    check: Fn | None  # predicates naming the negated variable (cur = the candidate event)
    exprs: list[ast.Expr]
    #: The check reads the first/last element of a Kleene set, which depends on the world: the imprecise evaluator
    #: then applies it while placing the component after the gap instead of once per signature.
    order_dependent: bool = False
    #: ... and it reads a set that is not finished when the gap closes: applied when the whole match is placed.
    deferred: bool = False


@dataclass
class CompiledQuery:
    """A query ready to run: the NFA^b plan plus the options of docs/semantics.md sections 4-6."""

    name: str
    ast: ast.Query
    strategy: str
    output: str
    confidence: float
    tick: float
    window: int | None  # ticks; a match needs t_last - t_first < window
    components: list[PlanComponent]
    negations: list[PlanNegation]
    equivalence: tuple[str, ...]
    final: Fn | None  # completion predicates of a trailing Kleene component
    final_exprs: list[Expr]
    returns: list[tuple[str, Fn]]
    return_ready: int  # runs at a state beyond this index can already compute RETURN
    relevant_types: frozenset[str]
    forall: dict[int, str] = field(default_factory=dict)  # id(expr) -> Kleene variable iterated from outside
    agg_slots: dict[Any, Any] = field(default_factory=dict)  # (kleene var, attr) -> position in KleeneCell.aggs

    @property
    def text(self) -> str:
        return self.ast.text

    def explain(self) -> str:
        """A human-readable account of the plan: states, edges and what each edge checks."""
        lines = [
            f"query {self.name}: strategy {self.strategy}, output {self.output}, "
            f"confidence >= {self.confidence}, tick {self.tick}s, "
            f"window {'none' if self.window is None else f'{self.window} ticks'}",
            f"partition by {self.equivalence[0]!r}" if self.equivalence else "no partitioning",
        ]
        for comp in self.components:
            kind = f"{comp.type}+ {comp.var}[]" if comp.kleene else f"{comp.type} {comp.var}"
            lines.append(f"state {comp.index}: {kind}")
            lines.append(f"  begin: {_show(comp.begin_exprs)}")
            if comp.kleene:
                lines.append(f"  take:  {_show(comp.take_exprs)}")
        for neg in self.negations:
            lines.append(
                f"negation ~{neg.type} {neg.var} between states {neg.after} and {neg.after + 1}: {_show(neg.exprs)}"
            )
        if self.final_exprs:
            lines.append(f"on completion: {_show(self.final_exprs)}")
        return "\n".join(lines)


def _show(exprs: list[ast.Expr]) -> str:
    return f"{len(exprs)} predicate(s)" if exprs else "true"


def _error(query: ast.Query, node: ast.Node | None, message: str) -> ast.QueryError:
    return ast.QueryError(message, query.name, getattr(node, "line", 0), getattr(node, "column", 0))


def compile_query(
    query: ast.Query | str,
    *,
    name: str | None = None,
    strategy: str | None = None,
    output: str = "all",
    confidence: float = 0.0,
    tick: float = DEFAULT_TICK,
) -> CompiledQuery:
    """Compile a parsed query (or query text) with its options into an NFA^b plan.

    ``strategy`` defaults to the one written in the query text, else skip_till_any_match.  Raises
    :class:`~engine.language.ast.QueryError` for options the query cannot run with.
    """
    if isinstance(query, str):
        from engine.language.parser import parse_query

        query = parse_query(query, name or "query")
    qname = name or query.name or "query"
    strategy = strategy or query.strategy or "skip_till_any_match"
    if strategy not in ast.STRATEGIES:
        raise _error(query, None, f"unknown strategy {strategy!r} (one of {', '.join(ast.STRATEGIES)})")
    if output not in ast.OUTPUT_MODES:
        raise _error(query, None, f"unknown output mode {output!r} (one of {', '.join(ast.OUTPUT_MODES)})")
    if not 0.0 <= confidence <= 1.0:
        raise _error(query, None, f"confidence must be within [0, 1], got {confidence}")
    if not tick > 0:
        raise _error(query, None, f"tick must be > 0, got {tick}")

    if strategy == "skip_till_any_match":
        # b[i].x >= b[i-1].x -> b[i].x >= max(b[..i-1].x): the same valid sequences, and true-value consistent.
        from dataclasses import replace

        from engine.plan.consistency import rewrite_previous

        query = replace(query, where=tuple(rewrite_previous(e) for e in query.where))
    positives = [c for c in query.components if not c.negated]
    index = {c.var: i for i, c in enumerate(positives)}
    kleene_vars = {c.var for c in positives if c.kleene}
    agg_attrs = aggregated_attrs(list(query.where) + [r.expr for r in query.returns])
    agg_slots = {(v, a): i for v, attrs in agg_attrs.items() for i, a in enumerate(attrs)}

    comps = [
        PlanComponent(
            c.var, c.type, c.kleene, i, aggs_step=make_aggs_step(agg_attrs.get(c.var, ())) if c.kleene else None
        )
        for i, c in enumerate(positives)
    ]
    negations: list[PlanNegation] = []
    neg_by_var: dict[str, PlanNegation] = {}
    after = -1
    for c in query.components:
        if c.negated:
            neg = PlanNegation(c.var, c.type, after, None, [])
            negations.append(neg)
            neg_by_var[c.var] = neg
        else:
            after += 1
    final_exprs: list[ast.Expr] = []
    forall: dict[int, str] = {}  # id(expr) -> the Kleene variable it iterates from a later placement

    for expr in query.where:
        refs = references(expr)
        negs = [v for v in refs if v in neg_by_var]
        if negs:
            neg_by_var[negs[0]].exprs.append(expr)
            continue
        iterated = [v for v, forms in refs.items() if forms & ITERATOR_FORMS]
        last = max((index[v] for v in refs), default=0)
        if iterated and index[iterated[0]] != last:
            # `a[i].x < c.x` with a later c: it must hold for every element of a, checked once c is known.
            forall[id(expr)] = iterated[0]
            refs = {v: f for v, f in refs.items() if v != iterated[0]}
        comp = comps[last]
        if not comp.kleene:
            comp.begin_exprs.append(expr)
            continue
        forms = refs.get(comp.var, set())
        if forms & ITERATOR_FORMS:
            comp.take_exprs.append(expr)
            if not forms & {"prev", "agg_before"}:
                comp.begin_exprs.append(expr)
        elif forms <= {"first"} and forms:
            comp.begin_exprs.append(expr)
        elif last + 1 < len(comps):
            comps[last + 1].begin_exprs.append(expr)
        else:
            final_exprs.append(expr)

    def compiled(expr: ast.Expr, placement: Placement) -> Fn:
        var = forall.get(id(expr))
        if var is None:
            return compile_expr(expr, placement)
        return _for_every_element(expr, var, placement, index, agg_slots, comps)

    for comp in comps:
        comp.begin = conjunction(
            [compiled(e, Placement(comp.var, "begin", index, agg_slots)) for e in comp.begin_exprs]
        )
        comp.take = conjunction([compiled(e, Placement(comp.var, "take", index, agg_slots)) for e in comp.take_exprs])
    for neg in negations:
        later = False  # a positive component after the one that closes the gap: unplaced when the gap closes
        for expr in neg.exprs:
            for var, forms in references(expr).items():
                if var in kleene_vars and forms & {"first", "last"}:
                    neg.order_dependent = True
                    if index[var] > neg.after + 1 or (index[var] == neg.after + 1 and forms - {"first"}):
                        neg.deferred = True
                if index.get(var, -1) > neg.after + 1:
                    later = True
        if neg.order_dependent and later:  # checked once the signature is complete, not as the gap closes
            neg.deferred = True
        neg.check = conjunction([compile_expr(e, Placement(neg.var, "complete", index, agg_slots)) for e in neg.exprs])
    complete = Placement(None, "complete", index, agg_slots)
    final = conjunction([compiled(e, complete) for e in final_exprs])
    returns = [(r.name, compile_expr(r.expr, complete)) for r in query.returns]

    # RETURN is computable once every variable it names is fully bound.
    ready = -1
    for r in query.returns:
        for var, forms in references(r.expr).items():
            if var in kleene_vars and forms - {"first"}:
                ready = max(ready, index[var] + 1)  # needs the finished Kleene set
            else:
                ready = max(ready, index[var])

    cq = CompiledQuery(
        name=qname,
        ast=query,
        strategy=strategy,
        output=output,
        confidence=confidence,
        tick=tick,
        window=None if query.within is None else max(1, round(query.within / tick)),
        components=comps,
        negations=negations,
        equivalence=query.equivalence,
        final=final,
        final_exprs=final_exprs,
        returns=returns,
        return_ready=ready,
        forall=forall,
        agg_slots=agg_slots,
        relevant_types=frozenset(c.type for c in query.components),
    )
    if output == "collapsed":
        _check_collapsible(cq)
    return cq


def compile_spec(spec: Any, tick: float) -> CompiledQuery:
    """Compile one query of a pack (:class:`engine.language.packs.QuerySpec`) with the options the pack gives it."""
    return compile_query(
        spec.query, name=spec.name, strategy=spec.strategy, output=spec.output, confidence=spec.confidence, tick=tick
    )


def _for_every_element(
    expr: ast.Expr,
    var: str,
    outer: Placement,
    index: dict[str, int],
    agg_slots: dict[Any, Any],
    comps: list[PlanComponent],
) -> Fn:
    """A predicate iterating ``var[i]`` evaluated where a later variable is known: it must hold for every element
    (for i >= 2 when it names ``var[i-1]``/``var[..i-1]``), in the elements' order."""
    k = index[var]
    forms = references(expr)[var]
    first_fn = None if forms & {"prev", "agg_before"} else compile_expr(expr, Placement(var, "begin", index, agg_slots))
    take_fn = compile_expr(expr, Placement(var, "take", index, agg_slots))
    j = index.get(outer.cur_var) if outer.cur_var is not None else None
    outer_comp = comps[j] if j is not None else None

    def every(bind: Any, cur: Any) -> bool:
        b = list(bind)
        if outer_comp is not None and cur is not None:
            b[cast(int, j)] = KleeneCell(cur, None, outer_comp.aggs_step(None, cur)) if outer_comp.kleene else cur
        chain = []
        cell = bind[k]
        while cell is not None:
            chain.append(cell)
            cell = cell.prev
        prev = None
        for c in reversed(chain):
            if prev is None:
                if first_fn is not None:
                    b[k] = None
                    if not first_fn(b, c.event):
                        return False
            else:
                b[k] = prev
                if not take_fn(b, c.event):
                    return False
            prev = c
        return True

    return every


def _check_collapsible(cq: CompiledQuery) -> None:
    """Collapsed output needs true-false consistent Kleene predicates (SASE++ section 5.2; semantics section 5)."""
    q = cq.ast
    if cq.strategy != "skip_till_any_match":
        raise _error(q, None, "output 'collapsed' applies to skip_till_any_match only")
    comps = cq.components
    if comps[0].kleene:
        raise _error(q, None, "output 'collapsed' needs a singleton first component")
    if comps[-1].kleene:
        raise _error(
            q, None, "output 'collapsed' needs a singleton last component (a trailing Kleene set is never final)"
        )
    for comp in comps:
        if not comp.kleene:
            continue
        for expr in comp.take_exprs + comp.begin_exprs:
            forms = references(expr).get(comp.var, set())
            if forms - {"i"}:
                raise _error(
                    q,
                    expr,
                    f"output 'collapsed' needs true-false consistent predicates on {comp.var}[]: "
                    f"this one depends on which other elements are selected",
                )
    from engine.plan.consistency import is_monotone

    if not is_monotone(q):
        raise _error(q, None, "output 'collapsed' cannot have a negation next to a Kleene component")
    for expr in list(q.where):
        refs = references(expr)
        for var, forms in refs.items():
            named = next((c for c in comps if c.var == var), None)
            if named is not None and named.kleene and forms & COMPLETE_FORMS:
                raise _error(
                    q,
                    expr,
                    f"output 'collapsed' cannot check a predicate over the whole set {var}[]: "
                    "its truth depends on the subset",
                )
