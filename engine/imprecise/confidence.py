"""Exact confidence of one signature by dynamic programming over ticks (docs/semantics.md section 3).

A world gives every event one integer point, uniformly over its interval.  A signature is a match in a world when all
its events have distinct points, components follow each other strictly, each Kleene set's elements -- in the time order
of that world -- satisfy the iterator predicates, the window holds and no negated candidate falls between its
neighbours.  Its confidence is the probability of those worlds.

Instead of enumerating worlds (U^N) or orders (k! per Kleene set), the DP sweeps the ticks that some event of the
signature can occupy, placing at most one event per tick.  A state is *what the future can still depend on*: the
component being filled, which events are placed, the first/last placed element of each Kleene set (for ``b[1]``,
``b[i-1]``, ``b[b.len]``), the first tick when the window can bind, and the last tick before a negation gap.  Events
whose interval has passed must be placed, events whose interval has not begun cannot be, so only the events live at a
tick multiply the state count: for Ganglia (15 s intervals every 15 s) that is two, not forty.

This also yields the valid time range: the earliest first point and latest last point over the matching worlds.

A signature of one event per component (the Hadoop pack's usual case) skips the general DP: point paths are counted
with prefix sums (:func:`_chain_mass`, integer counts divided once by the number of worlds), and when the window can
cut the chain the point of its narrowest event is fixed instead of the first event's (:func:`_pivot_confidence`).

**Width.**  Both walk ticks, so their cost grows with the intervals' width (two events a day wide: minutes).  A
signature without negation candidates, and a chain whose prefix sums would touch more than :data:`CHAIN_TICK_WORK`
list elements, gets the same exact confidence from :mod:`engine.imprecise.segments` instead: a sweep over the
segments between interval ends, at a cost independent of the widths and of the window (it is also faster than the
tick DP on the Hadoop pack's Kleene signatures).  With negation candidates the tick DP stays, clipped to the ticks
that can lie in a match: every point of a match lies within ``W - 1`` of every other, so each event's interval is cut
to ``[max(lower bounds) - W + 1, min(upper bounds) + W - 1]`` -- its cost follows the window, not the widths.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.events import Event
from engine.imprecise import segments
from engine.imprecise.bounds import valid_intervals
from engine.plan.compiler import CompiledQuery
from engine.plan.predicates import KleeneCell


@dataclass(frozen=True)
class Confidence:
    """Probability of the worlds where the signature matches, and the valid range of its first and last points."""

    value: float
    first_tick: int | None
    last_tick: int | None


ZERO = Confidence(0.0, None, None)

#: A chain whose tick passes would touch more list elements than this goes to the segment sweep (both are exact; the
#: prefix sums win on narrow intervals, the sweep on wide ones: ``benchmarks/bench_interval_width.py``).
CHAIN_TICK_WORK = 20_000
#: ``"auto"`` (above); tests set ``"segments"`` to send every signature without negation candidates through the
#: segment sweep, benchmarks ``"ticks"`` to measure the tick DP alone.
METHOD = "auto"


def _from_count(count: int, first: int | None, last: int | None, worlds: int) -> Confidence:
    """A :class:`Confidence` from exact integer counts (int / int is correctly rounded)."""
    if count <= 0:
        return ZERO
    return Confidence(min(count / worlds, 1.0), first, last)


def _chain_work(events: Sequence[Event], window: int | None) -> int:
    """List elements the prefix-sum passes of :func:`_chain_confidence` would touch (an estimate)."""
    widths = [e.thi - e.tlo + 1 for e in events]
    work = sum(widths)
    first, last = events[0], events[-1]
    if window is not None and last.thi - first.tlo >= window:
        work *= min(widths[0], 2 * min(widths))  # one pass per first point, or per point of the narrowest (pivot)
    return work


def _pair_between(n: Event, x: int, y: int) -> float:
    """P(x < t_n < y) for uniform t_n on n's interval."""
    lo = max(n.tlo, x + 1)
    hi = min(n.thi, y - 1)
    if hi < lo:
        return 0.0
    return (hi - lo + 1) / (n.thi - n.tlo + 1)


