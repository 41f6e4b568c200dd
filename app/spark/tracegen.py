"""Synthetic Hadoop + Ganglia traces in the event vocabulary of semantics section 7, for tests and the Spark benchmark.

Why not the cluster simulator (``simulator``): it writes genuine log files, which is what the collectors'
tests need but far too slow for ten million events.  This generator makes the events directly, job by job from
``seed + job`` (so any slice of jobs can be generated in parallel and equals the same slice of a serial run), and
plants what the Hadoop pack looks for: a straggling mapper now and then (Q1), slow reducers (Q2), shuffle pulls
slower than twice their predecessors (Q3), queued map output (Q4), and load-imbalance episodes in the Ganglia rounds
(Q5, Q6).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

USERS = ("alice", "bob", "carol", "dave")
QUEUES = ("default", "etl", "adhoc")
HADOOP_DELTA = 0.5
GANGLIA_DELTA = 7.5


@dataclass(frozen=True)
class TraceConfig:
    """Shape of a trace.  Events per job: 2 + 2 maps + 3 reduces + 2 maps x reduces (pulls and their DataIO)."""

    jobs: int = 50
    maps: int = 8
    reduces: int = 2
    hosts: int = 6
    start: float = 1_700_000_000.0
    job_gap: float = 20.0  # seconds between job submissions
    round_every: float = 15.0  # Ganglia sample rounds
    threshold: float = 1.0  # LoadStd above it: Imbalance, else Balance
    seed: int = 1
    ids: bool = False  # explicit event ids (else the input position is the id)

    @property
    def events_per_job(self) -> int:
        return 2 + 2 * self.maps + 3 * self.reduces + 2 * self.maps * self.reduces

    def jobs_for(self, events: int) -> int:
        """Jobs needed for about ``events`` events (Ganglia rounds add a few percent)."""
        return max(1, round(events / self.events_per_job))


def _event(etype: str, ts: float, delta: float, **attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": etype, "ts": round(ts, 3), "delta": delta}
    out.update(attrs)
    return out


def job_events(cfg: TraceConfig, j: int) -> list[dict[str, Any]]:
    """The events of job ``j``, in time order."""
    rng = random.Random(cfg.seed * 1_000_003 + j)
    t0 = cfg.start + j * cfg.job_gap + rng.uniform(0, cfg.job_gap / 2)
    job = f"job_{int(cfg.start)}_{j + 1:06d}"
    host = [f"w{h:02d}" for h in range(1, cfg.hosts + 1)]
    user, queue = rng.choice(USERS), rng.choice(QUEUES)
    events = [
        _event("JobStart", t0, HADOOP_DELTA, job_id=job, user=user, queue=queue, maps=cfg.maps, reduces=cfg.reduces)
    ]
    map_done: list[tuple[float, str, int]] = []
    straggler = rng.randrange(cfg.maps) if rng.random() < 0.3 else -1
    for m in range(cfg.maps):
        begin = t0 + rng.uniform(1, 4)
        period = rng.lognormvariate(math.log(20), 0.3) * (6 if m == straggler else 1)
        end = begin + period
        task = f"task_{job[4:]}_m_{m:06d}"
        size = rng.randrange(1 << 20, 64 << 20)
        events.append(
            _event(
                "Mapper",
                end,
                HADOOP_DELTA,
                job_id=job,
                task_id=task,
                attempt_id=f"attempt_{task[5:]}_0",
                host=rng.choice(host),
                period=round(period, 3),
                status="SUCCEEDED",
            )
        )
        events.append(_event("DataIO", end + 0.2, HADOOP_DELTA, job_id=job, task_id=task, size=size))
        map_done.append((end, task, size))
    map_done.sort()
    first_map = map_done[0][0]
    job_end = first_map
    for r in range(cfg.reduces):
        task = f"task_{job[4:]}_r_{r:06d}"
        rhost = rng.choice(host)
        start = first_map + rng.uniform(0.5, 3)
        events.append(_event("ReducerStart", start, HADOOP_DELTA, job_id=job, task_id=task, host=rhost))
        slow = rng.randrange(cfg.maps) if rng.random() < 0.4 else -1
        clock = start
        for k, (done, mtask, size) in enumerate(map_done):
            period = rng.uniform(0.5, 2.0) * (8 if k == slow else 1)
            clock = max(clock, done) + period
            part = size // cfg.reduces
            events.append(
                _event(
                    "DataPull",
                    clock,
                    HADOOP_DELTA,
                    job_id=job,
                    task_id=task,
                    map_task=mtask,
                    host=rhost,
                    period=round(period, 3),
                    bytes=part,
                )
            )
            events.append(_event("DataIO", clock + 0.1, HADOOP_DELTA, job_id=job, task_id=task, size=-part))
        finish = clock + rng.lognormvariate(math.log(15), 0.4) * (4 if rng.random() < 0.1 else 1)
        events.append(
            _event(
                "Reducer",
                finish,
                HADOOP_DELTA,
                job_id=job,
                task_id=task,
                attempt_id=f"attempt_{task[5:]}_0",
                host=rhost,
                period=round(finish - start, 3),
                status="SUCCEEDED",
            )
        )
        events.append(_event("ReducerEnd", finish + 0.1, HADOOP_DELTA, job_id=job, task_id=task, host=rhost))
        job_end = max(job_end, finish)
    events.append(
        _event(
            "JobEnd",
            job_end + 1.0,
            HADOOP_DELTA,
            job_id=job,
            user=user,
            queue=queue,
            maps=cfg.maps,
            reduces=cfg.reduces,
            status="SUCCEEDED",
        )
    )
    events.sort(key=lambda e: e["ts"])
    return events


def span(cfg: TraceConfig) -> tuple[float, float]:
    """Start and end of the trace's Ganglia rounds (covering every job)."""
    return cfg.start, cfg.start + cfg.jobs * cfg.job_gap + 600.0


