"""The SWIM Facebook job mix: arrival times and data sizes per job, scaled to the simulated cluster.

The traces (``data/FB-20{09,10}_samples_24_times_1hr_0.tsv``, BSD licence, see ``data/LICENSE``) are 24 one-hour
samples of Facebook production jobs, one per line: name, submit time (s from the trace start), gap, map input bytes,
shuffle bytes, reduce output bytes.  SWIM replays them on smaller clusters by scaling the data sizes by the ratio of
cluster sizes (FB-2009: 600 machines, FB-2010: 3000) and keeping the arrival times; we do the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
TRACE_SECONDS = 24 * 3600

#: trace name -> (file, machines in the cluster the trace was sampled from)
TRACES = {
    "fb2009": ("FB-2009_samples_24_times_1hr_0.tsv", 600),
    "fb2010": ("FB-2010_samples_24_times_1hr_0.tsv", 3000),
}


@dataclass(frozen=True)
class TraceJob:
    name: str
    submit: float  # seconds from the window start
    input_bytes: int
    shuffle_bytes: int
    output_bytes: int


def read_trace(name: str) -> list[TraceJob]:
    """All jobs of a trace, in file order; malformed rows are skipped (the shipped files have none)."""
    if name not in TRACES:
        raise ValueError(f"unknown trace {name!r} (known: {', '.join(TRACES)})")
    jobs: list[TraceJob] = []
    with open(DATA / TRACES[name][0], encoding="utf-8") as handle:
        for row in handle:
            cols = row.rstrip("\n").split("\t")
            if len(cols) != 6:
                continue
            try:
                jobs.append(TraceJob(cols[0], float(cols[1]), int(cols[3]), int(cols[4]), int(cols[5])))
            except ValueError:
                continue
    return jobs


def window(name: str, hours: float, nodes: int, offset_hours: float = 0.0) -> list[TraceJob]:
    """The jobs submitted in ``[offset, offset + hours)`` of the (cyclically repeated) trace, sizes scaled to ``nodes``.

    Submit times are relative to the window start.
    """
    jobs = read_trace(name)
    scale = nodes / TRACES[name][1]
    start = offset_hours * 3600.0
    end = start + hours * 3600.0
    out: list[TraceJob] = []
    cycle = 0
    while cycle * TRACE_SECONDS < end:
        base = cycle * TRACE_SECONDS
        for job in jobs:
            t = base + job.submit
            if start <= t < end:
                out.append(
                    TraceJob(
                        f"{job.name}" if cycle == 0 else f"{job.name}.{cycle}",
                        t - start,
                        int(job.input_bytes * scale),
                        int(job.shuffle_bytes * scale),
                        int(job.output_bytes * scale),
                    )
                )
        cycle += 1
    out.sort(key=lambda j: j.submit)
    return out
