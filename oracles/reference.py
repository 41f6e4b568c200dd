"""Brute-force reference matcher, written from docs/semantics.md sections 2-4 only (no engine internals).

It is slow on purpose and meant for tiny inputs (a handful of precise events).  Two entry points:

- :func:`reference_any` -- skip_till_any_match: every assignment of docs/semantics.md section 3, enumerated directly.
- :func:`reference_nfa` -- skip_till_next_match / partition_contiguity / strict_contiguity: a naive simulation of the
  NFA^b runs of docs/semantics.md section 4, one Python object per run, no sharing.

Both work in the single world of precise events: an event's point is ``event.t``.

Interpretations (where docs/semantics.md is not explicit)
---------------------------------------------------------

Values and predicates

- A missing attribute (absent, or present with value ``None``) evaluates to ``None`` ("unknown"); an event *carries*
  an attribute when ``event.get(attr) is not None``.  A reference to an unbound variable (e.g. a negated variable in a
  positive context, ``b[i]`` outside an iterator context such as in RETURN) is ``None`` as well.
- Arithmetic (``+ - * / %``, unary minus) needs two numbers (``bool`` is not a number); anything else gives ``None``.
  ``/`` is true division; ``/`` and ``%`` by zero give ``None``.
- Comparisons: number-number and string-string compare with Python's operators (strings lexicographically);
  bool-bool supports only ``=``/``!=``; any other pairing, or ``None`` on either side, gives ``None``.
- ``AND``/``OR``/``NOT`` are Kleene's three-valued logic; an operand that is not a bool counts as unknown.  A predicate
  holds iff it evaluates to ``True``.
- Aggregates over ``b[].attr`` / ``b[..i-1].attr`` skip elements lacking ``attr``.  ``count`` is the number of
  remaining values (0 when none); ``avg``/``sum``/``min``/``max`` of no values are ``None``.  ``avg``/``sum`` of a
  non-numeric value are ``None``; ``min``/``max`` work on all-numeric or all-string values, else ``None``.
- Iterator predicates: a predicate naming ``b[i]``, ``b[i-1]`` or ``b[..i-1]`` is iterated over ``i``; it must hold for
  every ``i >= 2`` when it names ``b[i-1]`` or ``b[..i-1]``, for every ``i >= 1`` otherwise (a one-element ``b`` then
  satisfies a ``b[i-1]`` predicate vacuously).  A predicate iterating two Kleene variables must hold for every
  combination of their indices.
- Equivalence ``[attr]``: the events that carry ``attr`` all have equal values (Python ``==``).

Matches (skip_till_any_match)

- Only positive components are bound and enter the signature, the window and the time order.  A WHERE conjunct that
  names a negated variable is a negation predicate: it is not evaluated for the positive match, only when looking for
  a cancelling event (with the match's binding plus that event).  If it names another negated variable too, that one
  is unbound there, so the conjunct is unknown and such an event never cancels.
- A negated component sits between its nearest positive neighbours P (before) and Q (after); a cancelling event has
  the negated type, a point strictly between the last point of P and the first point of Q, satisfies every negation
  predicate of its variable, and keeps the equivalence test true when added to the match's events.
- The window is ``W = round(within / tick)`` ticks and requires ``t_last - t_first < W`` over the selected events.

NFA strategies

- Events are processed in ``(t, seq)`` order.  For each event, the existing runs move first; then a new run starts if
  the event satisfies the first component's begin formula (the new run does not see its own event again).
- The stream is read in ``(t, seq)`` order, ``seq`` being the arrival order (semantics section 4): an event of the same
  tick as the run's last selected one, read after it, follows it.
- A formula (begin, take, or proceed = begin of the next component) holds for event ``e`` when: ``e`` has the
  component's type; the window holds (``e.t - t_first < W``); the equivalence test holds over the run's events plus
  ``e``; and every positive predicate that is *evaluable* after binding ``e`` holds.  A predicate is evaluable when
  every variable it names is bound and every Kleene variable it references through ``b[b.len]``, ``b[]`` or ``b.len`` is
  closed.  A Kleene variable closes when the next positive component begins (the proceed move), or at each completion if
  it is the trailing component.  Re-checking all evaluable predicates at every move is the same as checking each
  predicate once "as soon as all the variables it names are bound" (``b[1]`` is known from the Kleene begin,
  ``b[i]``/``b[i-1]``/ ``b[..i-1]`` at each take), because earlier checks never change value.
- Singleton or ``p[1]`` state: the run begins if the formula holds.  Kleene ``p[i]`` state: the take formula and the
  next component's begin formula are both tried; both -> the run splits, one -> that move.  No move: STNM keeps the
  run unchanged (ignore); strict contiguity kills it; partition contiguity keeps it only if the event belongs to another
  partition (it carries an equivalence attribute with a value different from the one the run has bound), else kills it.
  There is no ignore-and-proceed copy: an event satisfying only the next begin formula moves the run on.
- Window death: a run whose first point is ``t0`` dies on the first event with ``t >= t0 + W`` (whatever its type); no
  later event could be selected, so this does not change the output.
- A run completes when its last component is bound: after the begin of a trailing singleton, or at every begin/take of
  a trailing Kleene component whose closed-Kleene predicates hold (the run itself keeps going).  Negation is then
  checked on the finished match as for skip_till_any_match, "strictly between" taken in the ``(t, seq)`` order; a
  violated match is dropped.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.events import Event
from engine.language import ast

Bound = Event | list[Event]
Binding = dict[str, Bound]
#: ``((var, (id, ...)), ...)`` for the positive variables, in PATTERN order; Kleene ids in time order.
Signature = tuple[tuple[str, tuple[str, ...]], ...]
Returns = dict[str, Any]

NFA_STRATEGIES = ("skip_till_next_match", "partition_contiguity", "strict_contiguity")

# --------------------------------------------------------------------------- expression evaluation


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _truth(x: Any) -> bool | None:
    return x if isinstance(x, bool) else None


_CMP = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": operator.eq,
    "!=": operator.ne,
}


def _compare(op: str, left: Any, right: Any) -> bool | None:
    if left is None or right is None:
        return None
    if (_is_num(left) and _is_num(right)) or (isinstance(left, str) and isinstance(right, str)):
        return _CMP[op](left, right)
    if isinstance(left, bool) and isinstance(right, bool) and op in ("=", "!="):
        return _CMP[op](left, right)
    return None


def _arith(op: str, left: Any, right: Any) -> Any:
    if not (_is_num(left) and _is_num(right)):
        return None
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return None
    return left / right if op == "/" else left % right


def _aggregate(func: str, values: list[Any]) -> Any:
    if func == "count":
        return len(values)
    if not values:
        return None
    if func in ("min", "max"):
        if all(_is_num(v) for v in values) or all(isinstance(v, str) for v in values):
            return min(values) if func == "min" else max(values)
        return None
    if not all(_is_num(v) for v in values):
        return None
    if func == "median":
        ordered = sorted(values)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    total = sum(values)
    return total if func == "sum" else total / len(values)


def evaluate(expr: ast.Expr, binding: Mapping[str, Bound], index: Mapping[str, int] | None = None) -> Any:
    """Value of ``expr`` under ``binding``; ``index`` maps a Kleene var to the current iterator position (1-based)."""
    index = index or {}
    if isinstance(expr, (ast.Number, ast.String, ast.Bool)):
        return expr.value
    if isinstance(expr, ast.AttrRef):
        bound = binding.get(expr.var)
        if bound is None:
            return None
        if isinstance(bound, Event):
            return bound.get(expr.attr) if expr.index is None else None
        if expr.index is None or not bound:
            return None
        if expr.index == "first":
            return bound[0].get(expr.attr)
        if expr.index == "last":
            return bound[-1].get(expr.attr)
        i = index.get(expr.var)
        if i is None:
            return None
        pos = i if expr.index == "i" else i - 1
        return bound[pos - 1].get(expr.attr) if 1 <= pos <= len(bound) else None
    if isinstance(expr, ast.Aggregate):
        bound = binding.get(expr.var)
        if not isinstance(bound, list):
            return None
        if expr.scope == "all":
            elems = bound
        else:
            i = index.get(expr.var)
            if i is None:
                return None
            elems = bound[: i - 1]
        return _aggregate(expr.func, [x for e in elems if (x := e.get(expr.attr)) is not None])
    if isinstance(expr, ast.KleeneLen):
        bound = binding.get(expr.var)
        return len(bound) if isinstance(bound, list) else None
    if isinstance(expr, ast.BinOp):
        return _arith(expr.op, evaluate(expr.left, binding, index), evaluate(expr.right, binding, index))
    if isinstance(expr, ast.Neg):
        x = evaluate(expr.operand, binding, index)
        return -x if _is_num(x) else None
    if isinstance(expr, ast.Compare):
        return _compare(expr.op, evaluate(expr.left, binding, index), evaluate(expr.right, binding, index))
    if isinstance(expr, ast.Not):
        x = _truth(evaluate(expr.operand, binding, index))
        return None if x is None else not x
    if isinstance(expr, ast.And):
        vals = [_truth(evaluate(item, binding, index)) for item in expr.items]
        if any(v is False for v in vals):
            return False
        return None if any(v is None for v in vals) else True
    if isinstance(expr, ast.Or):
        vals = [_truth(evaluate(item, binding, index)) for item in expr.items]
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    raise TypeError(f"unknown expression node {expr!r}")


def named_vars(expr: ast.Expr) -> set[str]:
    """Every variable the expression names."""
    return {n.var for n in ast.walk(expr) if isinstance(n, (ast.AttrRef, ast.Aggregate, ast.KleeneLen))}


def iterator_vars(expr: ast.Expr) -> dict[str, int]:
    """Kleene variables iterated by ``expr`` -> first index ``i`` (2 if it names ``b[i-1]``/``b[..i-1]``, else 1)."""
    starts: dict[str, int] = {}
    for n in ast.walk(expr):
        if isinstance(n, ast.AttrRef) and n.index in ("i", "prev"):
            starts[n.var] = max(starts.get(n.var, 1), 2 if n.index == "prev" else 1)
        elif isinstance(n, ast.Aggregate) and n.scope == "before":
            starts[n.var] = 2
    return starts


def closing_vars(expr: ast.Expr) -> set[str]:
    """Kleene variables referenced through ``b[b.len]``, ``b[]`` or ``b.len`` (known only once ``b`` is closed)."""
    out: set[str] = set()
    for n in ast.walk(expr):
        last = isinstance(n, ast.AttrRef) and n.index == "last"
        whole = isinstance(n, ast.Aggregate) and n.scope == "all"
        if last or whole or isinstance(n, ast.KleeneLen):
            out.add(n.var)
    return out


def holds(pred: ast.Expr, binding: Mapping[str, Bound]) -> bool:
    """True iff ``pred`` is True under ``binding``, for every iterator index (docs/semantics.md section 2)."""
    iters = iterator_vars(pred)
    ranges = []
    for var, start in iters.items():
        bound = binding.get(var)
        ranges.append(range(start, len(bound) + 1) if isinstance(bound, list) else range(start, start + 1))
    combos = itertools.product(*ranges)
    return all(evaluate(pred, binding, dict(zip(iters, combo, strict=True))) is True for combo in combos)


def events_of(binding: Mapping[str, Bound]) -> list[Event]:
    out: list[Event] = []
    for bound in binding.values():
        out.extend(bound if isinstance(bound, list) else [bound])
    return out


def equivalence_holds(events: Iterable[Event], attrs: Sequence[str]) -> bool:
    """For each attr, every event carrying it has the same value."""
    events = list(events)
    for attr in attrs:
        values = [x for e in events if (x := e.get(attr)) is not None]
        if any(v != values[0] for v in values):
            return False
    return True


# --------------------------------------------------------------------------- query helpers


def window_of(query: ast.Query, window_ticks: int | None, tick: float) -> int | None:
    if window_ticks is not None:
        return window_ticks
    return None if query.within is None else round(query.within / tick)


def _negated_vars(query: ast.Query) -> set[str]:
    return {c.var for c in query.components if c.negated}


def positive_predicates(query: ast.Query) -> list[ast.Expr]:
    neg = _negated_vars(query)
    return [p for p in query.where if not (named_vars(p) & neg)]


def signature_of(query: ast.Query, binding: Mapping[str, Bound]) -> Signature:
    sig = []
    for comp in query.components:
        if comp.negated:
            continue
        bound = binding[comp.var]
        ids = tuple(e.id for e in bound) if isinstance(bound, list) else (bound.id,)
        sig.append((comp.var, ids))
    return tuple(sig)


def returns_of(query: ast.Query, binding: Mapping[str, Bound]) -> Returns:
    return {item.name: evaluate(item.expr, binding) for item in query.returns}


def _order_key(bound: Bound, last: bool, stream_order: bool) -> tuple[float, int]:
    e = (bound[-1] if last else bound[0]) if isinstance(bound, list) else bound
    return (e.t, e.seq if stream_order else 0)


def negation_holds(
    query: ast.Query, binding: Mapping[str, Bound], events: Sequence[Event], *, stream_order: bool = False
) -> bool:
    """docs/semantics.md section 3 item 5 (with the equivalence rule of section 2) for a complete positive binding.

    ``stream_order``: "strictly between" in the (tick, arrival) order the NFA strategies read (docs/semantics.md
    section 4), where an event of P's last tick that arrived after it lies after it; otherwise strictly between the
    points."""
    comps = query.components
    match_events = events_of(binding)
    for idx, comp in enumerate(comps):
        if not comp.negated:
            continue
        before = next(c for c in reversed(comps[:idx]) if not c.negated)
        after = next(c for c in comps[idx + 1 :] if not c.negated)
        lo = _order_key(binding[before.var], True, stream_order)
        hi = _order_key(binding[after.var], False, stream_order)
        preds = [p for p in query.where if comp.var in named_vars(p)]
        for e in events:
            key = (e.t, e.seq if stream_order else 0)
            if e.type != comp.type or not (lo < key < hi if stream_order else lo[0] < e.t < hi[0]):
                continue
            if not equivalence_holds([*match_events, e], query.equivalence):
                continue
            extended = {**binding, comp.var: e}
            if all(holds(p, extended) for p in preds):
                return False
    return True


def _sorted(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.t, e.seq))


# --------------------------------------------------------------------------- skip_till_any_match


def reference_any(
    query: ast.Query, events: Sequence[Event], *, window_ticks: int | None = None, tick: float = 1.0
) -> dict[Signature, Returns]:
    """Every match of docs/semantics.md section 3 (one world: point = ``event.t``) -> its RETURN values."""
    evs = _sorted(events)
    positives = [c for c in query.components if not c.negated]
    preds = positive_predicates(query)
    w = window_of(query, window_ticks, tick)
    out: dict[Signature, Returns] = {}

    def in_window(first: float | None, point: float) -> bool:
        return w is None or first is None or point - first < w

    def assign(j: int, after: float | None, first: float | None, binding: Binding) -> Iterator[Binding]:
        if j == len(positives):
            yield dict(binding)
            return
        comp = positives[j]
        cands = [e for e in evs if e.type == comp.type and (after is None or e.t > after) and in_window(first, e.t)]
        if not comp.kleene:
            for e in cands:
                binding[comp.var] = e
                yield from assign(j + 1, e.t, e.t if first is None else first, binding)
            binding.pop(comp.var, None)
            return
        for r in range(1, len(cands) + 1):
            for subset in itertools.combinations(cands, r):
                if len({e.t for e in subset}) < r:
                    continue  # events of one Kleene component have distinct points
                chosen = sorted(subset, key=lambda e: e.t)
                binding[comp.var] = chosen
                yield from assign(j + 1, chosen[-1].t, chosen[0].t if first is None else first, binding)
        binding.pop(comp.var, None)

    for binding in assign(0, None, None, {}):
        points = [e.t for e in events_of(binding)]
        if w is not None and max(points) - min(points) >= w:
            continue
        if not equivalence_holds(events_of(binding), query.equivalence):
            continue
        if not all(holds(p, binding) for p in preds):
            continue
        if not negation_holds(query, binding, evs):
            continue
        out[signature_of(query, binding)] = returns_of(query, binding)
    return out


# --------------------------------------------------------------------------- NFA strategies


@dataclass
class _Run:
    """One NFA^b run: ``cur`` is the positive component being bound (awaiting its begin, or at ``p[i]`` if bound)."""

    cur: int
    binding: Binding = field(default_factory=dict)
    t_first: float | None = None
    t_last: float | None = None


def reference_nfa(
    query: ast.Query,
    events: Sequence[Event],
    strategy: str,
    *,
    window_ticks: int | None = None,
    tick: float = 1.0,
) -> list[tuple[Signature, Returns]]:
    """Matches of the NFA^b strategies of semantics section 4, one entry per completed run (with multiplicity)."""
    if strategy not in NFA_STRATEGIES:
        raise ValueError(f"not an NFA strategy: {strategy}")
    evs = _sorted(events)
    positives = [c for c in query.components if not c.negated]
    m = len(positives)
    preds = [(p, named_vars(p), closing_vars(p)) for p in positive_predicates(query)]
    w = window_of(query, window_ticks, tick)
    out: list[tuple[Signature, Returns]] = []

    def closed_before(k: int) -> set[str]:
        return {c.var for c in positives[:k] if c.kleene}

    def formula_ok(run: _Run, binding: Binding, closed: set[str], e: Event) -> bool:
        # Every event read after the run's last selected one follows it in the (tick, arrival) order: no time test.
        if w is not None and run.t_first is not None and not e.t - run.t_first < w:
            return False
        if not equivalence_holds(events_of(binding), query.equivalence):
            return False
        for pred, names, closing in preds:
            if names <= binding.keys() and closing <= closed and not holds(pred, binding):
                return False
        return True

    def moved(run: _Run, binding: Binding, cur: int, e: Event) -> _Run:
        t_first = e.t if run.t_first is None else run.t_first
        return _Run(cur=cur, binding=binding, t_first=t_first, t_last=e.t)

    def complete(binding: Binding) -> None:
        if negation_holds(query, binding, evs, stream_order=True):
            out.append((signature_of(query, binding), returns_of(query, binding)))

    def trailing_completion(binding: Binding, closed: set[str]) -> None:
        # A trailing Kleene completes at every begin/take whose closed-Kleene predicates hold; the run goes on.
        for pred, names, closing in preds:
            if names <= binding.keys() and closing <= closed and not holds(pred, binding):
                return
        complete(binding)

    def select(run: _Run, k: int, e: Event, extend: bool) -> tuple[bool, list[_Run]]:
        """Begin (``extend=False``) or take (``extend=True``) component ``k`` with ``e``.

        Returns whether the move happened and the successor runs that stay alive; completions are emitted here.
        """
        comp = positives[k]
        if e.type != comp.type:
            return False, []
        if extend:
            bound: Bound = [*run.binding[comp.var], e]
        else:
            bound = [e] if comp.kleene else e
        binding = {**run.binding, comp.var: bound}
        closed = closed_before(k)
        if not formula_ok(run, binding, closed, e):
            return False, []
        if not comp.kleene:
            if k + 1 == m:
                complete(binding)
                return True, []
            return True, [moved(run, binding, k + 1, e)]
        if k + 1 == m:
            trailing_completion(binding, closed | {comp.var})
        return True, [moved(run, binding, k, e)]

    def other_partition(run: _Run, e: Event) -> bool:
        bound_events = events_of(run.binding)
        for attr in query.equivalence:
            mine = next((x for b in bound_events if (x := b.get(attr)) is not None), None)
            theirs = e.get(attr)
            if mine is not None and theirs is not None and theirs != mine:
                return True
        return False

    runs: list[_Run] = []
    for e in evs:
        next_runs: list[_Run] = []
        for run in runs:
            if w is not None and e.t - run.t_first >= w:
                continue  # window exceeded: the run dies
            if positives[run.cur].var in run.binding:  # Kleene p[i]: take and/or proceed (= begin the next)
                took, succ = select(run, run.cur, e, extend=True)
                proceeded = False
                if run.cur + 1 < m:
                    proceeded, succ2 = select(run, run.cur + 1, e, extend=False)
                    succ = succ + succ2
                did_move = took or proceeded
            else:
                did_move, succ = select(run, run.cur, e, extend=False)
            if did_move:
                next_runs.extend(succ)
            elif strategy == "skip_till_next_match" or (strategy == "partition_contiguity" and other_partition(run, e)):
                next_runs.append(run)  # ignore
            # else: strict contiguity, or partition contiguity on an event of the run's partition: the run fails
        _, started = select(_Run(cur=0), 0, e, extend=False)
        runs = next_runs + started
    return out
