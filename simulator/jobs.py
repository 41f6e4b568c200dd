"""What the simulator knows about each job, task attempt and reducer shuffle; the writers render these as Hadoop
would have logged them.  Times are epoch seconds (floats); the writers round them to milliseconds.
"""

from __future__ import annotations

import random
from array import array
from collections import deque
from dataclasses import dataclass, field


@dataclass(slots=True)
class Attempt:
    kind: str  # 'm' or 'r'
    task: int
    n: int
    node: int
    container: int
    assigned: float
    start: float = 0.0  # RUNNING (container launched)
    end: float = 0.0  # final state reached
    status: str = ""  # SUCCEEDED / FAILED / KILLED
    speculative: bool = False
    redundant_at: float | None = None  # when the AM scheduled this (speculative) attempt
    error: str = ""
    # reduce attempts, filled when the shuffle is scheduled
    shuffle_end: float = 0.0
    sort_end: float = 0.0
    shuffle_bytes: int = 0
    pulls: int = 0
    load_peak: float = 0.0  # the most this attempt alone adds to its host's run queue (reducers)


@dataclass(slots=True)
class Pull:
    """One map output fetched by a reducer (what the reduce syslog shows and the DataPull event reports)."""

    map_task: int
    start_ms: int
    end_ms: int
    length: int
    node: int
    fetcher: int
    #: a stalled fetch's failed tries: (read timeout ms, retry start ms) each
    timeouts: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Job:
    idx: int
    seq: int
    name: str
    user: str
    queue: str
    submit: float
    maps: int
    reduces: int
    input_bytes: int
    shuffle_bytes: int
    output_bytes: int
    rng: random.Random
    cts: int  # cluster timestamp (ms) in the ids
    splits: list[int] = field(default_factory=list)  #: input bytes of each map (uneven: short last splits)
    block: int = 0  #: the size of a whole split (a block)
    record_bytes: float = 100.0  #: mean input record size (the same for every split of the job)
    # -- life cycle --------------------------------------------------------------------------------------------------
    am_node: int = -1
    am_assigned: float = 0.0
    am_start: float = 0.0
    init: float = 0.0
    launch: float = 0.0
    running: float = 0.0
    end: float = 0.0
    status: str = ""
    next_container: int = 2  # 1 is the AM
    attempts: list[Attempt] = field(default_factory=list)
    map_ok: list[Attempt | None] = field(default_factory=list)
    map_running: dict[int, list[Attempt]] = field(default_factory=dict)
    reduce_ok: list[Attempt | None] = field(default_factory=list)
    pending_maps: deque[tuple[int, int]] = field(default_factory=deque)  # (task, attempt number)
    urgent_maps: deque[tuple[int, int, bool]] = field(default_factory=deque)  # retries / speculative attempts
    next_reduce: int = 0
    reduces_ready: bool = False
    hold_until: float | None = None  # reducers held back until then (held_output)
    waiting_reducers: list[tuple[Attempt, random.Random]] = field(default_factory=list)
    spec_at: dict[int, float] = field(default_factory=dict)  #: map task -> when the speculator chose it
    completed_maps: int = 0
    completed_reduces: int = 0
    slowstart_at: float | None = None
    maps_done_at: float | None = None
    first_reduce_start: float | None = None
    in_demand: bool = False
    # -- data sizes --------------------------------------------------------------------------------------------------
    map_out: list[int] = field(default_factory=list)  # raw map output bytes per map
    shares: list[float] = field(default_factory=list)  # per-reducer share of each map's output
    #: end (ms) and bytes of every fetch, kept only for a job that may hold >= 1 GiB (see ``watch_fetches``)
    fetch_end: array[int] | None = None
    fetch_bytes: array[int] | None = None

    @property
    def job_id(self) -> str:
        return f"job_{self.cts}_{self.seq:04d}"

    @property
    def app_id(self) -> str:
        return f"application_{self.cts}_{self.seq:04d}"

    def attempt_id(self, kind: str, task: int, n: int) -> str:
        return f"attempt_{self.cts}_{self.seq:04d}_{kind}_{task:06d}_{n}"

    def task_id(self, kind: str, task: int) -> str:
        return f"task_{self.cts}_{self.seq:04d}_{kind}_{task:06d}"

    def container_id(self, number: int) -> str:
        return f"container_{self.cts}_{self.seq:04d}_01_{number:06d}"

    def split_bytes(self, task: int) -> int:
        """Input bytes of map ``task`` (whole blocks, short last splits, a skewed split when a fault made one)."""
        return self.splits[task]

    def input_records(self, task: int) -> int:
        """MAP_INPUT_RECORDS of map ``task``: its bytes over the job's record size (siblings read alike)."""
        return int(self.splits[task] / self.record_bytes) + 1

    def set_weights(self, weights: list[float]) -> None:
        """Each reducer's share of every map's output (the partitioner's key distribution)."""
        total = sum(weights) or 1.0
        self.shares = [w / total for w in weights]

    def partition(self, task: int, reducer: int) -> tuple[int, int]:
        """(decompressed, on-the-wire) length of map ``task``'s output for ``reducer``: IFile adds a 2-byte end
        marker to the records and a 4-byte checksum on the wire."""
        decomp = 2 + int(self.map_out[task] * self.shares[reducer])
        return decomp, decomp + 4

    def watch_fetches(self, min_bytes: int) -> None:
        """Keep this job's fetches if its map output can reach ``min_bytes`` (each partition adds at most 6 bytes)."""
        if self.reduces and sum(self.map_out) + 6 * self.maps * self.reduces >= min_bytes:
            self.fetch_end, self.fetch_bytes = array("q"), array("q")

    def materialized(self, task: int) -> int:
        """MAP_OUTPUT_MATERIALIZED_BYTES of map ``task``: exactly what the reducers will fetch from it."""
        out = self.map_out[task]
        return sum(6 + int(out * share) for share in self.shares)
