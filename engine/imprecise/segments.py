"""Exact confidence at a cost independent of the intervals' width: a sweep over segments instead of ticks.

Why: the tick DP of :mod:`engine.imprecise.confidence` visits every tick some event of the signature can occupy, so
two events a day wide cost a million steps each (issue 18).  Uniform intervals make the answer a piecewise
polynomial in the endpoints; this module evaluates it with integer arithmetic over the endpoints alone.

**Segments.**  Cut the time line at every interval end of the signature's events (each ``tlo`` and ``thi + 1``).
Inside one segment of ``L`` ticks the set of events whose interval covers a tick does not change.  A world places some
``k`` of those events in the segment, at distinct points, in some order; for a given order there are exactly
``C(L, k)`` ways to choose the points.  So the tick DP's transitions over a whole segment are: place a *sequence* of
live events, one after the other (the same placement rules and predicates as one event per tick: the order is the
time order), then multiply by ``C(L, k)``.  Events due by the segment's end (interval ending there) must be placed.
Counts are integers -- worlds, not probabilities -- and the confidence is one division by the number of worlds at
the end: exact, with no rounding on the way.

**Window.**  ``t_last - t_first < W`` couples the first and last points.  Fix the first point ``s``: the domain is
``[s, s + W - 1]``, the segment ``[s, s]`` holds exactly the first placement, and the count ``f(s)`` is again a sweep.
Between consecutive *critical* values of ``s`` (where ``s``, ``s + 1`` or ``s + W`` crosses an interval end) the cut
structure is fixed and only the two segments touching ``s + 1`` and ``s + W - 1`` change length, linearly in ``s``: so
``f`` is a polynomial of degree at most ``n - 1`` (``n`` events, the first one fixed at ``s``) on each such range, and
``sum f(s)`` over a range is a polynomial of degree ``n`` in its upper end.  It is evaluated exactly from ``n + 1``
values by Lagrange interpolation over the integers.  The number of ranges is ``O(n)``, so the cost is polynomial in
the number of events and independent of both the widths and ``W``.

**Time range.**  The earliest first point is the least ``s`` with ``f(s) > 0``; a non-negative polynomial of degree
``< n`` that vanishes at ``n`` consecutive integers vanishes on the whole range, so the values computed for the sum
already find it.  The latest last point comes the same way from ``g(u)``, the count with the last point fixed at
``u`` (domain ``[u - W + 1, u]``), scanned from the top.

Negation candidates are not handled here (their factor depends on the exact gap between two points): the caller
keeps the tick DP for those, clipped to the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from math import comb
from typing import Any

from engine.events import Event
from engine.plan.predicates import KleeneCell

#: Tests set this to make an interpolation that does not come out an integer (a broken degree bound) fail loudly.
STRICT = False


class WorkExceeded(ArithmeticError):
    """A confidence computation passed its :class:`Meter`'s budget (the caller drops the signature, counted)."""


