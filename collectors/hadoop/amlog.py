"""MRAppMaster syslog -> JobStart/JobEnd, Mapper/Reducer, ReducerStart/ReducerEnd.

The lines used (Hadoop 2.x/3.x ``JobImpl``, ``TaskAttemptImpl``, ``TaskImpl``, ``RMContainerAllocator``)::

    ... JobImpl: Input size for job job_X = 1256521728. Number of splits = 10
    ... JobImpl: Number of reduces for job job_X = 1
    ... RMContainerAllocator: queue: default
    ... JobImpl: job_XJob Transitioned from INITED to SETUP                 -> launch (JobStart's ts)
    ... JobHistoryEventHandler: Event Writer setup for JobId: job_X, File: hdfs://.../staging/<user>/.staging/...
    ... TaskAttemptImpl: TaskAttempt: [attempt_X] using containerId: [container_Y on NM: [host:45454]
    ... TaskAttemptImpl: attempt_X TaskAttempt Transitioned from ASSIGNED to RUNNING   -> MapStart / ReducerStart
    ... TaskAttemptImpl: attempt_X TaskAttempt Transitioned from SUCCESS_CONTAINER_CLEANUP to SUCCEEDED
    ... TaskImpl: Scheduling a redundant attempt for task task_X            -> the next attempt is speculative
    ... JobImpl: job_XJob Transitioned from COMMITTING to SUCCEEDED         -> JobEnd
    ... JobImpl: Input size for job job_X = 1256521728. Number of splits = 10 -> JobInput (the mean split)
    ... RMContainerAllocator: Reduce slow start threshold reached. Scheduling reduces.   -> ReduceSlowstart
    ... RMContainerAllocator: After Scheduling: PendingReds:1 ScheduledMaps:0 ScheduledReds:0 AssignedMaps:4 ...
                                                                            -> SchedulerStats (containers wanted/got)

The AM log names the user only in staging paths that come after the launch, so JobStart (stamped with the launch time)
is emitted once the user is known, at the first running attempt, or at the job's end, whichever comes first.  An
attempt that never reached RUNNING produces no Mapper/Reducer (as in the job history file).  ``speculative`` is true
on every event of an attempt created by "Scheduling a redundant attempt", false on the others'.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from collectors.hadoop import events as E
from collectors.hadoop.common import Context, read_lines, run_lines
from collectors.hadoop.log4j import Log4jParser

_JOB_TRANS = re.compile(r"^(job_\w+?)Job Transitioned from (\w+) to (\w+)$")
_ATTEMPT_TRANS = re.compile(r"^(attempt_\w+) TaskAttempt Transitioned from (\w+) to (\w+)$")
_CONTAINER = re.compile(
    r"^TaskAttempt: \[(attempt_\w+)\] using containerId: \[(container_\w+) on NM: \[([^\]\s:]+):(\d+)\]$"
)
_REDUNDANT = re.compile(r"^Scheduling a redundant attempt for task (task_\w+)$")
_REDUCES = re.compile(r"^Number of reduces for job (job_\w+) = (\d+)$")
_INPUT = re.compile(r"^Input size for job (job_\w+) = (\d+)\. Number of splits = (\d+)$")
_QUEUE = re.compile(r"^queue: (\S+)$")
_SLOWSTART = "Reduce slow start threshold reached. Scheduling reduces."
_STATS = re.compile(r"^(Before|After) Scheduling: ((?:\w+:-?\d+\s*)+)$")
_STAT_NAMES = {
    "PendingReds": "pending_reds",
    "ScheduledMaps": "scheduled_maps",
    "ScheduledReds": "scheduled_reds",
    "AssignedMaps": "assigned_maps",
    "AssignedReds": "assigned_reds",
    "CompletedMaps": "completed_maps",
    "CompletedReds": "completed_reds",
    "ContAlloc": "containers_allocated",
    "ContRel": "containers_released",
}
_STAGING_USER = re.compile(r"/(?:user|staging)/([^/\s]+)/\.staging/")

_END_STATES = {"SUCCEEDED", "FAILED", "KILLED", "ERROR"}
_ATTEMPT_END = {"SUCCEEDED", "FAILED", "KILLED"}


@dataclass
class _Attempt:
    host: str = ""
    start: float | None = None
    speculative: bool = False
    container: str = ""


@dataclass
class _Job:
    job_id: str
    maps: int | None = None
    reduces: int | None = None
    queue: str | None = None
    user: str | None = None
    launch: float | None = None
    launch_loc: str = ""
    started: bool = False
    ended: bool = False


class AmLogParser(Log4jParser):
    """One MRAppMaster syslog file (one job)."""

    kind = "am"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.jobs: dict[str, _Job] = {}
        self.attempts: dict[str, _Attempt] = {}
        self.redundant: set[str] = set()
        self._queue: str | None = None
        self._user: str | None = None

    # ------------------------------------------------------------------------------------------------------------
    def _job(self, job_id: str) -> _Job:
        job = self.jobs.get(job_id)
        if job is None:
            job = self.jobs[job_id] = _Job(job_id)
        return job

    def _feed(self, line: str, lineno: int) -> list[E.Event]:
        rec = self.record(line, lineno)
        if rec is None:
            return []
        msg = rec.msg
        if "Transitioned" in msg:
            if " TaskAttempt Transitioned" in msg:
                return self._attempt_transition(rec.ts, msg, line, lineno)
            if "Job Transitioned" in msg:
                return self._job_transition(rec.ts, msg, line, lineno)
            return []  # TaskImpl / other state machines: not needed
        if msg.startswith("TaskAttempt: [") and "using containerId" in msg:
            m = _CONTAINER.match(msg)
            if m is None:
                return self.bad(lineno, "malformed container assignment", line)
            att = self._attempt(m.group(1))
            att.host, att.container = m.group(3), m.group(2)
            self.used()
            return []
        if "redundant attempt for task" in msg:
            m = _REDUNDANT.match(msg)
            if m is None:
                return self.bad(lineno, "malformed redundant-attempt line", line)
            self.redundant.add(m.group(1))
            self.used()
            return []
        if msg.startswith("Number of reduces for job"):
            m = _REDUCES.match(msg)
            if m is None:
                return self.bad(lineno, "malformed number of reduces", line)
            self._job(m.group(1)).reduces = int(m.group(2))
            self.used()
            return []
        if msg.startswith("Input size for job"):
            m = _INPUT.match(msg)
            if m is None:
                return self.bad(lineno, "malformed input size line", line)
            self._job(m.group(1)).maps = int(m.group(3))
            self.used()
            return [
                E.fact(
                    "JobInput",
                    rec.ts,
                    self.ctx.eid(f"line {lineno}"),
                    delta=self.ctx.delta,
                    job_id=m.group(1),
                    input_bytes=int(m.group(2)),
                    splits=int(m.group(3)),
                )
            ]
        if "Scheduling: " in msg:
            return self._stats(rec.ts, msg, line, lineno)
        if msg == _SLOWSTART:
            job = self._current_job()
            if job is None:
                return []
            self.used()
            return [E.fact("ReduceSlowstart", rec.ts, self.ctx.eid(f"line {lineno}"), delta=self.ctx.delta, job_id=job)]
        if msg.startswith("queue: "):
            m = _QUEUE.match(msg)
            if m is not None:
                self._queue = m.group(1)
                self.used()
            return []
        if ".staging/" in msg:
            m = _STAGING_USER.search(msg)
            if m is not None and self._user is None:
                self._user = m.group(1)
                self.used()
                return self._flush_starts(lineno)
        return []

    def _current_job(self) -> str | None:
        """The job this AM runs (an AM log holds one job; the latest named if several)."""
        return next(reversed(self.jobs), None) if self.jobs else None

    def _stats(self, ts: float, msg: str, line: str, lineno: int) -> list[E.Event]:
        """RMContainerAllocator's ScheduleStats line, logged when the numbers change: the reducers waiting for
        containers (pending, scheduled) against those assigned, beside the maps completed."""
        m = _STATS.match(msg)
        if m is None:
            return self.bad(lineno, "malformed scheduling stats line", line)
        job = self._current_job()
        if job is None:
            return []
        self.used()
        values: dict[str, object] = {"job_id": job, "phase": m.group(1).lower()}
        for item in m.group(2).split():
            name, _, number = item.partition(":")
            if name in _STAT_NAMES:
                values[_STAT_NAMES[name]] = int(number)
        return [E.fact("SchedulerStats", ts, self.ctx.eid(f"line {lineno}"), delta=self.ctx.delta, **values)]

    def _attempt(self, attempt_id: str) -> _Attempt:
        att = self.attempts.get(attempt_id)
        if att is None:
            att = self.attempts[attempt_id] = _Attempt()
            parsed = E.parse_attempt(attempt_id)
            if parsed is not None and parsed[1] in self.redundant:
                self.redundant.discard(parsed[1])
                att.speculative = True
        return att

    def _job_transition(self, ts: float, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _JOB_TRANS.match(msg)
        if m is None:
            return self.bad(lineno, "malformed job transition", line)
        job_id, src, dst = m.groups()
        job = self._job(job_id)
        self.used()
        out: list[E.Event] = []
        if src == "INITED" and job.launch is None:
            job.launch, job.launch_loc = ts, f"line {lineno}"
            if self._user is not None:
                out.append(self._start_event(job))
        if dst in _END_STATES and not job.ended:
            if not job.started:
                if job.launch is None:
                    job.launch, job.launch_loc = ts, f"line {lineno}"
                out.append(self._start_event(job))
            job.ended = True
            out.append(
                E.job_end(
                    ts,
                    self.ctx.eid(f"line {lineno}"),
                    job_id,
                    status=dst,
                    user=job.user or self._user or "unknown",
                    queue=job.queue or self._queue or "unknown",
                    maps=job.maps,
                    reduces=job.reduces,
                    delta=self.ctx.delta,
                )
            )
        return out

    def _start_event(self, job: _Job) -> E.Event:
        job.started = True
        job.user = job.user or self._user or "unknown"
        job.queue = job.queue or self._queue or "unknown"
        return E.job_start(
            job.launch if job.launch is not None else 0.0,
            self.ctx.eid(job.launch_loc),
            job.job_id,
            user=job.user,
            queue=job.queue,
            maps=job.maps if job.maps is not None else 0,
            reduces=job.reduces if job.reduces is not None else 0,
            delta=self.ctx.delta,
        )

    def _flush_starts(self, lineno: int) -> list[E.Event]:
        return [self._start_event(job) for job in self.jobs.values() if job.launch is not None and not job.started]

    def _attempt_transition(self, ts: float, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _ATTEMPT_TRANS.match(msg)
        if m is None:
            return self.bad(lineno, "malformed task attempt transition", line)
        attempt_id, _src, dst = m.groups()
        parsed = E.parse_attempt(attempt_id)
        if parsed is None:
            return self.bad(lineno, "malformed attempt id", line)
        self.used()
        att = self._attempt(attempt_id)
        kind = parsed[2]
        extra: dict[str, object] = {"speculative": att.speculative}
        if att.container:
            extra["container_id"] = att.container
        out: list[E.Event] = []
        if dst == "RUNNING" and att.start is None:
            out.extend(self._flush_starts(lineno))
            att.start = ts
            if kind == "m":
                out.append(
                    E.fact(
                        "MapStart",
                        ts,
                        self.ctx.eid(f"line {lineno}"),
                        delta=self.ctx.delta,
                        job_id=parsed[0],
                        task_id=parsed[1],
                        attempt_id=attempt_id,
                        host=att.host,
                        **extra,
                    )
                )
            if kind == "r":
                out.append(
                    E.reducer_edge(
                        "ReducerStart",
                        ts,
                        self.ctx.eid(f"line {lineno}"),
                        attempt_id,
                        host=att.host,
                        delta=self.ctx.delta,
                        **extra,
                    )
                )
        elif dst in _ATTEMPT_END and att.start is not None:
            period = ts - att.start
            out.append(
                E.task_attempt(
                    kind,
                    ts,
                    self.ctx.eid(f"line {lineno}"),
                    attempt_id,
                    host=att.host,
                    period=period,
                    status=dst,
                    delta=self.ctx.delta,
                    **extra,
                )
            )
            if kind == "r":
                out.append(
                    E.reducer_edge(
                        "ReducerEnd",
                        ts,
                        self.ctx.eid(f"line {lineno}", 1),
                        attempt_id,
                        host=att.host,
                        delta=self.ctx.delta,
                        status=dst,
                        **extra,
                    )
                )
            att.start = None  # an attempt ends once
        return out

    def _finish(self) -> list[E.Event]:
        return [self._start_event(job) for job in self.jobs.values() if job.launch is not None and not job.started]


def parse_am_log(path: str, ctx: Context | None = None) -> Iterator[E.Event]:
    """Events of one MRAppMaster syslog file."""
    ctx = ctx or Context(source=path)
    return run_lines(AmLogParser(ctx), read_lines(path))
