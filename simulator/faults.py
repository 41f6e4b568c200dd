"""Faults by cause (semantics section 9): the fault list, the default mix, and each fault's target and state while it
acts.

A fault names a kind, ``at`` (seconds from the window's start) and a severity.  Its target is drawn at ``at`` (or
the first moment after it when one exists) among the entities on which the cause can meet its floor, from a random
stream of its own (``faults/<seed>/<index>``), so the background's draws never move.  No two faults share a job, a
task or a host while both act.  The model (``model.py``) asks the injector what to do to each task it starts; the
truth (``truth.py``) reads the states afterwards.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import dataclass, field
from typing import Any

from simulator.background import keyed
from simulator.config import SimConfig
from simulator.jobs import Job

GIB = 1 << 30
MIN_EXCESS_S = 120.0  #: semantics section 9: a skewed task must run this much longer than its job's median to warn
#: The floor per kind, semantics section 9 (the severity from which an operator wants a warning)
FLOORS = {
    "map_data_skew": 4.0,
    "reduce_data_skew": 4.0,
    "slow_node": 2.0,
    "hung_fetch": 60.0,
    "held_output": 180.0,
    "runaway_reducer": 4.0,
}
KINDS = tuple(FLOORS)
#: Default mix: severities drawn across and below each floor (uniform; hung_fetch log-uniform).
SEVERITY_RANGES = {
    "map_data_skew": (2.0, 12.0),
    "reduce_data_skew": (2.0, 12.0),
    "slow_node": (1.3, 5.0),
    "hung_fetch": (15.0, 600.0),
    "held_output": (60.0, 900.0),
    "runaway_reducer": (1.0, 12.0),
}
SLOW_NODE_MINUTES = (10.0, 40.0)
RUNAWAY_MINUTES = (3.0, 10.0)
READ_TIMEOUT_S = 180.0  #: mapreduce.reduce.shuffle.read.timeout
RETRY_EVERY_S = 15.0  #: when no target exists at ``at``, look again this much later


class FaultError(ValueError):
    """A fault list that cannot be used (the message names the entry)."""


def parse(text: str, where: str = "faults") -> list[dict[str, Any]]:
    """The fault list of a ``--faults`` file: a JSON list of ``{"kind", "at", "severity"}``."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise FaultError(f"{where}: not JSON ({err})") from None
    if not isinstance(data, list):
        raise FaultError(f"{where}: expected a JSON list of faults")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or set(item) != {"kind", "at", "severity"}:
            raise FaultError(f"{where}[{i}]: expected exactly the keys kind, at, severity")
        kind, at, sev = item["kind"], item["at"], item["severity"]
        if kind not in FLOORS:
            raise FaultError(f"{where}[{i}]: unknown kind {kind!r} (known: {', '.join(KINDS)})")
        for name, value in (("at", at), ("severity", sev)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise FaultError(f"{where}[{i}]: {name} must be a non-negative number")
        if sev <= 0:
            raise FaultError(f"{where}[{i}]: severity must be positive")
        out.append({"kind": kind, "at": float(at), "severity": float(sev)})
    return out


def default_mix(cfg: SimConfig) -> list[dict[str, Any]]:
    """``round(faults_per_hour * hours)`` faults of each kind (at least one), ``at`` uniform over the window
    (leaving the first 5 and the last 10 minutes), severities spread across and below the floor; sorted by ``at``."""
    rng = keyed("faultmix", cfg.seed)
    span = cfg.hours * 3600.0
    lo, hi = (300.0, span - 600.0) if span >= 1200.0 else (0.1 * span, 0.6 * span)
    per_kind = max(1, round(cfg.faults_per_hour * cfg.hours))
    out: list[dict[str, Any]] = []
    for kind in KINDS:
        a, b = SEVERITY_RANGES[kind]
        for _ in range(per_kind):
            sev = math.exp(rng.uniform(math.log(a), math.log(b))) if kind == "hung_fetch" else rng.uniform(a, b)
            out.append({"kind": kind, "at": round(rng.uniform(lo, hi), 1), "severity": round(sev, 2)})
    out.sort(key=lambda f: f["at"])
    return out


@dataclass
class Fault:
    """One injected fault: its spec, its target once drawn, and what it caused (filled in by the model)."""

    index: int
    kind: str
    at: float
    severity: float
    rng: random.Random
    job: Job | None = None
    task: int = -1  #: the map or reduce task it acts on
    node: int = -1  #: slow_node: the host
    duration: float = 0.0  #: slow_node, runaway_reducer: how long the cause lasts
    onset: float | None = None
    end: float | None = None
    #: hung_fetch: (map task, fetch start, fetch end, [timeouts]) once laid out
    fetch: tuple[int, float, float, list[float]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def floor(self) -> float:
        return FLOORS[self.kind]


def _unstarted_maps(job: Job) -> list[int]:
    """The job's map tasks no attempt has started yet (all of them before its AM asks for containers)."""
    if job.am_node < 0 or not job.attempts and not job.pending_maps:
        return list(range(job.maps)) if job.completed_maps == 0 and not job.attempts else []
    return sorted(t for t, n in job.pending_maps if n == 0)


class Injector:
    """The faults of one run and the rules by which the model applies them."""

    def __init__(self, cfg: SimConfig, specs: list[dict[str, Any]]) -> None:
        self.cfg = cfg
        self.faults = [
            Fault(i, s["kind"], float(s["at"]), float(s["severity"]), keyed("faults", cfg.seed, i))
            for i, s in enumerate(specs)
        ]
        self.window_end = cfg.start + cfg.hours * 3600.0
        #: per host: [(start, end, factor)] of slow_node faults
        self.slow: dict[int, list[tuple[float, float, float]]] = {}
        self.busy_jobs: dict[int, Fault] = {}  #: job idx -> the fault acting on it
        self.map_skew: dict[tuple[int, int], Fault] = {}
        self.reduce_skew: dict[tuple[int, int], Fault] = {}
        self.hung: dict[tuple[int, int], Fault] = {}
        self.held: dict[int, Fault] = {}
        self.runaway: dict[tuple[int, int], Fault] = {}
        self._place_slow_nodes()

    def timed(self) -> list[Fault]:
        """The faults whose target the model draws at ``at`` (all but slow_node, placed up front)."""
        return [f for f in self.faults if f.kind != "slow_node"]

    # -- slow nodes: a host is always running, so it is drawn at once ------------------------------------------------
    def _place_slow_nodes(self) -> None:
        taken: list[tuple[int, float, float]] = []
        for f in self.faults:
            if f.kind != "slow_node":
                continue
            f.duration = f.rng.uniform(*SLOW_NODE_MINUTES) * 60.0
            start = self.cfg.start + f.at
            end = start + f.duration
            free = [n for n in range(self.cfg.nodes) if not any(n == h and s < end and start < e for h, s, e in taken)]
            if not free:
                continue
            f.node = f.rng.choice(free)
            f.onset, f.end = start, end
            taken.append((f.node, start, end))
            self.slow.setdefault(f.node, []).append((start, end, f.severity))

    def work_end(self, node: int, start: float, work: float) -> float:
        """When ``work`` seconds of normal-speed work begun at ``start`` on ``node`` ends, every slow_node window on
        the host stretching the part of it inside the window by its factor."""
        windows = self.slow.get(node)
        if not windows:
            return start + work
        t, left = start, work
        for w0, w1, factor in sorted(windows):
            if w1 <= t:
                continue
            if w0 > t:
                step = min(left, w0 - t)
                t, left = t + step, left - step
                if left <= 0:
                    return t
            span = (w1 - max(t, w0)) / factor  # normal-speed work done inside the window
            if left <= span:
                return max(t, w0) + left * factor
            t, left = w1, left - span
        return t + left

    # -- drawing a target at ``at`` ------------------------------------------------------------------------------------
    def draw(self, f: Fault, now: float, running: list[Job], cfg: SimConfig) -> bool:
        """Pick ``f``'s target among ``running`` jobs (arrived, not finished) at ``now``; False when none fits yet."""
        jobs = [j for j in running if j.idx not in self.busy_jobs]
        eff = max(f.severity, f.floor)
        if f.kind == "map_data_skew":
            cands = [
                j
                for j in jobs
                if j.maps >= 3
                and _unstarted_maps(j)
                and (eff - 1.0) * statistics.median(j.splits) / cfg.map_rate >= MIN_EXCESS_S
            ]
            if not cands:
                return False
            job = f.rng.choice(cands)
            task = f.rng.choice(_unstarted_maps(job))
            median = statistics.median(job.splits)
            grown = round(f.severity * median)
            job.map_out[task] = int(job.map_out[task] * grown / job.splits[task])
            job.splits[task] = grown
            self.map_skew[(job.idx, task)] = f
        elif f.kind == "reduce_data_skew":
            cands = [
                j
                for j in jobs
                if j.reduces >= 3
                and j.maps_done_at is None
                and j.next_reduce < j.reduces
                # the partition X times the median one takes X / (R - 1 + X) of the shuffle, the median 1 / (R - 1 + X)
                and (eff - 1.0) * j.shuffle_bytes / (j.reduces - 1 + eff) / cfg.reduce_rate >= MIN_EXCESS_S
            ]
            if not cands:
                return False
            job = f.rng.choice(cands)
            task = f.rng.randrange(job.next_reduce, job.reduces)
            weights = list(job.shares)
            weights[task] = f.severity * statistics.median(weights)
            job.set_weights(weights)
            self.reduce_skew[(job.idx, task)] = f
        elif f.kind == "hung_fetch":
            cands = [j for j in jobs if j.reduces >= 1 and j.maps >= 3 and j.maps_done_at is None]
            if not cands:
                return False
            job = f.rng.choice(cands)
            task = f.rng.randrange(job.reduces)
            self.hung[(job.idx, task)] = f
        elif f.kind == "held_output":
            cands = [
                j
                for j in jobs
                if j.reduces >= 1 and not j.reduces_ready and j.shuffle_bytes >= 1.05 * GIB and j.maps >= 2
            ]
            if not cands:
                return False
            job = f.rng.choice(cands)
            task = -1
            job.hold_until = math.inf
            self.held[job.idx] = f
        elif f.kind == "runaway_reducer":
            cands = [j for j in jobs if j.reduces >= 1 and j.next_reduce < j.reduces]
            if not cands:
                return False
            job = f.rng.choice(cands)
            task = job.next_reduce
            f.duration = f.rng.uniform(*RUNAWAY_MINUTES) * 60.0
            self.runaway[(job.idx, task)] = f
        else:  # pragma: no cover - slow_node is placed up front
            return False
        f.job, f.task = job, task
        self.busy_jobs[job.idx] = f
        return True

    def release(self, f: Fault) -> None:
        """The fault has stopped acting: its job may take another."""
        if f.job is not None and self.busy_jobs.get(f.job.idx) is f:
            del self.busy_jobs[f.job.idx]
