"""The imprecise-timestamp paper's point-based evaluation framework (digest-imprecise section 4), skip_till_any_match.

A slow, independent reference for the engine's event-based evaluator, written from docs/semantics.md sections 1-3
and the digest:

1. **Stream expansion.**  Every event becomes one *point event* per tick of its interval, with probability
   ``1 / size``.  Points are buffered and emitted in time order once no unseen event can precede them: with ``now``
   the largest lower bound seen and ``U`` the widest interval, points ``t < now - U`` are safe (digest-imprecise 4,
   step 1, with the recommended strict ``<``).
2. **Pattern matching on points** with an NFA^b under S3 (skip_till_any_match): every qualifying point is both taken
   (a clone) and skipped.  Points of one match are strictly increasing in time (concurrent points never follow each
   other, and the elements of a Kleene set get distinct points); the **id check** keeps an event from appearing twice
   in one match; the window is ``t_last - t_first < W`` in ticks.  Predicates are interpreted by the test suite's
   reference interpreter (:func:`oracles.reference.holds`), Kleene iterator predicates in the time order of the points.
3. **Match collapsing.**  Point matches are grouped by signature (the ids bound to each variable).  A signature's
   confidence is Eq. 1, the sum over its point matches of the product of their point probabilities, and its time range
   is the earliest first point and latest last point over those point matches.  A signature is final once every point
   of its events has been processed.

Negation (semantics section 3, item 5) is supported the way the possible-worlds semantics prescribes: a point match is
weighted by the probability that no candidate event (the negated type, not in the match, consistent with the
equivalence test, satisfying the negation's predicates with the match's binding) falls strictly between the last point
of the component before the gap and the first point of the one after it.  Events outside a match are independent of
its points, so this product is exact.  Every candidate has arrived by then: a candidate starts before the match's last
point, which has been emitted.

Exponential in the interval size and the window on purpose: tiny inputs for tests, time-boxed runs for benchmarks.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.events import Event
from engine.language import ast
from engine.language.parser import parse_query
from oracles.reference import (
    Bound,
    closing_vars,
    equivalence_holds,
    evaluate,
    events_of,
    holds,
    named_vars,
)


@dataclass(frozen=True)
class Point:
    """One point event ``e^t``: the event, its tick and the probability that ``e`` occurred there."""

    event: Event
    t: int
    p: float


def expand(e: Event) -> list[Point]:
    """Stream expansion of one event: a point per tick of its interval, uniform probability."""
    p = 1.0 / (e.thi - e.tlo + 1)
    return [Point(e, t, p) for t in range(e.tlo, e.thi + 1)]


class _Run:
    """A partial point match: the positive component it is at (``j``) and whether that Kleene component has elements
    (``kin``), the binding (Kleene lists in point order), the ids used, first/last points and the probability."""

    __slots__ = ("j", "kin", "binding", "ids", "t_first", "t_last", "weight", "first_of", "last_of")

    def __init__(
        self,
        j: int,
        kin: bool,
        binding: dict[str, Bound],
        ids: frozenset[str],
        t_first: int,
        t_last: int,
        weight: float,
        first_of: dict[str, int],
        last_of: dict[str, int],
    ) -> None:
        self.j = j
        self.kin = kin
        self.binding = binding
        self.ids = ids
        self.t_first = t_first
        self.t_last = t_last
        self.weight = weight
        self.first_of = first_of  # var -> point of its first (Kleene) / only event, for negation gaps
        self.last_of = last_of  # var -> point of its last / only event


@dataclass
class Group:
    """The collapsed point matches of one signature."""

    confidence: float
    first_tick: int
    last_tick: int
    events: list[list[Event]]  # per positive component, in canonical order
    deadline: int  # the largest upper bound among its events: final once every point <= deadline is processed


Signature = tuple[tuple[str, tuple[str, ...]], ...]


def _canon(e: Event) -> tuple:
    return (e.tlo, e.thi, e.seq)


class PointBasedMatcher:
    """Streaming point-based evaluation of one skip_till_any_match query: :meth:`feed` events in arrival order
    (the arrival assumption of the paper), :meth:`flush` at the end; both return docs/semantics.md section 5 records."""

    def __init__(
        self,
        query: ast.Query | str,
        *,
        tick: float = 1.0,
        threshold: float = 0.0,
        max_uncertainty: int = 0,
        name: str | None = None,
    ) -> None:
        if isinstance(query, str):
            query = parse_query(query, name or "query")
        self.query = query
        self.name = name or query.name or "query"
        self.tick = tick
        self.threshold = threshold
        self.window = None if query.within is None else max(1, round(query.within / tick))
        comps = query.components
        self.positives = [c for c in comps if not c.negated]
        self.m = len(self.positives)
        self.pos_index = {c.var: i for i, c in enumerate(self.positives)}
        neg_vars = {c.var for c in comps if c.negated}
        # Negations: (var, type, positive component before, after, predicates naming the negated variable).
        self.negations: list[tuple[str, str, int, int, list[ast.Expr]]] = []
        after = -1
        for c in comps:
            if c.negated:
                preds = [p for p in query.where if c.var in named_vars(p)]
                self.negations.append((c.var, c.type, after, after + 1, preds))
            else:
                after += 1
        positive = [p for p in query.where if not (named_vars(p) & neg_vars)]
        # For each move binding component k: the predicates to (re)check, split by whether the move closes the
        # Kleene component before k (a proceed) -- predicates that change value only when k changes or a set closes.
        self.preds = [(p, named_vars(p), closing_vars(p)) for p in positive]
        # Predicates over one component's own event only (``a.v > 5``, ``b[i].v < X``): checked once per event and
        # cached, so that a point failing them costs no binding copy.
        self.unary: list[list[ast.Expr]] = []
        for c in self.positives:
            own = []
            for p in positive:
                nodes = [n for n in ast.walk(p) if isinstance(n, (ast.AttrRef, ast.Aggregate, ast.KleeneLen))]
                if named_vars(p) == {c.var} and all(
                    isinstance(n, ast.AttrRef) and n.index == ("i" if c.kleene else None) for n in nodes
                ):
                    own.append(p)
            self.unary.append(own)
        self._unary_ok: dict[tuple[Event, int], bool] = {}  # keyed by the event itself (identity)
        self.types = {c.type for c in comps}
        self.neg_events: dict[str, list[Event]] = {c.type: [] for c in comps if c.negated}
        self.buffer: list[tuple[int, int, int, Point]] = []  # (t, seq, n, point)
        self._n = 0
        self.now = -math.inf
        self.umax = max_uncertainty
        self.runs: list[_Run] = []
        self.groups: dict[Signature, Group] = {}
        self.processed = -math.inf  # every point at or before this tick has been processed
        self.points = 0
        self.point_matches = 0
        self.max_runs = 0

    # ------------------------------------------------------------------ stream

    def feed(self, e: Event) -> list[dict]:
        """Expand ``e`` into the buffer and process every point that has become safe."""
        if e.tlo > self.now:
            self.now = e.tlo
        if e.thi - e.tlo > self.umax:
            self.umax = e.thi - e.tlo
        if e.type in self.neg_events:
            self.neg_events[e.type].append(e)
        if e.type in self.types:
            for pt in expand(e):
                heapq.heappush(self.buffer, (pt.t, e.seq, self._n, pt))
                self._n += 1
        return self._emit(self.now - self.umax)

    def flush(self) -> list[dict]:
        out = self._emit(math.inf)
        out.extend(self._collapse(math.inf))
        return out

    def runs_alive(self) -> int:
        return len(self.runs)

    def _emit(self, t_emit: float) -> list[dict]:
        out: list[dict] = []
        buf = self.buffer
        while buf and buf[0][0] < t_emit:
            pt = heapq.heappop(buf)[3]
            if pt.t > self.processed:
                out.extend(self._collapse(pt.t))  # every point before pt.t is processed
                self.processed = pt.t
            self._process(pt)
        if t_emit != math.inf and t_emit - 1 > self.processed:
            self.processed = t_emit - 1
            out.extend(self._collapse(t_emit))
        return out

    # ------------------------------------------------------------------ matching on points

    def _process(self, pt: Point) -> None:
        """One point event against every run (S3: take and skip), then a new run if it begins the pattern."""
        self.points += 1
        t = pt.t
        w = self.window
        kept: list[_Run] = []
        for r in self.runs:
            if w is not None and t - r.t_first >= w:
                continue  # the window has passed: no later point can join
            kept.append(r)  # S3: the run that skips the point
            if pt.event.id in r.ids or t <= r.t_last:
                continue  # id check; strict time order
            if self.positives[r.j].kleene and r.kin:
                self._move(r, r.j, pt, extend=True, out=kept)
                if r.j + 1 < self.m:
                    self._move(r, r.j + 1, pt, extend=False, out=kept)
            else:
                self._move(r, r.j, pt, extend=False, out=kept)
        start = _Run(0, False, {}, frozenset(), t, -1 << 62, 1.0, {}, {})
        self._move(start, 0, pt, extend=False, out=kept)
        self.runs = kept
        if len(kept) > self.max_runs:
            self.max_runs = len(kept)

    def _move(self, r: _Run, k: int, pt: Point, *, extend: bool, out: list[_Run]) -> None:
        """Bind ``pt`` to component ``k`` of a copy of ``r`` (begin, or take when ``extend``)."""
        comp = self.positives[k]
        e = pt.event
        if e.type != comp.type:
            return
        if self.unary[k]:
            key = (e, k)
            ok = self._unary_ok.get(key)
            if ok is None:
                own: dict[str, Bound] = {comp.var: [e] if comp.kleene else e}
                ok = self._unary_ok[key] = all(holds(p, own) for p in self.unary[k])
            if not ok:
                return
        binding = dict(r.binding)
        if extend:
            binding[comp.var] = [*r.binding[comp.var], e]
        else:
            binding[comp.var] = [e] if comp.kleene else e
        # Kleene sets before k are closed; the trailing one closes at every completion.
        last = k == self.m - 1
        closed = {c.var for c in self.positives[: k + (1 if last else 0)] if c.kleene}
        newly_closed = {self.positives[k - 1].var} if (not extend and k > 0 and self.positives[k - 1].kleene) else set()
        if last and comp.kleene:
            newly_closed.add(comp.var)
        if not equivalence_holds(events_of(binding), self.query.equivalence):
            return
        completes = True
        for pred, names, closing in self.preds:
            if not names <= binding.keys() or not closing <= closed:
                continue
            if (comp.var in names or closing & newly_closed) and not holds(pred, binding):
                if last and comp.kleene and comp.var in closing:
                    completes = False  # a predicate over the whole trailing set gates this completion only
                else:
                    return
        first_of = r.first_of if extend else {**r.first_of, comp.var: pt.t}
        last_of = {**r.last_of, comp.var: pt.t}
        nr = _Run(
            k,
            comp.kleene,
            binding,
            r.ids | {e.id},
            r.t_first if r.binding else pt.t,
            pt.t,
            r.weight * pt.p,
            first_of,
            last_of,
        )
        if not comp.kleene:
            if last:
                self._complete(nr)
                return
            nr.j = k + 1
            nr.kin = False
        elif last and completes:
            self._complete(nr)
        out.append(nr)

    def _complete(self, r: _Run) -> None:
        """A point match: weigh it by the negation gaps and add it to its signature's group."""
        weight = r.weight
        for var, ntype, before, after, preds in self.negations:
            bvar, avar = self.positives[before].var, self.positives[after].var
            lo = r.last_of[bvar]
            hi = r.first_of[avar]
            members = events_of(r.binding)
            for n in self.neg_events[ntype]:
                if n.thi <= lo or n.tlo >= hi or n.id in r.ids:
                    continue
                if not equivalence_holds([*members, n], self.query.equivalence):
                    continue
                if preds and not all(holds(p, {**r.binding, var: n}) for p in preds):
                    continue
                inside = min(n.thi, hi - 1) - max(n.tlo, lo + 1) + 1
                weight *= 1.0 - inside / (n.thi - n.tlo + 1)
        if weight <= 0.0:
            return
        self.point_matches += 1
        sig = tuple((c.var, tuple(sorted(e.id for e in self._as_list(r.binding[c.var])))) for c in self.positives)
        g = self.groups.get(sig)
        if g is None:
            evs = [sorted(self._as_list(r.binding[c.var]), key=_canon) for c in self.positives]
            deadline = max(e.thi for es in evs for e in es)
            self.groups[sig] = Group(weight, r.t_first, r.t_last, evs, deadline)
        else:
            g.confidence += weight
            g.first_tick = min(g.first_tick, r.t_first)
            g.last_tick = max(g.last_tick, r.t_last)

    @staticmethod
    def _as_list(b: Bound) -> list[Event]:
        return b if isinstance(b, list) else [b]

    # ------------------------------------------------------------------ collapsing

    def _collapse(self, before: float) -> list[dict]:
        """Output the signatures all of whose points are earlier than ``before`` (i.e. already processed)."""
        out = []
        done = [sig for sig, g in self.groups.items() if g.deadline < before]
        for sig in sorted(done, key=lambda s: (self.groups[s].deadline, s)):
            g = self.groups.pop(sig)
            conf = min(g.confidence, 1.0)
            if conf > 0.0 and conf >= self.threshold:
                out.append(self._record(g, conf))
        return out

    def _record(self, g: Group, conf: float) -> dict:
        match = {
            c.var: [e.id for e in sorted(evs, key=lambda e: (e.tlo, e.thi, e.id))]
            for c, evs in zip(self.positives, g.events, strict=True)
        }
        binding: dict[str, Bound] = {
            c.var: (evs if c.kleene else evs[0]) for c, evs in zip(self.positives, g.events, strict=True)
        }
        return {
            "query": self.name,
            "match": match,
            "confidence": conf,
            "start": round(g.first_tick * self.tick, 6),
            "end": round(g.last_tick * self.tick, 6),
            "return": {item.name: evaluate(item.expr, binding) for item in self.query.returns},
        }


def point_based(
    query: ast.Query | str, events: Sequence[Event] | Iterable[Event], *, tick: float = 1.0, threshold: float = 0.0
) -> list[dict]:
    """Match a finite stream with the point-based framework: events are fed in midpoint order (which satisfies the
    arrival assumption), the widest interval is known up front.  Returns the records in order of completion."""
    evs = sorted(events, key=lambda e: (e.t, e.seq))
    widest = max((e.thi - e.tlo for e in evs), default=0)
    m = PointBasedMatcher(query, tick=tick, threshold=threshold, max_uncertainty=widest)
    out: list[dict] = []
    for e in evs:
        out.extend(m.feed(e))
    out.extend(m.flush())
    return out