class Meter:
    """Work spent by confidence computations (state transitions tried), against an optional budget.

    Why: a Kleene set of many mutually overlapping elements under an order-dependent predicate has exponentially many
    placement states; exact is exponential there, so the caller bounds the work and counts what it could not afford
    (found by fuzzing: inputs of 30 overlapping events took minutes per signature)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: float = float("inf")) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise WorkExceeded(f"confidence work over {self.limit:,.0f} transitions")


class InterpolationError(ArithmeticError):
    """A range sum that should be an integer was not: the polynomial degree bound does not hold (a bug)."""


class Sweep:
    """Counts of matching worlds over a domain of ticks, for one signature (see the module doc).

    ``comps`` is the compiled query's components (``None``: a plain chain, one event per component in order, no
    predicates); ``final`` the query's final check.  Transitions are memoized by state key across sweeps: the key
    (component, placed events, first/last element of each Kleene set) decides every predicate, so one representative
    binding per key is enough -- the tick DP merges states on the same key."""

    def __init__(
        self,
        events: Sequence[Event],
        comp_of: Sequence[int],
        comps: Sequence[Any] | None,
        final: Callable[..., Any] | None,
        meter: Meter | None = None,
    ) -> None:
        self.meter = meter if meter is not None else Meter()
        self.events = list(events)
        self.n = len(self.events)
        self.comp_of = list(comp_of)
        self.comps = comps
        self.final = final
        m = (max(comp_of) + 1) if comp_of else 0
        self.comp_mask = [0] * m
        for i, j in enumerate(comp_of):
            self.comp_mask[j] |= 1 << i
        self.full = (1 << self.n) - 1
        self.consts = sorted({e.tlo for e in self.events} | {e.thi + 1 for e in self.events})
        self._moves: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}
        self._final_ok: dict[tuple[Any, ...], bool] = {}
        self.sweeps = 0  # how many sweeps ran (tests and benchmarks read it)

    # ------------------------------------------------------------------ one placement

    def _move(self, key: tuple[Any, ...], bind: list[Any], i: int) -> tuple[Any, ...] | None:
        """Place event ``i`` after the state ``key``: ``(new key, new bind, completes)`` or ``None`` when the
        placement rules or a predicate forbid it."""
        memo = (key, i)
        if memo in self._moves:
            return self._moves[memo]
        j, mask = key[0], key[1]
        out: tuple[Any, Any, bool] | None = None
        cj = self.comp_of[i]
        e = self.events[i]
        nmask = mask | (1 << i)
        if self.comps is None:  # a chain: events in component order, predicates already checked by the caller
            if mask == (1 << i) - 1:
                out = ((i, nmask), None, nmask == self.full)
        else:
            complete = j < 0 or (mask & self.comp_mask[j]) == self.comp_mask[j]
            comp = None
            if cj == j and not complete:
                comp = self.comps[j]
                pred = comp.take
            elif complete and cj == j + 1:
                comp = self.comps[cj]
                pred = comp.begin
            if comp is not None and (pred is None or pred(bind, e)):
                nb = bind.copy()
                if comp.kleene:
                    prev = nb[cj] if cj == j else None
                    nb[cj] = KleeneCell(e, prev, comp.aggs_step(None if prev is None else prev.aggs, e))
                else:
                    nb[cj] = e
                ends = tuple((id(b.first), id(b.event)) for b in nb[: cj + 1] if isinstance(b, KleeneCell))
                nkey = (cj, nmask, ends)
                done = nmask == self.full
                ok: bool | None = True
                if done:
                    ok = self._final_ok.get(nkey)
                    if ok is None:
                        ok = self._final_ok[nkey] = self.final is None or bool(self.final(nb, None))
                if ok:
                    out = (nkey, nb, done)
        self._moves[memo] = out
        return out

    # ------------------------------------------------------------------ one sweep

    def count(self, dlo: int, dhi: int, first_at: bool = False, last_at: bool = False) -> int:
        """Worlds with every point in ``[dlo, dhi]`` in which the signature matches (an integer: point assignments,
        not probabilities); ``first_at``: the first point is ``dlo``; ``last_at``: the last point is ``dhi``."""
        self.sweeps += 1
        if dhi < dlo:
            return 0
        evs = self.events
        n = self.n
        for e in evs:
            if e.thi < dlo or e.tlo > dhi:
                return 0
        cuts = {dlo, dhi + 1}
        for c in self.consts:
            if dlo < c <= dhi:
                cuts.add(c)
        if first_at and dlo < dhi:
            cuts.add(dlo + 1)
        if last_at and dlo < dhi:
            cuts.add(dhi)
        order = sorted(cuts)
        ends = [e.thi if e.thi < dhi else dhi for e in evs]
        init = (-1, 0, ()) if self.comps is not None else (-1, 0)
        states: dict[tuple[Any, ...], list[Any]] = {init: [1, [None] * len(self.comp_mask)]}
        done = 0
        nseg = len(order) - 1
        move = self._move
        for si in range(nseg):
            a = order[si]
            b = order[si + 1] - 1
            length = b - a + 1
            live = [i for i in range(n) if evs[i].tlo <= a and ends[i] >= b]
            due = 0
            for i in range(n):
                if ends[i] <= b:
                    due |= 1 << i
            first_seg = first_at and si == 0
            last_seg = last_at and si == nseg - 1
            new: dict[tuple[Any, ...], list[Any]] = {} if first_seg else {k: [v[0], v[1]] for k, v in states.items()}
            top = min(length, len(live))
            if first_seg or last_seg:
                top = min(top, 1)
            level = states
            k = 0
            spend = self.meter.spend
            while level and k < top:
                k += 1
                spend(len(level) * len(live))
                nxt: dict[tuple[Any, ...], list[Any]] = {}
                finished = 0
                for key, (cnt, bind) in level.items():
                    mask = key[1]
                    for i in live:
                        if (mask >> i) & 1:
                            continue
                        got = move(key, bind, i)
                        if got is None:
                            continue
                        nkey, nb, complete = got
                        if complete:
                            finished += cnt
                            continue
                        cur = nxt.get(nkey)
                        if cur is None:
                            nxt[nkey] = [cnt, nb]
                        else:
                            cur[0] += cnt
                w = comb(length, k)
                if finished and (not last_at or last_seg):
                    done += finished * w
                for nkey, (cnt, nb) in nxt.items():
                    cur = new.get(nkey)
                    if cur is None:
                        new[nkey] = [cnt * w, nb]
                    else:
                        cur[0] += cnt * w
                level = nxt
            states = {key: v for key, v in new.items() if (key[1] & due) == due}
            if not states:
                break
        return done


def _range_starts(points: Sequence[int], lo: int, hi: int) -> list[int]:
    """Sorted starts of the ranges of ``[lo, hi]``: ``lo`` and every point inside."""
    return sorted({lo, *(p for p in points if lo < p <= hi)})


def _first_points(consts: Sequence[int], span: int | None) -> list[int]:
    """Where ``f(s)`` (first point ``s``, domain ``[s, s + span]``, or ``[s, hi]`` without a window) may change
    polynomial: an interval end ``c`` meets ``s`` (``s = c``), ``s + 1`` (``s = c - 1``) or the domain's end
    (``s = c - span``, and ``c - span - 1`` where an upper bound meets it exactly)."""
    out: list[int] = []
    for c in consts:
        out += (c - 1, c) if span is None else (c - span - 1, c - span, c - 1, c)
    return out


def _last_points(consts: Sequence[int], span: int | None) -> list[int]:
    """Where ``g(u)`` (last point ``u``, domain ``[u - span, u]`` or ``[lo, u]``) may change polynomial: an interval
    end ``c`` meets ``u + 1``, ``u``, the point after it, or the domain's start (``u = c + span``)."""
    out: list[int] = []
    for c in consts:
        out += (c - 1, c, c + 1) if span is None else (c - 1, c, c + 1, c + span)
    return out


