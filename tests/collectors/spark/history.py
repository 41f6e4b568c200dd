"""Spark's own History Server as the oracle of the collector: started once per test session by
``deploy/spark/history-start.sh`` over one directory, read through its REST API (``/api/v1``), compared figure by
figure with what ``hcep collect spark`` makes of the same logs.

The History Server replays a log through Spark's ``AppStatusListener``; the collector through its own parser.
Where the two must differ, :func:`compare` says why at that line (a Resubmitted task end, the driver as an executor,
the Spark 2.2 submission time, task ends after an executor's removal)."""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import time
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from collectors.spark import events as ev
from collectors.spark.fields import reason_text

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy" / "spark"
HERE = Path(__file__).parent
#: The logs written by this machine's Spark (4.3): every codec, rolling, in progress, and the Spark pack's local and
#: local-cluster applications (a lost executor, GC pressure, a frozen executor).
LOCAL_LOGS = [HERE / "data" / "eventlogs", ROOT / "tests" / "queries" / "spark_pack" / "data" / "eventlogs"]
THIRD_PARTY = HERE / "fixtures"
#: Fixtures that are not Spark event logs (a Databricks rotated gzip part, a Hadoop job history file): neither reads
#: them.
NOT_LOGS = {"databricks_rotated", "hadoop_jhist"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gather_logs(target: Path) -> list[Path]:
    """Copy every local and third-party event log into ``target`` (the History Server reads one directory); the
    copies, one per application attempt."""
    target.mkdir(parents=True, exist_ok=True)
    copied: list[Path] = []
    sources = [p for d in LOCAL_LOGS for p in sorted(d.iterdir())]
    for folder in sorted(THIRD_PARTY.iterdir()):
        if folder.is_dir() and folder.name not in NOT_LOGS:
            sources += [p for p in sorted(folder.iterdir()) if p.name != "README.md"]
    for src in sources:
        dst = target / src.name
        assert not dst.exists(), f"two fixtures named {src.name}"
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
        copied.append(dst)
    return copied


@dataclass
class HistoryServer:
    url: str
    logdir: Path
    run_dir: Path
    copies: list[Path] = field(default_factory=list)  # the logs copied in at the start (one per attempt)

    def get(self, path: str, timeout: float = 600) -> Any:
        """One REST answer (the first request for an application replays its whole log: a generous timeout)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=timeout) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        subprocess.run(["bash", str(DEPLOY / "history-stop.sh"), "--run-dir", str(self.run_dir)], check=False)

    def wait_for(self, attempts: set[tuple[str, str | None]], deadline: float = 600) -> None:
        """Until every (app id, attempt id) is listed (the server scans its directory every second; a loaded
        machine parses slowly)."""
        end = time.monotonic() + deadline
        listed: set[tuple[str, str | None]] = set()
        while time.monotonic() < end:
            listed = {(a["id"], t.get("attemptId")) for a in self.get("applications") for t in a["attempts"]}
            if attempts <= listed:
                return
            time.sleep(1)
        raise AssertionError(f"the History Server did not list {sorted(attempts - listed, key=str)}")


def start_history_server(logdir: Path, run_dir: Path) -> HistoryServer:
    port = free_port()
    args = ["--log-dir", str(logdir), "--run-dir", str(run_dir), "--port", str(port)]
    done = subprocess.run(
        ["bash", str(DEPLOY / "history-start.sh"), *args], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return HistoryServer(values["URL"], logdir, run_dir)


# ----------------------------------------------------------------------------------------------------- comparison
def _ms(stamp: str | None) -> int | None:
    """The REST API's ``2026-11-26T15:17:08.708GMT`` in epoch milliseconds."""
    if stamp is None:
        return None
    return round(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%Z").replace(tzinfo=UTC).timestamp() * 1000)


def _ms_of(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass
class Tally:
    """What one comparison covered (the report's figures)."""

    apps: int = 0
    stages: int = 0
    tasks: int = 0
    executors: int = 0
    removals: int = 0
    notes: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        for name in ("apps", "stages", "tasks", "executors", "removals"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.notes.update(other.notes)


#: The stage figures the collector sums over an attempt's task ends, against the status store's: (collector
#: attribute, REST field, to the REST's unit).
STAGE_SUMS = (
    ("run_time", "executorRunTime", _ms_of),
    ("gc_time", "jvmGcTime", _ms_of),
    ("memory_spill", "memoryBytesSpilled", int),
    ("disk_spill", "diskBytesSpilled", int),
    ("input_bytes", "inputBytes", int),
    ("output_bytes", "outputBytes", int),
    ("shuffle_read_bytes", "shuffleReadBytes", int),
    ("shuffle_write_bytes", "shuffleWriteBytes", int),
    ("fetch_wait", "shuffleFetchWaitTime", _ms_of),
)
#: The same per task: (collector attribute, path in the REST task's ``taskMetrics``, to the REST's unit).
TASK_METRICS = (
    ("run_time", ("executorRunTime",), _ms_of),
    ("gc_time", ("jvmGcTime",), _ms_of),
    ("memory_spill", ("memoryBytesSpilled",), int),
    ("disk_spill", ("diskBytesSpilled",), int),
    ("input_bytes", ("inputMetrics", "bytesRead"), int),
    ("output_bytes", ("outputMetrics", "bytesWritten"), int),
    ("shuffle_remote_bytes", ("shuffleReadMetrics", "remoteBytesRead"), int),
    ("shuffle_local_bytes", ("shuffleReadMetrics", "localBytesRead"), int),
    ("fetch_wait", ("shuffleReadMetrics", "fetchWaitTime"), _ms_of),
    ("shuffle_write_bytes", ("shuffleWriteMetrics", "bytesWritten"), int),
    ("shuffle_records_read", ("shuffleReadMetrics", "recordsRead"), int),
    ("shuffle_records_written", ("shuffleWriteMetrics", "recordsWritten"), int),
    ("input_records", ("inputMetrics", "recordsRead"), int),
    ("output_records", ("outputMetrics", "recordsWritten"), int),
    ("deserialize_time", ("executorDeserializeTime",), _ms_of),
    ("result_size", ("resultSize",), int),
    ("peak_memory", ("peakExecutionMemory",), int),
)
#: Nanosecond figures the collector keeps in seconds to the millisecond: compared at that precision.
TASK_NANOS = (
    ("cpu_time", ("executorCpuTime",)),
    ("shuffle_write_time", ("shuffleWriteMetrics", "writeTime")),
)
_TASK_STATUS = {"SUCCESS": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}


def _metric(task: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = task.get("taskMetrics") or {}
    for key in path:
        node = node.get(key, 0) if isinstance(node, dict) else 0
    return node


def compare(hs: HistoryServer, events: list[dict[str, Any]]) -> Tally:
    """Every figure of one application attempt's collected ``events`` against the History Server's; raises
    AssertionError naming the application, stage or executor and the figure that differs."""
    tally = Tally(apps=1)
    (start,) = [e for e in events if e["type"] == ev.APP_START]
    app, attempt = start["app_id"], start.get("app_attempt")
    where = f"{app}" + (f" attempt {attempt}" if attempt else "")
    base = f"applications/{app}" + (f"/{attempt}" if attempt else "")
    (listing,) = [a for a in hs.get("applications") if a["id"] == app]
    (info,) = [t for t in listing["attempts"] if t.get("attemptId") == attempt]
    ends = [e for e in events if e["type"] == ev.APP_END]
    assert info["completed"] == bool(ends), where
    assert info["sparkUser"] == start["user"] and listing["name"] == start["app_name"], where
    if "spark_version" in start:
        assert info["appSparkVersion"] == start["spark_version"], where
    if ends:
        assert info["duration"] == _ms_of(ends[0]["duration"]), where

    _compare_jobs(hs, base, where, events)
    tally.add(_compare_stages(hs, base, where, events))
    tally.add(_compare_executors(hs, base, where, events))
    tally.add(_compare_losses(hs, base, where, events))
    return tally


def _compare_losses(hs: HistoryServer, base: str, where: str, events: list[dict[str, Any]]) -> Tally:
    """Each removed executor's StageExecutorLost events name exactly the stage attempts the store shows running at
    its removal time (submitted at or before it, completed after it or not at all)."""
    tally = Tally()
    stages = hs.get(f"{base}/stages")
    for x in hs.get(f"{base}/allexecutors"):
        if x.get("removeTime") is None:
            continue
        t = _ms(x["removeTime"])
        mine = {
            (e["stage_id"], e["stage_attempt"])
            for e in events
            if e["type"] == ev.STAGE_EXECUTOR_LOST and e["executor_id"] == x["id"]
        }
        theirs, tied = set(), set()
        for st in stages:
            sub, done = _ms(st.get("submissionTime")), _ms(st.get("completionTime"))
            if sub is None or sub > t or (done is not None and done < t):
                continue
            # The same millisecond as a submission or completion: the log's order decides, which the store's
            # times cannot show.
            (tied if t in (sub, done) else theirs).add((st["stageId"], st["attemptId"]))
        assert theirs <= mine <= theirs | tied, (where, "executor", x["id"], sorted(mine), sorted(theirs))
        tally.notes["stage attempts running at an executor's removal"] += len(mine)
    return tally


def _compare_jobs(hs: HistoryServer, base: str, where: str, events: list[dict[str, Any]]) -> None:
    mine = {e["spark_job_id"]: e for e in events if e["type"] == ev.JOB_END}
    started = {e["spark_job_id"]: e for e in events if e["type"] == ev.JOB_START}
    theirs = {j["jobId"]: j for j in hs.get(f"{base}/jobs")}
    assert set(theirs) == set(started), where
    for job_id, job in theirs.items():
        here = (where, "job", job_id)
        assert started[job_id]["tasks"] == job["numTasks"], here  # as planned, skipped stages included
        if not started[job_id].get("ts_estimated"):
            assert _ms_of(started[job_id]["ts"]) == _ms(job["submissionTime"]), here
        if job["status"] == "RUNNING":
            assert job_id not in mine, here
            continue
        end = mine[job_id]
        assert end["status"] == job["status"], here
        if not end.get("ts_estimated"):
            assert _ms_of(end["ts"]) == _ms(job["completionTime"]), here


def _compare_stages(hs: HistoryServer, base: str, where: str, events: list[dict[str, Any]]) -> Tally:
    tally = Tally()
    by_key: dict[tuple[int, int], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if "stage_id" in e:
            by_key[(e["stage_id"], e["stage_attempt"])][e["type"]].append(e)
    theirs = {(s["stageId"], s["attemptId"]): s for s in hs.get(f"{base}/stages")}
    ran = {k: s for k, s in theirs.items() if s["status"] not in ("PENDING", "SKIPPED")}
    # A stage Spark planned but never submitted (skipped: its output was reused) has no events in the log.
    assert set(ran) == {k for k, v in by_key.items() if v[ev.STAGE_SUBMITTED]}, where
    for key, st in sorted(ran.items()):
        here = f"{where} stage {key[0]}.{key[1]}"
        mine = by_key[key]
        tasks = mine[ev.TASK]
        (sub,) = mine[ev.STAGE_SUBMITTED]
        done = mine[ev.STAGE_COMPLETED]
        assert (st["status"] in ("COMPLETE", "FAILED")) == bool(done), (here, st["status"])
        status = Counter(t["status"] for t in tasks)
        # Spark's status store counts a Resubmitted task end (a task that had succeeded, whose output went with its
        # executor) as a failed task; the collector gives it status RESUBMITTED and does not count it as failed.
        tally.notes["resubmitted task ends (failed to the History Server)"] += status["RESUBMITTED"]
        counted = {
            "numCompleteTasks": status["SUCCEEDED"],
            "numFailedTasks": status["FAILED"] + status["RESUBMITTED"],
            "numKilledTasks": status["KILLED"],
        }
        # Task ends after a completed stage's last running task are not the stage's to either (both drop it then).
        if done:
            (comp,) = done
            counted_in_stage = comp["tasks"]
            assert comp["failed_tasks"] + status["RESUBMITTED"] == st["numFailedTasks"], here
            assert comp["killed_tasks"] == st["numKilledTasks"], here
            assert counted_in_stage == st["numCompleteTasks"] + st["numFailedTasks"] + st["numKilledTasks"], here
            assert comp["num_tasks"] == st["numTasks"], here
            if comp["status"] == "FAILED":
                assert st["status"] == "FAILED" and reason_text(st["failureReason"]) == comp["failure_reason"], here
            else:
                assert st["status"] == "COMPLETE", here
            if "duration" in comp:
                assert _ms(st["completionTime"]) - _ms(st["submissionTime"]) == _ms_of(comp["duration"]), here
            for attr, rest, unit in STAGE_SUMS:
                assert unit(comp[attr]) == st[rest], (here, attr, comp[attr], st[rest])
        else:  # running when the log was copied: the task ends so far
            assert counted == {k: st[k] for k in counted}, (here, counted)
        assert counted == {k: st[k] for k in counted}, (here, counted)
        # Submission time: Spark 2.2 and older log it only on StageCompleted (the store takes it from there); the
        # collector's StageSubmitted then carries the log's latest time before it (ts_estimated), never later.
        if st.get("submissionTime"):
            if sub.get("ts_estimated"):
                tally.notes["stage submissions without a time (Spark <= 2.2)"] += 1
                assert _ms_of(sub["ts"]) <= _ms(st["submissionTime"]) + 0, here
            else:
                assert _ms_of(sub["ts"]) == _ms(st["submissionTime"]), here
        tally.tasks += _compare_tasks(hs, base, here, key, tasks, done[0] if done else None)
        tally.stages += 1
    return tally


def _compare_tasks(
    hs: HistoryServer,
    base: str,
    here: str,
    key: tuple[int, int],
    tasks: list[dict[str, Any]],
    done: dict[str, Any] | None,
) -> int:
    """Every task attempt of a stage attempt: status, executor, duration and metrics; the stage's max and median
    task duration over the successful ones."""
    theirs = hs.get(f"{base}/stages/{key[0]}/{key[1]}/taskList?length=1000000")
    # A Resubmitted end repeats a finished task's id: the store keeps the task as it first ended.
    mine = {t["spark_task_id"]: t for t in tasks if t["status"] != "RESUBMITTED"}
    ended = [t for t in theirs if t["status"] != "RUNNING"]
    assert {t["taskId"] for t in ended} == set(mine), here
    for task in ended:
        m = mine[task["taskId"]]
        what = (here, task["taskId"])
        assert _TASK_STATUS[task["status"]] == m["status"], what
        assert task["attempt"] == m["task_attempt"] and task["index"] == m["task_index"], what
        assert task["executorId"] == m["executor_id"] and task["host"] == m["host"], what
        assert task["duration"] == _ms_of(m["duration"]), what
        assert task["speculative"] == m["speculative"], what
        if "taskMetrics" in task:
            for attr, path, unit in TASK_METRICS:
                assert unit(m[attr]) == _metric(task, path), (what, attr)
            for attr, path in TASK_NANOS:
                assert m[attr] == round(_metric(task, path) * 1e-9, 3), (what, attr)
    if done is not None:
        ok = [t["duration"] for t in ended if t["status"] == "SUCCESS"]
        assert _ms_of(done["task_duration_max"]) == max(ok, default=0), here
        # The median of an even count is the mean of the middle two: the collector rounds it to the millisecond
        # from seconds, so it may differ from the same mean taken in milliseconds by the half millisecond.
        median = statistics.median(ok) / 1000.0 if ok else 0.0
        assert abs(done["task_duration_median"] - median) <= 0.0005 + 1e-9, (here, done["task_duration_median"], median)
    return len(ended)


def _compare_executors(hs: HistoryServer, base: str, where: str, events: list[dict[str, Any]]) -> Tally:
    tally = Tally()
    added = {e["executor_id"]: e for e in events if e["type"] == ev.EXECUTOR_ADDED}
    removed = {e["executor_id"]: e for e in events if e["type"] == ev.EXECUTOR_REMOVED}
    theirs = {x["id"]: x for x in hs.get(f"{base}/allexecutors")}
    # The driver's block manager makes it an executor to the status store; Spark logs ExecutorAdded for it only in
    # local mode (where it runs the tasks).
    assert set(added) <= set(theirs) and set(theirs) - set(added) <= {"driver"}, (where, sorted(theirs))
    if set(theirs) - set(added):
        tally.notes["the driver listed as an executor (no ExecutorAdded in cluster mode)"] += 1
    # Per executor, over its task ends, as the store counts them: a Resubmitted end counts as a failure, but not
    # its duration or metrics (the task's first end brought them); and only while the executor is listed as
    # live: the ends that follow its removal (its lost tasks, the Resubmitted ends of its finished map tasks) are
    # not counted to it.  The collector emits every end, each naming its executor.
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    dead: set[str] = set()
    for e in events:
        if e["type"] == ev.EXECUTOR_REMOVED:
            dead.add(e["executor_id"])
        if e["type"] != ev.TASK:
            continue
        if e["executor_id"] in dead:
            tally.notes["task ends after their executor's removal (not counted to it by the History Server)"] += 1
            continue
        t = totals[e["executor_id"]]
        t["completedTasks"] += e["status"] == "SUCCEEDED"
        t["failedTasks"] += e["status"] in ("FAILED", "RESUBMITTED")
        if e["status"] != "RESUBMITTED":
            t["totalDuration"] += _ms_of(e["duration"])
            t["totalGCTime"] += _ms_of(e["gc_time"])
            t["totalInputBytes"] += e["input_bytes"]
            t["totalShuffleRead"] += e["shuffle_read_bytes"]
            t["totalShuffleWrite"] += e["shuffle_write_bytes"]
    for exec_id, x in sorted(theirs.items()):
        here = f"{where} executor {exec_id}"
        tally.executors += 1
        gone = removed.get(exec_id)
        assert (not x["isActive"]) == (gone is not None) or not added, (here, x["isActive"])
        if gone is not None:
            tally.removals += 1
            assert _ms(x["removeTime"]) == _ms_of(gone["ts"]), here
            assert reason_text(x.get("removeReason", "")) == gone["reason"], here
        if exec_id in added:
            assert x["totalCores"] == added[exec_id]["cores"], here
            mine = totals[exec_id]
            names = ["completedTasks", "failedTasks", "totalInputBytes", "totalShuffleRead", "totalShuffleWrite"]
            if exec_id == "driver":
                # Since SPARK-37493 the store shows the driver's JVM GC time (from its executor metrics) and the
                # application's duration as the driver's totalGCTime and totalDuration, not its tasks' sums.
                tally.notes["the driver's totalGCTime and totalDuration are its JVM's (SPARK-37493)"] += 1
            else:
                names += ["totalGCTime", "totalDuration"]
            for name in names:
                assert mine[name] == x[name], (here, name, mine[name], x[name])
    return tally
