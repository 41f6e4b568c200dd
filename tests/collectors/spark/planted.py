"""Spark jobs with planted problems, for the live collector tests (run in the test run's shared SparkSession).

Each runs under a job group of its own, so the test can ask Spark's status tracker what it counted for exactly these
jobs.  None changes the session's configuration for longer than its own job (the SQL spill threshold is restored).
"""

from __future__ import annotations

import time
from typing import Any

#: The skewed key holds this share of the rows.
SKEW_SHARE = 0.95
SLOW_PARTITION = 3
SLOW_SECONDS = 2.5


def skewed_groupby(spark: Any, group: str, rows: int = 200_000) -> None:
    """A groupBy whose key 0 holds 95 % of the rows.  The RDD API has no map-side combine, so the skew reaches the
    shuffle: one reduce task reads almost everything and, with a little work per value, runs far longer."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: skewed key in a groupBy")

    def work(values: Any) -> int:
        return sum(1 for _ in values for _ in range(40))

    try:
        rdd = sc.parallelize(range(rows), 4).map(lambda i: (0 if i % 20 else i % 97, i))
        rdd.groupByKey(8).mapValues(work).collect()
    finally:
        sc.setJobGroup("", "")


def slow_task(spark: Any, group: str) -> None:
    """Eight quick tasks, one of which sleeps: a straggler with no data skew."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: one slow task")

    def work(index: int, it: Any) -> Any:
        if index == SLOW_PARTITION:
            time.sleep(SLOW_SECONDS)
        return it

    try:
        sc.parallelize(range(80), 8).mapPartitionsWithIndex(work).count()
    finally:
        sc.setJobGroup("", "")


def spilling_window(spark: Any, group: str, rows: int = 60_000) -> None:
    """A window aggregation over whole partitions with the window buffer's spill threshold set low for this query:
    the buffer spills to disk (memory and disk spill bytes > 0 on the tasks that hold the big groups)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    keys = ("spark.sql.windowExec.buffer.in.memory.threshold", "spark.sql.windowExec.buffer.spill.threshold")
    before = {k: spark.conf.get(k, None) for k in keys}
    sc.setJobGroup(group, "planted: spilling window aggregation")
    try:
        spark.conf.set(keys[0], "500")
        spark.conf.set(keys[1], "2000")
        df = spark.range(0, rows, numPartitions=4).selectExpr("id % 2 AS k", "id AS v")
        df.withColumn("m", F.max("v").over(Window.partitionBy("k"))).agg(F.sum("m")).collect()
    finally:
        sc.setJobGroup("", "")
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def two_stage_slow(spark: Any, group: str, seconds: float = 6.0) -> None:
    """A shuffle (stage 1, quick) then a slow reduce stage: the log shows stage 1 finished while the job still runs."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "planted: a job that is still running after its first stage")

    def slow(it: Any) -> Any:
        time.sleep(seconds)
        return it

    try:
        sc.parallelize(range(1000), 2).map(lambda i: (i % 4, i)).reduceByKey(lambda a, b: a + b, 2).mapPartitions(
            slow
        ).count()
    finally:
        sc.setJobGroup("", "")


def accounting(spark: Any, group: str) -> dict[str, Any]:
    """What Spark's status tracker counted for ``group``: jobs with status and stages; per stage that was submitted,
    its current attempt, tasks and how many of them completed and failed."""
    return count_jobs(spark.sparkContext.statusTracker()._jtracker, group)


def count_jobs(jtracker: Any, group: str) -> dict[str, Any]:
    """``accounting`` over the JVM's ``JavaSparkStatusTracker``.  A stage is left out only when it was never
    submitted (``submissionTime`` 0: its output was reused, a skipped stage, of which Spark logs nothing).  A submitted
    attempt that ran no tasks stays: when an executor is lost, the resubmitted map stage can find every partition
    already recomputed, and Spark still logs its ``StageSubmitted`` and ``StageCompleted`` with zero tasks."""
    jobs: dict[int, Any] = {}
    stages: dict[int, Any] = {}
    for job_id in sorted(jtracker.getJobIdsForGroup(group)):
        info = jtracker.getJobInfo(job_id)
        stage_ids = sorted(info.stageIds())
        jobs[job_id] = {"status": str(info.status()), "stages": stage_ids}
        for stage_id in stage_ids:
            st = jtracker.getStageInfo(stage_id)
            if st is None or st.submissionTime() <= 0:
                continue
            stages[stage_id] = {
                "attempt": st.currentAttemptId(),
                "num_tasks": st.numTasks(),
                "completed": st.numCompletedTasks(),
                "failed": st.numFailedTasks(),
            }
    return {"jobs": jobs, "stages": stages}


def drain(spark: Any) -> None:
    """Wait until the listener bus handed every event to the event-log writer (which flushes at each job end)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(30_000)