def _predicates_hold(cq: CompiledQuery, chain: Sequence[Event]) -> bool:
    """Every predicate along a chain of one event per component (their order is the components' order)."""
    bind: list[Any] = [None] * len(chain)
    for comp, e in zip(cq.components, chain, strict=True):
        if comp.begin is not None and not comp.begin(bind, e):
            return False
        bind[comp.index] = KleeneCell(e, None, comp.aggs_step(None, e)) if comp.kleene else e
    return cq.final is None or bool(cq.final(bind, None))


def _chain_bind(cq: CompiledQuery, chain: Sequence[Event]) -> list[Any]:
    """The binding of a chain of one event per component, as the DP holds it once every component is placed."""
    bind: list[Any] = [None] * len(chain)
    for comp, e in zip(cq.components, chain, strict=True):
        bind[comp.index] = KleeneCell(e, None, comp.aggs_step(None, e)) if comp.kleene else e
    return bind


def _forced_order(cq: CompiledQuery, assignment: Sequence[Sequence[Event]]) -> Confidence | None:
    """When the intervals leave only one order and the window cannot bind, every world agrees: confidence is 1 or 0
    by the predicates along that order.  ``None`` when the order is not forced."""
    prev_hi = None
    ordered: list[list[Event]] = []
    for evs in assignment:
        chain = sorted(evs, key=lambda e: (e.tlo, e.thi)) if len(evs) > 1 else list(evs)
        for e in chain:
            if prev_hi is not None and e.tlo <= prev_hi:
                return None
            prev_hi = e.thi
        ordered.append(chain)
    bind: list[Any] = [None] * len(cq.components)
    for comp, chain in zip(cq.components, ordered, strict=True):
        for i, e in enumerate(chain):
            pred = comp.begin if i == 0 else comp.take
            if pred is not None and not pred(bind, e):
                return ZERO
            if comp.kleene:
                prev = bind[comp.index] if i else None
                bind[comp.index] = KleeneCell(e, prev, comp.aggs_step(None if prev is None else prev.aggs, e))
            else:
                bind[comp.index] = e
    if cq.final is not None and not cq.final(bind, None):
        return ZERO
    return Confidence(1.0, ordered[0][0].tlo, ordered[-1][-1].thi)


def _shift(prefix: list[Any], a: int, b: int) -> list[Any]:
    """``[prefix[min(i, top)] for i in range(a, b + 1)]`` (``a >= 0``) with list slicing instead of a loop."""
    top = len(prefix) - 1
    if b <= top:
        return prefix[a : b + 1]
    if a > top:
        return [prefix[top]] * (b - a + 1)
    return prefix[a:] + [prefix[top]] * (b - top)


def _chain_mass(events: Sequence[Event], first_lo: int, first_hi: int, cap: float) -> tuple[float, int | None]:
    """P(t_1 in [first_lo, first_hi], t_1 < t_2 < ... < t_m < cap) for a fixed chain, O(m * U) with prefix sums.
    Returns the mass and the latest last point with positive mass.

    The passes count point paths (integers, exact in floating point below 2**53) and divide by the number of
    worlds once at the end, so each pass is a prefix sum and a slice rather than a Python loop."""
    denom = 1
    lo, hi = first_lo, first_hi
    count = [1.0] * (hi - lo + 1)
    for e in events[1:]:
        nlo = max(e.tlo, lo + 1)
        nhi = e.thi if cap == math.inf else min(e.thi, int(cap) - 1)
        if nhi < nlo:
            return 0.0, None
        denom *= e.thi - e.tlo + 1
        # paths ending at t = paths of the previous event ending before t: prefix[t - 1 - lo], points lo..lo+k
        count = _shift(list(itertools.accumulate(count)), nlo - 1 - lo, nhi - 1 - lo)
        lo, hi = nlo, nhi
    total = sum(count)
    if total <= 0.0:
        return 0.0, None
    e1 = events[0]
    return total / (denom * (e1.thi - e1.tlo + 1)), hi  # every count is positive: the latest point is hi


