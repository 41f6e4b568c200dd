"""Threshold parameters as ``app-conf/HeuristicConf.xml`` states them (all commented out there, so each heuristic's
own defaults apply; they are the same numbers) and ``Utils.getParam`` without its JavaScript ``eval``: a limit is a
number or a fraction ``a/b``, nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

Limits = tuple[float, float, float, float]

HDFS_BLOCK_SIZE_DEFAULT = 128 * 1024 * 1024
"""``HDFSContext.load()`` reads the cluster's default block size at start: ``dfs.blocksize``'s default, 128 MiB,
since Hadoop 2. (The class's static initial value, 64 MiB, is what Dr. Elephant's unit tests see.)"""
DISK_READ_SPEED = 100 * 1024 * 1024
"""``HDFSContext.DISK_READ_SPEED``: 100 MiB/s."""

# heuristic name -> parameter -> its value in HeuristicConf.xml (= the heuristic's default)
DEFAULT_PARAMS: dict[str, dict[str, str]] = {
    "Mapper Skew": {
        "num_tasks_severity": "10, 50, 100, 200",
        "deviation_severity": "2, 4, 8, 16",
        "files_severity": "1/8, 1/4, 1/2, 1",
    },
    "Mapper GC": {"gc_ratio_severity": "0.01, 0.02, 0.03, 0.04", "runtime_severity_in_min": "5, 10, 12, 15"},
    "Mapper Time": {
        "short_runtime_severity_in_min": "10, 4, 2, 1",
        "long_runtime_severity_in_min": "15, 30, 60, 120",
        "num_tasks_severity": "50, 101, 500, 1000",
    },
    "Mapper Speed": {"disk_speed_severity": "1/2, 1/4, 1/8, 1/32", "runtime_severity_in_min": "5, 10, 15, 30"},
    "Mapper Spill": {"spill_severity": "2.01, 2.2, 2.5, 3", "num_tasks_severity": "50, 100, 500, 1000"},
    "Mapper Memory": {
        "container_memory_severity": "1.1, 1.5, 2, 2.5",
        "memory_ratio_severity": "0.6, 0.5, 0.4, 0.3",
        "container_memory_default_mb": "2048",
    },
    "Reducer Skew": {
        "num_tasks_severity": "10, 50, 100, 200",
        "deviation_severity": "2, 4, 8, 16",
        "files_severity": "1/8, 1/4, 1/2, 1",
    },
    "Reducer GC": {"gc_ratio_severity": "0.01, 0.02, 0.03, 0.04", "runtime_severity_in_min": "5, 10, 12, 15"},
    "Reducer Time": {
        "short_runtime_severity_in_min": "10, 4, 2, 1",
        "long_runtime_severity_in_min": "15, 30, 60, 120",
        "num_tasks_severity": "50, 101, 500, 1000",
    },
    "Reducer Memory": {
        "container_memory_severity": "1.1, 1.5, 2, 2.5",
        "memory_ratio_severity": "0.6, 0.5, 0.4, 0.3",
        "container_memory_default_mb": "2048",
    },
    "Shuffle & Sort": {"runtime_severity_in_min": "1, 5, 10, 30", "runtime_ratio_severity": "1, 2, 4, 8"},
    "Exception": {},
}
"""HeuristicConf.xml's commented Mapper/Reducer Memory block says ``container_memory_severity`` 1, 1.5, 2, 2.5; the
code's default (which runs, the block being commented out) is 1.1, 1.5, 2.0, 2.5: the code's value is kept."""


def parse_limits(raw: str | None, default: Limits) -> Limits:
    """``Utils.getParam(raw, 4)``: four comma-separated numbers or fractions; anything else keeps ``default``."""
    if raw is None or not raw.strip():
        return default
    parts = raw.split(",")
    if len(parts) != 4:
        return default
    out: list[float] = []
    for part in parts:
        try:
            out.append(float(Fraction(part.strip())))
        except (ValueError, ZeroDivisionError):
            return default
    return (out[0], out[1], out[2], out[3])


def limits(params: Mapping[str, str], key: str, default: Limits) -> Limits:
    """The limits of ``key`` in ``params``, or ``default``."""
    return parse_limits(params.get(key), default)
