"""Builders of the jobs Dr. Elephant's own unit tests build (their ``analyzeJob`` helpers), shared by the
``test_drelephant_*`` files: each task array ends with one task without time and counter data (the Java tests'
"non-sampled task"), which counts in the number of tasks."""

from __future__ import annotations

from benchmarks.peers.drelephant.data import ApplicationData, CounterData, TaskData

JAVA_TEST_BLOCK_SIZE = 64 * 1024 * 1024
"""``HDFSContext.HDFS_BLOCK_SIZE`` as Dr. Elephant's unit tests see it (its static value; ``load()`` never runs)."""
MINUTE_IN_MS = 60_000
ONE_MB = 1024 * 1024


def counters(**values: int) -> CounterData:
    """``new MapReduceCounterData()`` then ``set(CounterName.X, v)`` per X=v (GC_MILLISECONDS: GC_TIME_MILLIS)."""
    c = CounterData()
    for name, v in values.items():
        c.set_named("GC_TIME_MILLIS" if name == "GC_MILLISECONDS" else name, v)
    return c


def tasks_with(time: list[int] | None, counter: CounterData | None, n: int) -> list[TaskData]:
    """``n`` tasks with ``setTimeAndCounter(time, counter)``, then the one without data."""
    out = []
    for i in range(n):
        t = TaskData(f"task-id-{i}", f"task-attempt-id-{i}")
        t.set_time_and_counter(time, counter)
        out.append(t)
    out.append(TaskData(f"task-id-{n}", f"task-attempt-id-{n}"))
    return out


def job(
    *, mappers: list[TaskData] | None = None, reducers: list[TaskData] | None = None, **conf: str
) -> ApplicationData:
    """``new MapReduceApplicationData().setMapperData(..)/setReducerData(..)`` (succeeded by default)."""
    return ApplicationData(
        mappers=mappers or [], reducers=reducers or [], conf={k.replace("_", "."): v for k, v in conf.items()}
    )