def _interpolate_sum(values: list[int], length: int) -> int:
    """``sum(f(x) for x in range(length))`` for a polynomial ``f`` of degree ``<= len(values) - 2`` given its first
    values ``f(0), f(1), ...``: Lagrange interpolation of the running sum (degree ``len(values) - 1``), exact."""
    d = len(values) - 1
    prefix = []
    running = 0
    for v in values:
        running += v
        prefix.append(running)
    x = length - 1
    total = Fraction(0)
    for j in range(d + 1):
        num = 1
        den = 1
        for m in range(d + 1):
            if m != j:
                num *= x - m
                den *= j - m
        total += Fraction(prefix[j] * num, den)
    if total.denominator != 1:
        raise InterpolationError(f"range sum {total} is not an integer")
    return int(total)


def _range_sum(f: Callable[[int], int], start: int, end: int, degree: int) -> tuple[int, int | None]:
    """``sum(f(s) for s in [start, end])`` for ``f`` a polynomial of degree ``<= degree`` there, and the least ``s``
    with ``f(s) > 0`` (``None`` if none)."""
    need = degree + 2  # values for the running sum of degree + 1
    length = end - start + 1
    values = [f(start + x) for x in range(min(length, need))]
    first = next((start + x for x, v in enumerate(values) if v > 0), None)
    if first is None:
        return 0, None  # degree + 1 consecutive zeros of a polynomial of degree <= degree: zero throughout
    if length <= need:
        return sum(values), first
    return _interpolate_sum(values, length), first


