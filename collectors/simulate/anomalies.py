"""Which jobs get which planted anomaly, chosen up front from the job list with the seeded RNG.

Kinds (one per job at most):
- ``skewed_mapper``: one map task runs 5-8x longer.  Flavour ``slow_node`` (a sick node: the AM speculates, the
  redundant attempt wins and the slow one is killed) or ``expensive_split`` (no speculation: it just runs long).
- ``skewed_reducer``: one reducer's reduce phase runs 5-8x longer.
- ``slow_pull``: one shuffle pull of one reducer stalls (8-12x, plus half a second).
- ``queued_output``: the job's reducers are held back 3-10 minutes after its last map, so map output queues up.
- ``unbalancing_reducer``: one reducer runs 2.5-5 minutes and drives its host's load up (a runaway task), enough to
  push the cluster's load standard deviation over the imbalance threshold, then lets it fall back.
"""

from __future__ import annotations

import math
import random
from typing import Any

from collectors.simulate.config import SimConfig

KINDS = ("skewed_mapper", "skewed_reducer", "slow_pull", "queued_output", "unbalancing_reducer")


def eligible(kind: str, maps: int, reduces: int) -> bool:
    if kind == "skewed_mapper":
        return maps >= 4
    if kind == "skewed_reducer":
        return reduces >= 3
    if kind == "slow_pull":
        return maps >= 4 and reduces >= 1
    return reduces >= 1 and maps >= 1


def choose(
    jobs: list[tuple[float, int, int]], cfg: SimConfig, rng: random.Random
) -> tuple[dict[int, dict[str, Any]], dict[str, int]]:
    """Plants for ``jobs`` given as (submit, maps, reduces): {job index: plant}, and the count wanted per kind."""
    wanted = max(1, round(cfg.anomalies_per_hour * cfg.hours)) if cfg.anomalies_per_hour > 0 else 0
    plants: dict[int, dict[str, Any]] = {}
    candidates = {k: [i for i, (_, m, r) in enumerate(jobs) if eligible(k, m, r)] for k in KINDS}
    # Scarce kinds first, so that a job a rare kind needs is not taken by a common one.
    for kind in sorted(KINDS, key=lambda k: (len(candidates[k]), KINDS.index(k))):
        pool = [i for i in candidates[kind] if i not in plants]
        rng.shuffle(pool)
        chosen: list[int] = []
        for i in pool:
            if len(chosen) >= wanted:
                break
            if kind == "unbalancing_reducer" and any(abs(jobs[i][0] - jobs[j][0]) < 720.0 for j in chosen):
                continue  # keep runaway reducers apart so the cluster is balanced before and after each
            chosen.append(i)
        for i in sorted(chosen):
            plants[i] = _params(kind, jobs[i][1], jobs[i][2], cfg, rng)
    return plants, {k: wanted for k in KINDS}


def _params(kind: str, maps: int, reduces: int, cfg: SimConfig, rng: random.Random) -> dict[str, Any]:
    plant: dict[str, Any] = {"kind": kind}
    if kind == "skewed_mapper":
        plant.update(task=rng.randrange(maps), factor=rng.uniform(5.0, 8.0),
                     flavor=rng.choice(("slow_node", "expensive_split")))
    elif kind == "skewed_reducer":
        plant.update(task=rng.randrange(reduces), factor=rng.uniform(5.0, 8.0))
    elif kind == "slow_pull":
        plant.update(task=rng.randrange(reduces))
    elif kind == "queued_output":
        plant.update(delay=rng.uniform(180.0, 600.0))
    else:
        peak = max(4.0, 2.0 * cfg.imbalance_threshold * math.sqrt(cfg.nodes))
        plant.update(task=rng.randrange(reduces), runtime=rng.uniform(150.0, 300.0), peak=peak)
    return plant
