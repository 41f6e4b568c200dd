"""Per-host ``load_one`` as Ganglia would sample it every 15 s.

Each running container adds to its host's run queue (a map or a reducer's reduce phase 1.0, a reducer's shuffle 0.3,
an ApplicationMaster 0.1) on top of a per-host background with its own noise (a base, a slowly wandering extra run
queue of its own size, its own sampling jitter); a runaway reducer adds its spinning threads.  ``load_one`` is the
kernel's one-minute exponentially damped average of the run queue, updated every 5 s.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

_TICK = 5.0
_DECAY = math.exp(-_TICK / 60.0)


class LoadRecorder:
    def __init__(self, nodes: int) -> None:
        self.changes: list[list[tuple[float, float]]] = [[] for _ in range(nodes)]

    def add(self, node: int, start: float, end: float, weight: float) -> None:
        if end > start and weight:
            changes = self.changes[node]
            changes.append((start, weight))
            changes.append((end, -weight))

    def ramp(
        self, node: int, start: float, end: float, peak: float, steps: int = 12, rise: float = 0.8
    ) -> list[tuple[float, float, float]]:
        """A run queue growing linearly to ``peak`` over the first ``rise`` of [start, end], then held until ``end``;
        returns the ``(start, end, weight)`` segments added."""
        top = start + rise * (end - start)
        segments = [(start + (top - start) * k / steps, end, peak / steps) for k in range(steps)]
        for t0, t1, weight in segments:
            self.add(node, t0, t1, weight)
        return segments

    @staticmethod
    def peak(segments: list[tuple[float, float, float]]) -> float:
        """The largest run queue that ``(start, end, weight)`` segments (end exclusive) add up to at one moment."""
        steps = sorted([(t0, w) for t0, t1, w in segments if t1 > t0] + [(t1, -w) for t0, t1, w in segments if t1 > t0])
        level = top = 0.0
        for _, delta in steps:  # at equal times the negative (ending) steps sort first
            level += delta
            top = max(top, level)
        return round(top, 9)  # float noise of summed ramp steps

    def samples(
        self, hosts: list[str], start: float, end: float, step: float, seed: int
    ) -> Iterator[tuple[float, str, str, float]]:
        """``(ts, host, "load_one", value)`` for every host every ``step`` seconds in [start, end], in time order."""
        n_samples = int((end - start) // step) + 1
        series: list[list[float]] = []
        for node in range(len(hosts)):
            rng = random.Random(seed * 7919 + node)
            base = rng.uniform(0.02, 0.25)
            # each node's own noise: daemons, cron jobs, the DataNode's scans -- a slowly wandering extra run queue
            # (an Ornstein-Uhlenbeck process with its own size) and its own sampling jitter
            wander = rng.uniform(0.05, 0.35)
            jitter = rng.uniform(0.01, 0.06)
            pull = _TICK / 180.0
            extra = 0.0
            changes = sorted(self.changes[node])
            values: list[float] = []
            load = base
            queue = base
            i = 0
            t = start - 300.0  # warm up: the average starts settled
            next_sample = start
            while len(values) < n_samples:
                while i < len(changes) and changes[i][0] <= t:
                    queue += changes[i][1]
                    i += 1
                extra += -pull * extra + wander * math.sqrt(2.0 * pull) * rng.gauss(0.0, 1.0)
                load = load * _DECAY + max(queue + max(extra, -base), 0.0) * (1.0 - _DECAY)
                if t >= next_sample - 1e-9:
                    values.append(max(0.0, round(load + rng.gauss(0.0, jitter), 2)))
                    next_sample += step
                t += _TICK
            series.append(values)
        for k in range(n_samples):
            ts = start + k * step
            for node, host in enumerate(hosts):
                yield ts, host, "load_one", series[node][k]