def round_events(cfg: TraceConfig, i: int) -> list[dict[str, Any]]:
    """Ganglia round ``i``: LoadStd and Balance/Imbalance.  The load std-dev drifts, with episodes every ~40 rounds
    where it climbs above the threshold and falls back."""
    ts = cfg.start + i * cfg.round_every
    rng = random.Random(cfg.seed * 7_919 + i)
    phase = i % 40
    episode = 1.6 * math.sin(math.pi * (phase - 20) / 12) if 20 <= phase < 32 else 0.0
    val = round(max(0.05, 0.4 + 0.15 * math.sin(i / 5.0) + episode + rng.uniform(-0.1, 0.1)), 4)
    cluster = "synthetic"
    kind = "Imbalance" if val > cfg.threshold else "Balance"
    return [
        _event(
            "LoadStd",
            ts,
            GANGLIA_DELTA,
            val=val,
            mean=round(1.5 + rng.uniform(-0.2, 0.2), 3),
            hosts=cfg.hosts,
            cluster=cluster,
        ),
        _event(kind, ts, GANGLIA_DELTA, val=val, threshold=cfg.threshold, cluster=cluster),
    ]


def rounds(cfg: TraceConfig) -> int:
    start, end = span(cfg)
    return int((end - start) // cfg.round_every) + 1


def trace(cfg: TraceConfig) -> list[dict[str, Any]]:
    """The whole trace in time order (stable: ties keep generation order)."""
    events: list[dict[str, Any]] = []
    for j in range(cfg.jobs):
        events.extend(job_events(cfg, j))
    for i in range(rounds(cfg)):
        events.extend(round_events(cfg, i))
    events.sort(key=lambda e: e["ts"])
    if cfg.ids:
        for n, e in enumerate(events):
            e["id"] = f"e{n}"
    return events


def chunk(cfg: TraceConfig, part: int, parts: int) -> Iterator[dict[str, Any]]:
    """Part ``part`` of ``parts`` of the trace (jobs and rounds dealt round-robin), for parallel generation; each part
    in time order, the parts together the whole trace (not globally sorted)."""
    evs: list[dict[str, Any]] = []
    for j in range(part, cfg.jobs, parts):
        evs.extend(job_events(cfg, j))
    for i in range(part, rounds(cfg), parts):
        evs.extend(round_events(cfg, i))
    evs.sort(key=lambda e: e["ts"])
    return iter(evs)
