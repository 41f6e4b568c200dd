"""Which partial matches to drop (digest-pspice section 8), in O(n) without sorting.

**Utility** (Eq. 1): ``U = w_q * E / (tau / tau_max + eps)``, with E the expected number of matches of the run within
its remaining window (== P, the completion probability, for one-match-per-run patterns: see
:mod:`engine.shedding.markov`).  tau is brought to a common scale by dividing by the largest tau of every table of the
pack (so weights and tau are comparable across queries, digest ambiguity 1), and ``eps`` = 0.01 keeps a run that costs
nothing from dividing by zero.

**Levels.**  Each table cell's utility is mapped once per table rebuild to one of ``L`` levels: level 0 for runs that
cannot complete (``P`` ~ 0) and for runs whose window is already over, levels ``1 .. L-1`` on a log scale between the
smallest and the largest positive utility of all tables.  A negation-state cell has no level: it is never shed.

**Selection.**  One pass puts every live run in the bucket of its level (one table look-up: state and remaining-window
bucket), then whole buckets are taken from the lowest level up until ``rho`` runs are chosen; the last bucket is cut in
scan order (pool order: older runs first).  That is O(n + L), against the paper's sort in O(n log n); the result
differs from an exact sort only among runs whose utilities share a level.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.shedding.markov import QueryModel

__all__ = ["EPS", "QueryLevels", "compute_levels", "select_pspice", "select_random", "remove"]

EPS = 0.01
P_ZERO = 1e-9


@dataclass
class QueryLevels:
    """What the selection pass needs of one query: state ids, the level per (state, bucket) and the bucket width."""

    sid: tuple[int, ...]
    levels: list[list[int] | None]  # [state] -> level per remaining-window bucket; None: protected
    window: int | None
    scale: float  # buckets per tick of remaining window
    last: int  # last bucket index


def compute_levels(models: Sequence[tuple[QueryModel, float]], nlevels: int, eps: float = EPS) -> list[QueryLevels]:
    """The level tables of several queries (with their weights), on one shared scale."""
    tau_max = max((x for model, _ in models for row in model.table.tau for x in row), default=0.0) or 1.0
    utils: list[list[list[float]]] = []
    for model, weight in models:
        tab = model.table
        utils.append(
            [
                [weight * v / (tau / tau_max + eps) if v > P_ZERO else 0.0 for v, tau in zip(vrow, trow, strict=True)]
                for vrow, trow in zip(tab.value, tab.tau, strict=True)
            ]
        )
    positive = [u for per_query in utils for row in per_query for u in row if u > 0.0]
    lo = math.log(min(positive)) if positive else 0.0
    span = math.log(max(positive)) - lo if positive else 0.0
    top = nlevels - 1

    def level(u: float) -> int:
        if u <= 0.0:
            return 0
        if span <= 0.0:
            return top
        return 1 + min(top - 1, int((top - 1) * (math.log(u) - lo) / span))

    out: list[QueryLevels] = []
    for (model, _), per_query in zip(models, utils, strict=True):
        sp = model.space
        levels: list[list[int] | None] = [
            None if sp.protected[s] else [level(u) for u in row] for s, row in enumerate(per_query)
        ]
        w = model.window
        out.append(QueryLevels(sp.sid, levels, w, model.buckets / w if w else 0.0, model.buckets - 1))
    return out


#: One query's part in a shedding pass: its matcher, its levels, and the pools to consider (None: all).
Group = tuple[Any, QueryLevels, Iterable[Any] | None]


def select_pspice(groups: Sequence[Group], rho: int, now: float, nlevels: int) -> tuple[set[int], int]:
    """The ids of (up to) ``rho`` runs of lowest utility level over ``groups``, and how many runs were scanned."""
    buckets: list[list[Any]] = [[] for _ in range(nlevels)]
    scanned = 0
    for m, ql, keys in groups:
        sid, lev, w, scale, last = ql.sid, ql.levels, ql.window, ql.scale, ql.last
        pools = m.pools
        for key in list(pools) if keys is None else keys:
            runs = pools.get(key)
            if not runs:
                continue
            scanned += len(runs)
            for r in runs:
                row = lev[sid[2 * r.k + r.kin]]
                if row is None:
                    continue  # negation-state: never shed
                if w is None:
                    lv = row[0]
                else:
                    rem = r.t_first + w - now
                    if rem <= 0:
                        lv = 0  # window over: the matcher just has not swept it yet
                    else:
                        b = int(rem * scale)
                        lv = row[b if b < last else last]
                buckets[lv].append(r)
    victims: set[int] = set()
    need = rho
    for bucket in buckets:
        if not need:
            break
        if len(bucket) <= need:
            victims.update(map(id, bucket))
            need -= len(bucket)
        else:
            victims.update(map(id, bucket[:need]))
            need = 0
    return victims, scanned


def select_random(groups: Sequence[Group], rho: int, rng: random.Random) -> tuple[set[int], int]:
    """PM-BL: ``rho`` runs chosen uniformly among the sheddable ones (negation-state runs stay protected)."""
    eligible: list[Any] = []
    scanned = 0
    for m, ql, keys in groups:
        sid, lev = ql.sid, ql.levels
        pools = m.pools
        for key in list(pools) if keys is None else keys:
            runs = pools.get(key)
            if not runs:
                continue
            scanned += len(runs)
            eligible.extend(r for r in runs if lev[sid[2 * r.k + r.kin]] is not None)
    chosen = eligible if rho >= len(eligible) else rng.sample(eligible, rho)
    return set(map(id, chosen)), scanned


def remove(groups: Sequence[Group], victims: set[int]) -> list[int]:
    """Remove the victims from their matchers (through the matcher's ``shed`` hook); runs removed per group."""
    if not victims:
        return [0] * len(groups)
    return [m.shed(lambda r: id(r) in victims, keys) for m, _ql, keys in groups]
