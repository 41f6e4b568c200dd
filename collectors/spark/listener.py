"""One Spark event log's listener events (one JSON object a line) -> hcep events.  Never raises on bad input.

Each line lands in exactly one bucket of :class:`ParseStats`: used (translated, or state such as the Spark version),
ignored (a listener event we know and do not need: task start, environment, block manager, SQL plans, ...), unknown
(an ``Event`` name we do not know: skipped and counted by name), or dead (not JSON, not an object, no ``Event``, a
needed field missing or of the wrong type, a non-finite number: handed to the dead-letter sink with the file and line).

The parser keeps what later events need: the App ID and attempt (events logged before
``SparkListenerApplicationStart``, such as the driver's ``ExecutorAdded``, are held until it names the application),
each stage's job, start times for durations, executor hosts, the latest time the log has shown (Spark 2.2 and older
log ``StageSubmitted`` without its submission time, Spark 1.2 jobs without theirs: they take it, ``ts_estimated``),
and each stage attempt's task figures, which :class:`StageStats` summarises on its ``StageCompleted``.

As Spark's own status store does, a stage attempt's figures count every task end until its last running task has
ended: a failed stage's ``StageCompleted`` comes while its other tasks still run (their ends follow), so it is held
until they end (or the log ends), then emitted with the figures of all of them.  Stages that complete after
``SparkListenerApplicationEnd`` (a SparkContext stopped with stages running) keep their figures too.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark import events as ev
from collectors.spark.fields import BadField, get, reason_text, reject_constant

#: Listener events that carry nothing the vocabulary needs (counted as ignored, not unknown).
IGNORED = frozenset(
    {
        "SparkListenerTaskGettingResult",
        "SparkListenerEnvironmentUpdate",
        "SparkListenerBlockManagerAdded",
        "SparkListenerBlockManagerRemoved",
        "SparkListenerBlockUpdated",
        "SparkListenerResourceProfileAdded",
        "SparkListenerUnpersistRDD",
        "SparkListenerExecutorMetricsUpdate",
        "SparkListenerStageExecutorMetrics",
        "SparkListenerSpeculativeTaskSubmitted",
        "SparkListenerUnschedulableTaskSetAdded",
        "SparkListenerUnschedulableTaskSetRemoved",
        "SparkListenerExecutorBlacklisted",
        "SparkListenerExecutorUnblacklisted",
        "SparkListenerNodeBlacklisted",
        "SparkListenerNodeUnblacklisted",
        "SparkListenerExecutorExcluded",
        "SparkListenerExecutorUnexcluded",
        "SparkListenerNodeExcluded",
        "SparkListenerNodeUnexcluded",
        "SparkListenerExecutorBlacklistedForStage",
        "SparkListenerExecutorExcludedForStage",
        "SparkListenerNodeBlacklistedForStage",
        "SparkListenerNodeExcludedForStage",
        "SparkListenerMiscellaneousProcessAdded",
        "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
        "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd",
        "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate",
        "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveSQLMetricUpdates",
        "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",
        "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent",
        "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent",
        "org.apache.spark.sql.streaming.StreamingQueryListener$QueryIdleEvent",
        "org.apache.spark.sql.streaming.StreamingQueryListener$QueryTerminatedEvent",
    }
)

#: Events held while the App ID is unknown are released anyway past this many lines (a log without its start).
HOLD_LINES = 1000

#: Task end reasons -> status (any other reason is FAILED).  A commit denied is a duplicate attempt (speculation) told
#: not to commit: killed, as Spark's status store counts it.
_STATUS = {"Success": "SUCCEEDED", "TaskKilled": "KILLED", "TaskCommitDenied": "KILLED", "Resubmitted": "RESUBMITTED"}


@dataclass
class ParseStats:
    lines: int = 0
    used: int = 0
    ignored: int = 0
    unknown: int = 0
    dead: int = 0
    partial: int = 0  # the unfinished last line of an in-progress log (not dead: its writer is mid-line)
    events: int = 0
    unknown_kinds: Counter[str] = field(default_factory=Counter)

    def add(self, other: ParseStats) -> None:
        for name in ("lines", "used", "ignored", "unknown", "dead", "partial", "events"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.unknown_kinds.update(other.unknown_kinds)


@dataclass
class StageStats:
    """Figures of one stage attempt's finished tasks, summarised on its ``StageCompleted``."""

    durations: list[float] = field(default_factory=list)  # successful tasks only (what skew is about)
    shuffle_reads: list[int] = field(default_factory=list)
    tasks: int = 0
    failed: int = 0
    killed: int = 0
    fetch_wait_max: float = 0.0
    sums: Counter[str] = field(default_factory=Counter)

    def add(self, task: dict[str, Any]) -> None:
        self.tasks += 1
        status = task["status"]
        if status == "SUCCEEDED":
            self.durations.append(task["duration"])
            self.shuffle_reads.append(task["shuffle_read_bytes"])
            self.fetch_wait_max = max(self.fetch_wait_max, task["fetch_wait"])
        elif status == "KILLED":
            self.killed += 1
        elif status != "RESUBMITTED":
            self.failed += 1
        for key in _SUMMED:
            self.sums[key] += task[key]

    def summary(self) -> dict[str, Any]:
        durations, reads = self.durations, self.shuffle_reads
        out: dict[str, Any] = {
            "tasks": self.tasks,
            "failed_tasks": self.failed,
            "killed_tasks": self.killed,
            "task_duration_max": max(durations, default=0.0),
            "task_duration_median": round(statistics.median(durations), 3) if durations else 0.0,
            "shuffle_read_max": max(reads, default=0),
            "shuffle_read_median": int(statistics.median(reads)) if reads else 0,
            "fetch_wait_max": round(self.fetch_wait_max, 3),
        }
        for key in _SUMMED:
            value = self.sums[key]
            out[key] = round(value, 3) if isinstance(value, float) else value
        # The most data the stage moved one way: Dr. Elephant's yardstick for how much spill is too much.
        out["data_bytes"] = max(
            out[k] for k in ("input_bytes", "output_bytes", "shuffle_read_bytes", "shuffle_write_bytes")
        )
        run_time = self.sums["run_time"]
        out["gc_ratio"] = round(self.sums["gc_time"] / run_time, 4) if run_time > 0 else 0.0
        return out


