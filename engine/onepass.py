"""One pass over several evaluators under one clock: the engine's one feed loop.

Why: a Hadoop stream is mostly events a given query does not read (the Ganglia metrics, other jobs' phases); feeding
each event to every evaluator costs a method call per evaluator and event for nothing.  :class:`PackFeeder` feeds an
event only to the evaluators that want its type (:meth:`engine.evaluator.Evaluator.wants`), keeps the stream's clock
once for all of them, hands it over just before an evaluator's next event (``set_clock``) and wakes an evaluator
(``advance``) only when the clock passes the moment it says it next has work (``due``).  It uses nothing but the
:class:`~engine.evaluator.Evaluator` contract, and gives the records of feeding every event to every evaluator in
turn, in that order.  It is the loop of every evaluator's own ``feed_many`` too (:func:`feed_alone`), and itself an
Evaluator (the pack runner's, the shedder's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.evaluator import NEVER, Clock, Due, Evaluator, OutOfOrderError, Record, Stats
from engine.events import Event
from engine.limits import Limits
from engine.snapshot import EventCodec, check_header, dec_float, enc_float, header, open_codec

__all__ = ["PackFeeder", "feed_alone"]

NEG_INF = -math.inf
#: ``_new(Clock, (t, now, umax, fed))``: a Clock at half the cost of ``Clock(...)``, once per event handed over.
_new = tuple.__new__


class PackFeeder:
    """Feed one stream to several evaluators (a query pack) in one pass, each event only to the evaluators that want
    its type: the same records, in the same order, as feeding every event to every evaluator in turn.

    The feeder keeps the clock (:class:`~engine.evaluator.Clock`: the last event's time, the largest lower bound,
    the widest interval, the events fed) and, per evaluator, the event count at which it last had that clock
    (``synced``) and its :meth:`~engine.evaluator.Evaluator.due`.  A due is read again only when it may have changed
    and matters: after an evaluator was fed, at the first event that does not go to it.  ``max_uncertainty``: the
    widest interval the stream may carry (the clock's ``umax`` from the start)."""

    name = "pack"

    def __init__(
        self, matchers: Sequence[Evaluator], max_uncertainty: int = 0, *, like: PackFeeder | None = None
    ) -> None:
        self.matchers: list[Evaluator] = list(matchers)
        n = len(self.matchers)
        if like is not None and len(like.matchers) == n:
            # ``like``: a feeder of evaluators of the same queries, built the same way (PackRunner.fresh: the Spark
            # operator builds one per new group, thousands a second): what depends on the queries alone is taken
            # from it, and its routes -- the same for the same wants -- shared.
            self.wanted: list[frozenset[str] | None] = like.wanted
            self.always: tuple[int, ...] = like.always
            self.routes: dict[str, tuple[int, ...]] = like.routes
            self.ordered: bool = like.ordered
            self.bounds: bool = like.bounds
            self.tick: float = like.tick
            self.check_order: bool = like.check_order
        else:
            self.wanted = [m.wants() for m in self.matchers]
            self.always = tuple(i for i in range(n) if self.wanted[i] is None)
            self.routes = {}
            # An evaluator that needs time order refuses an older event even when it does not read its type: the
            # feeder refuses it on that evaluator's behalf (those fed every event refuse it themselves).
            self.ordered = any(m.ordered for m in self.matchers)
            self.bounds = any(m.bounds for m in self.matchers)
            self.tick = self.matchers[0].tick if self.matchers else 0.1
            self.check_order = any(m.ordered and w is not None for m, w in zip(self.matchers, self.wanted, strict=True))
        self.t, self.now, self.fed = NEG_INF, NEG_INF, 0
        self.umax: int = max([max_uncertainty, *(m.clock().umax for m in self.matchers)])
        self.synced = [-1] * n  # the feeder's ``fed`` when each last had its clock (-1: hand it over first)
        self.due_safe = [math.inf] * n
        self.due_fed = [math.inf] * n
        self.lo_safe = self.lo_fed = math.inf  # the smallest of each
        self.stale: tuple[int, ...] = ()  # evaluators fed (a route) since their due was last read
        self._refresh(range(n))

    # ------------------------------------------------------------------ the clock and the dues

    def _route(self, etype: str) -> tuple[int, ...]:
        route = set(self.always)
        route.update(i for i, w in enumerate(self.wanted) if w is not None and etype in w)
        out = tuple(sorted(route))
        # One tuple per distinct route: consecutive events of two types with the same route leave ``stale`` alone.
        for known in self.routes.values():
            if known == out:
                out = known
                break
        self.routes[etype] = out
        return out

    def _refresh(self, which: Iterable[int]) -> None:
        ms, ds, df = self.matchers, self.due_safe, self.due_fed
        for i in which:
            ds[i], df[i] = ms[i].due()
        self.lo_safe = min(ds, default=math.inf)
        self.lo_fed = min(df, default=math.inf)

    def clock(self) -> Clock:
        return Clock(self.t, self.now, self.umax, self.fed)

    def set_clock(self, clock: Clock) -> None:
        """Move the pack's clock (each field only forward); its evaluators get it before their next event."""
        self.t = max(self.t, clock.t)
        self.now = max(self.now, clock.now)
        self.umax = max(self.umax, clock.umax)
        self.fed = max(self.fed, clock.fed)

    def wants(self) -> frozenset[str] | None:
        if self.always:
            return None
        return frozenset().union(*(w for w in self.wanted if w is not None))

    def due(self) -> Due:
        if self.stale:
            self._refresh(self.stale)
            self.stale = ()
        return (self.lo_safe, self.lo_fed) if self.matchers else NEVER

    # ------------------------------------------------------------------ feeding

    def feed(self, ev: Event) -> list[Record]:
        return self.feed_many((ev,))

    def feed_many(self, events: Iterable[Event]) -> list[Record]:
        if len(self.matchers) == 1:
            return self._feed_one(events)
        out: list[Record] = []
        ms = self.matchers
        routes = self.routes
        synced = self.synced
        due_safe, due_fed = self.due_safe, self.due_fed
        check_order = self.check_order
        t_last, now, umax, fed = self.t, self.now, self.umax, self.fed
        lo_safe, lo_fed = self.lo_safe, self.lo_fed
        stale = self.stale
        for ev in events:
            route = routes.get(ev.type)
            if route is None:
                route = self._route(ev.type)
            t = ev.t
            if check_order and t < t_last:
                self.t, self.now, self.umax, self.fed, self.stale = t_last, now, umax, fed, stale
                self.lo_safe, self.lo_fed = lo_safe, lo_fed
                raise OutOfOrderError(f"event {ev.id} at tick {t} arrived after tick {t_last}")
            here: list[tuple[int, list[Record]]] | None = None  # (evaluator index, records) of this event
            for i in route:  # the evaluators that want the type: the clock before this event, then the event
                m = ms[i]
                if synced[i] != fed:
                    m.set_clock(_new(Clock, (t_last, now, umax, fed)))
                got = m.feed(ev)
                synced[i] = fed + 1
                if got:
                    if here is None:
                        here = []
                    here.append((i, got))
            tlo = ev.tlo
            if tlo > now:
                now = float(tlo)
            width = ev.thi - tlo
            if width > umax:
                umax = width
            t_last = t
            fed += 1
            if stale is not route:  # evaluators fed before but not now: their dues matter from here
                for i in stale:  # (the smallest dues kept as they change: no pass over every evaluator's)
                    if i not in route:
                        ds, df = ms[i].due()
                        old = due_safe[i]
                        due_safe[i] = ds
                        if ds < lo_safe:
                            lo_safe = ds
                        elif old == lo_safe and ds != old:
                            lo_safe = min(due_safe)
                        old = due_fed[i]
                        due_fed[i] = df
                        if df < lo_fed:
                            lo_fed = df
                        elif old == lo_fed and df != old:
                            lo_fed = min(due_fed)
                stale = route
            safe = now - umax
            if safe >= lo_safe or fed >= lo_fed:
                self.lo_safe, self.lo_fed = lo_safe, lo_fed
                if stale:  # read the dues of the evaluators just fed too: the smallest ones are then exact
                    self._refresh(stale)
                    stale = ()
                    lo_safe, lo_fed = self.lo_safe, self.lo_fed
                if safe >= lo_safe or fed >= lo_fed:
                    clock = Clock(t_last, now, umax, fed)
                    woke = []
                    for i, m in enumerate(ms):
                        if safe >= due_safe[i] or fed >= due_fed[i]:
                            got = m.advance(clock)
                            synced[i] = fed
                            woke.append(i)
                            if got:
                                if here is None:
                                    here = []
                                here.append((i, got))
                    self._refresh(woke)
                    lo_safe, lo_fed = self.lo_safe, self.lo_fed
                    if here is not None:
                        here.sort(key=_first)  # the records of one event in pack order
            if here is not None:
                for _, got in here:
                    out.extend(got)
        self.t, self.now, self.umax, self.fed, self.stale = t_last, now, umax, fed, stale
        self.lo_safe, self.lo_fed = lo_safe, lo_fed
        return out

    def _feed_one(self, events: Iterable[Event]) -> list[Record]:
        """:meth:`feed_many` for one evaluator (a one-query pack, an evaluator's own ``feed_many``): the same steps
        without routes and records to order -- its due read only at an event it does not want, after one it did."""
        out: list[Record] = []
        m = self.matchers[0]
        feed = m.feed
        wanted = self.wanted[0]
        t_last, now, umax, fed = self.t, self.now, self.umax, self.fed
        synced = self.synced[0]
        if wanted is None:  # every event to it: it keeps its own clock, nothing is ever due between its events
            if synced != fed:
                m.set_clock(_new(Clock, (t_last, now, umax, fed)))
            for ev in events:
                got = feed(ev)
                if got:
                    out.extend(got)
                tlo = ev.tlo
                if tlo > now:
                    now = float(tlo)
                if ev.thi - tlo > umax:
                    umax = ev.thi - tlo
                t_last = ev.t
                fed += 1
            self._keep_one(t_last, now, umax, fed, fed, bool(self.stale) or fed != self.fed)
            return out
        check_order = self.check_order
        bounds = m.bounds  # it reads the clock's now and umax: track them (else they stay as they are)
        due_safe, due_fed = self.due_safe[0], self.due_fed[0]
        stale = bool(self.stale)
        # Per event it does not want: is ``now - umax >= due_safe or fed >= due_fed``, as ``now >= wake_at or fed >=
        # fed_at``; after an event it took, ``fed_at`` is the next count, so that its due is read there first.
        wake_at = due_safe + umax
        fed_at = fed + 1 if stale else due_fed
        for ev in events:
            if ev.type in wanted:  # (an evaluator that needs order refuses an older event itself)
                if synced != fed:
                    m.set_clock(_new(Clock, (t_last, now, umax, fed)))
                got = feed(ev)
                if got:
                    out.extend(got)
                if bounds:
                    tlo = ev.tlo
                    if tlo > now:
                        now = float(tlo)
                    if ev.thi - tlo > umax:
                        umax = ev.thi - tlo
                t_last = ev.t
                fed += 1
                synced = fed
                stale = True
                fed_at = fed + 1
                continue
            t = ev.t
            if t < t_last and check_order:
                self._keep_one(t_last, now, umax, fed, synced, stale)
                raise OutOfOrderError(f"event {ev.id} at tick {t} arrived after tick {t_last}")
            t_last = t
            fed += 1
            if bounds:
                tlo = ev.tlo
                if tlo > now:
                    now = float(tlo)
                if ev.thi - tlo > umax:
                    umax = ev.thi - tlo
                    wake_at = due_safe + umax
                if now < wake_at and fed < fed_at:
                    continue
            elif fed < fed_at:
                continue
            if stale:
                due_safe, due_fed = m.due()
                stale = False
            if now - umax >= due_safe or fed >= due_fed:
                got = m.advance(Clock(t_last, now, umax, fed))
                synced = fed
                due_safe, due_fed = m.due()
                if got:
                    out.extend(got)
            wake_at = due_safe + umax
            fed_at = due_fed
        self.due_safe[0], self.due_fed[0] = due_safe, due_fed
        self._keep_one(t_last, now, umax, fed, synced, stale)
        return out

    def _keep_one(self, t_last: float, now: float, umax: int, fed: int, synced: int, stale: bool) -> None:
        self.t, self.now, self.umax, self.fed = t_last, now, umax, fed
        self.synced[0] = synced
        self.stale = (0,) if stale else ()
        self.lo_safe, self.lo_fed = self.due_safe[0], self.due_fed[0]

    def advance(self, clock: Clock) -> list[Record]:
        """Every evaluator's clock to ``clock`` (the pack's, if later): what each then has due, in pack order."""
        self.set_clock(clock)
        mine = self.clock()
        out: list[Record] = []
        for i, m in enumerate(self.matchers):
            out.extend(m.advance(mine))
            self.synced[i] = self.fed
        self._refresh(range(len(self.matchers)))
        self.stale = ()
        return out

    def flush(self) -> list[Record]:
        mine = self.clock()
        out: list[Record] = []
        for i, m in enumerate(self.matchers):
            if self.synced[i] != self.fed:
                m.set_clock(mine)
                self.synced[i] = self.fed
            out.extend(m.flush())
        self._refresh(range(len(self.matchers)))
        self.stale = ()
        return out

    def sync(self) -> None:
        """Hand the pack's clock to every evaluator that has not got it (their own clocks then read the stream's)."""
        mine = self.clock()
        for i, m in enumerate(self.matchers):
            if self.synced[i] != self.fed:
                m.set_clock(mine)
                self.synced[i] = self.fed

    # ------------------------------------------------------------------ the rest of the evaluator contract

    def runs_alive(self) -> int:
        return sum(m.runs_alive() for m in self.matchers)

    def stats(self) -> Stats:
        return Stats.total(self.fed, (m.stats() for m in self.matchers))

    def dropped(self) -> int:
        return sum(m.dropped() for m in self.matchers)

    def horizon(self, last_t: float, umax: int) -> float:
        return min((m.horizon(last_t, umax) for m in self.matchers), default=math.inf)

    def set_limits(self, limits: Limits) -> None:
        for m in self.matchers:
            m.set_limits(limits)

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        for m in self.matchers:
            m.set_output(increments=increments, lazy_ids=lazy_ids)

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        """The pack's clock and each evaluator's snapshot, over one event table (shared events stored once)."""
        events = EventCodec(self.tick) if codec is None else codec
        out = header("pack", self.name)
        out["clock"] = [enc_float(self.t), enc_float(self.now), self.umax, self.fed]
        out["evaluators"] = [m.snapshot(events) for m in self.matchers]
        if codec is None:
            out["events"] = events.table()
        return out

    def restore(self, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        check_header(state, "pack", self.name)
        events = open_codec(state, codec, self.tick)
        if len(state["evaluators"]) != len(self.matchers):
            raise ValueError(f"a snapshot of {len(state['evaluators'])} evaluators cannot restore {len(self.matchers)}")
        for m, snap in zip(self.matchers, state["evaluators"], strict=True):
            m.restore(snap, events)
        last_t, now, umax, fed = state["clock"]
        self.t, self.now, self.umax, self.fed = dec_float(last_t), dec_float(now), umax, fed
        self.synced = [-1] * len(self.matchers)
        self.stale = ()
        self._refresh(range(len(self.matchers)))

    @property
    def last_t(self) -> float:
        """The last event's time (the clock's ``t``; the name older callers read)."""
        return self.t


def _first(item: tuple[int, list[Record]]) -> int:
    return item[0]


def feed_alone(m: Evaluator, events: Iterable[Event]) -> list[Record]:
    """``m.feed`` on each event in turn, through the one feed loop: an event ``m`` does not want only moves the
    clock, which ``m`` gets before its next event and at the end (an evaluator's ``feed_many``)."""
    feeder = PackFeeder((m,))
    feeder.set_clock(m.clock())
    feeder.synced[0] = feeder.fed  # it has its own clock
    try:
        return feeder.feed_many(events)
    finally:
        feeder.sync()
