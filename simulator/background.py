"""The background of docs/semantics.md section 9: what makes a healthy production cluster uneven, none of it a fault.

Every draw here is keyed by what it belongs to (the seed, a host, a job's task, one attempt), never by the order in
which the scheduler happens to ask: so a fault, which changes timing and placement, cannot change the background of
the jobs, tasks and hosts it does not touch.

- hosts come in two hardware generations: the older ones run every attempt ``U(old_slowdown)`` times slower;
- input splits are uneven: each input file's last split is short (the other splits are whole blocks);
- a task has its own cost factor that every attempt of it shares (costly records, a slow source): a lognormal body
  and, for a few tasks, a Pareto tail -- the natural stragglers, which read the same input as their siblings;
- each attempt adds a small noise of its own (what a speculative copy does not share).
"""

from __future__ import annotations

import hashlib
import math
import random

from simulator.config import SimConfig


def keyed(*parts: object) -> random.Random:
    """A generator for one named thing (stable across runs and independent of everything else)."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def host_speeds(cfg: SimConfig) -> list[float]:
    """Per host: the factor by which it runs an attempt slower than a new host (1.0 for the new generation)."""
    rng = keyed("hosts", cfg.seed)
    old = set(rng.sample(range(cfg.nodes), round(cfg.old_hosts * cfg.nodes)))
    lo, hi = cfg.old_slowdown
    return [rng.uniform(lo, hi) if n in old else 1.0 for n in range(cfg.nodes)]


def splits(input_bytes: int, maps: int, rng: random.Random, last_share: float) -> list[int]:
    """Input bytes of each map: whole blocks, except the short last split of each input file (the file's remainder),
    which are scattered among the maps as the input format lists files."""
    if maps == 1:
        return [input_bytes]
    short = [rng.random() < last_share for _ in range(maps)]
    if all(short):
        short[0] = False
    fractions = [rng.uniform(0.03, 0.95) if s else 1.0 for s in short]
    block = max(1, int(input_bytes / sum(fractions)))
    sizes = [block if f == 1.0 else max(1, int(block * f)) for f in fractions]
    # the rounding goes to a short split (the last map's when every split is whole)
    k = next((i for i, f in enumerate(fractions) if f != 1.0), maps - 1)
    sizes[k] = max(1, sizes[k] + input_bytes - sum(sizes))
    return sizes


def task_cost(cfg: SimConfig, job_idx: int, kind: str, task: int, phase_tasks: int) -> float:
    """The cost factor of one task, shared by all its attempts.  ``phase_tasks`` (the job's maps, or its reduces)
    picks the tail's weight: a small phase's stragglers are not mitigated as a large one's are (Dolly, NSDI 2013)."""
    rng = keyed("task", cfg.seed, job_idx, kind, task)
    body = rng.lognormvariate(0.0, cfg.task_sigma)
    p = cfg.straggler_p_small if phase_tasks <= cfg.small_phase else cfg.straggler_p
    if rng.random() < p:
        tail = 1.5 * (1.0 - rng.random()) ** (-1.0 / cfg.straggler_alpha)  # Pareto from 1.5x
        return float(max(body, min(tail, cfg.straggler_cap)))
    return float(body)


def attempt_noise(cfg: SimConfig, job_idx: int, kind: str, task: int, n: int) -> random.Random:
    """The generator of one attempt's own draws (its launch delays, its noise, a rare failure)."""
    return keyed("attempt", cfg.seed, job_idx, kind, task, n)


def noise(cfg: SimConfig, rng: random.Random) -> float:
    return math.exp(rng.gauss(0.0, cfg.attempt_sigma))
