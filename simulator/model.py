"""The discrete-event model of a YARN/MapReduce cluster running the SWIM job mix.

Nodes offer ``slots`` containers each.  Jobs arrive at their SWIM submit times; each gets an ApplicationMaster
container (AMs are capped at 20% of the slots, as ``maximum-am-resource-percent`` does), initialises, then asks for
one container per map.  The scheduler is FIFO across jobs (a single capacity-scheduler queue) and places each
container on the least-loaded node, so load stays spread as on a real cluster.  Within a job, retried and
speculative maps go first, then new maps, then -- once all maps are assigned and ``slowstart`` of them have
finished -- reducers.  A reducer's shuffle is laid out when the job's last map finishes (see ``shuffle.py``); then it
merges and reduces.  Rare map attempts fail and are retried.  Planted anomalies (``anomalies.py``) bend these rules
for their job.  Everything random comes from per-job generators seeded from the run's seed, so runs are reproducible.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from simulator import shuffle as shuffle_mod
from simulator.config import SimConfig
from simulator.definitions import SlowPull
from simulator.detect import slow_pulls
from simulator.jobs import Attempt, Job
from simulator.load import LoadRecorder

_ARRIVE, _AM_READY, _DONE, _SPECULATE, _RELEASE, _JOB_END = range(6)
_RUNAWAY_WEIGHT = 1.0


class Cluster:
    """Runs the jobs; calls ``on_reducer(job, attempt, shuffle)`` when a reducer's timeline is known and
    ``on_job(job)`` when a job ends (the writers hook in there)."""

    def __init__(
        self,
        cfg: SimConfig,
        jobs: list[Job],
        loads: LoadRecorder,
        on_reducer: Callable[[Job, Attempt, shuffle_mod.Shuffle], None],
        on_job: Callable[[Job], None],
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.jobs = jobs
        self.loads = loads
        self.on_reducer = on_reducer
        self.on_job = on_job
        self.on_progress = on_progress
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
        #: ``slow_pull``: every fetch meeting the definition; ``slow_pull_missed``: a planted one that does not
        self.records: dict[str, list[dict[str, Any]]] = {"slow_pull": [], "slow_pull_missed": []}

    # -- event queue -----------------------------------------------------------------------------------------------
    def push(self, t: float, kind: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, payload))

    def run(self) -> None:
        for job in self.jobs:
            self.push(job.submit, _ARRIVE, job)
        events = self.events
        last_progress = 0.0
        while events:
            t, _, kind, payload = heapq.heappop(events)
            self.now = t
            if kind == _DONE:
                self._done(*payload)
            elif kind == _ARRIVE:
                self.pending_ams.append(payload)
            elif kind == _AM_READY:
                self._want(payload)
            elif kind == _SPECULATE:
                self._speculate(*payload)
            elif kind == _RELEASE:
                self._want(payload)
            elif kind == _JOB_END:
                self._job_end(payload)
            self._dispatch()
            if self.on_progress is not None and t - last_progress >= 60.0:
                self.on_progress(t)
                last_progress = t

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

    def _attempt(self, job: Job, kind: str, task: int, n: int) -> Attempt:
        rng = job.rng
        node = self._take()
        att = Attempt(kind, task, n, node, job.next_container, self.now + rng.uniform(0.05, 0.9))
        job.next_container += 1
        att.start = att.assigned + rng.uniform(0.4, 1.2)
        job.attempts.append(att)
        return att

    def _start_map(self, job: Job, task: int, n: int, speculative: bool) -> None:
        cfg, rng, plant = self.cfg, job.rng, job.plant
        att = self._attempt(job, "m", task, n)
        if speculative:
            att.speculative = True
            att.redundant_at = plant.get("spec_at", self.now)
        job.map_running.setdefault(task, []).append(att)
        split = job.split_bytes(task)
        duration = (
            1.0
            + rng.uniform(0.5, 1.5)
            + split / (cfg.map_rate * rng.lognormvariate(0.0, 0.2))
            + job.map_out[task] / 150e6
        )
        status = "SUCCEEDED"
        skewed = plant.get("kind") == "skewed_mapper" and plant["task"] == task and n == 0
        if skewed:
            normal = duration
            duration = normal * plant["factor"] + plant.get("extra", 0.0)
            if plant["flavor"] == "slow_node":  # the AM gives up on it only after it has run well past its siblings
                self.push(att.start + normal + plant.get("spec_wait", 150.0), _SPECULATE, (job, task))
        elif not speculative and n == 0 and rng.random() < cfg.map_failure_rate:
            duration *= rng.uniform(0.2, 0.8)
            status = "FAILED"
        self.push(att.start + duration, _DONE, (job, att, status))

    def _start_reduce(self, job: Job) -> None:
        att = self._attempt(job, "r", job.next_reduce, 0)
        job.next_reduce += 1
        if job.first_reduce_start is None:
            job.first_reduce_start = att.start
        if job.maps_done_at is not None:
            self._lay_out_reducer(job, att)
        else:
            job.waiting_reducers.append(att)

    def _speculate(self, job: Job, task: int) -> None:
        if job.map_ok[task] is not None:
            return
        n = sum(1 for a in job.attempts if a.kind == "m" and a.task == task)
        job.plant["spec_at"] = self.now
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
        job.completed_maps += 1
        if job.reduces and not job.reduces_ready and job.completed_maps >= math.ceil(self.cfg.slowstart * job.maps):
            job.reduces_ready = True
            job.slowstart_at = self.now
            self._want(job)
        if job.completed_maps < job.maps:
            return
        job.maps_done_at = self.now
        if not job.reduces:
            self._finish_job(job)
            return
        if job.plant.get("kind") == "queued_output":
            job.hold_until = self.now + job.plant["delay"]
            self.push(job.hold_until, _RELEASE, job)
        for waiting in job.waiting_reducers:
            self._lay_out_reducer(job, waiting)
        job.waiting_reducers.clear()

    def _lay_out_reducer(self, job: Job, att: Attempt) -> None:
        cfg, rng, plant = self.cfg, job.rng, job.plant
        planted = plant.get("task") == att.task and plant.get("kind") in (
            "slow_pull",
            "skewed_reducer",
            "unbalancing_reducer",
        )
        kind = plant.get("kind") if planted else None
        stall = (plant.get("factor", 10.0), plant.get("extra", 30.0)) if kind == "slow_pull" else None
        shuffled = shuffle_mod.schedule(job, att, cfg, rng, slow=stall)
        if job.fetch_end is not None:  # a job that may hold >= 1 GiB: its fetches, for the queued-output truth
            job.fetch_end.extend(p.end_ms for p in shuffled.by_end)
            assert job.fetch_bytes is not None  # set together with fetch_end
            job.fetch_bytes.extend(p.length for p in shuffled.by_end)
        att.shuffle_end = max(shuffled.end, att.start + 1.5)
        att.shuffle_bytes = shuffled.total_bytes
        att.pulls = sum(len(c.pulls) for c in shuffled.connections)
        total = shuffled.total_bytes
        att.sort_end = att.shuffle_end + 0.05 + total / 400e6 + rng.uniform(0.05, 0.3)
        output = job.output_bytes / max(job.reduces, 1)
        reduce_phase = 0.5 + rng.uniform(0.2, 1.0) + total / (cfg.reduce_rate * rng.lognormvariate(0.0, 0.15))
        reduce_phase += output / 80e6
        if kind == "skewed_reducer":
            reduce_phase = reduce_phase * plant["factor"] + plant.get("extra", 120.0)
        elif kind == "unbalancing_reducer":
            reduce_phase = max(reduce_phase, plant["runtime"] - (att.sort_end - att.start))
        end = att.sort_end + reduce_phase
        # The attempt's own run queue (what _done adds: 0.3 while shuffling, 1.0 reducing) and a runaway's ramp.
        segments = [(att.start, att.shuffle_end, 0.3), (att.shuffle_end, end, 1.0)]
        if kind == "unbalancing_reducer":
            segments += self.loads.ramp(
                att.node, att.start, end, plant["peak"] * _RUNAWAY_WEIGHT, rise=plant.get("rise", 0.8)
            )
        att.load_peak = self.loads.peak(segments)
        self._slow_pulls(job, att, shuffled, kind == "slow_pull")
        att.end = end  # provisional, for the writer: the attempt's status is set when its DONE event fires
        self.push(end, _DONE, (job, att, "SUCCEEDED"))
        self.on_reducer(job, att, shuffled)

    def _slow_pulls(self, job: Job, att: Attempt, shuffled: shuffle_mod.Shuffle, planted: bool) -> None:
        """Record the reducer's fetches that meet the slow_pull definition (and a planted one that does not)."""
        pulls = shuffled.by_end
        if not planted and shuffled.longest_ms < SlowPull.MIN_S * 1000:
            return  # nothing long enough: the common case
        watch = next((i for i, p in enumerate(pulls) if p is shuffled.slow), None) if planted else None
        found, watched = slow_pulls([(p.start_ms, p.end_ms) for p in pulls], watch)
        for check in found:
            pull = pulls[check.index]
            self.records["slow_pull"].append(
                {"job": job, "attempt": att, "pull": pull, "check": check, "planted": check.index == watch}
            )
        if planted and (watched is None or not watched.qualifies):
            reason = watched.reason if watched is not None else "no fetch to stall (fewer than 3 map outputs)"
            self.records["slow_pull_missed"].append({"job": job, "attempt": att, "reason": reason})

    def _finish_job(self, job: Job) -> None:
        job.end = self.now + job.rng.uniform(0.3, 1.5)
        job.status = "SUCCEEDED"
        self.push(job.end, _JOB_END, job)

    def _job_end(self, job: Job) -> None:
        self.loads.add(job.am_node, job.am_start, job.end, 0.1)
        self._release(job.am_node)
        self.am_running -= 1
        self.on_job(job)
