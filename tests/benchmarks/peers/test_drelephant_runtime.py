"""Dr. Elephant's MapperTimeHeuristicTest, ReducerTimeHeuristicTest, MapperSpeedHeuristicTest and
ShuffleSortHeuristicTest (.java), case for case."""

from __future__ import annotations

import pytest

from benchmarks.peers.drelephant.runtime import (
    MapperSpeedHeuristic,
    MapperTimeHeuristic,
    ReducerTimeHeuristic,
    ShuffleSortHeuristic,
)
from benchmarks.peers.drelephant.severity import Severity
from tests.benchmarks.peers.conftest import MINUTE_IN_MS, ONE_MB, counters, job, tasks_with

S = Severity
MAPPER_TIME = [  # (test, severity, numTasks, runtime)
    ("testLongRuntimeTasksCritical", S.CRITICAL, 10, 120 * MINUTE_IN_MS),
    ("testLongRuntimeTasksCriticalMore", S.CRITICAL, 1000, 120 * MINUTE_IN_MS),
    ("testLongRuntimeTasksSevere", S.SEVERE, 10, 60 * MINUTE_IN_MS),
    ("testLongRuntimeTasksSevereMore", S.SEVERE, 1000, 60 * MINUTE_IN_MS),
    ("testShortRuntimeTasksCritical", S.CRITICAL, 1000, 1 * MINUTE_IN_MS),
    ("testShortRuntimeTasksSevere", S.SEVERE, 500, 1 * MINUTE_IN_MS),
    ("testShortRuntimeTasksModerate", S.MODERATE, 101, 1 * MINUTE_IN_MS),
    ("testShortRuntimeTasksLow", S.LOW, 50, 1 * MINUTE_IN_MS),
    ("testShortRuntimeTasksNone", S.NONE, 5, 1 * MINUTE_IN_MS),
]


@pytest.mark.parametrize(("name", "expected", "n", "runtime"), MAPPER_TIME, ids=[c[0] for c in MAPPER_TIME])
def test_mapper_time(name: str, expected: Severity, n: int, runtime: int) -> None:
    c = counters(HDFS_BYTES_READ=0, S3_BYTES_READ=0, S3A_BYTES_READ=0, S3N_BYTES_READ=0)  # DUMMY_INPUT_SIZE / 4
    result = MapperTimeHeuristic().apply(job(mappers=tasks_with([runtime, 0, 0, 0, 0], c, n)))
    assert result is not None and result.severity == expected


REDUCER_TIME = [  # (test, severity, runtimeMs, numTasks)
    ("testShortRunetimeCritical", S.CRITICAL, 1 * MINUTE_IN_MS, 1000),
    ("testShortRunetimeSevere", S.SEVERE, 1 * MINUTE_IN_MS, 500),
    ("testShortRunetimeModerate", S.MODERATE, 1 * MINUTE_IN_MS, 101),
    ("testShortRunetimeLow", S.LOW, 1 * MINUTE_IN_MS, 50),
    ("testShortRunetimeNone", S.NONE, 1 * MINUTE_IN_MS, 2),
    ("testLongRunetimeCritical", S.CRITICAL, 120 * MINUTE_IN_MS, 10),
    ("testLongRunetimeCriticalMore", S.CRITICAL, 120 * MINUTE_IN_MS, 1000),
    ("testLongRunetimeSevere", S.SEVERE, 60 * MINUTE_IN_MS, 10),
    ("testLongRunetimeSevereMore", S.SEVERE, 60 * MINUTE_IN_MS, 1000),
]


@pytest.mark.parametrize(("name", "expected", "runtime", "n"), REDUCER_TIME, ids=[c[0] for c in REDUCER_TIME])
def test_reducer_time(name: str, expected: Severity, runtime: int, n: int) -> None:
    result = ReducerTimeHeuristic().apply(job(reducers=tasks_with([runtime, 0, 0, 0, 0], counters(), n)))
    assert result is not None and result.severity == expected


_LONG = 120 * MINUTE_IN_MS
_SHORT = 2 * MINUTE_IN_MS
MAPPER_SPEED = [  # (test, severity, runtime, readBytes = k * speed_factor with speed_factor = runtime * 1MB / 1000)
    ("testCritical", S.CRITICAL, _LONG, 1 * (_LONG * ONE_MB // 1000)),
    ("testSevere", S.SEVERE, _LONG, 4 * (_LONG * ONE_MB // 1000)),
    ("testModerate", S.MODERATE, _LONG, 13 * (_LONG * ONE_MB // 1000)),
    ("testLow", S.LOW, _LONG, 50 * (_LONG * ONE_MB // 1000)),
    ("testNone", S.NONE, _LONG, 51 * (_LONG * ONE_MB // 1000)),
    ("testShortTask", S.NONE, _SHORT, 1 * (_SHORT * ONE_MB // 1000)),
]


@pytest.mark.parametrize(("name", "expected", "runtime", "read"), MAPPER_SPEED, ids=[c[0] for c in MAPPER_SPEED])
def test_mapper_speed(name: str, expected: Severity, runtime: int, read: int) -> None:
    q = read // 4
    c = counters(HDFS_BYTES_READ=q, S3_BYTES_READ=q, S3A_BYTES_READ=q, S3N_BYTES_READ=q)
    result = MapperSpeedHeuristic().apply(job(mappers=tasks_with([runtime, 0, 0, 0, 0], c, 100)))
    assert result is not None and result.severity == expected


M = MINUTE_IN_MS
SHUFFLE_SORT = [  # (test, severity, shuffleTimeMs, sortTimeMs, reduceTimeMs)
    ("testLongShuffleCritical", S.CRITICAL, 30 * M, 0, 5 * M),
    ("testLongShuffleSevere", S.SEVERE, 30 * M, 0, 10 * M),
    ("testLongShuffleModerate", S.MODERATE, 30 * M, 0, 20 * M),
    ("testLongShuffleLow", S.LOW, 30 * M, 0, 40 * M),
    ("testLongShuffleNone", S.NONE, 30 * M, 0, 80 * M),
    ("testLongSortCritical", S.CRITICAL, 0, 30 * M, 5 * M),
    ("testLongSortSevere", S.SEVERE, 0, 30 * M, 10 * M),
    ("testLongSortModerate", S.MODERATE, 0, 30 * M, 20 * M),
    ("testLongSortLow", S.LOW, 0, 30 * M, 40 * M),
    ("testLongSortNone", S.NONE, 0, 30 * M, 80 * M),
    ("testShortShuffle", S.NONE, M // 2, 0, M // 2),
    ("testShortSort", S.NONE, 0, M // 2, M // 2),
]


@pytest.mark.parametrize(
    ("name", "expected", "shuffle", "sort", "reduce"), SHUFFLE_SORT, ids=[c[0] for c in SHUFFLE_SORT]
)
def test_shuffle_sort(name: str, expected: Severity, shuffle: int, sort: int, reduce: int) -> None:
    time = [shuffle + sort + reduce, shuffle, sort, 0, 0]
    result = ShuffleSortHeuristic().apply(job(reducers=tasks_with(time, counters(), 100)))
    assert result is not None and result.severity == expected
