"""The evaluator contract: what every evaluator of a compiled query offers, and the registry of evaluators.

Why: the NFA^b runtime, the possible-worlds evaluator and GRETA are fed, advanced, checkpointed, bounded and shed by
code that must not know which one it holds (the pack runner, the pSPICE wrapper, the service's checkpointer, the
Spark job).  Everything they need is here; nothing above reads an evaluator's internals.

- :class:`Evaluator` -- feed events, advance the clock, flush, snapshot/restore to plain data, stats, the replay
  horizon, memory bounds, and what a one-pass feeder (:mod:`engine.onepass`) needs to skip it for events it does
  not read: the types it wants (:meth:`~Evaluator.wants`), when it next has work without an event
  (:meth:`~Evaluator.due`), the shared clock (:meth:`~Evaluator.clock`, :meth:`~Evaluator.set_clock`) and whether it
  refuses events out of time order (``ordered``).  Every evaluator implements it, the composites too.
- :func:`window_horizon` -- the replay horizon of a windowed evaluator (the one formula every evaluator uses).
- :class:`Sheddable` -- the optional hooks of an evaluator that holds runs a load shedder may drop (pSPICE).
- :func:`register` -- a class decorator: the registry (:func:`registered`) is what
  :func:`engine.evaluate.make_matcher` picks from and what ``tests/engine/conformance`` runs, so a new evaluator gets
  the whole conformance suite by registering itself (and being imported by :mod:`engine.evaluate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from contracts.records import MatchRecord
from engine.events import Event
from engine.limits import Limits
from engine.snapshot import EventCodec

__all__ = [
    "NEVER",
    "Clock",
    "Due",
    "Evaluator",
    "EvaluatorKind",
    "OutOfOrderError",
    "Record",
    "Sheddable",
    "Stats",
    "register",
    "registered",
    "window_horizon",
]

#: A match record (docs/semantics.md section 5), or a trend-aggregate record (one per group and window).
Record = MatchRecord


class Clock(NamedTuple):
    """Where the stream is, as a pack's events have moved it (:meth:`Evaluator.advance`).

    ``t``: the point (``Event.t``) of the newest event; ``now``: the largest lower bound (``tlo``) seen; ``umax``: the
    widest interval (``thi - tlo``) seen or allowed, so every unseen event starts at or after ``now - umax``; ``fed``:
    the events seen.  A watermark ``w`` (no event with ``tlo < w`` will come) is the clock ``now = w + umax``.
    """

    t: float
    now: float
    umax: int
    fed: int


START = Clock(-math.inf, -math.inf, 0, 0)

#: ``(safe, fed)``: an evaluator has work without an event of its own once the stream's safe bound
#: (``clock.now - clock.umax``) reaches ``safe`` or its event count (``clock.fed``) reaches ``fed``
#: (:meth:`Evaluator.due`).  A plain tuple: the one-pass feeder asks for it on its hot path.
Due = tuple[float, float]
#: Nothing due until an event of the evaluator's own comes.
NEVER: Due = (math.inf, math.inf)


class OutOfOrderError(ValueError):
    """An event older than one already fed to an evaluator that needs time order (``Evaluator.ordered``; see the
    service's watermark)."""


def window_horizon(last_t: float, window: int | None, umax: int) -> float:
    """Ticks: the replay horizon of an evaluator whose partial matches live at most ``window`` ticks, after stream
    time ``last_t`` under the uncertainty bound ``umax``: a run open at ``last_t`` started less than a window before
    it, and ``2 W + 4 U`` covers the midpoint order of imprecise events on both sides (the rule ``app.checkpoint``
    documents).  No window, or nothing fed: -inf (everything must be replayed)."""
    if last_t == -math.inf or window is None:
        return -math.inf
    return math.floor(last_t) - 2 * window - 4 * umax - 1


@dataclass(frozen=True)
class Stats:
    """What an evaluator holds and has done (for metrics, limits reports and tests)."""

    fed: int  # events fed (and counted through advance)
    matches: int  # records emitted
    runs_alive: int  # partial matches held: runs, buffered events or graph vertices
    shed: int = 0  # partial matches removed by a load shedder
    dropped: int = 0  # partial matches lost to the memory bounds: runs dropped, enumerations cut short or skipped

    @staticmethod
    def total(fed: int, parts: Iterable[Stats]) -> Stats:
        """A composite's statistics (the pack feeder, the shedder): its own event count, its parts' sums."""
        ps = list(parts)
        return Stats(
            fed,
            sum(p.matches for p in ps),
            sum(p.runs_alive for p in ps),
            sum(p.shed for p in ps),
            sum(p.dropped for p in ps),
        )


@runtime_checkable
class Evaluator(Protocol):
    """One compiled query (or a pack of them) evaluated incrementally.

    Records come back in order of completion.  ``feed_many(evs)`` returns exactly the records of ``feed`` on each in
    turn; ``advance(clock)`` the records that feeding events of types this evaluator does not name, up to ``clock``,
    would have returned (a closed window, a safe bound passed), so a pack can route each event only to the queries
    that name its type.  ``snapshot()`` is plain data (:mod:`engine.snapshot`); ``restore(s)`` on an evaluator built
    the same way makes it continue exactly as the one snapshotted would: the same records, in the same order, with
    the same confidences.

    **Fed by a one-pass feeder** (:mod:`engine.onepass`): an evaluator reads the types :meth:`wants` names (None: it
    is fed every event); an event of another type only moves the stream's clock, which the feeder keeps once for all
    and hands over with :meth:`set_clock` just before the evaluator's next ``feed`` (state only: no records, no work).
    Between its own events the evaluator has work only once the clock passes :meth:`due`; the feeder then calls
    :meth:`advance`.  Feeding through a feeder gives the same records, in the same order, as feeding every event to
    every evaluator in turn.  ``ordered``: an event earlier (``Event.t``) than one already fed raises
    :class:`OutOfOrderError` -- also for an event the evaluator does not read, so a feeder checks it on its behalf.
    ``bounds``: it reads the clock's ``now`` and ``umax`` (the interval bounds: its due may be a safe bound); a feeder
    of evaluators that do not may leave them untracked, and their due is never a safe bound.
    """

    name: str
    tick: float  # seconds per tick of the events it takes (its query's): a snapshot's events are rebuilt at it
    ordered: bool
    bounds: bool

    def feed(self, ev: Event) -> list[Record]: ...

    def feed_many(self, events: Iterable[Event]) -> list[Record]: ...

    def advance(self, clock: Clock) -> list[Record]: ...

    def flush(self) -> list[Record]: ...

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]: ...

    def restore(self, state: Mapping[str, Any], codec: EventCodec | None = None) -> None: ...

    def stats(self) -> Stats: ...

    def dropped(self) -> int:
        """``stats().dropped`` alone: partial matches lost to the memory bounds so far, without counting what is held
        (the Spark operator asks every group it feeds, every micro-batch)."""
        ...

    def runs_alive(self) -> int: ...

    def horizon(self, last_t: float, umax: int) -> float:
        """Ticks: after stream time ``last_t`` (uncertainty bound ``umax``) no event with ``thi`` below this can change
        this evaluator's output; replaying the events at or above it into a fresh evaluator rebuilds its future."""
        ...

    def set_limits(self, limits: Limits) -> None: ...

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        """How records are written (None: as they are): ``increments``, a growing run's records after its first as
        the events taken since (docs/semantics.md section 5; off: whole signatures); ``lazy_ids``, Kleene ids built
        when read (records that only meet the alert rules).  An evaluator that writes neither ignores them."""
        ...

    def wants(self) -> frozenset[str] | None:
        """The event types this evaluator must be fed; None: every event (a contiguity strategy, a trend window that
        closes on any event, a subclass that overrides ``feed``)."""
        ...

    def due(self) -> Due:
        """When this evaluator next has work without an event it wants (a closing event or a held record due, a
        buffer to prune, runs to sweep): see :data:`Due`.  Valid until its next ``feed``, ``advance`` or ``restore``."""
        ...

    def clock(self) -> Clock:
        """This evaluator's clock, as far as it keeps one (fields it does not track are at :data:`START`'s)."""
        ...

    def set_clock(self, clock: Clock) -> None:
        """The stream's clock, moved by events this evaluator was not fed (each field only forward): state only, no
        records and no work (that is :meth:`advance`'s); the next ``feed`` acts on it."""
        ...


