"""``ground_truth.json`` and ``jobs.jsonl``: what was planted, how it shows in the artifacts, and every job's ids.

Each planted anomaly is listed with the ids an operator (or a test) would look for and with the figures, computed
from the millisecond times written to the logs, that say whether the query meant to find it can: e.g. a slow pull's
period against the mean of the reducer's earlier pulls, or a runaway reducer's cluster load deviation before, during
and after it.  ``jobs.jsonl`` lists every job with its task attempts, so a round trip can check nothing was lost.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from collectors.simulate.config import SimConfig
from collectors.simulate.jobs import Attempt, Job
from collectors.simulate.layout import ms


def _period(att: Attempt) -> float:
    return (ms(att.end) - ms(att.start)) / 1000.0


def job_record(job: Job, hosts: list[str]) -> dict[str, Any]:
    def attempts(kind: str) -> list[list[Any]]:
        return [
            [job.attempt_id(kind, a.task, a.n), a.status, hosts[a.node]] + (["speculative"] if a.speculative else [])
            for a in job.attempts if a.kind == kind
        ]

    return {
        "job_id": job.job_id, "name": job.name, "user": job.user, "queue": job.queue, "submit": ms(job.submit) / 1e3,
        "launch": ms(job.launch) / 1e3, "end": ms(job.end) / 1e3, "status": job.status, "maps": job.maps,
        "reduces": job.reduces, "map_attempts": attempts("m"), "reduce_attempts": attempts("r"),
        "pulls": job.maps * job.reduces,
        "map_output_bytes": sum(job.materialized(t) for t in range(job.maps)) if job.reduces else 0,
        "plant": job.plant.get("kind"),
    }


def _skewed_mapper(job: Job) -> dict[str, Any]:
    task = job.plant["task"]
    ok = [a for a in job.attempts if a.kind == "m" and a.status == "SUCCEEDED"]
    others = [_period(a) for a in ok if a.task != task]
    mine = [a for a in job.attempts if a.kind == "m" and a.task == task]
    slow = max(mine, key=_period)
    mean = statistics.fmean(others) if others else 0.0
    return {
        "job_id": job.job_id, "task_id": job.task_id("m", task), "attempt_id": job.attempt_id("m", task, slow.n),
        "flavor": job.plant["flavor"], "status": slow.status, "period": _period(slow),
        "others_mean_period": round(mean, 3), "ratio": round(_period(slow) / mean, 2) if mean else None,
        "attempts": [job.attempt_id("m", a.task, a.n) for a in mine],
    }


def _skewed_reducer(job: Job) -> dict[str, Any]:
    task = job.plant["task"]
    reducers = [a for a in job.attempts if a.kind == "r"]
    mine = next(a for a in reducers if a.task == task)
    others = [_period(a) for a in reducers if a is not mine]
    mean = statistics.fmean(others) if others else 0.0
    return {
        "job_id": job.job_id, "task_id": job.task_id("r", task), "attempt_id": job.attempt_id("r", task, mine.n),
        "period": _period(mine), "others_mean_period": round(mean, 3),
        "ratio": round(_period(mine) / mean, 2) if mean else None,
    }


def _queued(job: Job) -> dict[str, Any]:
    outputs = sum(job.materialized(t) for t in range(job.maps))
    first = job.first_reduce_start or 0.0
    return {
        "job_id": job.job_id, "launch": ms(job.launch) / 1e3, "maps_done": ms(job.maps_done_at or 0.0) / 1e3,
        "first_reducer_start": ms(first) / 1e3, "held_for": round(job.plant.get("delay", 0.0), 3),
        "reducer_delay_after_maps": round(first - (job.maps_done_at or first), 3),
        "peak_queued_bytes": outputs,
    }


def load_std(samples: Sequence[tuple[float, str, str, float]]) -> list[tuple[float, float]]:
    """Population standard deviation of ``load_one`` over the hosts, per sample round."""
    rounds: dict[float, list[float]] = {}
    for ts, _host, metric, value in samples:
        if metric == "load_one":
            rounds.setdefault(ts, []).append(value)
    return [(ts, statistics.pstdev(values)) for ts, values in sorted(rounds.items())]


def _unbalancing(record: dict[str, Any], hosts: list[str], std: list[tuple[float, float]], thr: float) -> dict:
    job: Job = record["job"]
    att: Attempt = record["attempt"]
    start, end = ms(att.start) / 1e3, ms(record["end"]) / 1e3
    before = [v for ts, v in std if ts <= start]
    during = [v for ts, v in std if start < ts <= end]
    after = [(ts, v) for ts, v in std if ts > end]
    std_before = before[-1] if before else None
    last_before = max((ts for ts, _ in std if ts <= start), default=start)
    balanced_after = next((ts for ts, v in after if v < thr and ts - last_before < 600.0), None)
    return {
        "job_id": job.job_id, "task_id": job.task_id("r", att.task), "attempt_id": job.attempt_id("r", att.task, att.n),
        "host": hosts[att.node], "start": start, "end": end, "runtime": round(end - start, 3),
        "peak_extra_load": round(record["peak"], 2), "threshold": thr,
        "load_std_before": None if std_before is None else round(std_before, 3),
        "load_std_max_during": round(max(during), 3) if during else None,
        "balanced_before": std_before is not None and std_before < thr,
        "imbalanced_during": any(v > thr for v in during),
        "rebalanced_at": balanced_after, "within_10min": balanced_after is not None,
    }


def build(
    cfg: SimConfig, jobs: list[Job], hosts: list[str], records: dict[str, list[dict[str, Any]]],
    natural_slow_pulls: int, std: list[tuple[float, float]], wanted: dict[str, int], window_end: float,
) -> dict[str, Any]:
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in wanted}
    for job in jobs:
        kind = job.plant.get("kind")
        if kind == "skewed_mapper":
            found[kind].append(_skewed_mapper(job))
        elif kind == "skewed_reducer":
            found[kind].append(_skewed_reducer(job))
        elif kind == "queued_output":
            found[kind].append(_queued(job))
    for rec in records["slow_pull"]:
        job, att, pull = rec["job"], rec["attempt"], rec["pull"]
        winner = job.map_ok[pull.map_task]
        found["slow_pull"].append({
            "job_id": job.job_id, "task_id": job.task_id("r", att.task),
            "reducer_attempt": job.attempt_id("r", att.task, att.n), "map_task": job.task_id("m", pull.map_task),
            "map_attempt": job.attempt_id("m", pull.map_task, winner.n if winner else 0), "host": hosts[pull.node],
            "ts": pull.end_ms / 1e3, "period": rec["period"], "mean_before": rec["mean_before"],
            "pulls_before": rec["pulls_before"], "qualifies": rec["qualifies"], "within_10min": rec["within_10min"],
        })
    for rec in records["unbalancing_reducer"]:
        found["unbalancing_reducer"].append(_unbalancing(rec, hosts, std, cfg.imbalance_threshold))
    natural_queued = [
        j.job_id for j in jobs
        if j.reduces and j.plant.get("kind") != "queued_output" and j.first_reduce_start is not None
        and j.maps_done_at is not None and j.first_reduce_start - j.maps_done_at > 120.0
    ]
    config = asdict(cfg)
    config.pop("progress", None)
    return {
        "generator": "hcep simulate", "config": config,
        "window": {"start": cfg.start, "end": window_end, "hours": cfg.hours},
        "cluster": {"name": cfg.cluster, "nodes": cfg.nodes, "hosts": [hosts[0], hosts[-1]]},
        "jobs": len(jobs), "jobs_file": "jobs.jsonl",
        "counts": {
            "map_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "m"),
            "reduce_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "r"),
            "pulls": sum(j.maps * j.reduces for j in jobs),
        },
        "wanted_per_kind": wanted,
        "anomalies": found,
        "natural": {
            "slow_pulls": natural_slow_pulls, "queued_output_jobs": natural_queued,
            "note": "not planted: conditions that arose on their own (expected to be rare)",
        },
    }


def write_jobs(path: str, jobs: list[Job], hosts: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for job in jobs:
            handle.write(json.dumps(job_record(job, hosts), separators=(",", ":")) + "\n")
