"""skip_till_any_match over events with imprecise timestamps: every signature with its exact confidence.

Events arrive under the arrival assumption of the imprecise-timestamp paper (an event seen before another starts no
later than the other ends).  With ``now`` the largest lower bound seen and ``U`` the widest interval, every unseen
event starts at or after ``safe = now - U``.  A signature is decided by its own events and the negation candidates
between them, all of which start before its last event can end; so the signatures *closed* by an event ``z`` of the
last component (for a trailing Kleene set: its canonically last element) are enumerated once ``safe > z.thi`` -- the
safe-emit bound -- and each is enumerated exactly once.

Enumeration walks the components backwards from ``z`` over buffered candidates, pruned by interval order, window and
equivalence; each complete assignment gets its exact confidence from :mod:`engine.imprecise.confidence`.  The
buffers are sorted by lower bound and indexed by the first equivalence attribute (events without it -- cluster-wide
Ganglia events -- in a shared list every key sees), so a candidate range is two bisections at the window floor and
the closing event's upper bound, within the bound key once one is chosen.  Before any enumeration, the predicates
naming only ``z`` are checked and every other component must have a candidate in ``[floor, z]`` (a rare component,
such as Q5's ``Imbalance``, stops most closings: the selectivity-order idea of the imprecise-timestamp paper applied
to one closing); after each singleton, the Kleene components beside it must still have a candidate between their
chosen neighbours.  These prunings only skip subtrees that yield nothing, so the enumeration order and the records
are unchanged.  When the query is monotone (adding events never raises confidence, :mod:`engine.plan.consistency`):

- ``all`` mode prunes a Kleene subset as soon as its confidence falls below the threshold (SASE++ Algorithm 1);
- ``distinct`` and ``collapsed`` only need one element per Kleene set: the best signature of a RETURN value, and the
  events of a collapsed record, come from single-element choices -- polynomial instead of exponential.

The paper's run-based evaluation orders (query order over a sorted stream, any-state, selectivity order) are in
:mod:`engine.imprecise.orders`, for SEQ of singletons; they give the same records.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from typing import Any

from mypy_extensions import mypyc_attr

from engine.evaluator import START, Clock, Due, Record, Stats, register, window_horizon
from engine.events import Event
from engine.imprecise import state
from engine.imprecise.buffers import TypeBuffer
from engine.imprecise.confidence import Confidence, _chain_confidence, signature_confidence
from engine.imprecise.enumeration import plan_enumeration
from engine.imprecise.segments import Meter, WorkExceeded
from engine.limits import Limits
from engine.onepass import feed_alone
from engine.output import key_of, return_key
from engine.plan.compiler import CompiledQuery
from engine.plan.consistency import is_monotone
from engine.plan.predicates import KleeneCell
from engine.snapshot import EventCodec

NEG_INF = -math.inf
INF = math.inf
_nextafter = math.nextafter
#: Transitions of the confidence DP one signature may take (about half a second): a Kleene set of a dozen mutually
#: overlapping elements has exponentially many placement states, and exact is exponential there.
SIGNATURE_WORK = 500_000
#: With signature bounds set (engine.runtime.limits), each signature allowed so many transitions on average, and a
#: closing event (a feed step) at most so many in all: the time of one event is bounded, not only its memory.
WORK_PER_SIGNATURE = 1_000
CLOSING_WORK = 10_000_000
STEP_WORK = 50_000_000


class _Exhausted(Exception):
    """The enumeration of one closing event reached its bound (engine.runtime.limits)."""


def _canon(e: Event) -> tuple[Any, ...]:
    return (e.tlo, e.thi, e.seq)


@mypyc_attr(allow_interpreted_subclasses=True)  # the research benchmark's ordered variants subclass it
class ImpreciseMatcher:
    """Exact possible-worlds evaluation of one skip_till_any_match query (docs/semantics.md sections 3 and 5); an
    :class:`engine.evaluator.Evaluator` (snapshots: :mod:`engine.imprecise.state`)."""

    def __init__(self, cq: CompiledQuery, max_uncertainty: int = 0, *, early_filters: bool = True) -> None:
        if cq.strategy != "skip_till_any_match":
            raise ValueError("the imprecise evaluator implements skip_till_any_match only")
        self.cq = cq
        self.early_filters = early_filters
        self.name = cq.name
        self.tick = cq.tick
        self.comps = cq.components
        self.m = len(self.comps)
        self.window = cq.window
        self.threshold = cq.confidence
        self.mode = cq.output
        self.attrs = cq.equivalence
        self.monotone = is_monotone(cq.ast)
        self.singles = self.mode == "collapsed" or (self.mode == "distinct" and is_monotone(cq.ast, returns_too=True))
        self._plan_enumeration()
        self.buffers: dict[str, TypeBuffer] = {}
        key = self.attrs[0] if self.attrs else None
        for c in self.comps:
            self.buffers.setdefault(c.type, TypeBuffer(key))
        for neg in cq.negations:
            self.buffers.setdefault(neg.type, TypeBuffer(key))
        self.index_buffers()
        self.last_type = self.comps[-1].type
        self.trailing = self.comps[-1].kleene
        self.pending: list[tuple[int, int, Event]] = []  # (thi, seq, closing event)
        self.now = NEG_INF
        self.umax = max_uncertainty
        self.held: dict[Any, list[Any]] = {}  # distinct: value key -> [confidence, record, deadline]
        self._order_failed: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # see _kleene_order_possible
        self.next_deadline = math.inf  # the earliest deadline among held records
        self.wake = math.inf  # feed closes once the safe bound passes this: min(pending thi, next_deadline if held)
        # Buffers are pruned each time the safe bound has moved on by a quarter window (only memory depends on it).
        self.prune_step = max(1, self.window // 4) if self.window is not None else math.inf
        self.prune_at = NEG_INF
        self.fed = 0
        self.emitted: set[Any] = set()
        self.signatures = 0
        self.matches = 0
        # Dead ends (see _assign_singletons): candidates for the component before the closing one whose search found
        # no signature, once nothing can change that.  Only where that search cannot depend on the closing event.
        self.remember_dead_ends = (
            self.m >= 3
            and not self.trailing
            and not self.comps[-2].kleene
            and self.m - 1 in self.free
            and not cq.negations
            and self.window is not None
        )
        self._dead_ends: dict[int, tuple[Event, float]] = {}  # id -> (candidate, the window's floor then)
        # Memory bounds (engine.runtime.limits): signatures evaluated per closing event and per feed step; an
        # enumeration that reaches one stops there and is counted in ``truncated``.
        self.max_signatures_per_closing: int | None = None
        self.max_signatures_per_step: int | None = None
        self.truncated = 0
        self._stop_at = math.inf
        self._step_stop = math.inf
        # Work bounds on the confidence DP (engine.imprecise.segments.Meter): SIGNATURE_WORK per signature (one past
        # it is skipped, counted in ``skipped``), and per closing and per step the signature bounds times
        # WORK_PER_SIGNATURE, at most CLOSING_WORK (past it the enumeration stops, as above).
        self.skipped = 0
        self._work_left = math.inf
        self._step_work_left = math.inf

    def index_buffers(self) -> None:
        """Index the buffers on the attributes of :attr:`joins` (again after a restore: the index is derived)."""
        for j, (attr, _, _) in self.joins.items():
            self.buffers[self.comps[j].type].index_on(attr)

    def _plan_enumeration(self) -> None:
        plan = plan_enumeration(
            self.cq, distinct_singles=self.mode == "distinct" and self.singles, early_filters=self.early_filters
        )
        self.singleton_order = plan.singleton_order
        self.kleene_order = plan.kleene_order
        self.singleton_checks = plan.singleton_checks
        self.kleene_filters = plan.kleene_filters
        self.set_filters = plan.set_filters
        self.z_filters = plan.z_filters
        self.free = plan.free
        self.return_ready = plan.return_ready
        self.joins = plan.joins
        self.type_filters = plan.type_filters
        self._no_bind: list[Any] = [None] * len(self.cq.components)

    # ------------------------------------------------------------------ stream

    @property
    def safe(self) -> float:
        """Every unseen event starts at or after this tick."""
        return self.now - self.umax

    def feed(self, ev: Event) -> list[Record]:
        tlo = ev.tlo
        now = self.now
        if tlo > now:
            self.now = now = float(tlo)  # a float always (mypyc keeps a float attribute as a C double)
        width = ev.thi - tlo
        if width > self.umax:
            self.umax = width
        buf = self.buffers.get(ev.type)
        alts = self.type_filters.get(ev.type) if buf is not None else None
        if alts is not None and not any(all(f(self._no_bind, ev) for f in fs) for fs in alts):
            buf = None  # no component of its type can take it (the predicates naming only that component)
        if buf is not None:
            buf.add(ev)
            if ev.type == self.last_type and self._may_close(ev):
                heapq.heappush(self.pending, (ev.thi, ev.seq, ev))
                if ev.thi < self.wake:
                    self.wake = float(ev.thi)
        self.fed += 1
        safe = now - self.umax
        if safe >= self.prune_at:
            self._prune(safe)
        if safe > self.wake:  # a pending closing event or a held distinct record is due
            return self._close(safe)
        return []

    def _may_close(self, z: Event) -> bool:
        """The predicates that name only the closing component hold for ``z`` (:meth:`_enumerate_closed_by` checks
        this first, before any enumeration): an event that fails them closes nothing, so it is buffered (it may
        still be an earlier component) but never pending -- no closing to wait for, no wake (Q7: 58,800 Ganglia
        samples of which a handful stand 3 standard deviations out)."""
        if self.trailing:
            filters = self.z_filters
            if not filters:
                return True
            bind: list[Any] = [None] * self.m
            return all(f(bind, z) for f in filters)
        checks = self.singleton_checks.get(self.m - 1)
        if not checks:
            return True
        bind = [None] * self.m
        bind[-1] = z
        return all(check(bind, None) for check in checks)

    def feed_many(self, events: Iterable[Event]) -> list[Record]:
        """``feed`` each event in turn and concatenate the records (the same records, in the same order), through
        the one feed loop (:func:`engine.onepass.feed_alone`): an event of a type the query does not name only moves
        the safe bound, which costs a few local-variable updates instead of a method call -- most of a pack's
        per-query cost on a Hadoop stream."""
        return feed_alone(self, events)

    def advance(self, clock: Clock) -> list[Record]:
        """What ``feed`` does for events of types the query does not name, given the clock they leave behind: the
        largest lower bound ``clock.now``, the widest interval ``clock.umax`` and the events counted ``clock.fed``
        (a one-pass feeder calls it only once the safe bound passes :meth:`due`, and hands the clock over with
        :meth:`set_clock` before each ``feed``).  A clock behind this one moves nothing."""
        if clock.now > self.now:
            self.now = clock.now
        if clock.umax > self.umax:
            self.umax = clock.umax
        if clock.fed > self.fed:
            self.fed = clock.fed
        safe = self.now - self.umax
        if safe >= self.prune_at:
            self._prune(safe)
        if safe > self.wake:
            return self._close(safe)
        return []

    def flush(self) -> list[Record]:
        out = self._close(math.inf)
        for key in list(self.held):
            out.append(self._release(key))
        self.matches += len(out)
        self.wake = math.inf
        return out

    def runs_alive(self) -> int:
        return sum(len(b.events) for b in self.buffers.values())

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        return state.snapshot(self, codec)

    def restore(self, snap: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        state.restore(self, snap, codec)

    def stats(self) -> Stats:
        return Stats(self.fed, self.matches, self.runs_alive(), 0, self.truncated + self.skipped)

    def dropped(self) -> int:
        return self.truncated + self.skipped

    def horizon(self, last_t: float, umax: int) -> float:
        """The window rule of the NFA^b runtime (a signature open at ``last_t`` started less than a window before it,
        give or take the safe-emit delay), and a held distinct record keeps its best signature, whose start bounds
        what can still replace it."""
        h = window_horizon(last_t, self.window, umax)
        if h == NEG_INF:
            return h
        tick = self.cq.tick
        for _conf, record, _deadline in self.held.values():
            start = record.get("start")
            if start is not None:
                h = min(h, math.floor(start / tick) - umax - 1)
        return h

    # ------------------------------------------------------------------ fed by a one-pass feeder (engine.onepass)

    ordered = False
    bounds = True  # its safe bound is now - umax

    def wants(self) -> frozenset[str] | None:
        """The types of the components and negations (a subclass that overrides :meth:`feed` gets every event)."""
        if type(self).feed is not ImpreciseMatcher.feed:
            return None
        return frozenset(self.buffers)

    def due(self) -> Due:
        """The safe bound at which a pending closing event or held record is due (strictly past :attr:`wake`) or the
        buffers are next pruned (:attr:`prune_at`).  Never, while it holds nothing and has never pruned: a first prune
        of empty buffers changes nothing, so a one-pass feeder does not wake an evaluator no event has reached (the
        Spark stream's new groups, a few events each, woke every imprecise query of their pack)."""
        wake = _nextafter(self.wake, INF)
        prune_at = self.prune_at
        if prune_at == NEG_INF and not self.pending and not self.held and not self.runs_alive():
            prune_at = INF
        return (wake if wake < prune_at else prune_at, INF)

    def clock(self) -> Clock:
        return Clock(START.t, self.now, self.umax, self.fed)

    def set_clock(self, clock: Clock) -> None:
        if clock.now > self.now:
            self.now = clock.now
        if clock.umax > self.umax:
            self.umax = clock.umax
        if clock.fed > self.fed:
            self.fed = clock.fed

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        """Nothing to set: every signature is written whole, with its ids (no run grows record by record)."""

    def set_limits(self, limits: Limits) -> None:
        self.max_signatures_per_closing = limits.runs_per_key
        self.max_signatures_per_step = limits.runs

    def _close(self, safe: float) -> list[Record]:
        out: list[Record] = []
        pending = self.pending
        cap = self.max_signatures_per_step
        self._step_stop = math.inf if cap is None else self.signatures + cap
        self._step_work_left = math.inf if cap is None else min(STEP_WORK, cap * WORK_PER_SIGNATURE)
        while pending and pending[0][0] < safe:
            _, _, z = heapq.heappop(pending)
            self._close_event(z, out)
        if self.held and self.next_deadline < safe:
            for key in [k for k, v in self.held.items() if v[2] < safe]:
                out.append(self._release(key))
            self.next_deadline = min((v[2] for v in self.held.values()), default=math.inf)
        self.wake = min(pending[0][0] if pending else math.inf, self.next_deadline if self.held else math.inf)
        self.matches += len(out)
        return out

    def _prune(self, safe: float) -> None:
        self.prune_at = safe + self.prune_step
        self._order_failed.clear()
        if self.window is None:
            return
        horizon = safe - self.umax
        if self.pending:
            horizon = min(horizon, min(z.tlo for _, _, z in self.pending))
        for buf in self.buffers.values():
            if buf.events and buf.events[0].thi < horizon - self.window:
                buf.prune(horizon - self.window)
        if self._dead_ends:
            cut = horizon - self.window
            self._dead_ends = {k: v for k, v in self._dead_ends.items() if v[0].thi >= cut}

    # ------------------------------------------------------------------ enumeration

    def _close_event(self, z: Event, out: list[Record]) -> None:
        self._collapse: dict[tuple[Any, ...], list[Any]] = {}
        cap = self.max_signatures_per_closing
        self._stop_at = self._step_stop if cap is None else min(self._step_stop, self.signatures + cap)
        self._work_left = (
            self._step_work_left if cap is None else min(self._step_work_left, CLOSING_WORK, cap * WORK_PER_SIGNATURE)
        )
        left = self._work_left
        try:
            self._enumerate_closed_by(z, out)
        except _Exhausted:
            self.truncated += 1
        self._step_work_left -= left - self._work_left
        for assignment, conf, sets in self._collapse.values():
            merged = [
                sorted(sets[k], key=_canon) if comp.kleene else evs
                for k, (comp, evs) in enumerate(zip(self.comps, assignment, strict=True))
            ]
            out.append(self._record(merged, conf))

    def _enumerate_closed_by(self, z: Event, out: list[Record]) -> None:
        """Every signature whose last component is closed by ``z``: singletons first (backwards, with early
        predicate checks), then the Kleene sets between them."""
        eqv = self._bind_eq((None,) * len(self.attrs), z)
        if eqv is None:
            return
        floor = z.tlo - self.window + 1 if self.window is not None else NEG_INF
        if not self._may_close(z):
            return  # predicates naming only the closing event: before any enumeration
        assignment: list[Any] = [None] * self.m
        if not self.trailing:
            assignment[-1] = [z]
        # Every other component needs a candidate in [floor, z]: a rare type (Ganglia Imbalance) stops most closings.
        for comp in self.comps[:-1]:
            if not self._exists(comp.type, eqv, floor, NEG_INF, z.thi + 1, None):
                return
        self._assign_singletons(
            len(self.singleton_order) - (0 if self.trailing else 1), assignment, eqv, floor, z, out, top=True
        )

    def _assign_singletons(
        self,
        pos: int,
        assignment: list[Any],
        eqv: tuple[Any, ...],
        floor: float,
        z: Event,
        out: list[Record],
        top: bool = False,
    ) -> None:
        """Choose the singleton components ``singleton_order[:pos]`` (backwards).

        At the top level (the component just before the closing event ``z``), a candidate whose search reaches no
        signature is remembered as a dead end and skipped at later closings, when nothing can change that outcome:
        ``z`` is named by no predicate or RETURN and binds no equivalence attribute, there are no negations (so the
        search below the candidate never looks at ``z``), and ``z`` surely follows the candidate (so every event that
        could be chosen below it has arrived and ``z`` is not one of them).  A later closing may still lower the
        window's floor (closings go by upper bound, the floor follows the lower one), so a dead end holds only at a
        floor no lower than the one it was found at.  Q5 re-examined every open ReducerEnd at every Balance without
        it."""
        if pos == 0:
            self._assign_kleene(assignment, eqv, floor, z, out)
            return
        j = self.singleton_order[pos - 1]
        dead = self._dead_ends if top and self.remember_dead_ends and all(v is None for v in eqv) else None
        before = self._upper_bound(j, assignment, z)
        used = {id(e) for evs in assignment if evs for e in evs}
        cands = []
        buf = self.buffers[self.comps[j].type]
        join = self.joins.get(j)
        if join is not None and assignment[join[1]] is not None:
            attr, k, kattr = join  # k is a later singleton: already chosen
            found = buf.joined(attr, assignment[k][0].attrs.get(kattr), eqv, floor, before)
        else:
            found = buf.candidates(eqv, floor, before)
        for e in found:
            if e.thi < floor or id(e) in used:
                continue
            eqv2 = self._bind_eq(eqv, e)
            if eqv2 is not None:
                cands.append((e, eqv2))
        if j == 0 and j in self.free and self.mode == "distinct" and assignment[1] is not None:
            cands = self._undominated_first(cands, min(x.tlo for x in assignment[1]))
        for e, eqv2 in cands:
            if dead is not None:
                seen = dead.get(id(e))
                if seen is not None and seen[0] is e and floor >= seen[1]:
                    continue
            signatures = self.signatures
            assignment[j] = [e]
            # distinct: a value already out is not looked for again
            if (
                self._singleton_checks_pass(j, assignment)
                and self._kleene_order_possible(j, assignment, eqv2, floor)
                and not (j == self.return_ready and self._return_key(assignment) in self.emitted)
                and self._kleene_fillable(j, assignment, eqv2, floor, z)
            ):
                self._assign_singletons(pos - 1, assignment, eqv2, floor, z, out)
            if dead is not None and self.signatures == signatures and z.tlo >= e.thi:
                dead[id(e)] = (e, floor)
        assignment[j] = None

    def _exists(
        self,
        etype: str,
        eqv: tuple[Any, ...],
        floor: float,
        after: float,
        before: float,
        used: set[Any] | None,
        z: Event | None = None,
    ) -> bool:
        """Is there a buffered event of ``etype`` with ``thi >= floor``, ``thi > after``, ``tlo < before``, not in
        ``used``, not ``z``, consistent with the equivalence binding ``eqv``?  (A necessary condition, by bisection.)"""
        least = floor if floor > after else after + 1
        for e in self.buffers[etype].candidates(eqv, least, before):
            if e.thi < least or e is z or (used is not None and id(e) in used):
                continue
            if self._bind_eq(eqv, e) is not None:
                return True
        return False

    def _kleene_fillable(self, j: int, assignment: list[Any], eqv: tuple[Any, ...], floor: float, z: Event) -> bool:
        """After choosing singleton ``j``: can the Kleene components beside it still get an element between their
        nearest chosen neighbours?  Prunes before the remaining singletons are enumerated (Q5: no Imbalance between
        a reducer's start and end stops the search before the Balance candidates)."""
        used = None
        for k in (j - 1, j + 1):
            if k < 0 or k >= self.m or not self.comps[k].kleene or (self.trailing and k == self.m - 1):
                continue
            if used is None:
                used = {id(e) for evs in assignment if evs for e in evs}
            if not self._exists(
                self.comps[k].type,
                eqv,
                floor,
                self._lower_bound(k, assignment),
                self._upper_bound(k, assignment, z),
                used,
                z,
            ):
                return False
        return True

    @staticmethod
    def _undominated_first(cands: list[Any], next_lo: int) -> list[Any]:
        """Distinct output, first component named nowhere: of the candidates surely before the next component, a
        later interval (both bounds no earlier) is at least as likely to keep the window -- keep the frontier."""
        before = sorted((c for c in cands if c[0].thi < next_lo), key=lambda c: (-c[0].tlo, -c[0].thi))
        keep = [c for c in cands if c[0].thi >= next_lo]
        best_hi: dict[Any, Any] = {}  # per equivalence binding: candidates binding different values are not comparable
        for c in before:
            top = best_hi.get(c[1])
            if top is None or c[0].thi > top:
                keep.append(c)
                best_hi[c[1]] = c[0].thi
        return keep

    def _kleene_order_possible(self, j: int, assignment: list[Any], eqv: tuple[Any, ...], floor: float) -> bool:
        """Threshold pruning before the remaining singletons are enumerated: once both neighbours ``l`` and ``r`` of a
        Kleene component are chosen, every signature's confidence is at most ``max_x P(l < x < r)`` over its
        candidates ``x`` (each world that matches orders every element of the set between them), so when that is
        below the threshold no choice of the other components can give a record.  Q5 with frequent imbalance: a
        reducer that no Imbalance sample falls inside with probability 0.5 costs one small chain per candidate
        instead of every Balance pair around it.

        A failure is remembered until the next buffer pruning: later closings see no new candidate (arrivals come
        after the safe bound, which has passed ``r``) and a floor at least as high, and the candidates are taken
        without excluding the other chosen events, so the bound only falls."""
        threshold = self.threshold
        if threshold <= 0.0:
            return True
        m = self.m
        failed = self._order_failed
        for k in (j - 1, j + 1):
            if k <= 0 or k >= m - 1 or not self.comps[k].kleene:
                continue
            left, right = assignment[k - 1], assignment[k + 1]
            if (
                left is None
                or right is None
                or len(left) != 1
                or len(right) != 1
                or self.comps[k - 1].kleene
                or self.comps[k + 1].kleene
            ):
                continue
            lev, rev = left[0], right[0]
            probe = (k, id(lev), id(rev), eqv)
            key: tuple[Any, ...] | None = probe
            try:
                hit = failed.get(probe)
            except TypeError:  # an unhashable attribute value in the binding: no memory for this pair
                key, hit = None, None
            if hit is not None and floor >= hit[0]:
                return False
            after, before = lev.tlo, rev.thi
            least = floor if floor > after else after + 1
            best = 0.0
            for x in self.buffers[self.comps[k].type].candidates(eqv, least, before):
                if x.thi < least or self._bind_eq(eqv, x) is None:
                    continue
                p = _chain_confidence((lev, x, rev), None).value
                if p > best:
                    best = p
                    if best >= threshold:
                        break
            if best < threshold:
                if key is not None:
                    failed[key] = (floor, lev, rev)  # the references keep the ids from being reused
                return False
        return True

    def _upper_bound(self, j: int, assignment: list[Any], z: Event) -> float:
        """Events of component j start before the latest possible point of the next assigned component."""
        for k in range(j + 1, self.m):
            if assignment[k] is not None:
                hi: float = min(e.thi for e in assignment[k])
                return hi
        return z.thi + 1

    def _lower_bound(self, j: int, assignment: list[Any]) -> float:
        for k in range(j - 1, -1, -1):
            if assignment[k] is not None:
                lo: float = max(e.tlo for e in assignment[k])
                return lo
        return NEG_INF

    def _singleton_checks_pass(self, j: int, assignment: list[Any]) -> bool:
        """Predicates over singletons only, checked as soon as their earliest variable is chosen."""
        checks = self.singleton_checks.get(j)
        if not checks:
            return True
        bind = [
            evs[0] if evs is not None and not c.kleene else None for c, evs in zip(self.comps, assignment, strict=True)
        ]
        return all(check(bind, None) for check in checks)

    def _assign_kleene(
        self, assignment: list[Any], eqv: tuple[Any, ...], floor: float, z: Event, out: list[Record]
    ) -> None:
        bind = [
            evs[0] if evs is not None and not c.kleene else None for c, evs in zip(self.comps, assignment, strict=True)
        ]
        pools: list[tuple[int, list[Event], Event | None]] = []
        used = {id(e) for evs in assignment if evs for e in evs}
        for k in self.kleene_order:
            fixed = z if (self.trailing and k == self.m - 1) else None
            before = self._upper_bound(k, assignment, z)
            after = self._lower_bound(k, assignment)
            filters = self.kleene_filters.get(k, ())
            cands = []
            for e in self.buffers[self.comps[k].type].candidates(eqv, floor, before):
                if e.thi < floor or e.thi <= after or id(e) in used or e is z:
                    continue
                if fixed is not None and _canon(e) >= _canon(fixed):
                    continue
                if self._bind_eq(eqv, e) is None:
                    continue
                if any(not f(bind, e) for f in filters):
                    continue  # true-false consistent and false: no subset can hold it
                cands.append(e)
            if fixed is None and not cands:
                return
            cands.sort(key=_canon)
            if k in self.set_filters:
                every = [*cands, fixed] if fixed is not None else cands
                comp = self.comps[k]
                cell = None
                for e in every:
                    cell = KleeneCell(e, cell, comp.aggs_step(None if cell is None else cell.aggs, e))
                whole = bind.copy()
                whole[k] = cell
                if not all(f(whole, None) for f in self.set_filters[k]):
                    return
            pools.append((k, cands, fixed))
        self._choose_sets(0, pools, assignment, eqv, out, frozenset())

    def _choose_sets(
        self,
        i: int,
        pools: list[Any],
        assignment: list[Any],
        eqv: tuple[Any, ...],
        out: list[Record],
        taken: frozenset[Any],
    ) -> None:
        """Choose the Kleene sets ``pools[i:]``; an event goes to at most one of them (``taken``)."""
        if i == len(pools):
            self._evaluate(assignment, eqv, out)
            return
        k, cands, fixed = pools[i]
        if taken:
            cands = [e for e in cands if id(e) not in taken]
        last_pool = i == len(pools) - 1
        if self.singles:
            if fixed is None and k in self.free and self.mode == "distinct" and 0 < k < self.m - 1:
                cands = self._one_of_the_surely_inside(k, cands, assignment, eqv)
            options = [[fixed]] if fixed is not None else [[e] for e in cands]
            for chosen in options:
                eqv2 = self._bind_set_eq(eqv, chosen)
                if eqv2 is not None:
                    assignment[k] = chosen
                    self._choose_sets(i + 1, pools, assignment, eqv2, out, taken | {id(e) for e in chosen})
            assignment[k] = None
            return
        prune = self.monotone and last_pool and self.mode == "all"
        base = [fixed] if fixed is not None else []
        # SASE++ Algorithm 1: extend sets in canonical order; when the query is monotone a set below the threshold
        # (or impossible) is never extended, since adding events never raises confidence.
        stack: list[tuple[list[Event], int]] = [(base, 0)]
        while stack:
            chosen, nxt = stack.pop()
            for idx in range(len(cands) - 1, nxt - 1, -1):
                grown = [cands[idx], *chosen] if fixed is not None else [*chosen, cands[idx]]
                grown.sort(key=_canon)
                eqv2 = self._bind_set_eq(eqv, grown)
                if eqv2 is None:
                    continue
                assignment[k] = grown
                if prune:
                    if self._evaluate(assignment, eqv2, out):
                        stack.append((grown, idx + 1))
                else:
                    self._choose_sets(i + 1, pools, assignment, eqv2, out, taken | {id(e) for e in grown})
                    stack.append((grown, idx + 1))
            if fixed is not None and chosen is base:
                assignment[k] = base
                if prune:
                    self._evaluate(assignment, eqv, out)
                else:
                    self._choose_sets(i + 1, pools, assignment, eqv, out, taken | {id(fixed)})
        assignment[k] = None

    def _one_of_the_surely_inside(
        self, k: int, cands: list[Event], assignment: list[Any], eqv: tuple[Any, ...]
    ) -> list[Event]:
        """Distinct output, a middle element named nowhere: every candidate surely between its neighbours gives the
        same confidence (order certain, window decided by other events), so one of them stands for all."""
        prev, nxt = assignment[k - 1], assignment[k + 1]
        if prev is None or nxt is None:
            return cands
        lo = max(e.thi for e in prev)
        hi = min(e.tlo for e in nxt)
        keep = []
        seen: set[Any] = set()  # one per equivalence binding
        for e in cands:
            if e.tlo > lo and e.thi < hi:
                bound = key_of(self._bind_eq(eqv, e))
                if bound in seen:
                    continue
                seen.add(bound)
            keep.append(e)
        return keep

    def _bind_set_eq(self, eqv: tuple[Any, ...], events: list[Event]) -> tuple[Any, ...] | None:
        bound = eqv
        for e in events:
            nxt = self._bind_eq(bound, e)
            if nxt is None:
                return None
            bound = nxt
        return bound

    def _bind_eq(self, eqv: tuple[Any, ...], e: Event) -> tuple[Any, ...] | None:
        if not self.attrs:
            return eqv
        new = None
        for i, attr in enumerate(self.attrs):
            v = e.attrs.get(attr)
            if v is None:
                continue
            if eqv[i] is None:
                if new is None:
                    new = list(eqv)
                new[i] = v
            elif eqv[i] != v:
                return None
        return eqv if new is None else tuple(new)

    def _negation_candidates(self, assignment: list[Any], eqv: tuple[Any, ...]) -> list[list[Event]]:
        members = {id(e) for evs in assignment for e in evs}
        bind = self._canonical_bind(assignment) if self.cq.negations else None
        out = []
        for neg in self.cq.negations:
            lo = min(e.tlo for e in assignment[neg.after])
            hi = max(e.thi for e in assignment[neg.after + 1])
            cands = []
            for e in self.buffers[neg.type].candidates(eqv, lo + 1, hi):
                if e.thi <= lo or id(e) in members:
                    continue
                if not self._eq_consistent(eqv, e):
                    continue
                if neg.order_dependent or neg.check is None or neg.check(bind, e):
                    cands.append(e)
            out.append(cands)
        return out

    def _eq_consistent(self, eqv: tuple[Any, ...], e: Event) -> bool:
        for i, attr in enumerate(self.attrs):
            v = e.attrs.get(attr)
            if v is not None and eqv[i] is not None and v != eqv[i]:
                return False
        return True

    def _evaluate(self, assignment: list[Any], eqv: tuple[Any, ...], out: list[Record]) -> bool:
        """Confidence of one complete assignment; emit or offer it.  True when it reached the threshold."""
        if self.mode == "distinct" and self.singles:
            key = self._return_key(assignment)
            if key in self.emitted:
                return False
        if self.signatures >= self._stop_at or self._work_left <= 0:
            raise _Exhausted
        self.signatures += 1
        meter = Meter(min(SIGNATURE_WORK, self._work_left))
        try:
            conf = signature_confidence(self.cq, assignment, self._negation_candidates(assignment, eqv), meter)
        except WorkExceeded:
            self._work_left -= meter.used
            if meter.limit < SIGNATURE_WORK:
                raise _Exhausted from None  # the closing's budget, not this signature's, ran out
            self.skipped += 1  # this signature alone is too costly to be exact: dropped, counted
            return False
        self._work_left -= meter.used
        if conf.value <= 0.0 or conf.value < self.threshold:
            return False
        if self.mode == "all":
            out.append(self._record(assignment, conf))
        elif self.mode == "distinct":
            self._offer_distinct(assignment, conf, out)
        else:
            self._offer_collapsed(assignment, conf, out)
        return True

    def _return_key(self, assignment: list[Any]) -> tuple[Any, ...]:
        bind = self._canonical_bind(assignment)
        return return_key(fn(bind, None) for _, fn in self.cq.returns)

    # ------------------------------------------------------------------ output

    def _canonical_bind(self, assignment: list[Any]) -> list[Any]:
        bind: list[Any] = []
        for comp, evs in zip(self.comps, assignment, strict=True):
            if evs is None:
                bind.append(None)
            elif comp.kleene:
                cell = None
                for e in sorted(evs, key=_canon):
                    cell = KleeneCell(e, cell, comp.aggs_step(None if cell is None else cell.aggs, e))
                bind.append(cell)
            else:
                bind.append(evs[0])
        return bind

    def _record(self, assignment: list[Any], conf: Confidence) -> Record:
        tick = self.cq.tick
        match = {}
        for comp, evs in zip(self.comps, assignment, strict=True):
            match[comp.var] = [e.id for e in sorted(evs, key=lambda e: (e.tlo, e.thi, e.id))]
        first_ev = min((e for evs in assignment for e in evs), key=lambda e: e.tlo)
        last_ev = max((e for evs in assignment for e in evs), key=lambda e: e.thi)
        first_tick, last_tick = conf.first_tick, conf.last_tick
        assert first_tick is not None and last_tick is not None  # a record's signature has worlds
        start = first_ev.lo if first_tick == first_ev.tlo else round(first_tick * tick, 6)
        end = last_ev.hi if last_tick == last_ev.thi else round(last_tick * tick, 6)
        bind = self._canonical_bind(assignment)
        return {
            "query": self.name,
            "match": match,
            "confidence": conf.value,
            "start": start,
            "end": end,
            "return": {name: fn(bind, None) for name, fn in self.cq.returns},
        }

    def _offer_distinct(self, assignment: list[Any], conf: Confidence, out: list[Record]) -> None:
        record = self._record(assignment, conf)
        key = return_key(record["return"].values())
        if key in self.emitted:
            return
        held = self.held.get(key)
        # Without a window a better signature for this value may come at any time: hold it to the end of the input.
        last = max(e.thi for evs in assignment for e in evs)
        deadline = last + self.window if self.window is not None else math.inf
        if held is None:
            held = self.held[key] = [conf.value, record, deadline]
        else:
            held[2] = max(held[2], deadline)
            if conf.value > held[0]:
                held[0], held[1] = conf.value, record
        self.next_deadline = min(self.next_deadline, held[2])
        if held[0] >= 1.0:
            out.append(self._release(key))

    def _release(self, key: Any) -> Record:
        _, record, _ = self.held.pop(key)
        self.emitted.add(key)
        out: Record = record
        return out

    def _offer_collapsed(self, assignment: list[Any], conf: Confidence, out: list[Record]) -> None:
        """Collapsed records are gathered per closing event in :meth:`_close_event`'s caller."""
        singles = tuple(id(evs[0]) for comp, evs in zip(self.comps, assignment, strict=True) if not comp.kleene)
        group = self._collapse.get(singles)
        if group is None:
            group = self._collapse[singles] = [assignment.copy(), conf, [set() for _ in self.comps]]
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


#: (A call, not a class decorator: mypyc compiles a decorated class as a plain Python class.)
register("imprecise", strategies=("skip_till_any_match",), imprecise=True, ordered=False)(ImpreciseMatcher)
