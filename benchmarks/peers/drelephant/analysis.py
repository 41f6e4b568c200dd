"""The MapReduce heuristics in ``app-conf/HeuristicConf.xml``'s order, and ``AnalyticJob.getAnalysis``'s loop."""

from __future__ import annotations

from collections.abc import Iterable

from benchmarks.peers.drelephant.config import HDFS_BLOCK_SIZE_DEFAULT
from benchmarks.peers.drelephant.data import ApplicationData
from benchmarks.peers.drelephant.heuristic import Heuristic, HeuristicResult
from benchmarks.peers.drelephant.resources import (
    ExceptionHeuristic,
    MapperGCHeuristic,
    MapperMemoryHeuristic,
    MapperSpillHeuristic,
    ReducerGCHeuristic,
    ReducerMemoryHeuristic,
)
from benchmarks.peers.drelephant.runtime import (
    MapperSpeedHeuristic,
    MapperTimeHeuristic,
    ReducerTimeHeuristic,
    ShuffleSortHeuristic,
)
from benchmarks.peers.drelephant.skew import MapperSkewHeuristic, ReducerSkewHeuristic

HEURISTIC_CLASSES: tuple[type[Heuristic], ...] = (
    MapperSkewHeuristic,
    MapperGCHeuristic,
    MapperTimeHeuristic,
    MapperSpeedHeuristic,
    MapperSpillHeuristic,
    MapperMemoryHeuristic,
    ReducerSkewHeuristic,
    ReducerGCHeuristic,
    ReducerTimeHeuristic,
    ReducerMemoryHeuristic,
    ShuffleSortHeuristic,
    ExceptionHeuristic,
)
"""HeuristicConf.xml's MapReduce heuristics but the last, Distributed Cache Limit (it reads only the job conf's
cache-file sizes, which the simulator does not write)."""

HEURISTIC_NAMES: tuple[str, ...] = tuple(c.name for c in HEURISTIC_CLASSES)

SPEC9_HEURISTICS: frozenset[str] = frozenset(
    {
        "Mapper Skew",
        "Reducer Skew",
        "Mapper Time",
        "Reducer Time",
        "Mapper Speed",
        "Mapper GC",
        "Reducer GC",
        "Mapper Spill",
        "Shuffle & Sort",
    }
)
"""The heuristics section 9's score names (mapper/reducer skew, time, speed, GC, spill, shuffle and sort)."""


def build_heuristics(
    names: Iterable[str] | None = None, *, hdfs_block_size: int = HDFS_BLOCK_SIZE_DEFAULT
) -> list[Heuristic]:
    """The heuristics named (all by default) at their default configuration, in HeuristicConf.xml's order."""
    wanted = set(HEURISTIC_NAMES if names is None else names)
    unknown = wanted - set(HEURISTIC_NAMES)
    if unknown:
        raise ValueError(f"unknown Dr. Elephant heuristic(s): {sorted(unknown)}; known: {list(HEURISTIC_NAMES)}")
    return [c(hdfs_block_size=hdfs_block_size) for c in HEURISTIC_CLASSES if c.name in wanted]


def analyze(data: ApplicationData, heuristics: list[Heuristic]) -> list[HeuristicResult]:
    """Every heuristic's result for one job (None results dropped); no heuristic runs on a job without tasks.

    A ``JavaError`` from any heuristic propagates: Dr. Elephant then has no analysis of the job at all.
    """
    if data.is_empty():
        return []
    results = []
    for h in heuristics:
        r = h.apply(data)
        if r is not None:
            results.append(r)
    return results