def _chain_confidence(events: Sequence[Event], window: int | None, meter: segments.Meter | None = None) -> Confidence:
    """Exact confidence of one event per component (the usual Hadoop case) without the general state DP.

    Without a binding window the chain is one pass; otherwise the first point is fixed tick by tick only where the
    window can cut the chain (``t_1 <= t_m.upper - W``), the rest is one pass.  Wide intervals go to the segment sweep
    (:data:`CHAIN_TICK_WORK`)."""
    if METHOD == "segments" or (METHOD == "auto" and _chain_work(events, window) > CHAIN_TICK_WORK):
        return _from_count(*segments.chain_count(events, window, meter))
    first, last = events[0], events[-1]
    if window is None or last.thi - first.tlo < window:
        total, end = _chain_mass(events, first.tlo, first.thi, math.inf)
        if total <= 0.0:
            return ZERO
        # Starting as early as possible only helps a chain without a window: the earliest first point is feasible.
        return Confidence(min(total, 1.0), first.tlo, end)
    cut = min(first.thi, last.thi - window)  # t_1 <= cut: the window may bind
    k = min(range(len(events)), key=lambda i: events[i].thi - events[i].tlo)
    if 2 * (events[k].thi - events[k].tlo + 1) <= cut - first.tlo + 1:
        return _pivot_confidence(events, window, k)
    total = 0.0
    start: int | None = None
    end = None
    for t1 in range(first.tlo, cut + 1):
        mass, t_end = _chain_mass(events, t1, t1, t1 + window)
        if mass > 0.0:
            assert t_end is not None  # a positive mass has a last point
            total += mass
            start = t1 if start is None else start
            end = t_end if end is None else max(end, t_end)
    if cut < first.thi:
        mass, t_end = _chain_mass(events, max(first.tlo, cut + 1), first.thi, math.inf)
        if mass > 0.0:
            assert t_end is not None  # a positive mass has a last point
            total += mass
            if start is None:
                start = max(first.tlo, cut + 1)
            end = t_end if end is None else max(end, t_end)
    if total <= 0.0:
        return ZERO
    return Confidence(min(total, 1.0), start, end)


def _pivot_confidence(events: Sequence[Event], window: int, k: int) -> Confidence:
    """:func:`_chain_confidence` when the window binds, by fixing the point of the narrowest event ``k`` instead of
    the first event's: given ``t_k``, the events before it and after it are independent, so one backward pass gives
    the paths to each ``t_1`` and one forward pass the paths to each ``t_m``, joined under ``t_m - t_1 < W`` with
    prefix sums.  O(U_k * m * U) instead of O(U_1 * m * U): a Hadoop event (11 points) between Ganglia events
    (151 points) costs 11 passes instead of up to 151.  Paths are counted (exact integers) as in
    :func:`_chain_mass` and divided by the number of worlds at the end."""
    ek = events[k]
    before = events[:k][::-1]
    after = events[k + 1 :]
    total = 0.0
    start: int | None = None
    end: int | None = None
    for tk in range(ek.tlo, ek.thi + 1):
        # Backward from t_k: paths t_1 < ... < t_{k-1} < t_k, by t_1.
        lo, hi, left = tk, tk, [1.0]
        for e in before:
            nlo, nhi = e.tlo, min(e.thi, hi - 1)
            if nhi < nlo:
                left = []
                break
            # paths from t = paths of the later event starting after t: suffix[t + 1 - lo], all of them below lo
            suffix = list(itertools.accumulate(reversed(left)))[::-1]
            a, b = nlo + 1 - lo, nhi + 1 - lo  # b <= hi - lo: inside suffix; an index <= 0 means suffix[0]
            left = [suffix[0]] * max(0, min(b, 0) - a + 1) + (suffix[max(a, 1) : b + 1] if b >= 1 else [])
            lo, hi = nlo, nhi
        if not left:
            continue
        l_lo = lo
        # Forward from t_k: paths t_k < t_{k+1} < ... < t_m, by t_m.
        lo, hi, right = tk, tk, [1.0]
        for e in after:
            nlo, nhi = max(e.tlo, lo + 1), e.thi
            if nhi < nlo:
                right = []
                break
            right = _shift(list(itertools.accumulate(right)), nlo - 1 - lo, nhi - 1 - lo)
            lo, hi = nlo, nhi
        if not right:
            continue
        r_lo, r_hi = lo, hi
        cum = list(itertools.accumulate(right))  # cum[i] = paths with t_m <= r_lo + i
        # t_m <= t_1 + W - 1: for t_1 = l_lo + i, index l_lo + i + W - 1 - r_lo into cum (none below 0)
        shift = l_lo + window - 1 - r_lo
        first_i = max(0, -shift)
        if first_i >= len(left):
            continue
        paths = sum(
            w * c for w, c in zip(left[first_i:], _shift(cum, shift + first_i, shift + len(left) - 1), strict=True)
        )
        if paths <= 0.0:
            continue
        total += paths
        t1_min = l_lo + first_i
        t1_max = l_lo + len(left) - 1
        start = t1_min if start is None else min(start, t1_min)
        last = min(t1_max + window - 1, r_hi)
        end = last if end is None else max(end, last)
    if total <= 0.0:
        return ZERO
    worlds = 1
    for e in events:
        worlds *= e.thi - e.tlo + 1
    return Confidence(min(total / worlds, 1.0), start, end)


