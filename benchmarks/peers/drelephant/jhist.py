"""Hadoop's ``JobHistoryParser`` as Dr. Elephant's fetcher uses it: a job history file (Avro-JSON, Hadoop 2.x/3.x)
folded into job, task and attempt records with the parser's own rules (which attempt a task keeps, a successful
attempt killed afterwards un-succeeding its task, -1 for times never logged)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchmarks.peers.drelephant.data import CounterData

_UNION_BRANCHES = {"string", "long", "int", "boolean", "double", "float", "bytes", "array", "map", "null"}


class JhistError(ValueError):
    """A history file Hadoop's parser would not read (names the file and line)."""


def _unwrap(value: Any) -> Any:
    """An Avro-JSON union value ``{"string": "x"}`` (or ``{"ns.Record": {...}}``) as its branch's value."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in _UNION_BRANCHES or "." in key:
            return value[key]
    return value


def counters_of(raw: Any) -> CounterData | None:
    """A ``JhCounters`` record as counters by group (None for a null union)."""
    raw = _unwrap(raw)
    if raw is None:
        return None
    out = CounterData()
    for group in raw.get("groups", []):
        for count in group.get("counts", []):
            out.set(str(group["name"]), str(count["name"]), int(count["value"]))
    return out


@dataclass
class AttemptInfo:
    """``JobHistoryParser.TaskAttemptInfo`` (times in epoch ms, -1 when never logged)."""

    attempt_id: str
    task_type: str = ""
    start_time: int = -1
    finish_time: int = -1
    shuffle_finish_time: int = -1
    sort_finish_time: int = -1
    status: str | None = None
    hostname: str = ""


@dataclass
class TaskInfo:
    """``JobHistoryParser.TaskInfo``."""

    task_id: str
    task_type: str = ""
    start_time: int = -1
    finish_time: int = -1
    status: str | None = None
    counters: CounterData | None = None
    successful_attempt_id: str | None = None
    failed_due_to_attempt_id: str | None = None
    attempts: dict[str, AttemptInfo] = field(default_factory=dict)


@dataclass
class JobInfo:
    """``JobHistoryParser.JobInfo``: what the fetcher reads of a job."""

    job_id: str = ""
    submit_time: int = -1
    launch_time: int = -1
    finish_time: int = -1
    username: str = ""
    jobname: str = ""
    queue: str = ""
    total_maps: int = 0
    total_reduces: int = 0
    job_status: str | None = None
    error_info: str = ""
    total_counters: CounterData | None = None
    tasks: dict[str, TaskInfo] = field(default_factory=dict)


def _attempt(job: JobInfo, ev: dict[str, Any]) -> AttemptInfo | None:
    task = job.tasks.get(str(ev["taskid"]))
    if task is None:
        return None
    return task.attempts.get(str(ev["attemptId"]))


def _handle(job: JobInfo, etype: str, ev: dict[str, Any]) -> None:
    """``JobHistoryParser.handleEvent`` for the events the fetcher's data depend on."""
    if etype == "JOB_SUBMITTED":
        job.job_id = str(ev["jobid"])
        job.submit_time = int(ev["submitTime"])
        job.username, job.jobname = str(ev.get("userName", "")), str(ev.get("jobName", ""))
        job.queue = str(_unwrap(ev.get("jobQueueName", "")) or "")
    elif etype == "JOB_QUEUE_CHANGED":
        job.queue = str(ev["jobQueueName"])
    elif etype == "JOB_INITED":
        job.launch_time = int(ev["launchTime"])
        job.total_maps, job.total_reduces = int(ev["totalMaps"]), int(ev["totalReduces"])
    elif etype == "JOB_INFO_CHANGED":
        job.submit_time, job.launch_time = int(ev["submitTime"]), int(ev["launchTime"])
    elif etype == "JOB_FINISHED":
        job.finish_time = int(ev["finishTime"])
        job.total_counters = counters_of(ev.get("totalCounters"))
        job.job_status = "SUCCEEDED"
    elif etype in ("JOB_FAILED", "JOB_KILLED", "JOB_ERROR"):
        job.finish_time = int(ev["finishTime"])
        job.job_status = str(ev["jobStatus"])
        job.error_info = str(_unwrap(ev.get("diagnostics", "")) or "")
    elif etype == "TASK_STARTED":
        tid = str(ev["taskid"])
        job.tasks[tid] = TaskInfo(tid, str(ev["taskType"]), int(ev["startTime"]))
    elif etype == "TASK_FINISHED":
        task = job.tasks.setdefault(str(ev["taskid"]), TaskInfo(str(ev["taskid"]), str(ev["taskType"])))
        task.counters = counters_of(ev.get("counters"))
        task.finish_time = int(ev["finishTime"])
        task.status = "SUCCEEDED"
        sid = _unwrap(ev.get("successfulAttemptId"))
        task.successful_attempt_id = None if sid is None else str(sid)
    elif etype == "TASK_FAILED":
        task = job.tasks.setdefault(str(ev["taskid"]), TaskInfo(str(ev["taskid"]), str(ev["taskType"])))
        task.status = "FAILED"
        task.finish_time = int(ev["finishTime"])
        fid = _unwrap(ev.get("failedDueToAttempt"))
        task.failed_due_to_attempt_id = None if fid is None else str(fid)
        task.counters = counters_of(ev.get("counters"))
    elif etype == "TASK_UPDATED":
        if (updated := job.tasks.get(str(ev["taskid"]))) is not None:
            updated.finish_time = int(ev["finishTime"])
    elif etype.endswith("_ATTEMPT_STARTED"):
        owner = job.tasks.get(str(ev["taskid"]))
        if owner is not None:
            aid = str(ev["attemptId"])
            owner.attempts[aid] = AttemptInfo(aid, str(ev.get("taskType", "")), int(ev["startTime"]))
    elif etype in (
        "MAP_ATTEMPT_FINISHED",
        "REDUCE_ATTEMPT_FINISHED",
        "SETUP_ATTEMPT_FINISHED",
        "CLEANUP_ATTEMPT_FINISHED",
    ):
        if (att := _attempt(job, ev)) is not None:
            att.finish_time = int(ev["finishTime"])
            att.status = str(ev.get("taskStatus", ""))
            att.hostname = str(ev.get("hostname", ""))
            if etype == "REDUCE_ATTEMPT_FINISHED":
                att.shuffle_finish_time = int(ev["shuffleFinishTime"])
                att.sort_finish_time = int(ev["sortFinishTime"])
    elif etype.endswith("_ATTEMPT_FAILED") or etype.endswith("_ATTEMPT_KILLED"):
        holder = job.tasks.get(str(ev["taskid"]))
        lost = _attempt(job, ev)
        if holder is None or lost is None:
            return
        lost.finish_time = int(ev["finishTime"])
        lost.status = str(ev.get("status", ""))
        if holder.status == "SUCCEEDED" and lost.attempt_id == holder.successful_attempt_id:
            # the attempt that made the task succeed failed afterwards: the task is no longer successful
            holder.counters, holder.finish_time, holder.status, holder.successful_attempt_id = None, -1, None, None


def parse_jhist_text(text: str, where: str) -> JobInfo:
    """One Avro-JSON history file's text as a ``JobInfo``; ``JhistError`` names ``where`` and the line."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "Avro-Json":
        head = lines[0].strip()[:40] if lines else ""
        raise JhistError(f"{where}:1: not an Avro-Json job history file (header {head!r})")
    job = JobInfo()
    for no, line in enumerate(lines[2:], start=3):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
            etype = str(rec["type"])
            ev = _unwrap(rec["event"])
            if not isinstance(ev, dict):
                raise TypeError(f"event is {type(ev).__name__}, not a record")
            _handle(job, etype, ev)
        except (ValueError, KeyError, TypeError) as exc:
            raise JhistError(f"{where}:{no}: {type(exc).__name__}: {exc}") from exc
    return job
