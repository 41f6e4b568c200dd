"""The discrete-event model of a YARN/MapReduce cluster running the SWIM job mix.

Nodes offer ``slots`` containers each.  Jobs arrive at their SWIM submit times; each gets an ApplicationMaster
container (AMs are capped at 20% of the slots, as ``maximum-am-resource-percent`` does), initialises, then asks for
one container per map.  The scheduler is FIFO across jobs (a single capacity-scheduler queue) and places each
container on the least-loaded node, so load stays spread as on a real cluster.  Within a job, retried and
speculative maps go first, then new maps, then -- once all maps are assigned and ``slowstart`` of them have
finished -- reducers.  A reducer's shuffle is laid out when the job's last map finishes (see ``shuffle.py``); then it
merges and reduces.  Rare map attempts fail and are retried; the speculator copies slow maps and the loser is killed.
Durations follow the background of ``background.py``; injected faults (``faults.py``) act through this same model (a
bigger split, a bigger partition, a slower host, a stalled fetch, reducers held, a spinning reducer).  Every draw is
keyed by what it belongs to, so runs are reproducible and a fault changes only what it causes.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from collections import deque
from collections.abc import Callable
from typing import Any

from simulator import shuffle as shuffle_mod
from simulator.background import attempt_noise, noise, task_cost
from simulator.config import SimConfig
from simulator.faults import READ_TIMEOUT_S, Fault, Injector
from simulator.jobs import Attempt, Job
from simulator.load import LoadRecorder

_ARRIVE, _AM_READY, _DONE, _SPECULATE, _RELEASE, _JOB_END, _FAULT = range(7)


class Cluster:
    """Runs the jobs; calls ``on_reducer(job, attempt, shuffle)`` when a reducer's timeline is known and
    ``on_job(job)`` when a job ends (the writers hook in there).  ``faults`` applies the injected causes."""

    def __init__(
        self,
        cfg: SimConfig,
        jobs: list[Job],
        loads: LoadRecorder,
        on_reducer: Callable[[Job, Attempt, shuffle_mod.Shuffle], None],
        on_job: Callable[[Job], None],
        on_progress: Callable[[float], None] | None = None,
        *,
        faults: Injector,
        speeds: list[float],
    ) -> None:
        self.cfg = cfg
        self.jobs = jobs
        self.loads = loads
        self.on_reducer = on_reducer
        self.on_job = on_job
        self.on_progress = on_progress
        self.faults = faults
        self.speeds = speeds
        n = cfg.nodes
        self.used = [0] * n
        self.free_slots = n * cfg.slots
        self.buckets: list[deque[int]] = [deque() for _ in range(cfg.slots + 1)]
        self.buckets[0].extend(range(n))
        self.am_cap = max(1, int(0.2 * n * cfg.slots))
        self.am_running = 0
        self.pending_ams: deque[Job] = deque()
        self.demand: list[tuple[int, int, Job]] = []
        self.events: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self.now = 0.0
        self.active: dict[int, Job] = {}
        self._costs: dict[tuple[int, str, int], float] = {}

    # -- event queue -----------------------------------------------------------------------------------------------
    def push(self, t: float, kind: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, payload))

    def run(self) -> None:
        for job in self.jobs:
            self.push(job.submit, _ARRIVE, job)
        for f in self.faults.timed():
            self.push(self.cfg.start + f.at, _FAULT, f)
        events = self.events
        last_progress = 0.0
        while events:
            t, _, kind, payload = heapq.heappop(events)
            self.now = t
            if kind == _DONE:
                self._done(*payload)
            elif kind == _ARRIVE:
                self.active[payload.idx] = payload
                self.pending_ams.append(payload)
            elif kind == _AM_READY:
                self._want(payload)
            elif kind == _SPECULATE:
                self._speculate(*payload)
            elif kind == _RELEASE:
                self._want(payload)
            elif kind == _JOB_END:
                self._job_end(payload)
            elif kind == _FAULT:
                self._fault(payload)
            self._dispatch()
            if self.on_progress is not None and t - last_progress >= 60.0:
                self.on_progress(t)
                last_progress = t

    def _fault(self, f: Fault) -> None:
        """Draw the fault's target now, or look again a little later (never after the window's end)."""
        running = sorted(self.active.values(), key=lambda j: j.idx)
        if not self.faults.draw(f, self.now, running, self.cfg):
            later = self.now + 15.0
            if later < self.faults.window_end:
                self.push(later, _FAULT, f)

    # -- placement ---------------------------------------------------------------------------------------------------
    def _take(self) -> int:
        """The least-loaded node with a free container (round robin among equals); marks one container used."""
        used, slots = self.used, self.cfg.slots
        for level, bucket in enumerate(self.buckets[:slots]):
            while bucket:
                node = bucket.popleft()
                if used[node] == level:
                    used[node] = level + 1
                    self.buckets[level + 1].append(node)
                    self.free_slots -= 1
                    return node
        raise RuntimeError("no free container")  # callers check free_slots first

    def _release(self, node: int) -> None:
        self.used[node] -= 1
        self.buckets[self.used[node]].append(node)
        self.free_slots += 1

    def _want(self, job: Job) -> None:
        if not job.in_demand:
            job.in_demand = True
            heapq.heappush(self.demand, (job.seq, job.idx, job))

    # -- scheduling --------------------------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        while self.free_slots > 0:
            if self.pending_ams and self.am_running < self.am_cap:
                self._start_am(self.pending_ams.popleft())
                continue
            if not self.demand:
                return
            job = self.demand[0][2]
            if job.urgent_maps:
                task, n, speculative = job.urgent_maps.popleft()
                if job.map_ok[task] is None:
                    self._start_map(job, task, n, speculative)
                continue
            if job.pending_maps:
                task, n = job.pending_maps.popleft()
                self._start_map(job, task, n, False)
                continue
            if (
                job.reduces_ready
                and job.next_reduce < job.reduces
                and (job.hold_until is None or self.now >= job.hold_until)
            ):
                self._start_reduce(job)
                continue
            heapq.heappop(self.demand)
            job.in_demand = False

    def _start_am(self, job: Job) -> None:
        rng = job.rng
        node = self._take()
        self.am_running += 1
        job.am_node = node
        job.am_assigned = self.now + rng.uniform(0.3, 1.0)
        job.am_start = job.am_assigned + rng.uniform(0.8, 1.5)
        job.init = job.am_start + rng.uniform(1.0, 2.0)
        job.launch = job.init + rng.uniform(0.2, 0.5)
        job.running = job.launch + rng.uniform(0.03, 0.1)
        job.pending_maps.extend((task, 0) for task in range(job.maps))
        self.push(job.running + rng.uniform(0.3, 1.0), _AM_READY, job)

    def _attempt(self, job: Job, kind: str, task: int, n: int) -> tuple[Attempt, random.Random]:
        rng = attempt_noise(self.cfg, job.idx, kind, task, n)
        node = self._take()
        att = Attempt(kind, task, n, node, job.next_container, self.now + rng.uniform(0.05, 0.9))
        job.next_container += 1
        att.start = att.assigned + rng.uniform(0.4, 1.2)
        job.attempts.append(att)
        return att, rng

    def cost(self, job: Job, kind: str, task: int) -> float:
        key = (job.idx, kind, task)
        c = self._costs.get(key)
        if c is None:
            c = self._costs[key] = task_cost(self.cfg, job.idx, kind, task, job.maps if kind == "m" else job.reduces)
        return c

    def _nominal_map(self, job: Job) -> float:
        """What the AM's speculator expects a map of this job to take (its typical split at the typical rate)."""
        nominal = getattr(job, "_nominal", None)
        if nominal is None:
            nominal = 2.5 + statistics.median(job.splits) / self.cfg.map_rate
            job._nominal = nominal  # type: ignore[attr-defined]
        return float(nominal)

    def _start_map(self, job: Job, task: int, n: int, speculative: bool) -> None:
        cfg = self.cfg
        att, rng = self._attempt(job, "m", task, n)
        if speculative:
            att.speculative = True
            att.redundant_at = job.spec_at.get(task, self.now)
        job.map_running.setdefault(task, []).append(att)
        split = job.split_bytes(task)
        # the JVM's start, then the task's own work (setup, read, map, spill, commit) at its cost and the host's speed
        work = (
            rng.uniform(0.5, 1.0)
            + (rng.uniform(1.0, 2.0) + split / cfg.map_rate + job.map_out[task] / 150e6)
            * self.cost(job, "m", task)
            * noise(cfg, rng)
        ) * self.speeds[att.node]
        end = self.faults.work_end(att.node, att.start, work)
        status = "SUCCEEDED"
        if not speculative and n == 0 and rng.random() < cfg.map_failure_rate:
            end = att.start + (end - att.start) * rng.uniform(0.2, 0.8)
            status = "FAILED"
        f = self.faults.map_skew.get((job.idx, task))
        if f is not None and f.onset is None:
            f.onset = att.start
        if cfg.speculate and not speculative and status == "SUCCEEDED" and job.maps >= 2:
            # The speculator sees the attempt's progress: once it has run well past its siblings' typical time and
            # its estimated remaining time exceeds what a fresh copy would take, it schedules a redundant attempt.
            nominal = self._nominal_map(job)
            check = att.start + max(30.0, 2.0 * nominal)
            if end - check > nominal:
                self.push(check, _SPECULATE, (job, task, att))
        self.push(end, _DONE, (job, att, status))

    def _start_reduce(self, job: Job) -> None:
        att, rng = self._attempt(job, "r", job.next_reduce, 0)
        job.next_reduce += 1
        if job.first_reduce_start is None:
            job.first_reduce_start = att.start
        held = self.faults.held.get(job.idx)
        if held is not None and held.end is None:
            held.end = att.assigned
            self.faults.release(held)
        for table in (self.faults.reduce_skew, self.faults.runaway):
            f = table.get((job.idx, att.task))
            if f is not None and f.onset is None:
                f.onset = att.start
                if f.kind == "runaway_reducer":
                    f.end = att.start + f.duration
        if job.maps_done_at is not None:
            self._lay_out_reducer(job, att, rng)
        else:
            job.waiting_reducers.append((att, rng))

    def _speculate(self, job: Job, task: int, att: Attempt) -> None:
        if job.map_ok[task] is not None or att.status or job.completed_maps < 1:
            return  # done meanwhile, or nothing finished yet to compare with (the estimator needs completed tasks)
        running_copies = sum(1 for a in job.attempts if a.speculative and not a.status)
        if running_copies >= max(1, job.maps // 10):  # mapreduce.job.speculative.speculative-cap-running-tasks
            self.push(self.now + 15.0, _SPECULATE, (job, task, att))
            return
        if any(a.speculative for a in job.map_running.get(task, [])):
            return
        n = sum(1 for a in job.attempts if a.kind == "m" and a.task == task)
        job.spec_at[task] = self.now
        job.urgent_maps.append((task, n, True))
        self._want(job)

    # -- completions -------------------------------------------------------------------------------------------------
    def _done(self, job: Job, att: Attempt, status: str) -> None:
        if att.status:  # killed earlier (lost a speculative race)
            return
        att.status, att.end = status, self.now
        self._release(att.node)
        if att.kind == "r":
            self.loads.add(att.node, att.start, att.shuffle_end, 0.3)
            self.loads.add(att.node, att.shuffle_end, att.end, 1.0)
            job.reduce_ok[att.task] = att
            for table in (self.faults.reduce_skew, self.faults.hung, self.faults.runaway):
                f = table.get((job.idx, att.task))
                if f is not None:
                    if f.kind == "reduce_data_skew":
                        f.end = att.end
                    self.faults.release(f)
            job.completed_reduces += 1
            if job.completed_reduces == job.reduces:
                self._finish_job(job)
            return
        self.loads.add(att.node, att.start, att.end, 1.0)
        task = att.task
        if status == "FAILED":
            att.error = "Error: Java heap space"
            job.urgent_maps.append((task, att.n + 1, False))
            self._want(job)
            return
        job.map_ok[task] = att
        for other in job.map_running.pop(task, []):
            if other is not att and not other.status:  # the losing copy of a speculated task
                other.status, other.end = "KILLED", self.now + job.rng.uniform(0.05, 0.15)
                other.error = f"Speculation: {job.attempt_id('m', task, att.n)} succeeded first!"
                self._release(other.node)
                self.loads.add(other.node, other.start, other.end, 1.0)
        f = self.faults.map_skew.get((job.idx, task))
        if f is not None:
            f.end = att.end
            self.faults.release(f)
        job.completed_maps += 1
        if job.reduces and not job.reduces_ready and job.completed_maps >= math.ceil(self.cfg.slowstart * job.maps):
            job.reduces_ready = True
            job.slowstart_at = self.now
            held = self.faults.held.get(job.idx)
            if held is not None:
                held.onset = self.now
            self._want(job)
        if job.completed_maps < job.maps:
            return
        job.maps_done_at = self.now
        if not job.reduces:
            self._finish_job(job)
            return
        held = self.faults.held.get(job.idx)
        if held is not None:
            job.hold_until = self.now + held.severity
            self.push(job.hold_until, _RELEASE, job)
        for waiting, rng in job.waiting_reducers:
            self._lay_out_reducer(job, waiting, rng)
        job.waiting_reducers.clear()

    def _lay_out_reducer(self, job: Job, att: Attempt, rng: random.Random) -> None:
        cfg = self.cfg
        hung = self.faults.hung.get((job.idx, att.task)) if att.n == 0 else None
        stall = hung.severity if hung is not None else None
        shuffled = shuffle_mod.schedule(
            job, att, cfg, rng, stall=stall, timeout=READ_TIMEOUT_S, not_before=cfg.start + hung.at if hung else None
        )
        if hung is not None and shuffled.slow is not None:
            p = shuffled.slow
            hung.onset, hung.end = p.start_ms / 1000.0, p.end_ms / 1000.0
            hung.fetch = (p.map_task, p.start_ms / 1000.0, p.end_ms / 1000.0, [t / 1000.0 for t, _ in p.timeouts])
        if job.fetch_end is not None:  # a job that may hold >= 1 GiB: its fetches, for the held-output truth
            job.fetch_end.extend(p.end_ms for p in shuffled.by_end)
            assert job.fetch_bytes is not None  # set together with fetch_end
            job.fetch_bytes.extend(p.length for p in shuffled.by_end)
        att.shuffle_end = max(shuffled.end, att.start + 1.5)
        att.shuffle_bytes = shuffled.total_bytes
        att.pulls = sum(len(c.pulls) for c in shuffled.connections)
        total = shuffled.total_bytes
        speed = self.speeds[att.node]
        sort = (0.05 + total / 400e6 + rng.uniform(0.05, 0.3)) * speed
        att.sort_end = self.faults.work_end(att.node, att.shuffle_end, sort)
        output = job.output_bytes / max(job.reduces, 1)
        work = 0.5 + (rng.uniform(0.2, 1.0) + total / cfg.reduce_rate + output / 80e6) * self.cost(
            job, "r", att.task
        ) * noise(cfg, rng)
        end = self.faults.work_end(att.node, att.sort_end, work * speed)
        segments = [(att.start, att.shuffle_end, 0.3), (att.shuffle_end, end, 1.0)]
        runaway = self.faults.runaway.get((job.idx, att.task))
        if runaway is not None and runaway.onset == att.start:
            spin_end = att.start + runaway.duration
            end = max(end, spin_end + rng.uniform(2.0, 10.0))
            segments = [(att.start, att.shuffle_end, 0.3), (att.shuffle_end, end, 1.0)]
            self.loads.add(att.node, att.start, spin_end, runaway.severity)
            segments.append((att.start, spin_end, runaway.severity))
        att.load_peak = self.loads.peak(segments)
        att.end = end  # provisional, for the writer: the attempt's status is set when its DONE event fires
        self.push(end, _DONE, (job, att, "SUCCEEDED"))
        self.on_reducer(job, att, shuffled)

    def _finish_job(self, job: Job) -> None:
        job.end = self.now + job.rng.uniform(0.3, 1.5)
        job.status = "SUCCEEDED"
        self.push(job.end, _JOB_END, job)

    def _job_end(self, job: Job) -> None:
        self.loads.add(job.am_node, job.am_start, job.end, 0.1)
        self._release(job.am_node)
        self.am_running -= 1
        self.active.pop(job.idx, None)
        self.on_job(job)
