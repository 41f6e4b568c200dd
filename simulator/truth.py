"""``ground_truth.json`` and ``jobs.jsonl``: every anomaly of the simulated cluster, and every job's ids.

The truth lists every anomaly by the definitions of ``definitions.py``, planted or not, evaluated (``detect.py``)
on the simulator's exact values rounded to the milliseconds the logs show -- never on events or on the pack's
queries.  Each entry says whether the planter chose it (``planted``) and when it became knowable from the logs
(``knowable_at``); a planted anomaly that misses its definition goes under ``planted_not_anomalous`` with the reason.
``jobs.jsonl`` lists every job with its task attempts, so a round trip can check nothing was lost.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from simulator import detect
from simulator.config import SimConfig
from simulator.definitions import KINDS, QueuedOutput, SkewedMapper, SkewedReducer, UnbalancingReducer, texts
from simulator.jobs import Attempt, Job
from simulator.layout import ms


def job_record(job: Job, hosts: list[str]) -> dict[str, Any]:
    def attempts(kind: str) -> list[list[Any]]:
        return [
            [job.attempt_id(kind, a.task, a.n), a.status, hosts[a.node]] + (["speculative"] if a.speculative else [])
            for a in job.attempts
            if a.kind == kind
        ]

    return {
        "job_id": job.job_id,
        "name": job.name,
        "user": job.user,
        "queue": job.queue,
        "submit": ms(job.submit) / 1e3,
        "launch": ms(job.launch) / 1e3,
        "end": ms(job.end) / 1e3,
        "status": job.status,
        "maps": job.maps,
        "reduces": job.reduces,
        "map_attempts": attempts("m"),
        "reduce_attempts": attempts("r"),
        "pulls": job.maps * job.reduces,
        "map_output_bytes": sum(job.materialized(t) for t in range(job.maps)) if job.reduces else 0,
        "plant": job.plant.get("kind"),
    }


def _s(t_ms: float) -> float:
    return round(t_ms / 1e3, 4)


def _skewed(job: Job, kind: str, hosts: list[str], miss: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The job's skewed_mapper / skewed_reducer entry, if any; a planted one that misses goes to ``miss``."""
    tk, rule = ("m", SkewedMapper) if kind == SkewedMapper.KIND else ("r", SkewedReducer)
    runs = [detect.Run(a, ms(a.start), ms(a.end), a.status) for a in job.attempts if a.kind == tk]
    found = detect.skew(runs, rule)
    plant = job.plant if job.plant.get("kind") == kind else None
    att: Attempt | None = found.longest.key if found is not None else None
    entry = None
    if found is not None and found.qualifies and att is not None:
        entry = {
            "job_id": job.job_id,
            "task_id": job.task_id(tk, att.task),
            "attempt_id": job.attempt_id(tk, att.task, att.n),
            "duration": _s(found.duration_ms),
            "median": _s(found.median_ms),
            "ratio": round(found.ratio or 0.0, 3),
            "excess": _s(found.excess_ms),
            "attempts": found.attempts,
            "status": att.status,
            "host": hosts[att.node],
            "start": _s(ms(att.start)),
            "end": _s(ms(att.end)),
            "knowable_at": _s(found.knowable_ms),
            "job_end": _s(ms(job.end)),
            "planted": plant is not None and plant["task"] == att.task,
        }
    if plant is not None and not (entry and entry["planted"]):
        if found is None:
            reason = "no attempt"
        elif entry is None:
            reason = found.reason
        else:
            reason = f"the longest attempt is {entry['attempt_id']}, not the planted task's"
        miss.append({"job_id": job.job_id, "task_id": job.task_id(tk, plant["task"]), "reason": reason})
    return entry


