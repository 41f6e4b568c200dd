"""The thin integration: :class:`SheddingMatcher` feeds a pack's matchers and keeps a latency bound by shedding.

Per event (the paper's architecture, digest-pspice section 2):

1. **overload detector** -- with the event's queueing latency (``now - arrival``) the :class:`LatencyModel` says how
   many runs to drop: globally (Algorithm 1) and, for this event's own partition, the per-event guard;
2. **load shedder** -- the victims are chosen by utility level in one O(n) pass over the runs
   (:mod:`engine.shedding.shedder`) and removed through :meth:`engine.evaluator.Sheddable.shed`;
3. the event is processed, timed (or costed by a cost model, :class:`Costs`), and on one event in ``observe_every``
   the run transitions are observed (:meth:`engine.evaluator.Sheddable.observe`) for the **model builder**, whose
   rebuilds (:class:`QueryModel`) are advanced a slice per event.

The wrapped evaluators are any :class:`engine.evaluator.Evaluator`; those that are also
:class:`engine.evaluator.Sheddable` (the NFA^b runtime: runs in pools) are shed, the others (the possible-worlds
evaluator, GRETA) are fed and their time counted, never shed.  With shedding disabled the wrapper only feeds.
Without ``arrival`` (a replay that rebuilds state) nothing is shed.  The wrapper is an Evaluator itself; its snapshot
is its evaluators' (the learnt models and latency fits are not state: a restored wrapper learns them again, and what
it sheds depends on measured time anyway).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.evaluator import NEVER, START, Clock, Due, Evaluator, Record, Sheddable, Stats
from engine.events import Event
from engine.limits import Limits
from engine.shedding.config import SheddingConfig
from engine.shedding.latency import LatencyModel
from engine.shedding.markov import QueryModel
from engine.shedding.shedder import QueryLevels, compute_levels, remove, select_pspice, select_random
from engine.snapshot import EventCodec

__all__ = ["Costs", "SheddingMatcher"]


class Costs(Protocol):
    """Deterministic service times in place of measured ones (tests and benchmarks: ``benchmarks.research``)."""

    def processing(self, work: int) -> float: ...

    def shedding(self, scanned: int) -> float: ...


perf_counter = time.perf_counter


@dataclass
class _Query:
    matcher: Any
    model: QueryModel
    weight: float
    observer: Callable[..., None]
    shed_runs: int = 0

    @property
    def alive(self) -> int:
        """Runs alive (pSPICE's n_pm for this query): the matcher keeps the count with every change to its pools."""
        alive: int = self.matcher.alive
        return alive


class SheddingMatcher:
    """One or more matchers (a pack's queries) behind a latency bound; see the module docstring.

    ``feeder``: an evaluator over the same ``matchers`` that feeds them (a pack runner's one-pass
    :class:`engine.onepass.PackFeeder`: each event only to the queries naming its type, the same records); default:
    every event to every matcher in turn.  ``clock`` must be on the same base as the ``arrival`` times given to
    :meth:`feed` (``time.time`` for Kafka timestamps).  ``cost_model`` replaces measured times by deterministic ones
    (tests, benchmarks).  ``sync_rebuild``
    finishes a utility-table rebuild at once instead of over the following events.  ``schedule`` (event index ->
    ``[(scope, runs)]``, scope ``"global"`` or ``"event"``) replaces the detector by fixed shedding amounts, and
    ``record_schedule`` logs the amounts shed in that form: together they compare victim choices at equal amounts.
    """

    name = "shedding"

    def __init__(
        self,
        matchers: Any | Sequence[Any],
        config: SheddingConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        cost_model: Costs | None = None,
        sync_rebuild: bool = False,
        schedule: Mapping[int, list[tuple[str, int]]] | None = None,
        record_schedule: bool = False,
        feeder: Evaluator | None = None,
    ) -> None:
        self.matchers: list[Any] = list(matchers) if isinstance(matchers, (list, tuple)) else [matchers]
        self.feeder = feeder
        self.config = config = config or SheddingConfig()
        self.enabled = config.enabled
        self.policy = config.policy
        self.wall = clock  # wall-clock seconds (the arrival times' base); clock() is the stream's
        self.cost = cost_model
        self.nlevels = config.utility_levels
        self.observe_every = config.observe_every
        self.rng = random.Random(config.seed)
        self.latency = LatencyModel(config.latency_bound, config.safety_fraction, config.hysteresis)
        self.queries: list[_Query] = []
        for m in self.matchers:
            if not isinstance(m, Sheddable):
                continue
            model = QueryModel(
                m.cq,
                buckets=config.window_buckets,
                drift_threshold=config.drift_threshold,
                check_every=config.check_every,
                min_observations=config.min_observations,
                sync=sync_rebuild,
            )
            self.queries.append(_Query(m, model, config.weight(m.name), model.observer(_now_of(m))))
        self._sheddable = [q.matcher for q in self.queries]
        self._levels: list[QueryLevels] = []
        self._relevel()
        self._type_utility = self._event_type_utility()
        self._forced = dict(schedule) if schedule is not None else None
        self.schedule_log: list[tuple[int, str, int]] | None = [] if record_schedule else None
        # counters and the last event's figures
        self.events = 0
        self.shed_events = 0
        self.shed_calls = 0
        self.processing_seconds = 0.0
        self.shedding_seconds = 0.0
        self.overhead_seconds = 0.0  # detector + observation + model maintenance, measured
        self.last_processing_seconds = 0.0
        self.last_shedding_seconds = 0.0
        self._last_lq = 0.0  # the last event's queueing latency (the latency estimate is computed for metrics only)
        self._building = False
        self._simulation = 0.0  # time the cost model's bookkeeping took (left out of overhead_seconds)
        # the quick test's cached region (see _cache_quick_test); empty until the first full test passes
        self._quick_runs = -1
        self._quick_queueing = -1.0
        self._quick_version = -1

    # ------------------------------------------------------------------ public

    @property
    def shed_runs(self) -> int:
        """Partial matches shed so far, all queries."""
        return sum(q.shed_runs for q in self.queries)

    def runs_alive(self) -> int:
        return sum(m.runs_alive() for m in self.matchers)

    @property
    def runs_alive_sheddable(self) -> int:
        """Runs of the sheddable matchers (pSPICE's n_pm), as the matchers keep count: no walk over the pools."""
        return sum(m.alive for m in self._sheddable)

    def flush(self) -> list[Record]:
        if self.feeder is not None:
            return self.feeder.flush()
        out: list[Record] = []
        for m in self.matchers:
            out.extend(m.flush())
        return out

    # ------------------------------------------------------------------ the rest of the evaluator contract

    def feed_many(self, events: Iterable[Event]) -> list[Record]:
        """``feed`` each event (without an arrival time: nothing is shed)."""
        out: list[Record] = []
        for ev in events:
            out.extend(self.feed(ev))
        return out

    def advance(self, clock: Clock) -> list[Record]:
        if self.feeder is not None:
            return self.feeder.advance(clock)
        out: list[Record] = []
        for m in self.matchers:
            out.extend(m.advance(clock))
        return out

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        """The wrapped evaluators' state (through the feeder when there is one) and the counters."""
        events = EventCodec(self.tick) if codec is None else codec
        inner = (
            [self.feeder.snapshot(events)] if self.feeder is not None else [m.snapshot(events) for m in self.matchers]
        )
        out: dict[str, Any] = {
            "kind": "shedding",
            "inner": inner,
            "events_seen": self.events,
            "shed_events": self.shed_events,
            "shed_calls": self.shed_calls,
            "shed_runs": [q.shed_runs for q in self.queries],
        }
        if codec is None:
            out["events"] = events.table()
        return out

    def restore(self, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        from engine.snapshot import open_codec

        events = open_codec(state, codec, self.tick)
        targets = [self.feeder] if self.feeder is not None else self.matchers
        for m, snap in zip(targets, state["inner"], strict=True):
            m.restore(snap, events)
        self.events = state["events_seen"]
        self.shed_events = state["shed_events"]
        self.shed_calls = state["shed_calls"]
        for q, n in zip(self.queries, state["shed_runs"], strict=True):
            q.shed_runs = n

    def stats(self) -> Stats:
        return Stats.total(self.events, (m.stats() for m in self.matchers))

    def dropped(self) -> int:
        return sum(m.dropped() for m in self.matchers)

    def horizon(self, last_t: float, umax: int) -> float:
        return min((m.horizon(last_t, umax) for m in self.matchers), default=float("inf"))

    def set_limits(self, limits: Limits) -> None:
        for m in self.matchers:
            m.set_limits(limits)

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        for m in self.matchers:
            m.set_output(increments=increments, lazy_ids=lazy_ids)

    # ------------------------------------------------------------------ fed by a one-pass feeder (engine.onepass)
    # Through the feeder when there is one; else the matchers, each fed every event (_feed_all), keep their own.

    @property
    def ordered(self) -> bool:
        return any(m.ordered for m in self.matchers)

    @property
    def tick(self) -> float:
        tick: float = self.matchers[0].tick if self.matchers else 0.1
        return tick

    @property
    def bounds(self) -> bool:
        return any(m.bounds for m in self.matchers)

    def wants(self) -> frozenset[str] | None:
        """Every event: it is counted (a shedder's observation period and event-dropping baseline count them all)."""
        return None

    def due(self) -> Due:
        if self.feeder is not None:
            return self.feeder.due()
        return NEVER

    def clock(self) -> Clock:
        if self.feeder is not None:
            return self.feeder.clock()
        clocks = [m.clock() for m in self.matchers]
        return Clock(
            max((c.t for c in clocks), default=START.t),
            max((c.now for c in clocks), default=START.now),
            max((c.umax for c in clocks), default=START.umax),
            max((c.fed for c in clocks), default=START.fed),
        )

    def set_clock(self, clock: Clock) -> None:
        for m in [self.feeder] if self.feeder is not None else self.matchers:
            m.set_clock(clock)

    def _feed_all(self, ev: Event) -> list[Record]:
        if self.feeder is not None:
            return self.feeder.feed(ev)
        out: list[Record] = []
        for m in self.matchers:
            out.extend(m.feed(ev))
        return out

    def feed(self, ev: Event, arrival: float | None = None, now: float | None = None) -> list[Record]:
        """Process one event that arrived at ``arrival`` (clock seconds; None: never shed for it), dequeued at ``now``
        (default: ``clock()``); return its match records, in the order of the matchers."""
        if not self.enabled:
            return self._feed_all(ev)
        t_in = perf_counter()
        sh0 = self.shedding_seconds
        i = self.events
        self.events = i + 1
        every = self.observe_every
        phase = i % every
        observe = phase == 0
        fit = phase == every // 2 or every == 1  # fitted events carry no observer overhead
        qs = self.queries
        lat = self.latency
        lq = -1.0
        if arrival is not None and qs:
            lat.observe_arrival(arrival)
            lq = (now if now is not None else self.wall()) - arrival
            if lq < 0.0:
                lq = 0.0
        n_pm = 0
        for m in self._sheddable:
            n_pm += m.alive
        shed_secs = 0.0
        drop_event = False
        if lq >= 0.0:
            if self._forced is not None:
                for scope, rho in self._forced.get(i, ()):
                    shed_secs += self._shed(rho, ev, scope == "event", i, scope)[1]
            elif n_pm > self._quick_runs or lq > self._quick_queueing or self._quick_version != lat.version:
                drop_event, shed_secs, n_pm = self._detect(ev, i, lq, n_pm)
            else:
                self._last_lq = lq
        if drop_event:
            self.shed_events += 1
            self._account(t_in, sh0, 0.0, shed_secs, 0.0)
            return []
        if fit:
            work = sum([q.matcher.pending_work(ev) for q in qs])
        elif self.cost is not None:  # the cost model's own bookkeeping: simulation, not overhead
            tw = perf_counter()
            work = sum([q.matcher.pending_work(ev) for q in qs])
            self._simulation += perf_counter() - tw
        else:
            work = 0
        if observe:
            for q in qs:
                q.matcher.observe(q.observer)
        feeder = self.feeder
        t0 = perf_counter()
        out = feeder.feed(ev) if feeder is not None else self._feed_all(ev)
        measured = perf_counter() - t0
        if observe:
            for q in qs:
                q.matcher.observe(None)
                q.model.note_event(ev.t, q.matcher.fed, q.alive)
        secs = self.cost.processing(work) if self.cost is not None else measured
        if fit:
            lat.observe(n_pm, work, secs)
        if observe or self._building:  # statistics change on observed events only
            swapped = False
            self._building = False
            for q in qs:
                swapped |= q.model.tick()
                self._building |= q.model.building
            if swapped:
                self._relevel()
        self._account(t_in, sh0, measured, shed_secs, secs)
        return out

    def metrics(self) -> dict[str, Any]:
        """Counters and gauges for the service's metrics and the dashboard."""
        return {
            "enabled": self.enabled,
            "policy": self.policy,
            "latency_bound_ms": self.config.latency_bound_ms,
            "events": self.events,
            "shed_runs": self.shed_runs,
            "shed_runs_by_query": {q.matcher.name: q.shed_runs for q in self.queries},
            "shed_events": self.shed_events,
            "shed_calls": self.shed_calls,
            "runs_alive": self.runs_alive_sheddable,
            "latency_estimate_ms": 1000.0 * self.latency.estimate(self._last_lq, self.runs_alive_sheddable),
            "processing_seconds": self.processing_seconds,
            "shedding_seconds": self.shedding_seconds,
            "overhead_seconds": self.overhead_seconds,
            "model_rebuilds": {q.matcher.name: q.model.rebuilds for q in self.queries},
            "model_observations": {q.matcher.name: q.model.observations for q in self.queries},
            "latency_fit": {"processing": self.latency.processing.model, "per_event": self.latency.per_event.model},
        }

    # ------------------------------------------------------------------ internals

    def _detect(self, ev: Event, i: int, lq: float, n_pm: int) -> tuple[bool, float, int]:
        """The overload detector: shed (or, for E-BL, decide to drop the event); ``(drop event, seconds, n_pm)``."""
        lat = self.latency
        self._last_lq = lq
        if not lat.ready:
            return False, 0.0, n_pm
        # the quick test: neither the mean event (Algorithm 1) nor one stepping every run (the guard) can break it
        slack = lat.bound - lat.safety - lq - lat.shedding.predict(n_pm)
        if lat.processing.predict(n_pm) <= slack and lat.per_event.predict(n_pm) <= slack:
            self._cache_quick_test(n_pm)
            return False, 0.0, n_pm
        shed_secs = 0.0
        rho = lat.global_drop(lq, n_pm)
        if rho:
            if self.policy == "random_events":
                if self._coin(ev):
                    return True, 0.0, n_pm
            else:
                removed, secs = self._shed(rho, ev, False, i, "global")
                n_pm -= removed
                lq += secs
                shed_secs += secs
        # the per-event guard, only when even an event stepping every run might not fit
        if lq + lat.per_event.predict(n_pm) + lat.shedding.predict(n_pm) + lat.safety > lat.bound:
            work = sum(q.matcher.pending_work(ev) for q in self.queries)
            rho = lat.event_drop(lq, work)
            if rho:
                if self.policy == "random_events":
                    return True, shed_secs, n_pm
                removed, secs = self._shed(rho, ev, True, i, "event")
                n_pm -= removed
                shed_secs += secs
        return False, shed_secs, n_pm

    def _cache_quick_test(self, n_pm: int) -> None:
        """Remember, until a fit learns, a region of (runs alive, queueing latency) where the quick test passes.

        Each fit is non-decreasing on the counts it has seen and, beyond them, monotone one way or the other
        (:class:`engine.shedding.latency.OnlineFit`), so its largest value for ``n <= 2 n_pm + 64`` is at that
        bound or at the largest count seen.  Any such ``n`` with ``lq`` below ``bound - safety - g - max(f, f_e)``
        (those largest values, less a rounding margin) passes the test :meth:`_detect` makes: most events then skip
        three predictions."""
        lat = self.latency
        runs = 2 * n_pm + 64

        def most(fit: Any) -> float:
            top: float = max(fit.predict(runs), fit.predict(min(runs, fit.x_max)))
            return top

        cost = max(most(lat.processing), most(lat.per_event)) + most(lat.shedding)
        self._quick_runs = runs
        self._quick_queueing = lat.bound - lat.safety - cost - 1e-9 * lat.bound
        self._quick_version = lat.version

    def _shed(self, rho: int, ev: Event, local: bool, i: int, scope: str) -> tuple[int, float]:
        """Drop ``rho`` runs (of the pools ``ev`` visits when ``local``); ``(removed, seconds)``."""
        groups = [
            (q.matcher, lv, q.matcher.visit_keys(ev) if local else None)
            for q, lv in zip(self.queries, self._levels, strict=True)
        ]
        t0 = perf_counter()
        if self.policy == "pspice":
            victims, scanned = select_pspice(groups, rho, ev.t, self.nlevels)
        else:
            victims, scanned = select_random(groups, rho, self.rng)
        removed = remove(groups, victims)
        measured = perf_counter() - t0
        secs = self.cost.shedding(scanned) if self.cost is not None else measured
        self.latency.observe_shedding(scanned, secs)
        total = 0
        for q, n in zip(self.queries, removed, strict=True):
            q.shed_runs += n
            total += n
        self.shed_calls += 1
        self.shedding_seconds += measured
        if self.schedule_log is not None and total:
            self.schedule_log.append((i, scope, total))
        return total, secs

    def _coin(self, ev: Event) -> bool:
        """E-BL's weighted sampling: drop an event with probability ``u_min / u_type`` (type utility = its weighted
        repetitions in the patterns; a type no query names is always dropped)."""
        u = self._type_utility.get(ev.type, 0.0)
        return u <= 0.0 or self.rng.random() < self._u_min / u

    def _event_type_utility(self) -> dict[str, float]:
        util: dict[str, float] = {}
        for m in self.matchers:
            cq = getattr(m, "cq", None)
            if cq is None:
                continue
            w = self.config.weight(m.name)
            for c in cq.ast.components:
                util[c.type] = util.get(c.type, 0.0) + w
        self._u_min = min(util.values(), default=1.0)
        return util

    def _relevel(self) -> None:
        self._levels = compute_levels([(q.model, q.weight) for q in self.queries], self.nlevels)

    def _account(self, t_in: float, sh0: float, measured: float, shed_secs: float, secs: float) -> None:
        """Book one event: the figures the replay harness reads, and measured processing / shedding / the rest."""
        self.last_processing_seconds = secs
        self.last_shedding_seconds = shed_secs
        self.processing_seconds += measured
        self.overhead_seconds += perf_counter() - t_in - measured - (self.shedding_seconds - sh0) - self._simulation
        self._simulation = 0.0


def _now_of(m: Any) -> Callable[[], float]:
    return lambda: m.now
