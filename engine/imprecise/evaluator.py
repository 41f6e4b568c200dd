"""skip_till_any_match over events with imprecise timestamps: every signature with its exact confidence.

Events arrive under the arrival assumption of the imprecise-timestamp paper (an event seen before another starts no
later than the other ends).  With ``now`` the largest lower bound seen and ``U`` the widest interval, every unseen
event starts at or after ``safe = now - U``.  A signature is decided by its own events and the negation candidates
between them, all of which start before its last event can end; so the signatures *closed* by an event ``z`` of the
last component (for a trailing Kleene set: its canonically last element) are enumerated once ``safe > z.thi`` -- the
safe-emit bound -- and each is enumerated exactly once.

Enumeration walks the components backwards from ``z`` over buffered candidates, pruned by interval order, window and
equivalence; each complete assignment gets its exact confidence from :mod:`engine.imprecise.confidence`.  When the
query is monotone (adding events never raises confidence, :mod:`engine.plan.consistency`):

- ``all`` mode prunes a Kleene subset as soon as its confidence falls below the threshold (SASE++ Algorithm 1);
- ``distinct`` and ``collapsed`` only need one element per Kleene set: the best signature of a RETURN value, and the
  events of a collapsed record, come from single-element choices -- polynomial instead of exponential.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from engine.events import Event
from engine.imprecise.confidence import Confidence, signature_confidence
from engine.plan.compiler import CompiledQuery
from engine.plan.consistency import is_monotone
from engine.plan.predicates import KleeneCell

NEG_INF = -math.inf


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)


def _canon(e: Event) -> tuple:
    return (e.tlo, e.thi, e.seq)


class _TypeBuffer:
    """Buffered events of one type, in arrival order, with their lower bounds for range look-ups."""

    __slots__ = ("events", "los")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.los: list[int] = []

    def add(self, e: Event) -> None:
        # Arrival order is nearly lower-bound order; keep the list sorted by tlo for bisection.
        if not self.los or e.tlo >= self.los[-1]:
            self.events.append(e)
            self.los.append(e.tlo)
        else:
            i = bisect_left(self.los, e.tlo + 1)
            self.events.insert(i, e)
            self.los.insert(i, e.tlo)

    def below(self, hi_exclusive: float) -> list[Event]:
        """Events whose lower bound is < ``hi_exclusive``."""
        if hi_exclusive == math.inf:
            return self.events
        return self.events[: bisect_left(self.los, hi_exclusive)]

    def prune(self, min_thi: float) -> None:
        keep = [e for e in self.events if e.thi >= min_thi]
        if len(keep) != len(self.events):
            self.events = keep
            self.los = [e.tlo for e in keep]


class ImpreciseMatcher:
    """Exact possible-worlds evaluation of one skip_till_any_match query (SPEC sections 3 and 5)."""

    def __init__(self, cq: CompiledQuery, max_uncertainty: int = 0) -> None:
        if cq.strategy != "skip_till_any_match":
            raise ValueError("the imprecise evaluator implements skip_till_any_match only")
        self.cq = cq
        self.name = cq.name
        self.comps = cq.components
        self.m = len(self.comps)
        self.window = cq.window
        self.threshold = cq.confidence
        self.mode = cq.output
        self.attrs = cq.equivalence
        self.monotone = is_monotone(cq.ast)
        self.singles = self.mode == "collapsed" or (self.mode == "distinct" and is_monotone(cq.ast, returns_too=True))
        self.buffers: dict[str, _TypeBuffer] = {}
        for c in self.comps:
            self.buffers.setdefault(c.type, _TypeBuffer())
        for neg in cq.negations:
            self.buffers.setdefault(neg.type, _TypeBuffer())
        self.last_type = self.comps[-1].type
        self.trailing = self.comps[-1].kleene
        self.pending: list[tuple[int, int, Event]] = []  # (thi, seq, closing event)
        self.now = NEG_INF
        self.umax = max_uncertainty
        self.held: dict[Any, list] = {}  # distinct: value key -> [confidence, record, deadline]
        self.emitted: set = set()
        self.signatures = 0
        self.matches = 0

    # ------------------------------------------------------------------ stream

    @property
    def safe(self) -> float:
        """Every unseen event starts at or after this tick."""
        return self.now - self.umax

    def feed(self, ev: Event) -> list[dict]:
        if ev.tlo > self.now:
            self.now = ev.tlo
        width = ev.thi - ev.tlo
        if width > self.umax:
            self.umax = width
        buf = self.buffers.get(ev.type)
        if buf is not None:
            buf.add(ev)
            if ev.type == self.last_type:
                heapq.heappush(self.pending, (ev.thi, ev.seq, ev))
        return self._close(self.safe)

    def flush(self) -> list[dict]:
        out = self._close(math.inf)
        for key in list(self.held):
            out.append(self._release(key))
        self.matches += len(out)
        return out

    def runs_alive(self) -> int:
        return sum(len(b.events) for b in self.buffers.values())

    def _close(self, safe: float) -> list[dict]:
        out: list[dict] = []
        pending = self.pending
        while pending and pending[0][0] < safe:
            _, _, z = heapq.heappop(pending)
            self._close_event(z, out)
        if self.held:
            for key in [k for k, v in self.held.items() if v[2] < safe]:
                out.append(self._release(key))
        if safe != math.inf:
            self._prune(safe)
        self.matches += len(out)
        return out

    def _prune(self, safe: float) -> None:
        if self.window is None:
            return
        horizon = safe - self.umax
        if self.pending:
            horizon = min(horizon, min(z.tlo for _, _, z in self.pending))
        for buf in self.buffers.values():
            if buf.events and buf.events[0].thi < horizon - self.window:
                buf.prune(horizon - self.window)

    # ------------------------------------------------------------------ enumeration

    def _close_event(self, z: Event, out: list[dict]) -> None:
        self._collapse: dict[tuple, list] = {}
        self._enumerate_closed_by(z, out)
        for assignment, conf, sets in self._collapse.values():
            merged = [sorted(sets[k], key=_canon) if comp.kleene else evs
                      for k, (comp, evs) in enumerate(zip(self.comps, assignment, strict=True))]
            out.append(self._record(merged, conf))

    def _enumerate_closed_by(self, z: Event, out: list[dict]) -> None:
        last = self.m - 1
        comp = self.comps[last]
        eqv = self._bind_eq((None,) * len(self.attrs), z)
        if eqv is None:
            return
        floor = z.tlo - self.window + 1 if self.window is not None else NEG_INF
        if comp.kleene:
            others = [e for e in self._candidates(last, eqv, z.thi + 1, floor, ()) if _canon(e) < _canon(z)]
            for subset in self._subsets(others, fixed=z):
                self._assign_from(last - 1, [None] * self.m, subset, eqv, floor, out)
        else:
            self._assign_from(last - 1, [None] * self.m, [z], eqv, floor, out)

    def _bind_eq(self, eqv: tuple, e: Event) -> tuple | None:
        if not self.attrs:
            return eqv
        new = list(eqv)
        for i, attr in enumerate(self.attrs):
            v = e.attrs.get(attr)
            if v is None:
                continue
            if new[i] is None:
                new[i] = v
            elif new[i] != v:
                return None
        return tuple(new)

    def _candidates(self, j: int, eqv: tuple, before: float, floor: float, used: tuple) -> list[Event]:
        """Events that may fill component ``j``: its type, starting before ``before``, reaching ``floor``."""
        comp = self.comps[j]
        out = []
        for e in self.buffers[comp.type].below(before):
            if e.thi < floor or e in used:
                continue
            if self._bind_eq(eqv, e) is None:
                continue
            out.append(e)
        return out

    def _subsets(self, cands: list[Event], fixed: Event | None = None) -> Iterator[list[Event]]:
        """Non-empty Kleene sets from ``cands`` (plus ``fixed`` when given), in canonical order."""
        cands = sorted(cands, key=_canon)
        if self.singles:
            if fixed is not None:
                yield [fixed]
            else:
                for e in cands:
                    yield [e]
            return
        start = 0 if fixed is not None else 1
        for r in range(start, len(cands) + 1):
            for combo in itertools.combinations(cands, r):
                chosen = list(combo) + ([fixed] if fixed is not None else [])
                if chosen:
                    yield chosen

    def _assign_from(self, j: int, assignment: list, current: list[Event], eqv: tuple, floor: float,
                     out: list[dict]) -> None:
        """Fix component ``j + 1`` to ``current`` and continue backwards to component ``j``."""
        assignment = assignment.copy()
        assignment[j + 1] = current
        for e in current:
            eqv = self._bind_eq(eqv, e)
            if eqv is None:
                return
        if j < 0:
            self._evaluate(assignment, eqv, out)
            return
        # Every event of component j precedes every event of component j+1: it starts before the earliest end.
        before = min(e.thi for e in current)
        used = tuple(e for evs in assignment if evs for e in evs)
        cands = self._candidates(j, eqv, before, floor, used)
        if not cands:
            return
        if self.comps[j].kleene:
            for subset in self._subsets(cands):
                self._assign_from(j - 1, assignment, subset, eqv, floor, out)
        else:
            for e in cands:
                self._assign_from(j - 1, assignment, [e], eqv, floor, out)

    def _negation_candidates(self, assignment: list, eqv: tuple) -> list[list[Event]]:
        members = {id(e) for evs in assignment for e in evs}
        bind = self._canonical_bind(assignment) if self.cq.negations else None
        out = []
        for neg in self.cq.negations:
            lo = min(e.tlo for e in assignment[neg.after])
            hi = max(e.thi for e in assignment[neg.after + 1])
            cands = []
            for e in self.buffers[neg.type].below(hi):
                if e.thi <= lo or id(e) in members:
                    continue
                if not self._eq_consistent(eqv, e):
                    continue
                if neg.order_dependent or neg.check is None or neg.check(bind, e):
                    cands.append(e)
            out.append(cands)
        return out

    def _eq_consistent(self, eqv: tuple, e: Event) -> bool:
        for i, attr in enumerate(self.attrs):
            v = e.attrs.get(attr)
            if v is not None and eqv[i] is not None and v != eqv[i]:
                return False
        return True

    def _evaluate(self, assignment: list, eqv: tuple, out: list[dict]) -> None:
        self.signatures += 1
        conf = signature_confidence(self.cq, assignment, self._negation_candidates(assignment, eqv))
        if conf.value <= 0.0 or conf.value < self.threshold:
            return
        if self.mode == "all":
            out.append(self._record(assignment, conf))
        elif self.mode == "distinct":
            self._offer_distinct(assignment, conf, out)
        else:
            self._offer_collapsed(assignment, conf, out)

    # ------------------------------------------------------------------ output

    def _canonical_bind(self, assignment: list) -> list:
        bind: list = []
        for comp, evs in zip(self.comps, assignment, strict=True):
            if comp.kleene:
                cell = None
                for e in sorted(evs, key=_canon):
                    cell = KleeneCell(e, cell, comp.aggs_step(None if cell is None else cell.aggs, e))
                bind.append(cell)
            else:
                bind.append(evs[0])
        return bind

    def _record(self, assignment: list, conf: Confidence) -> dict:
        tick = self.cq.tick
        match = {}
        for comp, evs in zip(self.comps, assignment, strict=True):
            match[comp.var] = [e.id for e in sorted(evs, key=lambda e: (e.tlo, e.thi, e.id))]
        first_ev = min((e for evs in assignment for e in evs), key=lambda e: e.tlo)
        last_ev = max((e for evs in assignment for e in evs), key=lambda e: e.thi)
        start = first_ev.lo if conf.first_tick == first_ev.tlo else round(conf.first_tick * tick, 6)
        end = last_ev.hi if conf.last_tick == last_ev.thi else round(conf.last_tick * tick, 6)
        bind = self._canonical_bind(assignment)
        return {
            "query": self.name,
            "match": match,
            "confidence": conf.value,
            "start": start,
            "end": end,
            "return": {name: fn(bind, None) for name, fn in self.cq.returns},
        }

    def _offer_distinct(self, assignment: list, conf: Confidence, out: list[dict]) -> None:
        record = self._record(assignment, conf)
        key = tuple(_hashable(v) for v in record["return"].values())
        if key in self.emitted:
            return
        held = self.held.get(key)
        deadline = max(e.thi for evs in assignment for e in evs) + (self.window or 0)
        if held is None:
            held = self.held[key] = [conf.value, record, deadline]
        else:
            held[2] = max(held[2], deadline)
            if conf.value > held[0]:
                held[0], held[1] = conf.value, record
        if held[0] >= 1.0:
            out.append(self._release(key))

    def _release(self, key: Any) -> dict:
        _, record, _ = self.held.pop(key)
        self.emitted.add(key)
        return record

    def _offer_collapsed(self, assignment: list, conf: Confidence, out: list[dict]) -> None:
        """Collapsed records are gathered per closing event in :meth:`_close_event`'s caller."""
        singles = tuple(id(evs[0]) for comp, evs in zip(self.comps, assignment, strict=True) if not comp.kleene)
        group = self._collapse.get(singles)
        if group is None:
            group = self._collapse[singles] = [assignment, conf, [set() for _ in self.comps]]
        else:
            old = group[1]
            group[1] = Confidence(
                max(old.value, conf.value),
                min(old.first_tick, conf.first_tick),
                max(old.last_tick, conf.last_tick),
            )
        for k, (comp, evs) in enumerate(zip(self.comps, assignment, strict=True)):
            if comp.kleene:
                group[2][k].update(evs)
