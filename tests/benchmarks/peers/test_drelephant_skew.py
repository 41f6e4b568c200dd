"""Dr. Elephant's MapperSkewHeuristicTest.java and ReducerSkewHeuristicTest.java, case for case (13 each)."""

from __future__ import annotations

import pytest

from benchmarks.peers.drelephant.data import TaskData
from benchmarks.peers.drelephant.severity import Severity
from benchmarks.peers.drelephant.skew import MapperSkewHeuristic, ReducerSkewHeuristic
from tests.benchmarks.peers.conftest import JAVA_TEST_BLOCK_SIZE, counters, job

UNITSIZE = JAVA_TEST_BLOCK_SIZE // 64  # 1 MB
UNITSIZETIME = 1_000_000  # 1000 s

DATA_CASES = [  # (test name, severity, numSmallTasks, numLargeTasks, smallInputSize, largeInputSize)
    ("testCritical", Severity.CRITICAL, 200, 200, 1 * UNITSIZE, 100 * UNITSIZE),
    ("testSevere", Severity.SEVERE, 200, 200, 10 * UNITSIZE, 100 * UNITSIZE),
    ("testModerate", Severity.MODERATE, 200, 200, 20 * UNITSIZE, 100 * UNITSIZE),
    ("testLow", Severity.LOW, 200, 200, 30 * UNITSIZE, 100 * UNITSIZE),
    ("testNone", Severity.NONE, 200, 200, 50 * UNITSIZE, 100 * UNITSIZE),
    ("testSmallFiles", Severity.NONE, 200, 200, 1 * UNITSIZE, 5 * UNITSIZE),
    ("testSmallTasks", Severity.NONE, 5, 5, 10 * UNITSIZE, 100 * UNITSIZE),
]
TIME_CASES = [  # (test name, severity, numSmallTasks, numLongTasks, smallTimeTaken, longTimeTaken)
    ("testCriticalTime", Severity.CRITICAL, 200, 200, 1 * UNITSIZETIME, 100 * UNITSIZETIME),
    ("testSevereTime", Severity.SEVERE, 200, 200, 10 * UNITSIZETIME, 100 * UNITSIZETIME),
    ("testModerateTime", Severity.MODERATE, 200, 200, 20 * UNITSIZETIME, 100 * UNITSIZETIME),
    ("testLowTime", Severity.LOW, 200, 200, 30 * UNITSIZETIME, 100 * UNITSIZETIME),
    ("testNoneTime", Severity.NONE, 200, 200, 50 * UNITSIZETIME, 100 * UNITSIZETIME),
    ("testSmallTasksTime", Severity.NONE, 5, 5, 10 * UNITSIZETIME, 100 * UNITSIZETIME),
]


def _data_tasks(mapper: bool, n_small: int, n_large: int, small: int, large: int) -> list[TaskData]:
    # the mapper test puts the small size in HDFS_BYTES_READ and the large in S3A_BYTES_READ
    small_c = counters(HDFS_BYTES_READ=small) if mapper else counters(REDUCE_SHUFFLE_BYTES=small)
    large_c = counters(S3A_BYTES_READ=large) if mapper else counters(REDUCE_SHUFFLE_BYTES=large)
    tasks = []
    for i in range(n_small + n_large):
        t = TaskData(f"task-id-{i}", f"task-attempt-id-{i}")
        t.set_time_and_counter([0, 0, 0, 0, 0], small_c if i < n_small else large_c)
        tasks.append(t)
    tasks.append(TaskData(f"task-id-{n_small + n_large}"))  # the non-sampled task
    return tasks


def _time_tasks(n_small: int, n_long: int, small: int, long_: int) -> list[TaskData]:
    tasks = []
    for i in range(n_small + n_long):
        t = TaskData(f"task-id-{i}", f"task-attempt-id-{i}")
        t.set_total_time(small if i < n_small else long_, True)
        tasks.append(t)
    tasks.append(TaskData(f"task-id-{n_small + n_long}"))
    return tasks


@pytest.mark.parametrize("mapper", [True, False], ids=["MapperSkew", "ReducerSkew"])
@pytest.mark.parametrize(
    ("name", "expected", "n_small", "n_large", "small", "large"), DATA_CASES, ids=[c[0] for c in DATA_CASES]
)
def test_data_skew(
    mapper: bool, name: str, expected: Severity, n_small: int, n_large: int, small: int, large: int
) -> None:
    tasks = _data_tasks(mapper, n_small, n_large, small, large)
    h = (MapperSkewHeuristic if mapper else ReducerSkewHeuristic)(hdfs_block_size=JAVA_TEST_BLOCK_SIZE)
    result = h.apply(job(mappers=tasks) if mapper else job(reducers=tasks))
    assert result is not None and result.severity == expected


@pytest.mark.parametrize("mapper", [True, False], ids=["MapperSkew", "ReducerSkew"])
@pytest.mark.parametrize(
    ("name", "expected", "n_small", "n_long", "small", "long_"), TIME_CASES, ids=[c[0] for c in TIME_CASES]
)
def test_time_skew(
    mapper: bool, name: str, expected: Severity, n_small: int, n_long: int, small: int, long_: int
) -> None:
    tasks = _time_tasks(n_small, n_long, small, long_)
    h = (MapperSkewHeuristic if mapper else ReducerSkewHeuristic)(hdfs_block_size=JAVA_TEST_BLOCK_SIZE)
    result = h.apply(job(mappers=tasks) if mapper else job(reducers=tasks))
    assert result is not None and result.severity == expected