#: The most matrix cells :func:`_gap_chain_confidence` builds for one signature; beyond, the tick DP runs.
GAP_CHAIN_CELLS = 2_000_000
#: Matrix cells per unit of the work meter (a unit is one DP transition, about a microsecond; numpy takes a few
#: nanoseconds a cell: 11 x 151 x 151 cells, Q7's shape, in about 0.7 ms).
GAP_CELLS_PER_UNIT = 256


def _gap_kernel(x: Any, y: Any, cands: Sequence[Event]) -> Any:
    """K[i, j] = [x_i < y_j] * prod over candidates n of (points of n not strictly between x_i and y_j): the worlds
    of a gap between consecutive chain points ``x_i < y_j`` that none of ``cands`` falls into (exact integers)."""
    import numpy as np

    kernel = (x[:, None] < y[None, :]).astype(np.float64)
    for n in cands:
        lo = np.maximum(x + 1, n.tlo)  # the candidate's points strictly between x and y
        hi = np.minimum(y - 1, n.thi)
        inside = np.clip(hi[None, :] - lo[:, None] + 1, 0, None)
        kernel *= (n.thi - n.tlo + 1) - inside
    return kernel


def _gap_chain_confidence(
    chain: Sequence[Event],
    negs: Sequence[Any],
    cands: Sequence[Sequence[Event]],
    window: int | None,
    meter: segments.Meter | None,
) -> Confidence | None:
    """Exact confidence of one event per component with negation candidates, as a product of gap matrices.

    With singleton components every predicate is decided before (``v.ts`` is the reported timestamp), so a world's
    weight factors over consecutive pairs: the chain's order, and for each negation its candidates' points outside
    the gap (the tick DP's factor).  Worlds are counted, from each first point to each last point, by matrix
    products, then cut by the window; every count is an integer below 2**53, so exact in floating point, and the
    confidence is one correctly rounded division.  ``None`` when the matrices or counts would be too large (or a
    negation is not between two components): the tick DP then runs."""
    import numpy as np

    k = len(chain)
    gaps: list[list[Event]] = [[] for _ in range(k - 1)]
    for neg, cs in zip(negs, cands, strict=True):
        if not 0 <= neg.after < k - 1:
            return None
        gaps[neg.after].extend(cs)
    widths = [e.thi - e.tlo + 1 for e in chain]
    worlds = math.prod(widths) * math.prod(n.thi - n.tlo + 1 for cs in gaps for n in cs)
    cells = sum(widths[0] * widths[i] * widths[i + 1] for i in range(k - 1))
    if worlds >= 2**53 or cells > GAP_CHAIN_CELLS:
        return None
    if meter is not None:
        meter.spend(cells // GAP_CELLS_PER_UNIT + 1)
    points = [np.arange(e.tlo, e.thi + 1, dtype=np.int64) for e in chain]
    paths = np.eye(widths[0])  # paths[i, j]: worlds from first point i to point j of the event placed last
    for g in range(k - 1):
        paths = paths @ _gap_kernel(points[g], points[g + 1], gaps[g])
    if window is not None:
        paths = np.where(points[-1][None, :] - points[0][:, None] < window, paths, 0.0)
    rows = np.flatnonzero(paths.sum(axis=1) > 0.0)
    if not len(rows):
        return ZERO
    cols = np.flatnonzero(paths.sum(axis=0) > 0.0)
    return _from_count(int(paths.sum()), int(points[0][rows[0]]), int(points[-1][cols[-1]]), worlds)


def _shared_candidates(
    cq: CompiledQuery, assignment: Sequence[Sequence[Event]], negation_candidates: Sequence[Sequence[Event]]
) -> list[Event]:
    """Imprecise events that can fall into two negation gaps of one world (``SEQ(A a, ~X x1, B b, ~X x2, C c)``: an
    X whose interval spans b's points lies before b in some worlds and after it in others).  For gaps ``g < h`` that
    takes a point below ``t_{g+1}`` and one above ``t_h``, so an event wholly after component g+1's last point, or
    wholly before component h's first, is in at most one of them in every world."""
    if not any(negation_candidates):
        return []  # most signatures: no negation, or no candidate (called for every signature)
    gaps_of: dict[int, list[int]] = {}
    events: dict[int, Event] = {}
    for neg, cands in zip(cq.negations, negation_candidates, strict=True):
        for n in cands:
            if n.thi > n.tlo and neg.after not in gaps_of.setdefault(id(n), []):
                gaps_of[id(n)].append(neg.after)
                events[id(n)] = n
    shared = []
    for key, gaps in gaps_of.items():
        n = events[key]
        gaps.sort()
        if any(
            n.tlo < max(e.thi for e in assignment[g + 1]) and n.thi > min(e.tlo for e in assignment[h])
            for i, g in enumerate(gaps)
            for h in gaps[i + 1 :]
        ):
            shared.append(n)
    return shared


def _at_point(e: Event, point: int) -> Event:
    """A copy of ``e`` placed at one tick (its attributes and reported ``ts`` kept)."""
    placed = e.copy()
    seconds = e.lo + (point - e.tlo) * (e.hi - e.lo) / (e.thi - e.tlo) if e.thi > e.tlo else e.lo
    placed.lo = placed.hi = seconds
    placed.tlo = placed.thi = placed.t = point
    return placed


def _conditioned_on_shared(
    cq: CompiledQuery,
    assignment: Sequence[Sequence[Event]],
    negation_candidates: Sequence[Sequence[Event]],
    shared: list[Event],
    meter: segments.Meter | None,
) -> Confidence:
    """Confidence when an event is a candidate of several negations, by conditioning on where it lies.

    The gaps are disjoint, so such an event avoids them all with probability 1 - sum of its chances per gap, not
    the product of (1 - chance) the gap-by-gap computations take (SEQ(A a, ~D x1, B b, ~D x2, C c) with D spanning
    b's point: 0.36 instead of 0.2).  Placed at one tick it is in at most one gap, and the product is exact; the
    confidence is the average over its ticks (over the joint ticks when there are several such events)."""
    ranges = [range(n.tlo, n.thi + 1) for n in shared]
    positions = math.prod(len(r) for r in ranges)
    if meter is not None:
        meter.spend(positions)
    total = 0.0
    first: int | None = None
    last: int | None = None
    for points in itertools.product(*ranges):
        fixed = {id(n): _at_point(n, p) for n, p in zip(shared, points, strict=True)}
        cands = [[fixed.get(id(n), n) for n in cs] for cs in negation_candidates]
        c = signature_confidence(cq, assignment, cands, meter)
        if c.value > 0.0:
            total += c.value
            if c.first_tick is not None:
                first = c.first_tick if first is None else min(first, c.first_tick)
            if c.last_tick is not None:
                last = c.last_tick if last is None else max(last, c.last_tick)
    if total <= 0.0:
        return ZERO
    return Confidence(min(total / positions, 1.0), first, last)


def signature_confidence(
    cq: CompiledQuery,
    assignment: Sequence[Sequence[Event]],
    negation_candidates: Sequence[Sequence[Event]] = (),
    meter: segments.Meter | None = None,
) -> Confidence:
    """Confidence of the signature ``assignment`` (one list of events per positive component).

    ``negation_candidates[i]`` are the events that may cancel the match through ``cq.negations[i]`` (same type,
    consistent with the equivalence test, not in the signature, and -- unless the negation is order dependent --
    satisfying its predicates).  Predicates are evaluated inside the DP because Kleene iterator predicates depend on
    the order of the elements in each world.  ``meter`` counts the DP's transitions and raises
    :class:`engine.imprecise.segments.WorkExceeded` past its budget.
    """
    shared = _shared_candidates(cq, assignment, negation_candidates)
    if shared:
        return _conditioned_on_shared(cq, assignment, negation_candidates, shared, meter)
    comps = cq.components
    m = len(comps)
    events: list[Event] = []
    comp_of: list[int] = []
    comp_mask = [0] * m
    for j, evs in enumerate(assignment):
        for e in evs:
            comp_mask[j] |= 1 << len(events)
            comp_of.append(j)
            events.append(e)
    n_ev = len(events)
    full = (1 << n_ev) - 1
    lo = min(e.tlo for e in events)
    hi = max(e.thi for e in events)
    window = cq.window
    if not any(negation_candidates):
        if window is None or hi - lo < window:
            forced = _forced_order(cq, assignment)
            if forced is not None:
                return forced
        if all(len(evs) == 1 for evs in assignment):
            chain = [evs[0] for evs in assignment]
            if valid_intervals(chain, window) is None or not _predicates_hold(cq, chain):
                return ZERO
            return _chain_confidence(chain, window, meter)
        if METHOD != "ticks":
            try:
                return _from_count(*segments.signature_count(cq, assignment, meter))
            except segments.InterpolationError:  # pragma: no cover - a broken degree bound; the tick DP is exact
                if segments.STRICT:
                    raise
    track_first = window is not None and hi - lo >= window
    neg_after = {neg.after: i for i, neg in enumerate(cq.negations)}
    negs = cq.negations
    # ``v.ts`` is the reported timestamp (docs/semantics.md section 2), so with one event per component every predicate
    # and every negation check reads the same values in every world: they are decided here once, not per DP state and
    # tick (Q7's signatures spent 60 % of their DP in predicates).  With a Kleene component the order of its elements
    # differs between worlds (``b[i-1]``, running aggregates), so the DP evaluates them as it places events.
    begins: list[Any] = [c.begin for c in comps]
    takes: list[Any] = [c.take for c in comps]
    final = cq.final
    checks: list[Any] = [neg.check for neg in negs]
    if all(len(evs) == 1 for evs in assignment):
        chain = [evs[0] for evs in assignment]
        if not _predicates_hold(cq, chain):
            return ZERO
        bound = _chain_bind(cq, chain)
        negation_candidates = [
            [n for n in cands if neg.check(bound, n)]
            if neg.check is not None and (neg.deferred or neg.order_dependent)
            else list(cands)
            for neg, cands in zip(negs, negation_candidates, strict=True)
        ]
        begins = takes = [None] * m
        final = None
        checks = [None] * len(negs)
        if METHOD != "ticks" and any(negation_candidates):
            gap = _gap_chain_confidence(chain, negs, negation_candidates, window, meter)
            if gap is not None:
                return gap

    # Ticks at which something can be placed, and the events that must be placed by the end of each tick: only the
    # ticks that can lie in a match -- within W - 1 of every event's interval (the pmf stays the whole interval's).
    clip_lo, clip_hi = lo, hi
    if track_first:
        assert window is not None  # track_first implies a window
        clip_lo = max(lo, max(e.tlo for e in events) - window + 1)
        clip_hi = min(hi, min(e.thi for e in events) + window - 1)
    spans = [(max(e.tlo, clip_lo), min(e.thi, clip_hi)) for e in events]
    if any(a > b for a, b in spans):
        return ZERO
    if meter is not None:  # the tick lists below are as long as the intervals: charged before they are built
        meter.spend(sum(b - a + 1 for a, b in spans))
    ticks = sorted({t for a, b in spans for t in range(a, b + 1)})
    live: dict[int, list[int]] = {}
    for i, (a, b) in enumerate(spans):
        for t in range(a, b + 1):
            live.setdefault(t, []).append(i)
    due_at: dict[int, int] = {}
    for i, (_, b) in enumerate(spans):
        due_at[b] = due_at.get(b, 0) | (1 << i)
    prob = [1.0 / (e.thi - e.tlo + 1) for e in events]

    # state key -> [mass, min first tick, bind, j, mask, t_first, gap_x, deferred gaps]
    # key: (j, mask, kleene ends, t_first or None, gap_x or None, deferred gaps)
    init_bind: list[Any] = [None] * m
    states: dict[tuple[Any, ...], list[Any]] = {
        (-1, 0, (), None, None, ()): [1.0, None, init_bind, -1, 0, None, None, ()]
    }
    due = 0
    best_last: int | None = None
    best_first: int | None = None
    total = 0.0

    def kleene_ends(bind: list[Any], upto: int) -> tuple[Any, ...]:
        out = []
        for k in range(upto + 1):
            b = bind[k]
            if isinstance(b, KleeneCell):
                out.append((id(b.first), id(b.event)))
        return tuple(out)

    for t in ticks:
        new_states: dict[tuple[Any, ...], list[Any]] = {}

        def add(
            key: tuple[Any, ...],
            mass: float,
            first: int | None,
            bind: list[Any],
            j: int,
            mask: int,
            t_first: int | None,
            gap_x: int | None,
            gaps: tuple[Any, ...],
            new_states: dict[Any, Any] = new_states,
        ) -> None:
            cur = new_states.get(key)
            if cur is None:
                new_states[key] = [mass, first, bind, j, mask, t_first, gap_x, gaps]
            else:
                cur[0] += mass
                if first is not None and (cur[1] is None or first < cur[1]):
                    cur[1] = first

        here = live.get(t, ())
        if meter is not None:
            meter.spend(len(states) * (1 + len(here)))
        for key, (mass, first, bind, j, mask, t_first, gap_x, gaps) in states.items():
            add(key, mass, first, bind, j, mask, t_first, gap_x, gaps)  # place nothing at t
            if window is not None and t_first is not None and t - t_first >= window:
                continue
            complete = j < 0 or (mask & comp_mask[j]) == comp_mask[j]
            for i in here:
                bit = 1 << i
                if mask & bit:
                    continue
                cj = comp_of[i]
                e = events[i]
                ngaps = gaps
                if cj == j and not complete:
                    comp = comps[j]
                    pred = takes[j]
                    if pred is not None and not pred(bind, e):
                        continue
                    factor = 1.0
                elif complete and cj == j + 1:
                    comp = comps[cj]
                    pred = begins[cj]
                    if pred is not None and not pred(bind, e):
                        continue
                    factor = 1.0
                    ni = neg_after.get(j)
                    if ni is not None and negs[ni].deferred:
                        ngaps = (*gaps, (ni, gap_x, t))
                    elif ni is not None:
                        check = checks[ni] if negs[ni].order_dependent else None
                        if check is not None:
                            placed = bind.copy()
                            placed[cj] = KleeneCell(e, None, comp.aggs_step(None, e)) if comp.kleene else e
                        for n in negation_candidates[ni]:
                            if check is None or check(placed, n):
                                factor *= 1.0 - _pair_between(n, gap_x, t)
                        if factor == 0.0:
                            continue
                else:
                    continue
                nb = bind.copy()
                if comp.kleene:
                    prev = nb[cj] if cj == j else None
                    nb[cj] = KleeneCell(e, prev, comp.aggs_step(None if prev is None else prev.aggs, e))
                else:
                    nb[cj] = e
                nmask = mask | bit
                ncomplete = (nmask & comp_mask[cj]) == comp_mask[cj]
                nt_first = t if t_first is None else t_first
                nfirst = t if first is None else first
                nmass = mass * prob[i] * factor
                if nmask == full:
                    if final is not None and not final(nb, None):
                        continue
                    for gi, gx, gy in ngaps:
                        check = checks[gi]
                        for n in negation_candidates[gi]:
                            if check is None or check(nb, n):
                                nmass *= 1.0 - _pair_between(n, gx, gy)
                    total += nmass
                    if nmass > 0.0:
                        if best_last is None or t > best_last:
                            best_last = t
                        if best_first is None or nfirst < best_first:
                            best_first = nfirst
                    continue
                ngap = t if ncomplete and cj in neg_after else None
                nkey = (cj, nmask, kleene_ends(nb, cj), nt_first if track_first else None, ngap, ngaps)
                add(nkey, nmass, nfirst, nb, cj, nmask, nt_first, ngap, ngaps)
        due |= due_at.get(t, 0)
        states = {k: v for k, v in new_states.items() if (v[4] & due) == due}
        if not states:
            break
    if total <= 0.0:
        return ZERO
    return Confidence(min(total, 1.0), best_first, best_last)
