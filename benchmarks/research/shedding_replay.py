"""A replay harness for latency: events arrive on a simulated clock at a set rate, one server processes them in order,
the queue grows whenever processing is slower than arrival.

Processing and shedding times are either measured (``time.perf_counter``, what the service sees) or given by a
deterministic :class:`CostModel` (``a + b * runs stepped``; ``c + d * runs scanned`` per shedding pass), so that
tests of the latency bound are reproducible on a loaded CI machine.  Overload is relative to *capacity*: the event
rate at which the unshed run of the same trace, under the same cost model, just keeps up.

A research tool of ``benchmarks/bench_shedding.py`` and ``tests/engine/test_shedding.py``: the service measures real
time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.events import Event

__all__ = ["CostModel", "ReplayResult", "arrivals", "capacity", "replay"]


@dataclass(frozen=True)
class CostModel:
    """Deterministic service times in seconds: per event ``per_event + per_run * runs stepped`` (summed over the
    queries), per shedding pass ``shed_base + shed_per_run * runs scanned``."""

    per_event: float = 2e-6
    per_run: float = 1e-6
    shed_base: float = 5e-6
    shed_per_run: float = 1e-7

    def processing(self, work: int) -> float:
        return self.per_event + self.per_run * work

    def shedding(self, scanned: int) -> float:
        return self.shed_base + self.shed_per_run * scanned


def capacity(events: Sequence[Event], make_matchers: Callable[[], list[Any]], cost: CostModel | None = None) -> float:
    """Events per second the unshed engine sustains on ``events``: their count over the total service time (the cost
    model's, or measured)."""
    import time

    matchers = make_matchers()
    total = 0.0
    for ev in events:
        if cost is not None:
            total += cost.processing(sum(m.pending_work(ev) for m in matchers if hasattr(m, "pending_work")))
            for m in matchers:
                m.feed(ev)
        else:
            t0 = time.perf_counter()
            for m in matchers:
                m.feed(ev)
            total += time.perf_counter() - t0
    return len(events) / total if total > 0 else math.inf


def arrivals(n: int, rate: float, warmup: int = 0, warmup_rate: float | None = None) -> list[float]:
    """Arrival times (s) of ``n`` events: the first ``warmup`` at ``warmup_rate`` (the paper streams at or below
    capacity until the model is built), the rest at ``rate``."""
    out: list[float] = []
    t = 0.0
    for i in range(n):
        out.append(t)
        t += 1.0 / (warmup_rate if i < warmup and warmup_rate else rate)
    return out


@dataclass
class ReplayResult:
    records: list[dict]
    latencies: list[float]  # per event that was processed or dropped: finish - arrival (s)
    busy: float  # server seconds spent (processing + shedding)
    counters: dict[str, Any] = field(default_factory=dict)

    def percentile(self, q: float, start: int = 0) -> float:
        xs = sorted(self.latencies[start:])
        if not xs:
            return 0.0
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    def max_latency(self, start: int = 0) -> float:
        return max(self.latencies[start:], default=0.0)


def replay(sm: Any, events: Sequence[Event], times: Sequence[float]) -> ReplayResult:
    """Feed ``events`` arriving at ``times`` through a :class:`engine.shedding.SheddingMatcher` on a simulated clock.

    The server takes the next event at ``max(its arrival, the end of the previous one)`` and is busy for the
    wrapper's reported shedding + processing time of that event (deterministic with a cost model).
    """
    free = -math.inf
    records: list[dict] = []
    lat: list[float] = []
    busy = 0.0
    for ev, a in zip(events, times, strict=True):
        start = a if a > free else free
        records.extend(sm.feed(ev, arrival=a, now=start))
        spent = sm.last_shedding_seconds + sm.last_processing_seconds
        busy += spent
        free = start + spent
        lat.append(free - a)
    records.extend(sm.flush())
    return ReplayResult(records, lat, busy, sm.metrics())
