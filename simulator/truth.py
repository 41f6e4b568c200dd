"""``ground_truth.json`` (semantics section 9) and ``jobs.jsonl``: what the simulator caused, and every job's ids.

The truth lists the injected faults, in the order given, each with its target, when its cause began and stopped,
whether it is actionable (the floor's conditions, computed from what the cause did: the split or partition it made,
the time the task took, the attempts the slow host ran, the stall, the hold, the spin) and what else it touched.
``natural`` lists the few things the background caused that an operator would also want to hear of.  Nothing here
reads an alert rule, a threshold of a query pack, or the logs.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from simulator.faults import FLOORS, GIB, MIN_EXCESS_S, Fault, Injector
from simulator.jobs import Attempt, Job


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
        "submit": round(job.submit, 3),
        "launch": round(job.launch, 3),
        "end": round(job.end, 3),
        "status": job.status,
        "maps": job.maps,
        "reduces": job.reduces,
        "map_attempts": attempts("m"),
        "reduce_attempts": attempts("r"),
        "pulls": job.maps * job.reduces,
        "map_output_bytes": sum(job.materialized(t) for t in range(job.maps)) if job.reduces else 0,
    }


def write_jobs(path: str, jobs: list[Job], hosts: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for job in jobs:
            handle.write(json.dumps(job_record(job, hosts), separators=(",", ":")) + "\n")


# ----------------------------------------------------------------------------------------------------- figures
def _ok(job: Job, kind: str) -> dict[int, Attempt]:
    return {a.task: a for a in job.attempts if a.kind == kind and a.status == "SUCCEEDED"}


def _duration(a: Attempt) -> float:
    return a.end - a.start


def _longer(job: Job, kind: str, task: int) -> float | None:
    """How much longer task ``task``'s successful attempt ran than the median successful attempt of its phase."""
    ok = _ok(job, kind)
    if task not in ok:
        return None
    return _duration(ok[task]) - statistics.median(_duration(a) for a in ok.values())


def split_ratio(job: Job, task: int) -> float:
    return job.splits[task] / statistics.median(job.splits)


def partition_ratio(job: Job, task: int) -> float:
    return job.shares[task] / statistics.median(job.shares)


def _held_bytes(job: Job) -> int:
    """Map output waiting when the job's last map ended (no reducer had a container yet)."""
    return sum(job.materialized(t) for t in range(job.maps))


def _first_reducer(job: Job) -> Attempt | None:
    return min((a for a in job.attempts if a.kind == "r"), key=lambda a: a.assigned, default=None)


def _on_host(jobs: list[Job], node: int, start: float, end: float) -> list[tuple[Job, Attempt]]:
    return [(j, a) for j in jobs for a in j.attempts if a.node == node and a.start < end and a.end > start]


# ------------------------------------------------------------------------------------------------------ faults
def _fault(f: Fault, jobs: list[Job], hosts: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"kind": f.kind, "at": f.at, "severity": f.severity}
    job = f.job
    if f.onset is None or f.end is None or (f.kind != "slow_node" and job is None):
        return {**entry, "entity": None, "onset": None, "end": None, "actionable": False, "affected": {}}
    actionable = False
    affected: dict[str, list[str]] = {}
    if f.kind == "slow_node":
        entity = {"host": hosts[f.node]}
        touched = _on_host(jobs, f.node, f.onset, f.end)
        actionable = f.severity >= FLOORS[f.kind] and len(touched) >= 5
        affected = {
            "job_id": sorted({j.job_id for j, _ in touched}),
            "task_id": sorted({j.task_id(a.kind, a.task) for j, a in touched}),
            "host": [hosts[f.node]],
        }
    else:
        assert job is not None
        if f.kind in ("map_data_skew", "reduce_data_skew"):
            kind = "m" if f.kind == "map_data_skew" else "r"
            ratio = split_ratio(job, f.task) if kind == "m" else partition_ratio(job, f.task)
            longer = _longer(job, kind, f.task)
            actionable = ratio >= FLOORS[f.kind] and longer is not None and longer >= MIN_EXCESS_S
            entity = {"job_id": job.job_id}
            affected = {"job_id": [job.job_id], "task_id": [job.task_id(kind, f.task)]}
        elif f.kind == "held_output":
            held = f.end - (job.maps_done_at or f.end)
            actionable = held >= FLOORS[f.kind] and _held_bytes(job) >= GIB
            entity = {"job_id": job.job_id}
            affected = {"job_id": [job.job_id]}
        else:  # hung_fetch, runaway_reducer: a reducer
            tid = job.task_id("r", f.task)
            entity = {"task_id": tid}
            actionable = f.severity >= FLOORS[f.kind]
            affected = {"job_id": [job.job_id], "task_id": [tid]}
            if f.kind == "runaway_reducer":
                att = next(a for a in job.attempts if a.kind == "r" and a.task == f.task)
                affected["host"] = [hosts[att.node]]
    return {
        **entry,
        "entity": entity,
        "onset": round(f.onset, 3),
        "end": round(f.end, 3),
        "actionable": bool(actionable),
        "affected": affected,
    }


# ----------------------------------------------------------------------------------------------------- natural
def _natural(jobs: list[Job], injector: Injector) -> list[dict[str, Any]]:
    """Held output of >= 180 s and 1 GiB from full queues; splits and partitions >= 4x their job's median that ran
    >= 2 min longer -- where no fault caused them."""
    out: list[dict[str, Any]] = []
    caused_tasks = set(injector.map_skew) | set(injector.reduce_skew)
    for job in jobs:
        first = _first_reducer(job)
        if (
            job.idx not in injector.held
            and first is not None
            and job.maps_done_at is not None
            and job.slowstart_at is not None
            and first.assigned - job.maps_done_at >= FLOORS["held_output"]
            and _held_bytes(job) >= GIB
        ):
            out.append(_entry("held_output", job, job.slowstart_at, first.assigned))
        for kind, count, ratio_of, name in (
            ("m", job.maps, split_ratio, "map_data_skew"),
            ("r", job.reduces, partition_ratio, "reduce_data_skew"),
        ):
            if count < 2:
                continue
            ok = _ok(job, kind)
            for task in range(count):
                if (job.idx, task) in caused_tasks or ratio_of(job, task) < FLOORS[name]:
                    continue
                longer = _longer(job, kind, task)
                if longer is not None and longer >= MIN_EXCESS_S:
                    first_start = min(a.start for a in job.attempts if a.kind == kind and a.task == task)
                    out.append(_entry(name, job, first_start, ok[task].end))
    out.sort(key=lambda e: (e["onset"], e["kind"]))
    return out


def _entry(kind: str, job: Job, onset: float, end: float) -> dict[str, Any]:
    return {"kind": kind, "entity": {"job_id": job.job_id}, "onset": round(onset, 3), "end": round(end, 3)}


def build(
    jobs: list[Job], hosts: list[str], injector: Injector, *, window_start: float, window_end: float
) -> dict[str, Any]:
    return {
        "window": {"start": window_start, "end": round(window_end, 3)},
        "faults": [_fault(f, jobs, hosts) for f in injector.faults],
        "natural": _natural(jobs, injector),
    }
