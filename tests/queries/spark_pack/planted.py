"""Spark jobs with planted problems for the Spark pack's tests, and the clean job it must stay quiet on.

The local-mode jobs run in any SparkSession (the test run's shared one, or a fixture application): a skewed groupBy,
one slowed task and a spilling window aggregation come from the collector's tests (``tests/collectors/spark/
planted.py``); :func:`clean_job` is new.  The cluster jobs need executors that are not the driver
(``local-cluster[2,1,1024]``): a shuffle fetch that stalls because the executor serving it is frozen, and an executor
killed in the middle of a stage.  Each job runs under a job group of its own, so a test can ask Spark's status
tracker which jobs and stages it ran.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.collectors.spark.planted import (  # noqa: F401 - re-exported: the planted local-mode problems
    SLOW_PARTITION,
    SLOW_SECONDS,
    accounting,
    drain,
    slow_task,
    spilling_window,
)

#: Seconds of work per value of the skewed groupBy, slept rather than computed so that the skew does not depend on
#: the machine's speed (150 Python iterations per value ran 3 s on one machine and 0.8 s on another, under the test
#: pack's 1.5 s gate): the hot key's 190,000 values take about 3 s, the other keys' hundred-odd values milliseconds.
SKEW_SECONDS_PER_VALUE = 16e-6
#: Rows of the GC-pressure job: about 150 MB of live strings in four lists on a 512 MiB executor heap.
GC_ROWS = 2_500_000
#: The clean job's tasks all sleep this long: even, and long enough to pass the test pack's time gates if skewed.
CLEAN_SECONDS = 0.6
#: How long the frozen executor stays stopped (the stalled fetch waits about this long).
STALL_SECONDS = 5.0
STALL_PARTITION = 6


def skewed_groupby(spark: Any, group: str, rows: int = 200_000, per_value: float = SKEW_SECONDS_PER_VALUE) -> None:
    """A groupBy whose key 0 holds 95 % of the rows (RDD API: no map-side combine, so the skew reaches the shuffle):
    one reduce task reads almost everything and, at ``per_value`` seconds per value, runs seconds longer than the
    rest."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: skewed key in a groupBy")

    def burn(values: Any) -> int:
        n = sum(1 for _ in values)
        time.sleep(n * per_value)
        return n

    try:
        rdd = sc.parallelize(range(rows), 4).map(lambda i: (0 if i % 20 else i % 97, i))
        rdd.groupByKey(8).mapValues(burn).collect()
    finally:
        sc.setJobGroup("", "")


def clean_job(spark: Any, group: str) -> None:
    """Eight even tasks of a shuffle-free stage, then an even shuffle: nothing for the pack to find."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "clean: even tasks, an even shuffle")

    def even(index: int, it: Any) -> Any:
        time.sleep(CLEAN_SECONDS)
        return it

    try:
        sc.parallelize(range(8000), 8).mapPartitionsWithIndex(even).map(lambda i: (i % 8, 1)).reduceByKey(
            lambda a, b: a + b, 4
        ).mapPartitionsWithIndex(even).collect()
    finally:
        sc.setJobGroup("", "")


# ------------------------------------------------------------------------------------------------ local-cluster


def executor_jvm(pid: int) -> int | None:
    """The executor JVM above ``pid`` (a Python worker forked by pyspark's daemon, a child of the executor)."""
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"CoarseGrainedExecutorBackend" in cmdline:
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent pid
    return None


def sibling_executors(mine: int | None, app_id: str) -> list[int]:
    """The other executor JVMs of application ``app_id`` on this machine."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == mine:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"CoarseGrainedExecutorBackend" in cmdline and app_id.encode() in cmdline:
            out.append(int(entry.name))
    return out


def gc_pressure(spark: Any, group: str, rows: int = GC_ROWS) -> None:
    """Four keys collect millions of random strings into lists that stay on the executors' heaps until the
    aggregation ends: the old generation fills and the collector runs again and again (GC about a quarter of the run
    time on 512 MiB executors).  A small run first warms the JVMs up, so that compilation does not dilute the ratio."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: heap-filling collect_list (GC pressure)")
    try:
        for n in (rows // 5, rows):
            spark.range(0, n, numPartitions=2).selectExpr("id % 4 AS k", "uuid() AS s").groupBy("k").agg(
                F.collect_list("s").alias("l")
            ).selectExpr("sum(size(l))").collect()
    finally:
        sc.setJobGroup("", "")


def fetch_stall(spark: Any, group: str) -> None:
    """A reduce stage of 16 quick tasks over two executors; one task freezes the *other* executor's JVM (SIGSTOP,
    resumed by a detached ``kill -CONT`` after :data:`STALL_SECONDS`).  The next task on this executor fetches shuffle
    blocks from the frozen one and waits: a shuffle-fetch straggler, as a hung NodeManager or a long GC pause on the
    serving side makes one.  Needs ``spark.shuffle.readHostLocalDisk=false`` (else blocks of an executor on the same
    host are read from its disk, not fetched)."""
    from pyspark import TaskContext

    sc = spark.sparkContext
    app_id = sc.applicationId
    seconds = STALL_SECONDS

    def freeze_other(index: int, it: Any) -> Any:
        if index == STALL_PARTITION and TaskContext.get().attemptNumber() == 0:
            for pid in sibling_executors(executor_jvm(os.getpid()), app_id):
                os.kill(pid, signal.SIGSTOP)
                subprocess.Popen(["sh", "-c", f"sleep {seconds}; kill -CONT {pid}"], start_new_session=True)
        return it

    sc.setJobGroup(group, "planted: a shuffle fetch from a frozen executor")
    try:
        sc.parallelize(range(200_000), 4).map(lambda i: (i % 64, "x" * 50)).groupByKey(16).mapPartitionsWithIndex(
            freeze_other
        ).count()
    finally:
        sc.setJobGroup("", "")


def lost_executor(spark: Any, group: str, marker: Path) -> None:
    """A shuffle's reduce task kills its own executor's JVM (SIGKILL) once: ExecutorLostFailure, the lost map output
    is recomputed (a stage retry) and the worker starts a new executor (``tests/collectors/spark/lost_executor_app.py``
    does the same in its own application)."""
    from pyspark import TaskContext

    def kill_once(index: int, it: Any) -> Any:
        if index == 0 and TaskContext.get().attemptNumber() == 0 and not marker.exists():
            marker.write_text(str(os.getpid()))
            jvm = executor_jvm(os.getpid())
            if jvm is not None:
                os.kill(jvm, signal.SIGKILL)
        return it

    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: an executor lost during a stage")
    try:
        pairs = sc.parallelize(range(4000), 4).map(lambda i: (i % 8, i))
        pairs.reduceByKey(lambda a, b: a + b, 4).mapPartitionsWithIndex(kill_once).count()
    finally:
        sc.setJobGroup("", "")
