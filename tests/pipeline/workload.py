"""A small deterministic Hadoop + Ganglia event stream for the pipeline tests, and its expected alerts.

Events have distinct reported times at the pack's tick (no ties), so the engine's answer does not depend on how ties
are broken; a tail of Ganglia rounds runs past the last job by more than the longest window plus the uncertainty, so
that every record the offline matcher finds is also released by the streaming service (which never flushes).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

BASE = 1_700_000_000.0
SLOT = 0.3  # seconds between consecutive Hadoop events (distinct ticks)


def hadoop_and_ganglia(
    jobs: int = 6, reducers: int = 3, pulls: int = 5, seed: int = 7, tail: float = 1300.0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(hadoop events, ganglia events)``, each in time order."""
    rng = random.Random(seed)
    hadoop: list[dict[str, Any]] = []
    t = BASE + 1.0

    def emit(etype: str, **attrs: Any) -> None:
        nonlocal t
        t += SLOT
        n = len(hadoop)
        hadoop.append({"type": etype, "ts": round(t, 1), "id": f"h{n}", "delta": 0.5, **attrs})

    # Jobs overlap: each starts, runs its mappers and reducers, ends; the next starts midway.
    for j in range(jobs):
        job = f"job_{1700000000000 + j}_{j:04d}"
        emit("JobStart", job_id=job, user="u", queue="default", maps=4, reduces=reducers)
        for m in range(4):
            emit(
                "Mapper",
                job_id=job,
                task_id=f"{job}_m_{m}",
                host=f"w{m}",
                period=round(rng.uniform(5, 9), 1),
                status="SUCCEEDED",
            )
            emit("DataIO", job_id=job, task_id=f"{job}_m_{m}", size=1000 * (m + 1))
        for r in range(reducers):
            task = f"{job}_r_{r}"
            emit("ReducerStart", job_id=job, task_id=task, host=f"w{r}")
            for p in range(pulls):
                slow = (r + j) % 2 == 0 and p == pulls - 1
                emit(
                    "DataPull",
                    job_id=job,
                    task_id=task,
                    map_task=f"{job}_m_{p % 4}",
                    host=f"w{r}",
                    period=round(rng.uniform(8, 12) if slow else rng.uniform(1, 2), 1),
                    bytes=1000,
                )
            t += 20.0  # reducers last long enough to span Ganglia rounds
            emit("ReducerEnd", job_id=job, task_id=task, host=f"w{r}")
            emit(
                "Reducer",
                job_id=job,
                task_id=task,
                host=f"w{r}",
                period=round(rng.uniform(20, 40), 1),
                status="SUCCEEDED",
            )
            emit("DataIO", job_id=job, task_id=task, size=-1000)
        emit("JobEnd", job_id=job, status="SUCCEEDED")

    ganglia: list[dict[str, Any]] = []
    end = t + tail
    g = BASE + 0.05  # Ganglia rounds fall between Hadoop ticks
    k = 0
    while g < end:
        val = round(0.5 + 1.5 * abs(((k % 12) - 6) / 6) + rng.uniform(0, 0.2), 3)
        kind = "Imbalance" if val > 1.0 else "Balance"
        stamp = round(g, 2)
        ganglia.append(
            {
                "type": "LoadStd",
                "ts": stamp,
                "id": f"g{k}s",
                "delta": 7.5,
                "val": val,
                "mean": 1.0,
                "hosts": 4,
                "cluster": "c",
            }
        )
        ganglia.append(
            {
                "type": kind,
                "ts": round(stamp + 0.1, 2),
                "id": f"g{k}b",
                "delta": 7.5,
                "val": val,
                "threshold": 1.0,
                "cluster": "c",
            }
        )
        g += 15.0
        k += 1
    return hadoop, ganglia


PACK = str(Path(__file__).resolve().parent / "data" / "pack.yaml")


def expected_transitions(pack_path: str, events: list[dict[str, Any]]) -> list[Any]:
    """The alert transitions ``hcep match --alerts`` decides for ``events`` (what one ``hcep run`` must send)."""
    from app.matching.judge import judge
    from engine.events import event_from_json
    from engine.language.packs import load_pack

    pack = load_pack(pack_path)
    return list(judge(pack, [event_from_json(e, i, pack.tick) for i, e in enumerate(events)]))


def expected_alerts(pack_path: str, events: list[dict[str, Any]]) -> dict[str, str]:
    """``{transition id: rule}`` of :func:`expected_transitions`."""
    return {a.transition_id: a.labels["alertname"] for a in expected_transitions(pack_path, events)}


def expected_record_ids(pack_path: str, events: list[dict[str, Any]]) -> set[str]:
    """Ids of the match records one ``hcep run`` stores for ``events`` (the engine is never flushed)."""
    import math

    from app.checkpoint import record_id
    from app.matching.judge import RUN_MAX_DELTA
    from app.pack_runner import PackRunner
    from engine.events import event_from_json
    from engine.language.packs import load_pack
    from engine.runtime.matcher import sort_events

    pack = load_pack(pack_path)
    runner = PackRunner(pack, math.ceil(2 * RUN_MAX_DELTA / pack.tick) + 1, shedding=False)
    evs = sort_events(event_from_json(e, i, pack.tick) for i, e in enumerate(events))
    return {record_id(rec, spec.output) for ev in evs for spec, rec in runner.feed(ev)}


def expected_keys(pack_path: str, events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(fingerprint, status)`` of :func:`expected_transitions`, sorted (what several processes must send)."""
    return sorted((a.fingerprint, a.status) for a in expected_transitions(pack_path, events))
