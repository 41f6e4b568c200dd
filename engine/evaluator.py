"""The evaluator contract: what every evaluator of a compiled query offers, and the registry of evaluators.

Why: the NFA^b runtime, the possible-worlds evaluator and GRETA are fed, advanced, checkpointed, bounded and shed by
code that must not know which one it holds (the pack runner, the pSPICE wrapper, the service's checkpointer, the
Spark job).  Everything they need is here; nothing above reads an evaluator's internals.

- :class:`Evaluator` -- feed events, advance the clock, flush, snapshot/restore to plain data, stats, the replay
  horizon, memory bounds.  Every evaluator implements it.
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

from engine.events import Event
from engine.limits import Limits
from engine.snapshot import EventCodec

__all__ = ["Clock", "Evaluator", "EvaluatorKind", "Record", "Sheddable", "Stats", "register", "registered"]

#: A match record (docs/semantics.md section 5), or a trend-aggregate record (one per group and window).
Record = dict[str, Any]


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


@dataclass(frozen=True)
class Stats:
    """What an evaluator holds and has done (for metrics, limits reports and tests)."""

    fed: int  # events fed (and counted through advance)
    matches: int  # records emitted
    runs_alive: int  # partial matches held: runs, buffered events or graph vertices
    shed: int = 0  # partial matches removed by a load shedder
    dropped: int = 0  # partial matches lost to the memory bounds: runs dropped, enumerations cut short or skipped


@runtime_checkable
class Evaluator(Protocol):
    """One compiled query (or a pack of them) evaluated incrementally.

    Records come back in order of completion.  ``feed_many(evs)`` returns exactly the records of ``feed`` on each in
    turn; ``advance(clock)`` the records that feeding events of types this evaluator does not name, up to ``clock``,
    would have returned (a closed window, a safe bound passed), so a pack can route each event only to the queries
    that name its type.  ``snapshot()`` is plain data (:mod:`engine.snapshot`); ``restore(s)`` on an evaluator built
    the same way makes it continue exactly as the one snapshotted would: the same records, in the same order, with
    the same confidences.
    """

    name: str

    def feed(self, ev: Event) -> list[Record]: ...

    def feed_many(self, events: Iterable[Event]) -> list[Record]: ...

    def advance(self, clock: Clock) -> list[Record]: ...

    def flush(self) -> list[Record]: ...

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]: ...

    def restore(self, state: Mapping[str, Any], codec: EventCodec | None = None) -> None: ...

    def stats(self) -> Stats: ...

    def runs_alive(self) -> int: ...

    def horizon(self, last_t: float, umax: int) -> float:
        """Ticks: after stream time ``last_t`` (uncertainty bound ``umax``) no event with ``thi`` below this can change
        this evaluator's output; replaying the events at or above it into a fresh evaluator rebuilds its future."""
        ...

    def set_limits(self, limits: Limits) -> None: ...


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
