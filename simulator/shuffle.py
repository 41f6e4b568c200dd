"""A reducer's shuffle: which fetcher pulls which map output from which host, and when.

Map completion events reach the reducer's EventFetcher once a second; ``parallel_copies`` fetcher threads each take a
host with available outputs and pull up to ``max_maps_per_fetch`` of them over one connection, one after the other
(Hadoop's ShuffleSchedulerImpl/Fetcher).  A pull lasts a fixed overhead plus its length over the reducer's bandwidth;
the planted slow pull (a stalled connection) takes ``normal * factor + extra`` seconds.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

from simulator.config import SimConfig
from simulator.jobs import Attempt, Job, Pull


@dataclass(slots=True)
class Connection:
    fetcher: int
    node: int
    start_ms: int
    url_ms: int
    freed_ms: int
    pulls: list[Pull]


@dataclass(slots=True)
class Shuffle:
    events_start_ms: int
    connections: list[Connection]
    end: float
    total_bytes: int
    slow: Pull | None = None
    by_end: list[Pull] = field(default_factory=list)  # every pull, in the order their Read lines are logged
    longest_ms: int = 0  #: the longest pull


def _ms(t: float) -> int:
    return int(round(t * 1000.0))


def map_index(job: Job) -> tuple[list[int], dict[int, list[int]]]:
    """The job's maps by finish time, and per node (same order) -- identical for all its reducers, so cached."""
    cached = getattr(job, "_map_index", None)
    if cached is None:
        done = job.map_ok
        order = sorted(range(job.maps), key=lambda m: done[m].end)  # type: ignore[union-attr]
        per_node: dict[int, list[int]] = {}
        for m in order:
            per_node.setdefault(done[m].node, []).append(m)  # type: ignore[union-attr]
        cached = (order, per_node)
        job._map_index = cached  # type: ignore[attr-defined]
    return cached


def schedule(
    job: Job, att: Attempt, cfg: SimConfig, rng: random.Random, slow: tuple[float, float] | None = None
) -> Shuffle:
    """The shuffle of reduce attempt ``att`` (all of the job's maps have finished); ``slow`` = (factor, extra
    seconds) stalls one pull: one of a map the reducer learns of in its first 7 minutes, with at least two before it
    (the third when none is that early)."""
    maps = job.maps
    done = job.map_ok
    ev_start = att.start + rng.uniform(0.9, 1.6)
    ceil = math.ceil
    known = [0.0] * maps
    for m in range(maps):
        finish = done[m].end  # type: ignore[union-attr]
        known[m] = ev_start if finish <= ev_start else ev_start + ceil(finish - ev_start)
    order, per_node = map_index(job)
    next_of = dict.fromkeys(per_node, 0)  # per node: index of its first map not yet fetched
    slow_map = -1
    if slow is not None:
        window = [i for i in range(2, maps) if known[order[i]] - att.start < 420.0] or [2] * (maps > 2)
        if window:
            slow_map = order[window[len(window) // 2]]
    inv_bw = 1000.0 / (cfg.fetch_rate * rng.uniform(0.85, 1.15))  # ms per byte
    base_ms = cfg.fetch_overhead * 1000.0 * 0.85
    spread_ms = cfg.fetch_overhead * 1000.0 * 0.3
    cap = cfg.max_maps_per_fetch
    share = job.shares[att.task]
    outputs = job.map_out
    fetched = bytearray(maps)
    lanes = [(ev_start, k) for k in range(1, cfg.parallel_copies + 1)]
    heapq.heapify(lanes)
    connections: list[Connection] = []
    total = 0
    slow_pull: Pull | None = None
    longest = 0
    end = ev_start
    ptr = 0
    random_ = rng.random
    heappop, heappush = heapq.heappop, heapq.heappush
    while True:
        while ptr < maps and fetched[order[ptr]]:
            ptr += 1
        if ptr >= maps:
            break
        free, fetcher = heappop(lanes)
        first = order[ptr]
        t = free if free > known[first] else known[first]
        node = done[first].node  # type: ignore[union-attr]
        queue = per_node[node]
        qi = next_of[node]
        qn = len(queue)
        start_ms = int(t * 1000.0 + 0.5)
        url_ms = start_ms + 2 + int(7 * random_())
        cur = url_ms + 2
        pulls: list[Pull] = []
        while qi < qn and len(pulls) < cap and known[queue[qi]] <= t:
            m = queue[qi]
            qi += 1
            if fetched[m]:
                continue
            fetched[m] = 1
            length = 6 + int(outputs[m] * share)
            duration = base_ms + spread_ms * random_() + length * inv_bw
            if m == slow_map:
                duration = duration * slow[0] + slow[1] * 1000.0  # type: ignore[index]
            took = int(duration + 0.5) or 1
            if took > longest:
                longest = took
            stop = cur + took
            pull = Pull(m, cur, stop, length, node, fetcher)
            if m == slow_map:
                slow_pull = pull
            pulls.append(pull)
            total += length
            cur = stop + 1
        next_of[node] = qi
        connections.append(Connection(fetcher, node, start_ms, url_ms, cur, pulls))
        free_at = cur / 1000.0
        if free_at > end:
            end = free_at
        heappush(lanes, (free_at, fetcher))
    connections.sort(key=lambda c: (c.start_ms, c.fetcher))
    by_end = [p for c in connections for p in c.pulls]
    by_end.sort(key=lambda p: (p.end_ms, p.fetcher))
    return Shuffle(_ms(ev_start), connections, end, total, slow_pull, by_end, longest)
