"""A reducer's shuffle: which fetcher pulls which map output from which host, and when.

Map completion events reach the reducer's EventFetcher once a second; ``parallel_copies`` fetcher threads each take a
host with available outputs and pull up to ``max_maps_per_fetch`` of them over one connection, one after the other
(Hadoop's ShuffleSchedulerImpl/Fetcher).  A pull lasts a fixed overhead plus its length over the reducer's bandwidth;
a stalled fetch (hung_fetch) has its header read and then its body stalls for X seconds: when X exceeds the read
timeout (180 s) the fetch fails at the timeout, the host is penalised and the fetch is retried (and times out again
while the stall lasts), as Hadoop's Fetcher does.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
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


def _stalled(
    start: float, normal: float, stall: float, timeout: float, random_: Callable[[], float]
) -> tuple[float, list[tuple[int, int]]]:
    """(duration ms, [(timeout ms, retry start ms)]) of a fetch begun at ``start`` whose source stalls ``stall`` ms:
    each try that is still waiting ``timeout`` ms after it began fails; the retry comes after the host's penalty
    (10 s, times 1.3 per earlier failure: ShuffleSchedulerImpl's backoff)."""
    until = start + stall
    tries: list[tuple[int, int]] = []
    t = start
    while until > t + timeout:
        failed = t + timeout
        t = failed + 10_000.0 * 1.3 ** len(tries) + 200.0 * random_()
        tries.append((int(failed + 0.5), int(t + 0.5)))
    return max(until, t) + normal - start, tries


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
    job: Job,
    att: Attempt,
    cfg: SimConfig,
    rng: random.Random,
    stall: float | None = None,
    timeout: float = 180.0,
    not_before: float | None = None,
) -> Shuffle:
    """The shuffle of reduce attempt ``att`` (all of the job's maps have finished); ``stall`` seconds stall one
    fetch: the first to start at or after ``not_before`` (epoch s) with at least two fetches before it."""
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
    slow_map = -1  # the stalled fetch: the first to start at or after ``not_before`` with >= 2 fetches before it
    stall_from = not_before * 1000.0 if not_before is not None else 0.0
    started = 0
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
            timeouts: list[tuple[int, int]] = []
            if stall is not None and slow_map < 0 and started >= 2 and cur >= stall_from:
                slow_map = m
            started += 1
            if m == slow_map and stall is not None:
                duration, timeouts = _stalled(cur, duration, stall * 1000.0, timeout * 1000.0, random_)
            took = int(duration + 0.5) or 1
            if took > longest:
                longest = took
            stop = cur + took
            pull = Pull(m, cur, stop, length, node, fetcher, timeouts)
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