def _last_positive(g: Callable[[int], int], start: int, end: int, degree: int) -> int | None:
    """The greatest ``u`` in ``[start, end]`` with ``g(u) > 0`` for ``g`` a non-negative polynomial of degree
    ``<= degree`` there."""
    for u in range(end, max(start, end - degree) - 1, -1):
        if g(u) > 0:
            return u
    return None


def segment_count(sweep: Sweep, first_comp: Sequence[int], window: int | None) -> tuple[int, int | None, int | None]:
    """Matching worlds (integer), earliest first point and latest last point, for the events of ``sweep``;
    ``first_comp`` are the indices of the events that can be placed first (the first component's)."""
    evs = sweep.events
    n = sweep.n
    lo = min(e.tlo for e in evs)
    hi = max(e.thi for e in evs)
    s_lo = min(evs[i].tlo for i in first_comp)
    s_hi = max(evs[i].thi for i in first_comp)
    degree = n - 1
    consts = sweep.consts
    if window is None or hi - lo < window:
        total = sweep.count(lo, hi)
        if total == 0:
            return 0, None, None

        def f(s: int) -> int:
            return sweep.count(s, hi, first_at=True)

        def g(u: int) -> int:
            return sweep.count(lo, u, last_at=True)

        span = None
        first = None
        for r0, r1 in _ranges(_range_starts(_first_points(consts, span), s_lo, s_hi), s_hi):
            first = next((s for s in range(r0, min(r1, r0 + degree) + 1) if f(s) > 0), None)
            if first is not None:
                break
    else:
        span = window - 1

        def f(s: int) -> int:
            return sweep.count(s, s + span, first_at=True)

        def g(u: int) -> int:
            return sweep.count(u - span, u, last_at=True)

        total = 0
        first = None
        for r0, r1 in _ranges(_range_starts(_first_points(consts, span), s_lo, s_hi), s_hi):
            part, least = _range_sum(f, r0, r1, degree)
            total += part
            if first is None:
                first = least
        if total == 0:
            return 0, None, None
    last = None
    starts = _range_starts(_last_points(consts, span), lo, hi)
    for r0, r1 in reversed(_ranges(starts, hi)):
        last = _last_positive(g, r0, r1, degree)
        if last is not None:
            break
    return total, first, last


def _ranges(starts: list[int], end: int) -> list[tuple[int, int]]:
    return [(a, (starts[k + 1] - 1) if k + 1 < len(starts) else end) for k, a in enumerate(starts)]


def signature_count(
    cq: Any, assignment: Sequence[Sequence[Event]], meter: Meter | None = None
) -> tuple[int, int | None, int | None, int]:
    """``(matching worlds, earliest first point, latest last point, all worlds)`` of a signature without negation
    candidates, with the query's predicates (``cq`` a :class:`engine.plan.compiler.CompiledQuery`).  Raises
    :class:`WorkExceeded` past the ``meter``'s budget."""
    events: list[Event] = []
    comp_of: list[int] = []
    for j, evs in enumerate(assignment):
        for e in evs:
            events.append(e)
            comp_of.append(j)
    sweep = Sweep(events, comp_of, cq.components, cq.final, meter)
    first_comp = [i for i, j in enumerate(comp_of) if j == 0]
    count, first, last = segment_count(sweep, first_comp, cq.window)
    return count, first, last, _worlds(events)


def chain_count(
    chain: Sequence[Event], window: int | None, meter: Meter | None = None
) -> tuple[int, int | None, int | None, int]:
    """:func:`signature_count` for one event per component whose predicates are known to hold in component order."""
    sweep = Sweep(chain, list(range(len(chain))), None, None, meter)
    count, first, last = segment_count(sweep, [0], window)
    return count, first, last, _worlds(chain)


def _worlds(events: Sequence[Event]) -> int:
    worlds = 1
    for e in events:
        worlds *= e.thi - e.tlo + 1
    return worlds