@runtime_checkable
class Sheddable(Protocol):
    """An evaluator whose partial matches are runs in pools, which pSPICE (:mod:`engine.shedding`) may drop.

    A run exposes ``k`` (the state it waits at), ``kin`` (Kleene elements taken) and ``t_first``.
    """

    name: str
    cq: Any  # the compiled query (the shedder models its states)
    alive: int  # runs in the pools, kept current by every change
    pools: dict[Any, list[Any]]
    fed: int
    now: float

    def visit_keys(self, ev: Event) -> list[Any]: ...

    def pending_work(self, ev: Event) -> int: ...

    def shed(self, drop: Callable[[Any], bool], keys: Iterable[Any] | None = None) -> int: ...

    def observe(self, callback: Callable[..., None] | None) -> None: ...


# ---------------------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class EvaluatorKind:
    """A registered evaluator: its name (what :func:`engine.plan.choose.choose` answers), its class (built as
    ``cls(cq, max_uncertainty)``), and what the conformance suite must know of it.

    ``trends``: it outputs trend aggregates (one record per group and window) instead of matches; ``strategies``: the
    selection strategies it evaluates; ``imprecise``: it gives exact confidences on events with intervals (else it
    orders them by midpoint); ``ordered``: it needs events in time order (``OutOfOrderError`` otherwise), where
    the others take any arrival order within their uncertainty bound.
    """

    name: str
    cls: type
    trends: bool
    strategies: tuple[str, ...]
    imprecise: bool
    ordered: bool


_REGISTRY: dict[str, EvaluatorKind] = {}
C = TypeVar("C", bound=type)

ALL_STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")


def register(
    name: str,
    *,
    trends: bool = False,
    strategies: tuple[str, ...] = ALL_STRATEGIES,
    imprecise: bool = False,
    ordered: bool = True,
) -> Callable[[C], C]:
    """Class decorator: register an :class:`Evaluator` under ``name`` (see :class:`EvaluatorKind`)."""

    def add(cls: C) -> C:
        _REGISTRY[name] = EvaluatorKind(name, cls, trends, strategies, imprecise, ordered)
        return cls

    return add


def registered() -> dict[str, EvaluatorKind]:
    """The registered evaluators by name (import :mod:`engine.evaluate` first: it imports every evaluator)."""
    return dict(_REGISTRY)
