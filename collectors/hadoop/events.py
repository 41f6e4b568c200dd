"""Builders for the docs/semantics.md section 7 Hadoop events, stable event ids, and Hadoop id arithmetic.

Every collector goes through these helpers so that the same fact (say "attempt X of task T finished") becomes the same
event shape whichever raw format it came from; :func:`semantic_key` lets the CLI drop the copy when a job is seen
both in its ``.jhist`` file and in its ApplicationMaster log.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from engine.events import MAX_SECONDS

#: docs/semantics.md sections 1 and 7: Hadoop-log events are imprecise by half a second unless configured otherwise.
DEFAULT_DELTA = 0.5

Event = dict[str, Any]

_ATTEMPT_RE = re.compile(r"^attempt_(\w+?)_(\d+)_([mr])_(\d+)_(\d+)$")
_TASK_RE = re.compile(r"^task_(\w+?)_(\d+)_([mr])_(\d+)$")
_CONTAINER_RE = re.compile(r"^container_(?:e\d+_)?(\d+)_(\d+)_\d+_\d+$")


def event_id(source: str, location: str, index: int = 0) -> str:
    """A stable id from where the event came from: re-reading the same file gives the same ids."""
    digest = hashlib.blake2b(f"{source}\x00{location}\x00{index}".encode(), digest_size=8).hexdigest()
    return digest


def parse_attempt(attempt_id: str) -> tuple[str, str, str, int] | None:
    """``attempt_<cluster>_<job>_<m|r>_<task>_<n>`` -> (job_id, task_id, kind 'm'/'r', attempt number), else None."""
    m = _ATTEMPT_RE.match(attempt_id)
    if m is None:
        return None
    cluster, job, kind, task, n = m.groups()
    return f"job_{cluster}_{job}", f"task_{cluster}_{job}_{kind}_{task}", kind, int(n)


def parse_task(task_id: str) -> tuple[str, str] | None:
    """``task_<cluster>_<job>_<m|r>_<task>`` -> (job_id, kind), else None."""
    m = _TASK_RE.match(task_id)
    if m is None:
        return None
    cluster, job, kind, _ = m.groups()
    return f"job_{cluster}_{job}", kind


def reduce_task_id(job_id: str, partition: int) -> str:
    """The task id of reduce partition ``partition`` of ``job_id`` (Hadoop pads the index to 6 digits)."""
    return f"task_{job_id[4:]}_r_{partition:06d}"


class EventRangeError(ValueError):
    """An event time the engine would reject (``engine.events.MAX_SECONDS``): the record is dead-lettered where it
    is, not published (a job history ``launchTime`` of 9e15 ms -- found by fuzzing)."""


def _base(etype: str, ts: float, eid: str, delta: float) -> Event:
    if not -MAX_SECONDS <= ts <= MAX_SECONDS:  # False for NaN too
        raise EventRangeError(f"{etype}: time {ts!r} out of range (|ts| <= {MAX_SECONDS:g} s)")
    return {"type": etype, "ts": round(ts, 3), "id": eid, "delta": delta}


def job_start(
    ts: float,
    eid: str,
    job_id: str,
    *,
    user: str,
    queue: str,
    maps: int,
    reduces: int,
    delta: float = DEFAULT_DELTA,
    **extra: Any,
) -> Event:
    ev = _base("JobStart", ts, eid, delta)
    ev.update(job_id=job_id, user=user, queue=queue, maps=maps, reduces=reduces)
    ev.update(extra)
    return ev


def job_end(
    ts: float,
    eid: str,
    job_id: str,
    *,
    status: str,
    user: str | None = None,
    queue: str | None = None,
    maps: int | None = None,
    reduces: int | None = None,
    delta: float = DEFAULT_DELTA,
    **extra: Any,
) -> Event:
    ev = _base("JobEnd", ts, eid, delta)
    ev["job_id"] = job_id
    for key, value in (("user", user), ("queue", queue), ("maps", maps), ("reduces", reduces)):
        if value is not None:
            ev[key] = value
    ev["status"] = status
    ev.update(extra)
    return ev


def task_attempt(
    kind: str,
    ts: float,
    eid: str,
    attempt_id: str,
    *,
    host: str,
    period: float,
    status: str,
    delta: float = DEFAULT_DELTA,
    **extra: Any,
) -> Event:
    """A ``Mapper`` (kind 'm') or ``Reducer`` (kind 'r') event at attempt finish."""
    parsed = parse_attempt(attempt_id)
    job_id, task_id = (parsed[0], parsed[1]) if parsed else ("", "")
    ev = _base("Mapper" if kind == "m" else "Reducer", ts, eid, delta)
    ev.update(job_id=job_id, task_id=task_id, attempt_id=attempt_id, host=host, period=round(max(period, 0.0), 3))
    ev["status"] = status
    ev.update(extra)
    return ev


def reducer_edge(
    etype: str, ts: float, eid: str, attempt_id: str, *, host: str, delta: float = DEFAULT_DELTA, **extra: Any
) -> Event:
    """``ReducerStart`` or ``ReducerEnd`` for one reduce attempt."""
    parsed = parse_attempt(attempt_id)
    job_id, task_id = (parsed[0], parsed[1]) if parsed else ("", "")
    ev = _base(etype, ts, eid, delta)
    ev.update(job_id=job_id, task_id=task_id, attempt_id=attempt_id, host=host)
    ev.update(extra)
    return ev


def data_pull(
    ts: float,
    eid: str,
    *,
    job_id: str,
    task_id: str,
    map_attempt: str,
    host: str,
    period: float,
    nbytes: int,
    delta: float = DEFAULT_DELTA,
    **extra: Any,
) -> Event:
    """One map output fetched by a reducer: ``task_id`` is the reducer's task, ``map_task`` the producing map task."""
    parsed = parse_attempt(map_attempt)
    ev = _base("DataPull", ts, eid, delta)
    ev.update(
        job_id=job_id,
        task_id=task_id,
        map_task=parsed[1] if parsed else "",
        map_attempt=map_attempt,
        host=host,
        period=round(max(period, 0.0), 3),
        bytes=nbytes,
    )
    ev.update(extra)
    return ev


