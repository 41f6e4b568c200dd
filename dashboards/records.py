"""Match records and events (docs/semantics.md sections 5 and 1) as pandas rows, the same whatever backend they
came from.

Why one normal form: the pages filter by time, job and host and join matches to their events; doing that once here
means a new backend only has to hand over plain records.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from contracts.records import follow_chain, merge_chain
from contracts.records import record_id as contract_record_id

MATCH_COLUMNS = [
    "id",
    "query",
    "confidence",
    "start",
    "end",
    "job_id",
    "task_id",
    "host",
    "hosts",
    "events",
    "match",
    "return",
    "source",
    "extends",
]
EVENT_COLUMNS = ["id", "type", "ts", "lo", "hi", "job_id", "task_id", "host"]
#: Prefix of the flattened RETURN values (``r_period``, ``r_queued``...): a RETURN name may clash with a record field.
RETURN_PREFIX = "r_"

_TASK_RE = re.compile(r"^(?:task|attempt)_(\w+?)_(\d+)_[mr]_\d+")
_JOB_RE = re.compile(r"^job_\w+?_\d+$")


def record_id(record: Mapping[str, Any], output: str = "all") -> str:
    """The identity of a match record (:func:`contracts.records.record_id`, the service's own): the query and its
    signature, or its RETURN value for ``distinct`` output."""
    return contract_record_id(dict(record), output)


def job_of(task_or_job: Any) -> str | None:
    """``task_<c>_<n>_r_<k>`` / ``attempt_...`` -> ``job_<c>_<n>``; a job id is returned as is."""
    if not isinstance(task_or_job, str):
        return None
    if _JOB_RE.match(task_or_job):
        return task_or_job
    m = _TASK_RE.match(task_or_job)
    return f"job_{m.group(1)}_{m.group(2)}" if m else None


def event_row(obj: Mapping[str, Any], position: int) -> dict[str, Any] | None:
    """A JSON event as a flat row with ``id``, ``lo`` and ``hi`` filled in; None for something that is not an event."""
    try:
        ts = float(obj["ts"])
        etype = str(obj["type"])
    except (KeyError, TypeError, ValueError):
        return None
    if not math.isfinite(ts):
        return None
    row = {k: v for k, v in obj.items() if k not in ("delta",) and not isinstance(v, (dict, list))}
    delta = _float(obj.get("delta")) or 0.0
    row["id"] = str(obj["id"]) if obj.get("id") is not None else str(position)
    row["type"], row["ts"] = etype, ts
    row["lo"] = _float(obj.get("lo"), ts - delta)
    row["hi"] = _float(obj.get("hi"), ts + delta)
    return row


def _float(value: Any, default: float | None = None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    value = float(value)
    return value if math.isfinite(value) else default


def events_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Event rows -> a frame with at least :data:`EVENT_COLUMNS`, one row per id (the last copy wins)."""
    frame = pd.DataFrame(list(rows))
    for col in EVENT_COLUMNS:
        if col not in frame.columns:
            frame[col] = pd.Series(dtype="float64" if col in ("ts", "lo", "hi") else "object")
    if frame.empty:
        return frame[EVENT_COLUMNS]
    frame = frame.drop_duplicates("id", keep="last")
    derived = frame["task_id"].map(job_of)
    frame["job_id"] = frame["job_id"].where(frame["job_id"].notna(), derived)
    return frame.sort_values(["ts", "id"], kind="stable").reset_index(drop=True)


def match_row(record: Mapping[str, Any], source: str, rid: str | None = None) -> dict[str, Any] | None:
    """One match record -> a row (job, task and hosts are filled in later from the events, see :func:`enrich`)."""
    try:
        query = str(record["query"])
        start, end = float(record["start"]), float(record["end"])
    except (KeyError, TypeError, ValueError):
        return None
    match = record.get("match") or {}
    returned = record.get("return") or {}
    if not isinstance(match, Mapping) or not isinstance(returned, Mapping):
        return None
    ids = [str(i) for var in match for i in (match[var] or [])]
    row: dict[str, Any] = {
        "id": rid or record_id(record),
        "query": query,
        "confidence": _float(record.get("confidence"), 1.0),
        "start": start,
        "end": end,
        "job_id": _str(returned.get("job_id")),
        "task_id": _str(returned.get("task_id")),
        "host": _str(returned.get("host")),
        "hosts": "",
        "events": ids,
        "match": dict(match),
        "return": dict(returned),
        "source": source,
        "extends": _str(record.get("extends")),  # a growing run's increment (semantics section 5): see whole_row
    }
    for name, value in returned.items():
        row[RETURN_PREFIX + str(name)] = value
    return row


def whole_row(frame: pd.DataFrame, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` (of :func:`matches_frame`) with its whole signature: a growing run's increment lists only the events
    since the run's previous record, which it names in ``extends``; the chain is followed through ``frame`` (the
    rows of the same query).  Adds ``chain`` (records followed) and ``chain_complete`` (False: a link is not in the
    data)."""
    out = dict(row)
    if not _str(row.get("extends")):
        out["chain"], out["chain_complete"] = 1, True
        return out
    mine = frame[frame["query"] == row.get("query")]
    by_id = {
        str(r["id"]): {"query": r["query"], "match": r["match"], "extends": _str(r.get("extends"))}
        for r in mine[["id", "query", "match", "extends"]].to_dict("records")
    }
    start = {"query": row.get("query"), "match": row.get("match") or {}, "extends": row.get("extends")}
    chain, complete = follow_chain(start, by_id.get)
    whole = merge_chain(chain)
    out["match"] = whole
    out["events"] = [str(i) for var in whole for i in whole[var]]
    out["chain"], out["chain_complete"] = len(chain), complete
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def matches_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Match rows -> a frame with at least :data:`MATCH_COLUMNS`, one row per id (the first copy wins)."""
    frame = pd.DataFrame(list(rows))
    for col in MATCH_COLUMNS:
        if col not in frame.columns:
            frame[col] = pd.Series(dtype="float64" if col in ("confidence", "start", "end") else "object")
    if frame.empty:
        return frame[MATCH_COLUMNS]
    frame = frame.drop_duplicates("id", keep="first")
    return frame.sort_values(["end", "query"], kind="stable").reset_index(drop=True)


def enrich(matches: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Fill each match's job, task, main host and all hosts from its bound events (and the task id's job number)."""
    if matches.empty:
        return matches
    by_id: dict[str, dict[str, Any]] = {}
    if not events.empty:
        cols = [c for c in ("id", "job_id", "task_id", "host") if c in events.columns]
        by_id = {str(r["id"]): r for r in events[cols].to_dict("records")}
    jobs, tasks, hosts, all_hosts = [], [], [], []
    for job, task, host, ids in zip(
        matches["job_id"], matches["task_id"], matches["host"], matches["events"], strict=True
    ):
        bound = [by_id[i] for i in (ids or []) if i in by_id]
        if not _present(task):
            task = _shared(bound, "task_id")
        if not _present(job):
            job = _shared(bound, "job_id") or job_of(task)
        seen = [e["host"] for e in bound if _present(e.get("host"))]
        if _present(task):
            # A task's match: the host of its first event that names the task (Q3: the reducer, not the host a pull
            # came from, which Q3's RETURN calls ``host``); the RETURN's host when no bound event names the task.
            host = next((e["host"] for e in bound if e.get("task_id") == task and _present(e.get("host"))), host)
        jobs.append(job)
        tasks.append(task)
        hosts.append(host)
        all_hosts.append(",".join(dict.fromkeys([h for h in [host, *seen] if _present(h)])))
    out = matches.copy()
    out["job_id"], out["task_id"], out["host"], out["hosts"] = jobs, tasks, hosts, all_hosts
    return out


def _shared(bound: list[dict[str, Any]], attr: str) -> str | None:
    """The value of ``attr`` when every bound event carrying it agrees (a job's match binds many tasks: no task)."""
    values = {e[attr] for e in bound if _present(e.get(attr))}
    return values.pop() if len(values) == 1 else None


def _present(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def to_datetime(seconds: pd.Series) -> pd.Series:
    """Epoch seconds -> UTC datetimes, for charts and tables."""
    return pd.to_datetime(seconds, unit="s", utc=True, errors="coerce")
