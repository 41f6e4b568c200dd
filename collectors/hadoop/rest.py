"""MapReduce JobHistory server REST JSON -> the same events as the ``.jhist`` collector (optional source).

For clusters where the history files are not readable but the history server is::

    GET /ws/v1/history/mapreduce/jobs/{job}                         {"job": {...}}
    GET /ws/v1/history/mapreduce/jobs/{job}/tasks                   {"tasks": {"task": [...]}}
    GET /ws/v1/history/mapreduce/jobs/{job}/tasks/{task}/attempts   {"taskAttempts": {"taskAttempt": [...]}}
    GET .../attempts/{attempt}/counters                             {"jobTaskAttemptCounters": {...}}  (maps only)

:func:`events_from_documents` converts documents already fetched (or saved); :func:`fetch_job_events` fetches them
with the standard library.  Times are epoch milliseconds; hosts come from ``nodeHttpAddress``.  The REST API has no
shuffle detail, so DataPull still needs the reduce task logs.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from collectors.hadoop import events as E
from collectors.hadoop.deadletter import DeadLetterSink

_BASE = "/ws/v1/history/mapreduce/jobs"


def _materialized(counters_doc: dict[str, Any] | None) -> int | None:
    if not isinstance(counters_doc, dict):
        return None
    body = counters_doc.get("jobTaskAttemptCounters", counters_doc)
    for group in (body.get("taskAttemptCounterGroup") or ()) if isinstance(body, dict) else ():
        for counter in (group.get("counter") or ()) if isinstance(group, dict) else ():
            if (
                isinstance(counter, dict)
                and counter.get("name") == "MAP_OUTPUT_MATERIALIZED_BYTES"
                and isinstance(counter.get("value"), int)
            ):
                return int(counter["value"])
    return None


def _attempts(doc: Any) -> list[Any]:
    """The task attempts of one ``/attempts`` document; anything unexpected becomes one bad entry (dead-lettered)."""
    body = doc.get("taskAttempts") if isinstance(doc, dict) else None
    attempts = body.get("taskAttempt") if isinstance(body, dict) else None
    if isinstance(attempts, dict):
        return [attempts]  # the XML-to-JSON shape of a single attempt
    return attempts if isinstance(attempts, list) else [doc]


def events_from_documents(
    job_doc: dict[str, Any],
    attempt_docs: Iterable[dict[str, Any]],
    *,
    source: str = "rest",
    counters: dict[str, dict[str, Any]] | None = None,
    delta: float = E.DEFAULT_DELTA,
    deadletter: DeadLetterSink | None = None,
) -> list[E.Event]:
    """Events of one job from its REST documents; malformed attempts go to the dead-letter sink."""
    deadletter = deadletter or DeadLetterSink()
    job = job_doc.get("job", job_doc) if isinstance(job_doc, dict) else {}
    try:
        if not isinstance(job, dict):
            raise TypeError("'job' is not an object")
        job_id = str(job["id"])
        start, finish = int(job["startTime"]), int(job["finishTime"])
        user, queue, state = str(job["user"]), str(job["queue"]), str(job["state"])
        maps, reduces = int(job["mapsTotal"]), int(job["reducesTotal"])

        def eid(location: str, index: int = 0) -> str:
            return E.event_id(source, location, index)

        out = [
            E.job_start(
                start / 1e3,
                eid(f"{job_id}/start"),
                job_id,
                user=user,
                queue=queue,
                maps=maps,
                reduces=reduces,
                delta=delta,
            )
        ]
        end = E.job_end(
            finish / 1e3,
            eid(f"{job_id}/end"),
            job_id,
            status=state,
            user=user,
            queue=queue,
            maps=maps,
            reduces=reduces,
            delta=delta,
        )
    except (KeyError, TypeError, ValueError, OverflowError) as err:  # E.EventRangeError is a ValueError
        deadletter.write(source, f"{source}:job", f"job document without {err}", json.dumps(job_doc, default=str))
        return []

    for n, doc in enumerate(attempt_docs):
        for att in _attempts(doc):
            try:
                aid = str(att["id"])
                parsed = E.parse_attempt(aid)
                a_start, a_finish = int(att["startTime"]), int(att["finishTime"])
                status = str(att["state"])
                host = str(att.get("nodeHttpAddress", "")).rsplit(":", 1)[0]
                if parsed is None or a_finish <= 0:
                    raise ValueError("unfinished attempt or malformed id")
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:
                deadletter.write(
                    source, f"{source}:attempts[{n}]", f"bad task attempt ({err})", json.dumps(att, default=str)
                )
                continue
            try:
                out.extend(_attempt_events(parsed, aid, a_start, a_finish, status, host, reduces, counters, delta, eid))
            except E.EventRangeError as err:
                deadletter.write(
                    source, f"{source}:attempts[{n}]", f"bad task attempt ({err})", json.dumps(att, default=str)
                )
    out.append(end)
    out.sort(key=lambda ev: ev["ts"])
    return out


def _attempt_events(
    parsed: tuple[Any, ...],
    aid: str,
    a_start: int,
    a_finish: int,
    status: str,
    host: str,
    reduces: int,
    counters: dict[str, dict[str, Any]] | None,
    delta: float,
    eid: Callable[..., str],
) -> list[dict[str, Any]]:
    """The events of one finished task attempt (all or none: a time out of range raises EventRangeError)."""
    out = []
    kind = parsed[2]
    if kind == "r":
        out.append(E.reducer_edge("ReducerStart", a_start / 1e3, eid(aid), aid, host=host, delta=delta))
    out.append(
        E.task_attempt(
            kind,
            a_finish / 1e3,
            eid(aid, 1),
            aid,
            host=host,
            period=(a_finish - a_start) / 1e3,
            status=status,
            delta=delta,
        )
    )
    if kind == "r":
        out.append(
            E.reducer_edge("ReducerEnd", a_finish / 1e3, eid(aid, 2), aid, host=host, delta=delta, status=status)
        )
    elif status == "SUCCEEDED" and reduces > 0:
        size = _materialized((counters or {}).get(aid))
        if size is not None:
            out.append(
                E.data_io(
                    a_finish / 1e3,
                    eid(aid, 3),
                    job_id=parsed[0],
                    task_id=parsed[1],
                    size=size,
                    delta=delta,
                    map_attempt=aid,
                    host=host,
                )
            )
    return out


def _get_json(url: str, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - an operator-given URL
        return json.load(response)


def fetch_job_events(
    server: str,
    job_id: str,
    *,
    timeout: float = 10.0,
    delta: float = E.DEFAULT_DELTA,
    deadletter: DeadLetterSink | None = None,
    get: Callable[[str, float], Any] = _get_json,
) -> list[E.Event]:
    """Fetch one finished job from the history server at ``server`` (``http://host:19888``) and convert it."""
    base = f"{server.rstrip('/')}{_BASE}/{job_id}"
    job_doc = get(base, timeout)
    tasks = (get(f"{base}/tasks", timeout).get("tasks") or {}).get("task") or []
    attempt_docs: list[dict[str, Any]] = []
    counters: dict[str, dict[str, Any]] = {}
    for task in tasks:
        doc = get(f"{base}/tasks/{task['id']}/attempts", timeout)
        attempt_docs.append(doc)
        if task.get("type") == "MAP":
            for att in (doc.get("taskAttempts") or {}).get("taskAttempt") or []:
                if att.get("state") == "SUCCEEDED":
                    counters[att["id"]] = get(f"{base}/tasks/{task['id']}/attempts/{att['id']}/counters", timeout)
    return events_from_documents(
        job_doc, attempt_docs, source=base, counters=counters, delta=delta, deadletter=deadletter
    )
