"""The service's gauges: consumer lag, the watermark, runs alive, memory-bound drops and load shedding.

Counters are incremented where things happen (events read, dead letters, checkpoints); this module samples the state
once a second for Prometheus (:mod:`app.metrics` serves it) and writes the dashboard's ``query_stats`` rows.  Shed
counters are cumulative over the process's epochs, although each epoch builds a new engine.
"""

from __future__ import annotations

import math
import sqlite3
import time
from typing import Any

from app.metrics import Registry
from app.pack_runner import PackRunner
from app.store import Store, unwritable
from app.stream.config import STATS_EVERY
from app.stream.epochs import Epoch
from app.stream.source import Source
from app.watermark import INF, NEG_INF


class Gauges:
    def __init__(self, metrics: Registry, store: Store, instance: str, tick: float) -> None:
        self.metrics = metrics
        self.store = store
        self.instance = instance
        self.tick = tick
        self._shed_base: dict[str, tuple[int, int]] = {}  # shed counts of earlier epochs' engines
        self._stats_at = -math.inf
        self._events_at = 0.0
        self._rate_at: float | None = None

    def retire(self, runner: PackRunner) -> None:
        """An epoch's engine is replaced: keep its shed counts in the process's totals."""
        for name, (runs, events) in runner.shed_counts().items():
            b = self._shed_base.get(name, (0, 0))
            self._shed_base[name] = (b[0] + runs, b[1] + events)

    def rate(self, now: float) -> None:
        """Events read per second since the last call."""
        total = self.metrics.get("hcep_events_total")
        if self._rate_at is not None and now > self._rate_at:
            self.metrics.set("hcep_events_per_second", (total - self._events_at) / (now - self._rate_at))
        self._events_at, self._rate_at = total, now

    def sample(self, epoch: Epoch, source: Source | None, *, stats_now: bool = False) -> None:
        """Every gauge, from ``epoch`` and ``source``; ``stats_now``: write a ``query_stats`` row whatever its
        period (the last one, at a clean stop)."""
        m = self.metrics
        if source is not None:
            lag: dict[str, int] = {}
            for tp in epoch.assignment:
                hw = source.highwater(tp)
                if hw is not None:
                    lag[tp[0]] = lag.get(tp[0], 0) + max(0, hw - epoch.position.get(tp, 0))
            for topic, value in lag.items():
                m.set("hcep_consumer_lag_messages", value, {"topic": topic})
        wm = epoch.wm
        wmv = wm.value
        newest = wm.newest()
        if wmv not in (NEG_INF, INF):
            m.set("hcep_watermark_seconds", wmv * self.tick)
            m.set("hcep_watermark_wallclock_delay_seconds", time.time() - wmv * self.tick)
            if newest != NEG_INF:
                m.set("hcep_watermark_delay_seconds", max(0.0, (newest - wmv) * self.tick))
        m.set("hcep_buffered_events", wm.pending())
        runner = epoch.runner
        alive = runner.runs_alive()
        for name, n in alive.items():
            m.set("hcep_runs_alive", n, {"query": name})
        for name, n in runner.limit_drops().items():  # memory bounds, since the engine was (re)built
            m.set("hcep_limit_dropped", n, {"query": name})
        self._shed(runner, alive, stats_now)

    def _shed(self, runner: PackRunner, alive: dict[str, int], stats_now: bool) -> None:
        """Shed counters and, for the dashboard, one ``query_stats`` row per query: runs alive and partial matches
        shed."""
        counts = runner.shed_counts() or {name: (0, 0) for name in alive}
        m = self.metrics
        rows: list[tuple[float, str, int, int]] = []
        now = time.time()
        for name, (runs, events) in counts.items():
            b = self._shed_base.get(name, (0, 0))
            if runner.shedder is not None:
                m.set("hcep_shed_runs_total", b[0] + runs, {"query": name})
                m.set("hcep_shed_events_total", b[1] + events, {"query": name})
            rows.append((now, name, alive.get(name, 0), b[0] + runs))
        if runner.shedder is not None:
            info: dict[str, Any] = runner.shedder.metrics()
            m.set("hcep_shed_latency_estimate_seconds", info["latency_estimate_ms"] / 1000.0)
            m.set("hcep_shed_latency_bound_seconds", info["latency_bound_ms"] / 1000.0)
        if stats_now or now - self._stats_at >= STATS_EVERY:
            self._stats_at = now
            try:
                self.store.add_query_stats(rows, self.instance)
            except (sqlite3.Error, OSError) as err:  # statistics for the dashboard: skipped while the store is full
                cause = unwritable(err)
                if cause is None:
                    raise
                m.inc("hcep_store_write_errors_total", 1, {"cause": cause, "what": "query_stats"})