def _slow_pull(rec: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    job: Job = rec["job"]
    att: Attempt = rec["attempt"]
    pull, check = rec["pull"], rec["check"]
    winner = job.map_ok[pull.map_task]
    return {
        "job_id": job.job_id,
        "task_id": job.task_id("r", att.task),
        "reducer_attempt": job.attempt_id("r", att.task, att.n),
        "map_task": job.task_id("m", pull.map_task),
        "map_attempt": job.attempt_id("m", pull.map_task, winner.n if winner else 0),
        "host": hosts[pull.node],
        "start": _s(pull.start_ms),
        "ts": _s(pull.end_ms),
        "period": _s(check.duration_ms),
        "mean_before": _s(check.mean_before_ms),
        "pulls_before": check.pulls_before,
        "knowable_at": _s(pull.end_ms),
        "planted": rec["planted"],
    }


def _queued(job: Job, end_ms: int, miss: list[dict[str, Any]]) -> dict[str, Any] | None:
    planted = job.plant.get("kind") == QueuedOutput.KIND
    if job.fetch_end is None or job.fetch_bytes is None:
        if planted:
            miss.append(
                {"job_id": job.job_id, "reason": f"its map output cannot reach {QueuedOutput.MIN_BYTES >> 20} MiB"}
            )
        return None
    writes = [(ms(a.end), job.materialized(a.task)) for a in job.map_ok if a is not None]
    found = detect.queued(writes, zip(job.fetch_end, job.fetch_bytes, strict=True), end_ms)
    if not found.qualifies or found.start_ms is None:
        if planted:
            miss.append({"job_id": job.job_id, "reason": found.reason})
        return None
    return {
        "job_id": job.job_id,
        "start": _s(found.start_ms),
        "knowable_at": _s(found.start_ms + QueuedOutput.MIN_HOLD_S * 1000),
        "held_for": _s(found.held_ms),
        "peak_queued_bytes": found.peak_bytes,
        "first_reducer_start": _s(ms(job.first_reduce_start)) if job.first_reduce_start is not None else None,
        "maps_done": _s(ms(job.maps_done_at)) if job.maps_done_at is not None else None,
        "planted": planted,
    }


def load_std(samples: Sequence[tuple[float, str, str, float]]) -> list[tuple[float, float]]:
    """Population standard deviation of ``load_one`` over the hosts, per sample round."""
    rounds: dict[float, list[float]] = {}
    for ts, _host, metric, value in samples:
        if metric == "load_one":
            rounds.setdefault(ts, []).append(value)
    return [(ts, statistics.pstdev(values)) for ts, values in sorted(rounds.items())]


def _unbalancing(
    job: Job, att: Attempt, hosts: list[str], rounds: Sequence[detect.Round], thr: float, miss: list[dict[str, Any]]
) -> dict[str, Any] | None:
    plant = job.plant
    planted = plant.get("kind") == UnbalancingReducer.KIND and plant.get("task") == att.task
    start, end = ms(att.start), ms(att.end)
    found = detect.unbalancing(att.load_peak, start, end, att.node, rounds, thr)
    if not found.qualifies or found.knowable_ms is None:
        if planted:
            miss.append({"job_id": job.job_id, "task_id": job.task_id("r", att.task), "reason": found.reason})
        return None
    rebalanced = next((r.ts_ms for r in rounds if r.ts_ms > end and r.std <= thr), None)
    return {
        "job_id": job.job_id,
        "task_id": job.task_id("r", att.task),
        "attempt_id": job.attempt_id("r", att.task, att.n),
        "host": hosts[att.node],
        "start": _s(start),
        "end": _s(end),
        "runtime": _s(end - start),
        "peak_contribution": round(att.load_peak, 3),
        "threshold": thr,
        "load_std_max_during": round(found.max_std or 0.0, 3),
        "knowable_at": _s(found.knowable_ms),
        "rebalanced_at": None if rebalanced is None else _s(rebalanced),
        "planted": planted,
    }


def build(
    cfg: SimConfig,
    jobs: list[Job],
    hosts: list[str],
    records: dict[str, list[dict[str, Any]]],
    rounds: Sequence[detect.Round],
    wanted: dict[str, int],
    window_end: float,
) -> dict[str, Any]:
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    missed: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    thr = cfg.imbalance_threshold
    end_ms = ms(window_end)
    for job in jobs:
        for kind in (SkewedMapper.KIND, SkewedReducer.KIND):
            if (entry := _skewed(job, kind, hosts, missed[kind])) is not None:
                found[kind].append(entry)
        if job.reduces and (entry := _queued(job, end_ms, missed[QueuedOutput.KIND])) is not None:
            found[QueuedOutput.KIND].append(entry)
        for att in job.attempts:
            runaway = att.load_peak >= UnbalancingReducer.MIN_CONTRIBUTION
            if att.kind == "r" and (
                runaway or (job.plant.get("kind") == UnbalancingReducer.KIND and job.plant.get("task") == att.task)
            ):
                entry = _unbalancing(job, att, hosts, rounds, thr, missed[UnbalancingReducer.KIND])
                if entry is not None:
                    found[UnbalancingReducer.KIND].append(entry)
    found["slow_pull"] = [_slow_pull(rec, hosts) for rec in records["slow_pull"]]
    missed["slow_pull"] = [
        {"job_id": r["job"].job_id, "task_id": r["job"].task_id("r", r["attempt"].task), "reason": r["reason"]}
        for r in records["slow_pull_missed"]
    ]
    by_id = {j.job_id: j for j in jobs}
    for entries in found.values():
        for e in entries:  # a non-planted entry in a planted job is usually a side effect of that plant
            e["job_plant"] = by_id[e["job_id"]].plant.get("kind")
        entries.sort(key=lambda e: (e["knowable_at"], e["job_id"], e.get("task_id", ""), e.get("ts", 0.0)))
    planted = {k: sum(1 for j in jobs if j.plant.get("kind") == k) for k in KINDS}
    config = asdict(cfg)
    config.pop("progress", None)
    return {
        "generator": "hcep simulate",
        "config": config,
        "window": {"start": cfg.start, "end": window_end, "hours": cfg.hours},
        "cluster": {"name": cfg.cluster, "nodes": cfg.nodes, "hosts": [hosts[0], hosts[-1]]},
        "jobs": len(jobs),
        "jobs_file": "jobs.jsonl",
        "counts": {
            "map_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "m"),
            "reduce_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "r"),
            "pulls": sum(j.maps * j.reduces for j in jobs),
        },
        "definitions": texts(thr),
        "wanted_per_kind": wanted,
        "planted_per_kind": planted,
        "anomalies": found,
        "natural": {k: sum(1 for e in v if not e["planted"]) for k, v in found.items()},
        "planted_not_anomalous": missed,
    }


def write_jobs(path: str, jobs: list[Job], hosts: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for job in jobs:
            handle.write(json.dumps(job_record(job, hosts), separators=(",", ":")) + "\n")