def data_io(
    ts: float, eid: str, *, job_id: str, task_id: str, size: int, delta: float = DEFAULT_DELTA, **extra: Any
) -> Event:
    """Map output written (``size`` > 0) or fetched by a reducer (``size`` < 0): Q4 sums these per job."""
    ev = _base("DataIO", ts, eid, delta)
    ev.update(job_id=job_id, task_id=task_id, size=size)
    ev.update(extra)
    return ev


def fact(etype: str, ts: float, eid: str, *, delta: float = DEFAULT_DELTA, **attrs: Any) -> Event:
    """Any other Hadoop event of the vocabulary (MapStart, MapSplit, FetchStart, FetchFailed, ShuffleDone, JobInput,
    ReduceSlowstart, SchedulerStats): the common keys, then ``attrs`` as given."""
    ev = _base(etype, ts, eid, delta)
    ev.update(attrs)
    return ev


def job_of_container(container_id: str) -> str | None:
    """``container_[e<epoch>_]<cluster>_<app>_<attempt>_<n>`` -> ``job_<cluster>_<app>`` (YARN's and MapReduce's ids
    share the cluster timestamp and the application number), else None."""
    m = _CONTAINER_RE.match(container_id)
    return f"job_{m.group(1)}_{m.group(2)}" if m else None


def semantic_key(ev: Event) -> tuple[str, ...] | None:
    """What makes two events "the same fact" across sources; None for events that only one source produces."""
    etype = ev.get("type")
    if etype in ("JobStart", "JobEnd"):
        return (etype, str(ev.get("job_id")))
    if etype in ("Mapper", "Reducer", "ReducerStart", "ReducerEnd", "MapStart"):
        return (etype, str(ev.get("attempt_id")))
    if etype == "DataIO" and isinstance(ev.get("size"), int) and ev["size"] > 0:
        return (etype, str(ev.get("map_attempt") or ev.get("task_id")))
    return None
