"""Simulator settings: cluster shape, job sizing, timing model, the background and the faults, all with defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MB = 1 << 20


@dataclass
class SimConfig:
    nodes: int = 20
    hours: float = 1.0
    seed: int = 1
    start: float = 1_700_000_000.0  #: epoch of the window start (2023-11-14 22:13:20 UTC)
    trace: str = "fb2010"
    trace_offset_hours: float = 0.0
    cluster: str = "hadoop"
    # -- cluster: YARN containers per node (AMs, maps and reduces share them) -----------------------------------------
    slots: int = 12
    parallel_copies: int = 5  #: mapreduce.reduce.shuffle.parallelcopies
    max_maps_per_fetch: int = 20  #: MAX_MAPS_AT_ONCE of the shuffle scheduler
    slowstart: float = 0.05  #: mapreduce.job.reduce.slowstart.completedmaps
    # -- job sizing from the SWIM bytes --------------------------------------------------------------------------------
    split_bytes: int = 256 * MB
    reduce_bytes: int = 1024 * MB  #: shuffle bytes per reducer (hive.exec.reducers.bytes.per.reducer)
    max_reduces: int = 999  #: hive.exec.reducers.max
    max_maps: int = 20000
    # -- rates (bytes/s) and overheads (s) -----------------------------------------------------------------------------
    map_rate: float = 6e6  #: a map's input processing rate on a new host with an ordinary task
    reduce_rate: float = 15e6
    fetch_rate: float = 100e6
    fetch_overhead: float = 0.025
    # -- the background (semantics section 9): heavy-tailed task costs, speculation, uneven splits, host generations ---
    #: a task's own cost factor (every attempt of it shares it: costly records, a slow source): lognormal body ...
    task_sigma: float = 0.15
    #: ... and with this probability a Pareto tail (shape ``straggler_alpha``) from 1.5x up to ``straggler_cap``
    straggler_p: float = 0.12
    #: ... or this one in a phase of at most ``small_phase`` tasks: small jobs' stragglers escape mitigation (Dolly,
    #: NSDI 2013: in Facebook's and Bing's clusters the slowest task of a small job runs on average 8x its median)
    straggler_p_small: float = 0.16
    small_phase: int = 10
    straggler_alpha: float = 0.7
    straggler_cap: float = 50.0
    attempt_sigma: float = 0.12  #: each attempt's own noise (what a second attempt does not share)
    old_hosts: float = 0.35  #: share of hosts of the older hardware generation ...
    old_slowdown: tuple[float, float] = (1.25, 1.5)  #: ... each this much slower (at most 1.5x)
    last_split_share: float = 0.35  #: share of maps that read the short last split of an input file
    speculate: bool = True  #: mapreduce.map.speculative
    map_failure_rate: float = 0.002
    # -- faults (semantics section 9): None = the default mix; [] = none; else [{"kind", "at", "severity"}, ...] -------
    faults: list[dict[str, Any]] | None = None
    faults_per_hour: float = 3.0  #: per kind, in the default mix
    # -- artifacts ----------------------------------------------------------------------------------------------------
    #: "hadoop2": every INFO line of Hadoop 2.6-2.7 reduce logs; "hadoop3": 3.x, where the fetchers' "Assigning",
    #: "assigned" and "for url=..." lines are DEBUG (fewer lines; the collector then learns hosts from "freed by").
    log_format: str = "hadoop2"
    # -- Ganglia -------------------------------------------------------------------------------------------------------
    sample_step: float = 15.0
    progress: bool = False

    def validate(self) -> None:
        if self.nodes < 2:
            raise ValueError("need at least 2 nodes")
        if not self.hours > 0:
            raise ValueError("hours must be positive")
        if self.slots < 2:
            raise ValueError("need at least 2 container slots per node")
        if self.log_format not in ("hadoop2", "hadoop3"):
            raise ValueError("log_format must be hadoop2 or hadoop3")
