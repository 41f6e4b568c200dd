"""Which jobs get which planted anomaly, chosen up front from the job list with the seeded RNG.

Each plant is a realistic instance of its kind's definition (``definitions.py``) and goes only into a job where it
can meet it; when few jobs are eligible (the fb2009 mix on a small cluster) fewer are planted.  Kinds (one per job):

- ``skewed_mapper`` (jobs with >= 5 maps): one map attempt runs ``normal * U(5, 8) + U(120, 300)`` s (a bad disk).
  Flavour ``slow_node`` (a sick node: after the attempt has run at least ``normal + U(150, 240)`` s the AM
  speculates; the redundant attempt usually wins and the straggler is killed, still long enough to count) or
  ``expensive_split`` (no speculation: it just runs long).
- ``skewed_reducer`` (jobs with >= 5 reduces): one reducer's reduce phase runs ``* U(5, 8) + U(120, 300)`` s.
- ``slow_pull`` (>= 4 maps): one fetch of one reducer, within its first 7 minutes and after at least 2 earlier
  fetches, stalls: ``normal * U(8, 12) + U(30, 120)`` s.
- ``queued_output`` (>= 1.5 GiB of map output): the job's reducers are held until ``U(240, 600)`` s after its last
  map, so its whole map output waits unfetched.
- ``unbalancing_reducer``: one reducer runs 2.5-5 minutes and drives its host's run queue up to a peak (a runaway
  task) large enough to push the cluster's load standard deviation over the imbalance threshold, then lets it fall
  back; runaways are kept 12 minutes apart.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from simulator.config import SimConfig
from simulator.definitions import GIB, KINDS, SkewedMapper, SkewedReducer, SlowPull, UnbalancingReducer

__all__ = ["KINDS", "choose", "eligible"]


#: Map output a job needs for a planted hold (the definition's 1 GiB with a margin for the per-map spread).
QUEUED_MIN_OUTPUT = 1.5 * GIB


def eligible(kind: str, maps: int, reduces: int, map_output: float) -> bool:
    """Can a plant of ``kind`` in a job of this shape meet the definition (``map_output``: total map output bytes)?"""
    if kind == "skewed_mapper":
        return maps >= SkewedMapper.MIN_ATTEMPTS
    if kind == "skewed_reducer":
        return reduces >= SkewedReducer.MIN_ATTEMPTS
    if kind == "slow_pull":
        return maps >= SlowPull.MIN_BEFORE + 2 and reduces >= 1
    if kind == "queued_output":
        return reduces >= 1 and map_output >= QUEUED_MIN_OUTPUT
    return reduces >= 1 and maps >= 1


def choose(
    jobs: Sequence[tuple[float, int, int, float]], cfg: SimConfig, rng: random.Random
) -> tuple[dict[int, dict[str, Any]], dict[str, int]]:
    """Plants for ``jobs`` given as (submit, maps, reduces, map output bytes): {job index: plant}, and the count
    wanted per kind (``anomalies_per_hour``; fewer are planted when fewer jobs are eligible)."""
    wanted = max(1, round(cfg.anomalies_per_hour * cfg.hours)) if cfg.anomalies_per_hour > 0 else 0
    plants: dict[int, dict[str, Any]] = {}
    candidates = {k: [i for i, (_, m, r, out) in enumerate(jobs) if eligible(k, m, r, out)] for k in KINDS}
    # One job per kind in turn, the kind with the fewest jobs left first, each taking the job that the fewest other
    # kinds still in need could use: the few jobs a rare kind can use are not all taken by a common one.
    pools = {k: list(candidates[k]) for k in KINDS}
    for k in KINDS:
        rng.shuffle(pools[k])
    usable = {k: set(candidates[k]) for k in KINDS}
    chosen: dict[str, list[int]] = {k: [] for k in KINDS}
    taken: set[int] = set()

    def fits(kind: str, i: int) -> bool:
        # keep runaway reducers apart so the cluster is balanced before and after each
        return i not in taken and not (
            kind == "unbalancing_reducer" and any(abs(jobs[i][0] - jobs[j][0]) < 720.0 for j in chosen[kind])
        )

    for _ in range(wanted):
        left = {k: [i for i in pools[k] if fits(k, i)] for k in KINDS}
        for kind in sorted(KINDS, key=lambda k: (len(left[k]), KINDS.index(k))):
            free = [i for i in left[kind] if fits(kind, i)]
            if not free:
                continue
            needy = [k for k in KINDS if k != kind and len(chosen[k]) < wanted]
            pick = min(free, key=lambda i: sum(i in usable[k] for k in needy))  # ties: the shuffled order
            chosen[kind].append(pick)
            taken.add(pick)
    order = KINDS
    for kind in order:
        for i in sorted(chosen[kind]):
            plants[i] = _params(kind, jobs[i][1], jobs[i][2], cfg, rng)
    return plants, {k: wanted for k in KINDS}


def _params(kind: str, maps: int, reduces: int, cfg: SimConfig, rng: random.Random) -> dict[str, Any]:
    plant: dict[str, Any] = {"kind": kind}
    if kind == "skewed_mapper":
        plant.update(
            task=rng.randrange(maps),
            factor=rng.uniform(5.0, 8.0),
            extra=rng.uniform(120.0, 300.0),
            flavor=rng.choice(("slow_node", "expensive_split")),
            spec_wait=rng.uniform(150.0, 240.0),
        )
    elif kind == "skewed_reducer":
        plant.update(task=rng.randrange(reduces), factor=rng.uniform(5.0, 8.0), extra=rng.uniform(120.0, 300.0))
    elif kind == "slow_pull":
        plant.update(task=rng.randrange(reduces), factor=rng.uniform(8.0, 12.0), extra=rng.uniform(30.0, 120.0))
    elif kind == "queued_output":
        plant.update(delay=rng.uniform(240.0, 600.0))
    else:
        # One host k above n-1 equal others gives a std-dev of about k / sqrt(n): 2 x threshold x sqrt(n) clears the
        # threshold although the one-minute load average lags; at least the definition's contribution.
        peak = max(UnbalancingReducer.MIN_CONTRIBUTION, 2.0 * cfg.imbalance_threshold * math.sqrt(cfg.nodes))
        plant.update(task=rng.randrange(reduces), runtime=rng.uniform(150.0, 300.0), peak=peak)
    return plant
