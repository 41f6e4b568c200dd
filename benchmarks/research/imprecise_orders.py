"""The imprecise-timestamp paper's run-based event-based engines (digest-imprecise 5.1-5.4), for comparison with
:class:`~engine.imprecise.evaluator.ImpreciseMatcher`'s closing-event enumeration.

One class, :class:`OrderedImpreciseMatcher`, with the paper's three evaluation orders (``order=``):

``sorting``
    Query order over a re-sorted stream (digest 5.4, "sorting for query-order evaluation").  Every event is offered
    in each *role* (component it can fill: its type and the predicates naming only that component).  A role of the
    first component is released at once; a role of component j > 1 is held until the safe-emit bound has passed it
    (``e.thi < now.lower - U_max``: every unseen event starts after it) and no held role of component j - 1 may
    precede it.  Released roles drive a query-order engine: runs start only at the first component and grow at the
    end, so a run is never extended by an event that must come earlier.
``any-state``
    Arrival order (digest 5.3): every role starts a run and extends every run whose component is still free,
    wherever it lies -- runs may have gaps and grow in both directions.  A signature is built once, in the arrival
    order of its events.
``selectivity``
    Selectivity order (the ZStream idea, digest 5.4): evaluation is driven by the most selective component (the
    *pivot*: the fewest roles among the first :data:`WARMUP` relevant events, or ``pivot=``).  Runs start only at
    pivot events; every other role is kept in its component's buffer and offered to the runs that exist when it
    arrives.  A new pivot event first grows its runs from the buffers (any-state style, buffered roles in arrival
    order), then later arrivals extend them.  A buffered role that can no longer meet a future pivot event (one of a
    component before the pivot ending ``W`` before the safe bound, one after it ending before the safe bound) is
    evicted: with skewed rates (many first-component events, few last) most roles never touch a run.
``auto``
    Counts the roles of the first :data:`WARMUP` relevant events, picks ``sorting`` or ``selectivity`` (with the
    rarest component as pivot) by :func:`choose_order`, and replays them.

Every order outputs the same records as ``ImpreciseMatcher`` (same signatures, confidences from the same DP, same
time ranges; only the order of the records differs): a run only ever joins events whose valid intervals can still
be ordered within the window, and a completed run is one signature, its confidence exact.  Pruning uses the
arrival assumption: every event not yet seen (and, for sorting, not yet released) starts at or after ``bound``; a
run whose free component must precede an event ending before ``bound``, or whose events end ``W`` before it while a
component is free, can never complete.

A research baseline (``benchmarks/bench_imprecise.py``, ``tests/engine/test_imprecise_orders.py``): the product
evaluates every query with :class:`ImpreciseMatcher`.

Scope: ``SEQ`` of singleton components without negation, skip_till_any_match, output ``all`` (the paper's Fig. 4
workload); anything else raises :class:`ValueError` -- :class:`ImpreciseMatcher` evaluates every query.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

from engine.events import Event
from engine.imprecise.confidence import signature_confidence
from engine.imprecise.evaluator import ImpreciseMatcher
from engine.plan.compiler import CompiledQuery
from engine.plan.predicates import Placement, compile_expr, references

ORDERS = ("sorting", "any-state", "selectivity", "auto")
WARMUP = 512  # relevant events counted by order="auto" before it chooses

Run = tuple  # (events: tuple[Event | None, ...], eqv: tuple)


class OrderedImpreciseMatcher(ImpreciseMatcher):
    """Run-based evaluation of a SEQ of singletons under skip_till_any_match in one of :data:`ORDERS`."""

    def __init__(
        self, cq: CompiledQuery, max_uncertainty: int = 0, *, order: str = "sorting", pivot: int | None = None
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}")
        if any(c.kleene for c in cq.components) or cq.negations:
            raise ValueError("the run-based orders take a SEQ of singleton components without negation")
        if cq.output != "all":
            raise ValueError("the run-based orders output every signature (output all)")
        super().__init__(cq, max_uncertainty)
        self.order = order
        self.reason = ""
        index = {c.var: c.index for c in self.comps}
        complete = Placement(None, "complete", index, {})
        self.local: list[list] = [[] for _ in self.comps]  # predicates naming one component only: role filters
        for expr in cq.ast.where:
            refs = references(expr)
            if len(refs) == 1 and id(expr) not in cq.forall:
                (var,) = refs
                if var in index:
                    self.local[index[var]].append(compile_expr(expr, complete))
        self.roles_of: dict[str, list[int]] = {}
        for c in self.comps:
            self.roles_of.setdefault(c.type, []).append(c.index)
        self.role_counts = [0] * self.m
        self.window_w = self.window if self.window is not None else math.inf
        self.runs: list[Run] = []  # any-state / selectivity: every incomplete run (selectivity: with the pivot)
        self.waiting: list[list[Run]] = [[] for _ in self.comps]  # sorting: runs whose next component is j
        self.holding: list[list] = [[] for _ in self.comps]  # sorting: heaps of (thi, seq, event) per component j >= 1
        self.buffered: list[list[Event]] = [[] for _ in self.comps]  # selectivity: roles kept for future pivots
        if pivot is not None and not 0 <= pivot < self.m:
            raise ValueError(f"pivot must be a component index 0..{self.m - 1}")
        self.pivot = pivot
        warm = order == "auto" or (order == "selectivity" and pivot is None)
        self.warm: list[Event] | None = [] if warm else None
        self.warm_relevant = 0
        self.runs_max = 0
        self.eps = 0  # roles offered to runs (released, fed, or grown into a pivot's runs)
        if not warm:
            self.reason = f"order {order} (given)" + (f", pivot {self.comps[pivot].var}" if pivot is not None else "")

    # ------------------------------------------------------------------ stream

    def feed(self, ev: Event) -> list[dict]:
        out: list[dict] = []
        if self.warm is not None:
            self.warm.append(ev)
            if ev.type in self.roles_of:
                self.warm_relevant += 1
                for j in self._roles(ev):
                    self.role_counts[j] += 1
            if self.warm_relevant >= WARMUP:
                self._choose(out)
            return out
        self._step(ev, out)
        self.matches += len(out)
        return out

    def feed_many(self, events: Iterable[Event]) -> list[dict]:
        """``feed`` each event (every event moves the release and pruning bounds here)."""
        return [r for ev in events for r in self.feed(ev)]

    def advance(self, now: float, umax: int, fed: int) -> list[dict]:
        raise NotImplementedError("OrderedImpreciseMatcher takes every event through feed")

    def flush(self) -> list[dict]:
        out: list[dict] = []
        if self.warm is not None:
            self._choose(out)
        if self.order == "sorting":
            self._release(math.inf, out)
        self.matches += len(out)
        return out

    def runs_alive(self) -> int:
        n = len(self.runs) + sum(len(w) for w in self.waiting)
        return n + sum(len(h) for h in self.holding) + sum(len(b) for b in self.buffered)

    def _choose(self, out: list[dict]) -> None:
        counts = self.role_counts
        rarest = min(range(self.m), key=lambda j: (counts[j], -j))
        if self.order == "auto":
            self.order, why = choose_order(counts)
            self.reason = f"auto: {why}"
        else:
            self.reason = "order selectivity (given)"
        if self.order == "selectivity":
            self.pivot = rarest
            self.reason += f", pivot {self.comps[rarest].var} ({counts[rarest]} of {sum(counts)} roles)"
        warm, self.warm = self.warm, None
        self.role_counts = [0] * self.m
        for ev in warm or ():
            self._step(ev, out)
        self.matches += len(out)

    def _roles(self, ev: Event) -> list[int]:
        js = self.roles_of.get(ev.type)
        if not js:
            return []
        out = []
        for j in js:
            checks = self.local[j]
            if checks:
                bind = [None] * self.m
                bind[j] = ev
                if not all(check(bind, None) for check in checks):
                    continue
            out.append(j)
        return out

    def _step(self, ev: Event, out: list[dict]) -> None:
        if ev.tlo > self.now:
            self.now = ev.tlo
        if ev.thi - ev.tlo > self.umax:
            self.umax = ev.thi - ev.tlo
        self.fed += 1
        safe = self.now - self.umax
        roles = self._roles(ev)
        for j in roles:
            self.role_counts[j] += 1
        order = self.order
        if order == "any-state":
            for j in roles:
                self._any_state(ev, j, out)
            bound = safe
        elif order == "sorting":
            for j in roles:
                if j == 0:
                    self._query_order(ev, 0, out)
                else:
                    heapq.heappush(self.holding[j], (ev.thi, ev.seq, ev))
            bound = self._release(safe, out)
        else:
            piv = self.pivot
            for j in roles:
                if j != piv:
                    self._any_state(ev, j, out, start=False)
                    self.buffered[j].append(ev)
            if piv in roles:
                self._grow_pivot(ev, out)
            bound = safe
        if bound >= self.prune_at:
            self.prune_at = bound + self.prune_step
            self._prune_runs(bound)
            if order == "selectivity":
                self._evict(safe)

    # ------------------------------------------------------------------ sorting

    def _release(self, safe: float, out: list[dict]) -> float:
        """Release held roles in component order (digest 5.4 rule 1); return the bound on unreleased roles."""
        bound = safe
        blocker = math.inf  # least lower bound of a role of component j - 1 still held
        for j in range(1, self.m):
            heap = self.holding[j]
            while heap and heap[0][0] < safe and heap[0][0] <= blocker:
                _, _, e = heapq.heappop(heap)
                self._query_order(e, j, out)
            blocker = min((x[2].tlo for x in heap), default=math.inf)
            if blocker < bound:
                bound = blocker
        return bound

    def _query_order(self, e: Event, j: int, out: list[dict]) -> None:
        self.eps += 1
        if j == 0:
            eqv = self._bind_eq((None,) * len(self.attrs), e)
            if eqv is None:
                return
            evs = (e,) + (None,) * (self.m - 1)
            if self.m == 1:
                self._complete(evs, eqv, out)
            elif self._feasible(evs):
                self.waiting[1].append((evs, eqv))
            return
        nxt = self.waiting[j + 1] if j + 1 < self.m else None
        for evs, eqv in self.waiting[j]:
            if e in evs:
                continue
            eqv2 = self._bind_eq(eqv, e)
            if eqv2 is None:
                continue
            grown = evs[:j] + (e,) + evs[j + 1 :]
            if not self._feasible(grown):
                continue
            if nxt is None:
                self._complete(grown, eqv2, out)
            else:
                nxt.append((grown, eqv2))

    # ------------------------------------------------------------------ runs

    def _start(self, e: Event, j: int, out: list[dict]) -> Run | None:
        """A run holding only (e, j); a one-component pattern completes at once (None then, as for an infeasible
        or inconsistent start)."""
        eqv = self._bind_eq((None,) * len(self.attrs), e)
        if eqv is None:
            return None
        evs = (None,) * j + (e,) + (None,) * (self.m - 1 - j)
        if self.m == 1:
            self._complete(evs, eqv, out)
            return None
        return (evs, eqv) if self._feasible(evs) else None

    def _extend(self, runs: list[Run], e: Event, j: int, out: list[dict]) -> list[Run]:
        """The runs with component ``j`` free that (e, j) can extend, extended; the complete ones go to ``out``."""
        grown: list[Run] = []
        for evs, eqv in runs:
            if evs[j] is not None or e in evs:
                continue
            eqv2 = self._bind_eq(eqv, e)
            if eqv2 is None:
                continue
            g = evs[:j] + (e,) + evs[j + 1 :]
            if not self._feasible(g):
                continue
            if None in g:
                grown.append((g, eqv2))
            else:
                self._complete(g, eqv2, out)
        return grown

    # ------------------------------------------------------------------ any-state

    def _any_state(self, e: Event, j: int, out: list[dict], start: bool = True) -> None:
        """Offer the role (e, j) to every run with component j free; with ``start``, also start a run at it."""
        self.eps += 1
        runs = self.runs
        new = self._extend(runs, e, j, out)
        if start:
            run = self._start(e, j, out)
            if run is not None:
                new.append(run)
        runs.extend(new)
        if len(runs) > self.runs_max:
            self.runs_max = len(runs)

    # ------------------------------------------------------------------ selectivity

    def _grow_pivot(self, p: Event, out: list[dict]) -> None:
        """A pivot event: its run, grown by every buffered role (each extends the pivot's runs with that component
        free), then kept for later arrivals."""
        self.eps += 1
        run = self._start(p, self.pivot, out)
        if run is None:
            return
        mine: list[Run] = [run]
        # Any fixed sequence of the buffered roles builds each subset once: each extends the runs grown so far.
        for k, e in [(k, e) for k, buf in enumerate(self.buffered) for e in buf]:
            self.eps += 1
            mine.extend(self._extend(mine, e, k, out))
        self.runs.extend(mine)
        if len(self.runs) > self.runs_max:
            self.runs_max = len(self.runs)

    def _evict(self, safe: float) -> None:
        """Drop buffered roles that no future pivot event (starting at or after ``safe``) can meet."""
        w = self.window_w
        piv = self.pivot
        for j, buf in enumerate(self.buffered):
            if buf:
                stale = safe - w if j < piv else safe  # before the pivot: within W of it; after it: after it
                if stale > -math.inf:
                    self.buffered[j] = [e for e in buf if e.thi > stale]

    # ------------------------------------------------------------------ runs

    def _feasible(self, evs: tuple) -> bool:
        """Can the chosen events still be ordered (a distinct tick for every component in between) within W?"""
        filled = [(j, e) for j, e in enumerate(evs) if e is not None]
        if len(filled) == 1:
            return self.m - 1 <= self.window_w - 1
        lo = [e.tlo for _, e in filled]
        hi = [e.thi for _, e in filled]
        n = len(filled)
        for i in range(1, n):
            gap = filled[i][0] - filled[i - 1][0]
            if lo[i] < lo[i - 1] + gap:
                lo[i] = lo[i - 1] + gap
        for i in range(n - 2, -1, -1):
            gap = filled[i + 1][0] - filled[i][0]
            if hi[i] > hi[i + 1] - gap:
                hi[i] = hi[i + 1] - gap
        for i in range(n):
            if lo[i] > hi[i]:
                return False
        extra = filled[0][0] + (self.m - 1 - filled[-1][0])
        return lo[-1] - hi[0] + extra <= self.window_w - 1

    def _complete(self, evs: tuple, eqv: tuple, out: list[dict]) -> None:
        assignment = [[e] for e in evs]
        self.signatures += 1
        conf = signature_confidence(self.cq, assignment)
        if conf.value <= 0.0 or conf.value < self.threshold:
            return
        out.append(self._record(assignment, conf))

    def _prune_runs(self, bound: float) -> None:
        """Drop runs that no event not yet fed can complete (every such event starts at or after ``bound``)."""
        w = self.window_w
        late = bound - w
        if self.order == "sorting":
            for j in range(1, self.m):
                runs = self.waiting[j]
                if runs:
                    self.waiting[j] = [r for r in runs if r[0][0].thi >= late]
            return
        keep = []
        for r in self.runs:
            evs = r[0]
            dead = False
            for j, e in enumerate(evs):
                if e is None:
                    continue
                if e.thi < late or (j > 0 and evs[j - 1] is None and e.thi < bound):
                    dead = True
                    break
            if not dead:
                keep.append(r)
        self.runs = keep


def explain_order(m: Any) -> str:
    """One line on the order an :class:`OrderedImpreciseMatcher` runs in (after ``auto`` has chosen)."""
    return f"{m.order}: {m.reason}" if m.reason else m.order


#: ``choose_order`` picks selectivity order when the first component has at least this many times the events of the
#: rarest one (digest-imprecise 7.2 and 8: sorting wins on even rates, Fig. 4(c); selectivity order on skewed rates,
#: Fig. 4(d) and the Hadoop case study).  Calibrated by ``python3 -m benchmarks.bench_imprecise --only fig4d``
#: (benchmarks/README.md): a tie at 8x (80:30:10), selectivity ahead by ~30 % at 110x; sorting ahead on even rates.
SKEW = 8.0


def choose_order(rates: list[int] | list[float]) -> tuple[str, str]:
    """The evaluation order of :class:`engine.imprecise.orders.OrderedImpreciseMatcher` for per-component event
    counts (or rates) ``rates``, with a one-line reason: ``selectivity`` when the first component is at least
    :data:`SKEW` times as frequent as the rarest (sorting would start a run at every first-component event, most of
    which expire before a rare later event comes), else ``sorting`` (runs start only at the first component and
    events are fed once, in query order).  ``any-state`` is never chosen: it starts a run at every event of every
    component and loses to both (Fig. 4(b)-(d))."""
    first = rates[0] if rates else 0
    least = min(rates, default=0)
    if len(rates) > 1 and first > 0 and first >= SKEW * max(least, 1e-9) and least < first:
        return "selectivity", (
            f"first component {first:g} events vs {least:g} for the rarest: skewed "
            f"(>= {SKEW:g}x), buffered first-component events expire unread"
        )
    return "sorting", (
        f"component rates {', '.join(f'{r:g}' for r in rates)}: not skewed (< {SKEW:g}x), query "
        "order from the first component"
    )
