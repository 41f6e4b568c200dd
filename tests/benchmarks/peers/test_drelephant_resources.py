"""Dr. Elephant's MapperGCHeuristicTest, ReducerGCHeuristicTest, MapperSpillHeuristicTest,
MapperMemoryHeuristicTest and ReducerMemoryHeuristicTest (.java), case for case."""

from __future__ import annotations

import pytest

from benchmarks.peers.drelephant.resources import (
    MapperGCHeuristic,
    MapperMemoryHeuristic,
    MapperSpillHeuristic,
    ReducerGCHeuristic,
    ReducerMemoryHeuristic,
)
from benchmarks.peers.drelephant.severity import Severity
from tests.benchmarks.peers.conftest import ONE_MB, counters, job, tasks_with

S = Severity
GC = [  # (test, severity, runtimeMs, cpuMs, gcMs); the same five cases in both files
    ("testGCCritical", S.CRITICAL, 1000000, 50000, 2000),
    ("testGCSevere", S.SEVERE, 1000000, 50000, 1500),
    ("testGCModerate", S.MODERATE, 1000000, 50000, 1000),
    ("testGCNone", S.NONE, 1000000, 50000, 300),
    ("testShortTasksNone", S.NONE, 100000, 50000, 2000),
]


@pytest.mark.parametrize("mapper", [True, False], ids=["MapperGC", "ReducerGC"])
@pytest.mark.parametrize(("name", "expected", "runtime", "cpu", "gc"), GC, ids=[c[0] for c in GC])
def test_gc(mapper: bool, name: str, expected: Severity, runtime: int, cpu: int, gc: int) -> None:
    tasks = tasks_with([runtime, 0, 0, 0, 0], counters(CPU_MILLISECONDS=cpu, GC_MILLISECONDS=gc), 100)
    h = MapperGCHeuristic() if mapper else ReducerGCHeuristic()
    result = h.apply(job(mappers=tasks) if mapper else job(reducers=tasks))
    assert result is not None and result.severity == expected


SPILL = [  # (test, severity, spilledRecords, mapRecords, numTasks)
    ("testCritical", S.CRITICAL, 3000, 1000, 1000),
    ("testSevere", S.SEVERE, 2500, 1000, 1000),
    ("testModerate", S.MODERATE, 2300, 1000, 1000),
    ("testLow", S.LOW, 2100, 1000, 1000),
    ("testNone", S.NONE, 1000, 1000, 1000),
    ("testSmallNumTasks", S.NONE, 3000, 1000, 10),
]


@pytest.mark.parametrize(("name", "expected", "spilled", "records", "n"), SPILL, ids=[c[0] for c in SPILL])
def test_mapper_spill(name: str, expected: Severity, spilled: int, records: int, n: int) -> None:
    c = counters(SPILLED_RECORDS=spilled, MAP_OUTPUT_RECORDS=records)
    result = MapperSpillHeuristic().apply(job(mappers=tasks_with([0, 0, 0, 0, 0], c, n)))
    assert result is not None and result.severity == expected


MEMORY = [  # (test, severity, taskAvgMemMB, containerMemMB); the same six cases in both files
    ("testLargeContainerSizeCritical", S.CRITICAL, 2048, 8192),
    ("testLargeContainerSizeSevere", S.SEVERE, 3072, 8192),
    ("testLargeContainerSizeModerate", S.MODERATE, 4096, 8192),
    ("testLargeContainerSizeNone", S.NONE, 6144, 8192),
    ("testDefaultContainerNone", S.NONE, 256, 2048),
    ("testDefaultContainerNoneMore", S.NONE, 1024, 2048),
]


@pytest.mark.parametrize("mapper", [True, False], ids=["MapperMemory", "ReducerMemory"])
@pytest.mark.parametrize(("name", "expected", "mem_mb", "container_mb"), MEMORY, ids=[c[0] for c in MEMORY])
def test_memory(mapper: bool, name: str, expected: Severity, mem_mb: int, container_mb: int) -> None:
    tasks = tasks_with([0, 0, 0, 0, 0], counters(PHYSICAL_MEMORY_BYTES=mem_mb * ONE_MB), 100)
    if mapper:
        data = job(mappers=tasks, mapreduce_map_memory_mb=str(container_mb))
        result = MapperMemoryHeuristic().apply(data)
    else:
        data = job(reducers=tasks, mapreduce_reduce_memory_mb=str(container_mb))
        result = ReducerMemoryHeuristic().apply(data)
    assert result is not None and result.severity == expected
