"""Possible-worlds oracle for imprecise timestamps (docs/semantics.md section 3), by brute force.

Every world fixes one integer point per event (uniformly over its interval); the precise reference matcher runs in
each world; a signature's confidence is the total probability of the worlds where it matches, and its time range the
earliest first point and latest last point over those worlds.  Exponential on purpose: tiny inputs only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from engine.events import Event
from engine.language import ast
from oracles.reference import Returns, Signature, reference_any


@dataclass
class WorldResult:
    confidence: float
    first_tick: int
    last_tick: int
    returns: Returns


def at_point(e: Event, point: int, tick: float) -> Event:
    """``e`` placed at ``point`` (ticks), keeping its id, input position, reported ts and attributes."""
    return Event(e.type, e.ts, e.attrs, id=e.id, seq=e.seq, lo=point * tick, hi=point * tick, tick=tick)


def possible_worlds(query: ast.Query, events: Sequence[Event], tick: float = 1.0) -> dict[Signature, WorldResult]:
    """Signature -> (confidence, time range in ticks, RETURN values of the canonical order) over all worlds."""
    ranges = [range(e.tlo, e.thi + 1) for e in events]
    weight = 1.0
    for r in ranges:
        weight /= len(r)
    out: dict[Signature, WorldResult] = {}
    for points in itertools.product(*ranges):
        world = [at_point(e, p, tick) for e, p in zip(events, points, strict=True)]
        where = {e.id: p for e, p in zip(events, points, strict=True)}
        for sig, returns in reference_any(query, world, tick=tick).items():
            ticks = [where[i] for _, ids in sig for i in ids]
            key = tuple((var, tuple(sorted(ids))) for var, ids in sig)
            res = out.get(key)
            if res is None:
                out[key] = WorldResult(weight, min(ticks), max(ticks), returns)
            else:
                res.confidence += weight
                res.first_tick = min(res.first_tick, min(ticks))
                res.last_tick = max(res.last_tick, max(ticks))
    return out