#: Task figures a StageCompleted sums over its tasks (all attempts: spill and GC of failed attempts cost too).
_SUMMED = (
    "run_time",
    "gc_time",
    "shuffle_read_bytes",
    "fetch_wait",
    "shuffle_write_bytes",
    "memory_spill",
    "disk_spill",
    "input_bytes",
    "output_bytes",
)


class ListenerParser:
    """A state machine over one event log's lines.

    ``source`` names the log in ids (its file name without ``.inprogress``, so ids survive the rename); ``path`` is
    where dead letters say the line came from; ``default_app_id`` (the name Spark gave the log) is the ``app_id``
    only if the log never says its App ID.
    """

    def __init__(
        self,
        source: str,
        path: str,
        default_app_id: str,
        *,
        delta: float = ev.DEFAULT_DELTA,
        deadletter: DeadLetterSink | None = None,
        stats: ParseStats | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.default_app_id = default_app_id
        self.delta = delta
        self.deadletter = deadletter if deadletter is not None else DeadLetterSink()
        self.stats = stats if stats is not None else ParseStats()
        self.app_id: str | None = None
        self.app_attempt: str | None = None
        self.app_name: str | None = None
        self.app_start: float | None = None
        self.spark_version: str | None = None
        self._held: list[ev.Event] = []
        self._held_lines = 0
        self._stage_job: dict[int, int] = {}
        self._job_start: dict[int, float] = {}
        self._job_group: dict[int, str] = {}
        self._stages: dict[tuple[int, int], StageStats] = {}
        self._running: Counter[tuple[int, int]] = Counter()  # task starts minus task ends, per stage attempt
        self._completed: dict[tuple[int, int], ev.Event] = {}  # StageCompleted held while its tasks still run
        self._active: dict[tuple[int, int], ev.Event] = {}  # StageSubmitted of the attempts not yet completed
        self._clock: float | None = None  # the latest time (ms) the log has shown
        self._line = 0
        self._hosts: dict[str, str] = {}
        self._quiet = False

    # -- driving ----------------------------------------------------------------------------------------------------
    def feed(self, text: str, lineno: int, *, replay: bool = False) -> list[ev.Event]:
        """The events of one line (without its newline).  ``replay``: rebuild state only (the line was consumed
        before a restart): no events, no dead letter, no counts."""
        self._quiet = replay
        stats = self.stats if not replay else ParseStats()
        stats.lines += 1
        self._line = lineno
        try:
            obj = json.loads(text, parse_constant=reject_constant)
        except ValueError as err:
            return self._dead(stats, lineno, f"not JSON: {err}", text)
        if not isinstance(obj, dict):
            return self._dead(stats, lineno, f"not a JSON object: {type(obj).__name__}", text)
        kind = obj.get("Event")
        if not isinstance(kind, str):
            return self._dead(stats, lineno, "no 'Event' name", text)
        self._observe(obj)
        handler = _HANDLERS.get(kind)
        if handler is None:
            if kind in IGNORED:
                stats.ignored += 1
            else:
                stats.unknown += 1
                stats.unknown_kinds[kind] += 1
            return self._tick_hold()
        try:
            made = handler(self, obj, ev.event_id(self.source, lineno))
        except BadField as err:
            return self._dead(stats, lineno, f"{kind}: {err}", text)
        except Exception as err:  # noqa: BLE001 - the contract: bad input never stops the collector
            return self._dead(stats, lineno, f"{kind}: parser error: {type(err).__name__}: {err}", text)
        stats.used += 1
        out = self._release(made)
        stats.events += len(out)
        return [] if replay else out

    def finish(self) -> list[ev.Event]:
        """Events still held at the end of the log: it never named its App ID, or stage attempts completed with
        tasks that never ended (the application stopped first): their figures are those of the tasks that did."""
        out = self._flush_held(self.default_app_id)
        out += [self._complete(key) for key in sorted(self._completed, key=lambda k: self._completed[k]["_line"])]
        self.stats.events += len(out)
        return out

    def partial(self) -> None:
        """Count the unfinished last line of an in-progress log (read in batch: its writer is mid-line)."""
        self.stats.lines += 1
        self.stats.partial += 1

    def dead(self, location: str, reason: str, raw: str | bytes = "") -> None:
        """Dead-letter something that is not a line (an undecodable block, a truncated stream)."""
        self.stats.dead += 1
        self.deadletter.write(self.path, location, reason, raw)

    # -- holding events until the App ID is known -------------------------------------------------------------------
    def _release(self, made: list[ev.Event]) -> list[ev.Event]:
        if self.app_id is not None:
            return made
        self._held.extend(made)
        return self._tick_hold()

    def _tick_hold(self) -> list[ev.Event]:
        if self.app_id is not None or not self._held:
            return []
        self._held_lines += 1
        if self._held_lines > HOLD_LINES:
            return self._flush_held(self.default_app_id)
        return []

    def _flush_held(self, app_id: str) -> list[ev.Event]:
        held, self._held = self._held, []
        if self.app_id is None:
            self.app_id = app_id
        for event in held:
            event["app_id"] = app_id
            if self.app_attempt is not None:
                event["app_attempt"] = self.app_attempt
            if "stage_id" in event:
                event["stage_key"] = ev.stage_key(app_id, event["stage_id"], event["stage_attempt"], self.app_attempt)
        return held

    def _app(self) -> str:
        return self.app_id if self.app_id is not None else self.default_app_id

    def _event(self, etype: str, ms: float, eid: str) -> ev.Event:
        event = ev.base(etype, ms, eid, self.delta, self._app())
        if self.app_attempt is not None:
            event["app_attempt"] = self.app_attempt
        return event

    def _stage_key(self, stage: int, attempt: int) -> str:
        return ev.stage_key(self._app(), stage, attempt, self.app_attempt)

    def _observe(self, obj: dict[str, Any]) -> None:
        """Advance the log's clock from the times a line carries (any event kind: task starts, block managers...)."""
        times = [obj.get("Timestamp"), obj.get("Submission Time"), obj.get("Completion Time")]
        for key in ("Task Info", "Stage Info"):
            inner = obj.get(key)
            if isinstance(inner, dict):
                times += [inner.get("Launch Time"), inner.get("Finish Time"), inner.get("Submission Time")]
                times.append(inner.get("Completion Time"))
        for value in times:
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < ev.MAX_MS:
                continue
            if self._clock is None or value > self._clock:
                self._clock = float(value)

    def _time(self, obj: dict[str, Any], key: str, where: str = "") -> tuple[float, bool]:
        """``obj[key]`` in ms, or -- when the log's Spark did not write it -- the latest time the log has shown
        (``True``: estimated)."""
        ms = get(obj, key, "num", where, default=None)
        if ms is not None:
            return ms, False
        if self._clock is None:
            get(obj, key, "num", where)  # raises: missing, and no earlier time to take
        assert self._clock is not None
        return self._clock, True

    def _dead(self, stats: ParseStats, lineno: int, reason: str, raw: str) -> list[ev.Event]:
        stats.dead += 1
        if not self._quiet:
            self.deadletter.write(self.path, f"{self.path}:{lineno}", reason, raw)
        return self._tick_hold()

    # -- the listener events ----------------------------------------------------------------------------------------
    def _log_start(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        self.spark_version = get(obj, "Spark Version", "str", default=None)
        return []

    def _app_start(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        app_id = get(obj, "App ID", "str")
        ms = get(obj, "Timestamp", "num")
        attempt = get(obj, "App Attempt ID", "str", default=None)
        self.app_name = get(obj, "App Name", "str", default="")
        self.app_start = ms
        self.app_attempt = attempt
        event = ev.base(ev.APP_START, ms, eid, self.delta, app_id)
        event.update(app_name=self.app_name, user=get(obj, "User", "str", default=""))
        if attempt is not None:
            event["app_attempt"] = attempt
        if self.spark_version:
            event["spark_version"] = self.spark_version
        self.app_id = None  # the held events get this id, after the start itself
        return [event, *self._flush_held(app_id)]

    def _app_end(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        ms = get(obj, "Timestamp", "num")
        exit_code = get(obj, "ExitCode", "int", default=None)
        event = self._event(ev.APP_END, ms, eid)
        event["app_name"] = self.app_name or ""
        if self.app_start is not None:
            event["duration"] = round(max(ms - self.app_start, 0) / 1000.0, 3)
        if exit_code is not None:
            event["exit_code"] = exit_code
            event["status"] = "SUCCEEDED" if exit_code == 0 else "FAILED"
        return [event]  # stage state is kept: stages still running when the context stopped complete after this

    def _job_start_event(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        job = get(obj, "Job ID", "int")
        ms, estimated = self._time(obj, "Submission Time")
        stage_ids = get(obj, "Stage IDs", "list", default=[])
        infos = get(obj, "Stage Infos", "list", default=[])
        props = get(obj, "Properties", "obj", default={})
        tasks = 0
        for i, info in enumerate(infos):
            if not isinstance(info, dict):
                raise BadField(f"'Stage Infos'[{i}] must be an object")
            tasks += get(info, "Number of Tasks", "int", f"'Stage Infos'[{i}]", default=0)
        for stage in stage_ids:
            if not isinstance(stage, int) or isinstance(stage, bool):
                raise BadField(f"'Stage IDs' must hold integers, got {stage!r}")
            self._stage_job[stage] = job
        self._job_start[job] = ms
        event = self._event(ev.JOB_START, ms, eid)
        event.update(spark_job_id=job, stages=len(stage_ids), tasks=tasks)
        if estimated:
            event["ts_estimated"] = True
        group = props.get("spark.jobGroup.id")
        if isinstance(group, str):
            event["job_group"] = self._job_group[job] = group
        sql = props.get("spark.sql.execution.id")
        if isinstance(sql, str) and sql.isdigit():
            event["sql_execution_id"] = int(sql)
        return [event]

    def _job_end(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        job = get(obj, "Job ID", "int")
        ms, estimated = self._time(obj, "Completion Time")
        result = get(obj, "Job Result", "obj")
        outcome = get(result, "Result", "str", "'Job Result'")
        event = self._event(ev.JOB_END, ms, eid)
        event.update(spark_job_id=job, status="SUCCEEDED" if outcome == "JobSucceeded" else "FAILED")
        if estimated:
            event["ts_estimated"] = True
        if outcome != "JobSucceeded":
            exc = get(result, "Exception", "obj", "'Job Result'", default={})
            event["failure_reason"] = reason_text(
                get(exc, "Message", "str", "'Job Result'.'Exception'", default=outcome)
            )
        start = self._job_start.pop(job, None)
        if start is not None:
            event["duration"] = round(max(ms - start, 0) / 1000.0, 3)
        group = self._job_group.pop(job, None)
        if group is not None:
            event["job_group"] = group
        return [event]

    def _stage(self, etype: str, obj: dict[str, Any], eid: str, time_key: str) -> tuple[ev.Event, dict[str, Any]]:
        info = get(obj, "Stage Info", "obj")
        where = "'Stage Info'"
        stage = get(info, "Stage ID", "int", where)
        attempt = get(info, "Stage Attempt ID", "int", where)
        ms, estimated = self._time(info, time_key, where)
        event = self._event(etype, ms, eid)
        if estimated:
            event["ts_estimated"] = True
        event.update(
            stage_id=stage,
            stage_attempt=attempt,
            stage_key=self._stage_key(stage, attempt),
            stage_name=get(info, "Stage Name", "str", where, default=""),
            num_tasks=get(info, "Number of Tasks", "int", where),
        )
        job = self._stage_job.get(stage)
        if job is not None:
            event["spark_job_id"] = job
        return event, info

    def _stage_submitted(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        event, _ = self._stage(ev.STAGE_SUBMITTED, obj, eid, "Submission Time")
        key = (event["stage_id"], event["stage_attempt"])
        self._stages.setdefault(key, StageStats())
        self._active[key] = event
        return [event]

    def _stage_completed(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        """The attempt's StageCompleted, now if none of its tasks runs, else once the last has ended."""
        event, info = self._stage(ev.STAGE_COMPLETED, obj, eid, "Completion Time")
        where = "'Stage Info'"
        failure = get(info, "Failure Reason", "str", where, default=None)
        submitted = get(info, "Submission Time", "num", where, default=None)
        event["status"] = "FAILED" if failure is not None else "SUCCEEDED"
        if failure is not None:
            event["failure_reason"] = reason_text(failure)
        if submitted is not None:
            event["duration"] = round(max(event["ts"] * 1000.0 - submitted, 0) / 1000.0, 3)
        key = (event["stage_id"], event["stage_attempt"])
        self._active.pop(key, None)
        self._stages.setdefault(key, StageStats())
        event["_line"] = self._line
        self._completed[key] = event
        if self._running[key] > 0:
            return []
        return [self._complete(key)]

    def _complete(self, key: tuple[int, int]) -> ev.Event:
        """The held StageCompleted of ``key`` with its figures; the attempt's state is dropped."""
        event = self._completed.pop(key)
        del event["_line"]
        self._running.pop(key, None)
        event.update((self._stages.pop(key, None) or StageStats()).summary())
        return event

    def _task_start(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        key = (get(obj, "Stage ID", "int"), get(obj, "Stage Attempt ID", "int"))
        if key in self._stages:
            self._running[key] += 1
        return []

    def _task_end(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        stage = get(obj, "Stage ID", "int")
        attempt = get(obj, "Stage Attempt ID", "int")
        info = get(obj, "Task Info", "obj")
        ti = "'Task Info'"
        launch = get(info, "Launch Time", "num", ti)
        finish = get(info, "Finish Time", "num", ti)
        if finish <= 0:
            raise BadField(f"{ti}.'Finish Time' is {finish}: the task has not finished")
        reason_obj = get(obj, "Task End Reason", "obj")
        reason = get(reason_obj, "Reason", "str", "'Task End Reason'")
        metrics = get(obj, "Task Metrics", "obj", default=None)
        event = self._event(ev.TASK, finish, eid)
        event.update(
            stage_id=stage,
            stage_attempt=attempt,
            stage_key=self._stage_key(stage, attempt),
            spark_task_id=get(info, "Task ID", "int", ti),
            task_index=get(info, "Index", "int", ti),
            task_attempt=get(info, "Attempt", "int", ti),
            executor_id=get(info, "Executor ID", "str", ti),
            host=get(info, "Host", "str", ti),
            status=_STATUS.get(reason, "FAILED"),
            end_reason=reason,
            speculative=get(info, "Speculative", "bool", ti, default=False),
            duration=round(max(finish - launch, 0) / 1000.0, 3),
        )
        partition = get(info, "Partition ID", "int", ti, default=None)
        if partition is not None:
            event["partition"] = partition
        event["locality"] = get(info, "Locality", "str", ti, default="")
        event["task_type"] = get(obj, "Task Type", "str", default="")
        job = self._stage_job.get(stage)
        if job is not None:
            event["spark_job_id"] = job
        if reason != "Success":
            event["failure_reason"] = _task_failure(reason, reason_obj)
        event.update(_task_metrics(metrics))
        key = (stage, attempt)
        stats = self._stages.get(key)
        if stats is None:
            return [event]  # its stage attempt was never submitted, or has completed and its last task ended
        stats.add(event)
        if reason != "Resubmitted":  # a Resubmitted end is a second end of a task that had succeeded: no task start
            self._running[key] -= 1
        if key in self._completed and self._running[key] <= 0:
            return [event, self._complete(key)]
        return [event]

    def _executor_added(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        ms = get(obj, "Timestamp", "num")
        executor = get(obj, "Executor ID", "str")
        info = get(obj, "Executor Info", "obj")
        host = get(info, "Host", "str", "'Executor Info'")
        self._hosts[executor] = host
        event = self._event(ev.EXECUTOR_ADDED, ms, eid)
        event.update(
            executor_id=executor, host=host, cores=get(info, "Total Cores", "int", "'Executor Info'", default=0)
        )
        return [event]

    def _executor_removed(self, obj: dict[str, Any], eid: str) -> list[ev.Event]:
        ms = get(obj, "Timestamp", "num")
        executor = get(obj, "Executor ID", "str")
        event = self._event(ev.EXECUTOR_REMOVED, ms, eid)
        event.update(
            executor_id=executor,
            host=self._hosts.get(executor, ""),
            reason=reason_text(get(obj, "Removed Reason", "str", default="")),
        )
        out = [event]
        for index, sub in enumerate(self._active.values(), start=1):  # in submission order
            lost = self._event(ev.STAGE_EXECUTOR_LOST, ms, ev.event_id(self.source, self._line, index))
            lost.update({k: sub[k] for k in _STAGE_KEYS if k in sub})
            lost.update(
                executor_id=executor,
                host=event["host"],
                reason=event["reason"],
                elapsed=round(max(ms / 1000.0 - sub["ts"], 0.0), 3),
            )
            out.append(lost)
        return out


#: What a StageExecutorLost repeats of its stage attempt's StageSubmitted.
_STAGE_KEYS = ("stage_id", "stage_attempt", "stage_key", "stage_name", "num_tasks", "spark_job_id")


def _task_failure(reason: str, obj: dict[str, Any]) -> str:
    """Why a task did not succeed, in one line (``Task End Reason`` differs by reason)."""
    where = "'Task End Reason'"
    if reason == "ExceptionFailure":
        cls = get(obj, "Class Name", "str", where, default="")
        desc = get(obj, "Description", "str", where, default="")
        return reason_text(f"{cls}: {desc}" if cls and not desc.startswith("[") else desc or cls)
    if reason == "FetchFailed":
        message = get(obj, "Message", "str", where, default="")
        shuffle = get(obj, "Shuffle ID", "int", where, default=None)
        address = get(obj, "Block Manager Address", "obj", where, default={})
        host = address.get("Host", "") if isinstance(address, dict) else ""
        return reason_text(f"FetchFailed shuffle {shuffle} from {host}: {message}")
    if reason == "TaskKilled":
        return reason_text(get(obj, "Kill Reason", "str", where, default="killed"))
    if reason == "ExecutorLostFailure":
        executor = get(obj, "Executor ID", "str", where, default="")
        loss = get(obj, "Loss Reason", "str", where, default="")
        return reason_text(f"executor {executor} lost: {loss}")
    return reason


#: (attribute, path in 'Task Metrics', scale): times in ms become seconds, CPU and write times in ns too.
_METRICS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("run_time", ("Executor Run Time",), 1e-3),
    ("cpu_time", ("Executor CPU Time",), 1e-9),
    ("deserialize_time", ("Executor Deserialize Time",), 1e-3),
    ("gc_time", ("JVM GC Time",), 1e-3),
    ("result_size", ("Result Size",), 1),
    ("peak_memory", ("Peak Execution Memory",), 1),
    ("memory_spill", ("Memory Bytes Spilled",), 1),
    ("disk_spill", ("Disk Bytes Spilled",), 1),
    ("shuffle_remote_bytes", ("Shuffle Read Metrics", "Remote Bytes Read"), 1),
    ("shuffle_local_bytes", ("Shuffle Read Metrics", "Local Bytes Read"), 1),
    ("shuffle_records_read", ("Shuffle Read Metrics", "Total Records Read"), 1),
    ("fetch_wait", ("Shuffle Read Metrics", "Fetch Wait Time"), 1e-3),
    ("shuffle_write_bytes", ("Shuffle Write Metrics", "Shuffle Bytes Written"), 1),
    ("shuffle_write_time", ("Shuffle Write Metrics", "Shuffle Write Time"), 1e-9),
    ("shuffle_records_written", ("Shuffle Write Metrics", "Shuffle Records Written"), 1),
    ("input_bytes", ("Input Metrics", "Bytes Read"), 1),
    ("input_records", ("Input Metrics", "Records Read"), 1),
    ("output_bytes", ("Output Metrics", "Bytes Written"), 1),
    ("output_records", ("Output Metrics", "Records Written"), 1),
)


def _task_metrics(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """The task's figures; all 0 when Spark logged no metrics (some failures), ``metrics`` says which."""
    out: dict[str, Any] = {}
    for attr, path, scale in _METRICS:
        value: Any = 0
        node: Any = metrics
        where = "'Task Metrics'"
        if node is not None:
            for key in path[:-1]:
                node = get(node, key, "obj", where, default=None)
                where = f"{where}.'{key}'"
                if node is None:
                    break
            if node is not None:
                value = get(node, path[-1], "num", where, default=0)
        out[attr] = round(value * scale, 3) if scale != 1 else int(value)
    out["shuffle_read_bytes"] = out["shuffle_remote_bytes"] + out["shuffle_local_bytes"]
    out["metrics"] = metrics is not None
    return out


_HANDLERS = {
    "SparkListenerLogStart": ListenerParser._log_start,
    "SparkListenerApplicationStart": ListenerParser._app_start,
    "SparkListenerApplicationEnd": ListenerParser._app_end,
    "SparkListenerJobStart": ListenerParser._job_start_event,
    "SparkListenerJobEnd": ListenerParser._job_end,
    "SparkListenerStageSubmitted": ListenerParser._stage_submitted,
    "SparkListenerStageCompleted": ListenerParser._stage_completed,
    "SparkListenerTaskStart": ListenerParser._task_start,
    "SparkListenerTaskEnd": ListenerParser._task_end,
    "SparkListenerExecutorAdded": ListenerParser._executor_added,
    "SparkListenerExecutorRemoved": ListenerParser._executor_removed,
}
