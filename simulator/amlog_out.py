"""Write a job's MRAppMaster container syslog in Hadoop 2.x's ContainerLogAppender layout.

``yyyy-MM-dd HH:mm:ss,SSS LEVEL [thread] class: message`` -- the same lines, threads and wording a real AM logs for
job initialisation, container assignment and launch, task-attempt state transitions (including failures, retries,
speculative attempts and kills) and the job's commit and shutdown.  Times match the job history file to the
millisecond.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simulator.jobs import Attempt, Job
from simulator.layout import container_dir, ms, render, write_text

_APP = "org.apache.hadoop.mapreduce.v2.app."
_MRAM = _APP + "MRAppMaster"
_JOBIMPL = _APP + "job.impl.JobImpl"
_TASKIMPL = _APP + "job.impl.TaskImpl"
_TAIMPL = _APP + "job.impl.TaskAttemptImpl"
_ALLOC = _APP + "rm.RMContainerAllocator"
_REQ = _APP + "rm.RMContainerRequestor"
_COMM = _APP + "rm.RMCommunicator"
_LAUNCHER = _APP + "launcher.ContainerLauncherImpl"
_COMMITTER = _APP + "commit.CommitterEventHandler"
_SPEC = _APP + "speculate.DefaultSpeculator"
_JHEH = "org.apache.hadoop.mapreduce.jobhistory.JobHistoryEventHandler"
_LISTENER = "org.apache.hadoop.mapred.TaskAttemptListenerImpl"
_PROXY = "org.apache.hadoop.yarn.client.api.impl.ContainerManagementProtocolProxy"
_AD = "AsyncDispatcher event handler"
_RMC = "RMCommunicator Allocator"
_NN = "hdfs://nn01.hcep.local:8020"


class AmLogWriter:
    def __init__(self, root: str, hosts: list[str]) -> None:
        self.root = root
        self.hosts = hosts

    def write(self, job: Job, jhist_name: str) -> str:
        lines: list[tuple[int, str]] = []
        seq = 0

        def log(t_ms: int, thread: str, cls: str, msg: str, level: str = "INFO") -> None:
            nonlocal seq
            seq += 1
            lines.append(((t_ms << 20) + seq, f"{level} [{thread}] {cls}: {msg}"))

        jid, user, hosts = job.job_id, job.user, self.hosts
        port = 40000 + job.seq % 20000
        staging = f"{_NN}/tmp/hadoop-yarn/staging/{user}/.staging/{jid}"
        t = ms(job.am_start)
        log(t, "main", _MRAM, f"Created MRAppMaster for application appattempt_{job.cts}_{job.seq:04d}_000001")
        log(t + 390, "main", _MRAM, "Executing with tokens:")
        log(
            t + 391,
            "main",
            _MRAM,
            (
                f"Kind: YARN_AM_RM_TOKEN, Service: , Ident: (appAttemptId {{ application_id {{ id: {job.seq} "
                f"cluster_timestamp: {job.cts} }} attemptId: 1 }} keyId: {-1_000_000_000 - job.seq * 7919})"
            ),
        )
        log(t + 610, "main", _MRAM, "OutputCommitter set in config null")
        log(t + 680, "main", _MRAM, "OutputCommitter is org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter")
        log(t + 790, "main", _JHEH, "Emitting job history data to the timeline server is not enabled")
        t = ms(job.init)
        log(t - 300, "main", _JOBIMPL, f"Adding job token for {jid} to jobTokenSecretManager")
        log(t - 40, "main", _JOBIMPL, f"Not uberizing {jid} because: not enabled; too many maps; too much input;")
        log(t, "main", _JOBIMPL, f"Input size for job {jid} = {sum(job.splits)}. Number of splits = {job.maps}")
        log(t, "main", _JOBIMPL, f"Number of reduces for job {jid} = {job.reduces}")
        log(t, "main", _JOBIMPL, f"{jid}Job Transitioned from NEW to INITED")
        log(t + 1, "main", _MRAM, f"MRAppMaster launching normal, non-uberized, multi-container job {jid}.")
        log(t + 100, "main", _ALLOC, "maxContainerCapability: <memory:8192, vCores:8>")
        log(t + 100, "main", _ALLOC, f"queue: {job.queue}")
        t = ms(job.launch)
        log(t, _AD, _JOBIMPL, f"{jid}Job Transitioned from INITED to SETUP")
        log(t + 10, "CommitterEvent Processor #0", _COMMITTER, "Processing the event EventType: JOB_SETUP")
        t = ms(job.running)
        log(t, _AD, _JOBIMPL, f"{jid}Job Transitioned from SETUP to RUNNING")
        for kind, count in (("m", job.maps), ("r", job.reduces)):
            for task in range(count):
                log(t + 3, _AD, _TASKIMPL, f"{job.task_id(kind, task)} Task Transitioned from NEW to SCHEDULED")
        for kind, count in (("m", job.maps), ("r", job.reduces)):
            for task in range(count):
                log(
                    t + 5,
                    _AD,
                    _TAIMPL,
                    f"{job.attempt_id(kind, task, 0)} TaskAttempt Transitioned from NEW to UNASSIGNED",
                )
        log(t + 60, "eventHandlingThread", _JHEH, f"Event Writer setup for JobId: {jid}, File: {staging}/{jid}_1.jhist")
        if job.slowstart_at is not None:
            log(ms(job.slowstart_at) + 5, _RMC, _ALLOC, "Reduce slow start threshold reached. Scheduling reduces.")
        first_reduce = next((a for a in job.attempts if a.kind == "r"), None)
        if first_reduce is not None:
            log(
                ms(first_reduce.assigned) - 1,
                _RMC,
                _ALLOC,
                f"All maps assigned. Ramping up all remaining reduces:{job.reduces}",
            )
        self._schedule_stats(job, log)
        completed = 0
        winners: dict[tuple[str, int], Attempt] = {}
        for att in sorted(job.attempts, key=lambda a: (a.end, a.container)):
            if att.status == "SUCCEEDED":
                completed += 1
                winners[(att.kind, att.task)] = att
            self._attempt(job, att, log, port, completed)
        for att in job.attempts:
            if att.status == "KILLED":
                winner = winners.get((att.kind, att.task))
                w_ms = ms(winner.end) if winner is not None else ms(att.end) - 60
                loser = job.attempt_id(att.kind, att.task, att.n)
                log(w_ms + 5, _AD, _TASKIMPL, f"Issuing kill to other attempt {loser}")
        last = max((a.end for a in job.attempts if a.status == "SUCCEEDED"), default=job.running)
        t = ms(last) + 12
        log(t, _AD, _JOBIMPL, f"{jid}Job Transitioned from RUNNING to COMMITTING")
        log(t + 2, "CommitterEvent Processor #1", _COMMITTER, "Processing the event EventType: JOB_COMMIT")
        t = ms(job.end)
        log(t - 10, _AD, _JOBIMPL, "Calling handler for JobFinishedEvent ")
        log(t, _AD, _JOBIMPL, f"{jid}Job Transitioned from COMMITTING to {job.status}")
        done_dir = f"{_NN}/mr-history/tmp/{user}"
        for k, (cls, msg) in enumerate(
            (
                (_MRAM, "We are finishing cleanly so this is the last retry"),
                (_MRAM, "Notify RMCommunicator isAMLastRetry: true"),
                (_COMM, "RMCommunicator notified that shouldUnregistered is: true"),
                (_MRAM, "Notify JHEH isAMLastRetry: true"),
                (_JHEH, "JobHistoryEventHandler notified that forceJobCompletion is true"),
                (_MRAM, "Calling stop for all the services"),
                (_JHEH, "Stopping JobHistoryEventHandler. Size of the outstanding queue size is 0"),
                (_JHEH, f"Copying {staging}/{jid}_1.jhist to {done_dir}/{jhist_name}_tmp"),
                (_JHEH, f"Copied to done location: {done_dir}/{jhist_name}_tmp"),
                (_JHEH, f"Moved tmp to done: {done_dir}/{jhist_name}_tmp to {done_dir}/{jhist_name}"),
                (_JHEH, "Stopped JobHistoryEventHandler. super.stop()"),
                (_COMM, "Setting job diagnostics to "),
                (_COMM, f"History url is http://nn01.hcep.local:19888/jobhistory/job/{jid}"),
                (_COMM, "Waiting for application to be successfully unregistered."),
            )
        ):
            log(t + 2 + 9 * k, "Thread-72", cls, msg)
        maps_launched = sum(1 for a in job.attempts if a.kind == "m")
        log(
            t + 1150,
            "Thread-72",
            _ALLOC,
            (
                f"Final Stats: PendingReds:0 ScheduledMaps:0 ScheduledReds:0 AssignedMaps:{maps_launched} "
                f"AssignedReds:{job.reduces} CompletedMaps:{job.maps} CompletedReds:{job.reduces} "
                f"ContAlloc:{len(job.attempts)} ContRel:0 HostLocal:{maps_launched} RackLocal:0"
            ),
        )
        log(t + 1160, "Thread-72", _MRAM, f"Deleting staging directory {staging}")
        path = container_dir(self.root, hosts[job.am_node], job, 1) + "/syslog"
        write_text(path, render(lines))
        return path

    @staticmethod
    def _schedule_stats(job: Job, log: Callable[..., None]) -> None:
        """RMContainerAllocator's ``Before Scheduling:`` / ``After Scheduling:`` lines, written as Hadoop's
        ScheduleStats.updateAndLogIfChanged does: once a heartbeat (1 s), only when the numbers changed.  Requests and
        completions count before the heartbeat's assignments, the assignments after."""
        fields: tuple[str, ...] = ("PendingReds", "ScheduledMaps", "ScheduledReds", "AssignedMaps", "AssignedReds")
        fields += ("CompletedMaps", "CompletedReds", "ContAlloc", "ContRel", "HostLocal", "RackLocal")
        state = dict.fromkeys(fields, 0)
        state["PendingReds"] = job.reduces
        state["ScheduledMaps"] = job.maps
        changes: list[tuple[float, int, dict[str, int]]] = []  # (time, 0 before / 1 after, deltas)
        if job.slowstart_at is not None and job.reduces:
            changes.append((job.slowstart_at, 0, {"PendingReds": -job.reduces, "ScheduledReds": job.reduces}))
        for att in job.attempts:
            m = att.kind == "m"
            if m and (att.n > 0 or att.speculative):  # a retry or a redundant attempt: requested when decided
                asked = att.redundant_at if att.redundant_at is not None else att.assigned - 1.0
                changes.append((asked, 0, {"ScheduledMaps": 1}))
            sched, assigned, done = (
                ("ScheduledMaps", "AssignedMaps", "CompletedMaps")
                if m
                else (
                    "ScheduledReds",
                    "AssignedReds",
                    "CompletedReds",
                )
            )
            took = {sched: -1, assigned: 1, "ContAlloc": 1}
            if m:
                took["HostLocal"] = 1
            changes.append((att.assigned, 1, took))
            end = {assigned: -1}
            if att.status == "SUCCEEDED":
                end[done] = 1
            changes.append((att.end, 0, end))
        t0 = job.running + 0.35
        ticks: dict[int, list[tuple[int, dict[str, int]]]] = {}
        for t, phase, delta in changes:
            ticks.setdefault(max(0, math.ceil(t - t0)), []).append((phase, delta))
        ticks.setdefault(0, [])
        last = ""

        def line() -> str:
            return " ".join(f"{k}:{state[k]}" for k in fields)

        for k in sorted(ticks):
            at = ms(t0 + k)
            for phase, prefix in ((0, "Before Scheduling: "), (1, "After Scheduling: ")):
                for ph, delta in ticks[k]:
                    if ph == phase:
                        for name, d in delta.items():
                            state[name] += d
                now = line()
                if now != last:
                    log(at + phase * 2, _RMC, _ALLOC, prefix + now)
                    last = now

    def _attempt(self, job: Job, att: Attempt, log: Callable[..., None], port: int, completed: int) -> None:
        aid = job.attempt_id(att.kind, att.task, att.n)
        tid = job.task_id(att.kind, att.task)
        cid = job.container_id(att.container)
        host = self.hosts[att.node]
        launcher = f"ContainerLauncher #{att.container % 10}"
        handler = f"IPC Server handler {att.container % 30} on {port}"
        if att.redundant_at is not None:
            r = ms(att.redundant_at)
            log(
                r - 2,
                "DefaultSpeculator background processing",
                _SPEC,
                f"DefaultSpeculator.addSpeculativeAttempt -- we are speculating {tid}",
            )
            log(
                r - 1,
                "DefaultSpeculator background processing",
                _SPEC,
                "We launched 1 speculations.  Sleeping 15000 milliseconds.",
            )
            log(r, _AD, _TASKIMPL, f"Scheduling a redundant attempt for task {tid}")
            log(r + 1, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from NEW to UNASSIGNED")
        a = ms(att.assigned)
        s = ms(att.start)
        e = ms(att.end)
        log(a, _RMC, _ALLOC, f"Assigned container {cid} to {aid}")
        log(a + 20, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from UNASSIGNED to ASSIGNED")
        log(
            a + 22,
            launcher,
            _LAUNCHER,
            f"Processing the event EventType: CONTAINER_REMOTE_LAUNCH for container {cid} taskAttempt {aid}",
        )
        log(a + 23, launcher, _LAUNCHER, f"Launching {aid}")
        log(a + 25, launcher, _PROXY, f"Opening proxy : {host}:45454")
        log(s - 2, launcher, _LAUNCHER, f"Shuffle port returned by ContainerManager for {aid} : 13562")
        log(s - 1, _AD, _TAIMPL, f"TaskAttempt: [{aid}] using containerId: [{cid} on NM: [{host}:45454]")
        log(s, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from ASSIGNED to RUNNING")
        if att.n == 0 and not att.speculative:
            log(s + 1, _AD, _TASKIMPL, f"{tid} Task Transitioned from SCHEDULED to RUNNING")
        jvm = f"jvm_{job.cts}_{job.seq:04d}_{att.kind}_{att.container:06d}"
        j = min(s + 1400, (s + e) // 2)
        log(j, handler, _LISTENER, f"JVM with ID : {jvm} asked for a task")
        log(j + 1, handler, _LISTENER, f"JVM with ID: {jvm} given task: {aid}")
        if att.status == "SUCCEEDED":
            log(e - 20, handler, _LISTENER, f"Progress of TaskAttempt {aid} is : 1.0")
            log(e - 18, handler, _LISTENER, f"Done acknowledgement from {aid}")
            log(e - 15, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from RUNNING to SUCCESS_CONTAINER_CLEANUP")
            log(
                e - 14,
                launcher,
                _LAUNCHER,
                f"Processing the event EventType: CONTAINER_REMOTE_CLEANUP for container {cid} taskAttempt {aid}",
            )
            log(e - 13, launcher, _LAUNCHER, f"KILLING {aid}")
            log(e, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from SUCCESS_CONTAINER_CLEANUP to SUCCEEDED")
            log(e + 2, _AD, _TASKIMPL, f"Task succeeded with attempt {aid}")
            log(e + 3, _AD, _TASKIMPL, f"{tid} Task Transitioned from RUNNING to SUCCEEDED")
            log(e + 4, _AD, _JOBIMPL, f"Num completed Tasks: {completed}")
        elif att.status == "FAILED":
            log(e - 20, handler, _LISTENER, f"Task: {aid} - exited : Java heap space", "FATAL")
            log(e - 19, handler, _LISTENER, f"Diagnostics report from {aid}: {att.error}")
            log(e - 17, _AD, _TAIMPL, f"Diagnostics report from {aid}: {att.error}")
            log(e - 16, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from RUNNING to FAIL_CONTAINER_CLEANUP")
            log(e - 14, launcher, _LAUNCHER, f"KILLING {aid}")
            log(e - 5, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from FAIL_CONTAINER_CLEANUP to FAIL_TASK_CLEANUP")
            log(e - 4, "CommitterEvent Processor #2", _COMMITTER, "Processing the event EventType: TASK_ABORT")
            log(e, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from FAIL_TASK_CLEANUP to FAILED")
            log(e + 2, "Thread-51", _REQ, f"1 failures on node {host}")
            retry = job.attempt_id(att.kind, att.task, att.n + 1)
            log(e + 3, _AD, _TAIMPL, f"{retry} TaskAttempt Transitioned from NEW to UNASSIGNED")
            log(e + 4, "Thread-51", _ALLOC, f"Added {retry} to list of failed maps")
        else:  # KILLED: lost a speculative race; "Issuing kill" is logged by the caller
            k = e - 40
            log(k, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from RUNNING to KILL_CONTAINER_CLEANUP")
            log(k + 2, launcher, _LAUNCHER, f"KILLING {aid}")
            log(
                k + 30, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from KILL_CONTAINER_CLEANUP to KILL_TASK_CLEANUP"
            )
            log(e, _AD, _TAIMPL, f"{aid} TaskAttempt Transitioned from KILL_TASK_CLEANUP to KILLED")
