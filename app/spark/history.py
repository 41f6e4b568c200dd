"""History aggregates of the archive as Spark jobs, written as Parquet tables for the dashboard.

Tables (``OUT/<name>/``):

``durations``  task duration quantiles per job, queue, user and host: ``level`` (job/queue/user/host), ``key``,
               ``kind`` (Mapper/Reducer), ``tasks``, ``mean``, ``min``, ``p25``, ``p50``, ``p75``, ``p90``, ``p95``,
               ``p99``, ``max`` -- ``percentile_approx`` with accuracy 10,000: on fewer than ~10,000 tasks a
               quantile p is exact in the nearest-rank sense (the smallest duration d with at least p of the tasks
               <= d).
``skew``       per job and kind, Dr. Elephant's time-skew heuristic (below).
``queued``     per job, the queued-data curve: every DataIO event with ``queued`` = the running sum of ``size``
               (+ map output written, - fetched by reducers) in time order.
``anomalies``  straggler (Q3; the Spark pack's SlowTask and FetchWait) and imbalance (Q5, Q6) match counts per
               time bucket (by the match's ``end``, the moment it became known): ``bucket`` (epoch seconds),
               ``kind``, ``query``, ``count``.

Spark applications (the events of ``hcep collect spark``, when the archive holds any):

``spark_stages``  per application attempt and stage attempt (``app_attempt``: null where Spark logged none;
                  ``stage_key``: the collector's ``<app_id>[_<app_attempt>]/<stage_id>/<stage_attempt>``): name,
                  status, duration, tasks (attempts) and failed ones; task duration quantiles over the successful
                  attempts (``task_p25`` .. ``task_p99``, as above), ``task_max`` and ``skew`` = max / median
                  (Dr. Elephant's task skew); executor run time, GC time and ``gc_ratio``; memory and disk spill and
                  ``spill_ratio`` = memory spill / data processed (the largest of input, output, shuffle read and
                  write: Dr. Elephant's execution memory spill); the slowest shuffle fetch wait.  From the SparkTask
                  events, with the StageCompleted figures where the stage's completion is archived.
``spark_apps``    per application attempt (``app_id``, ``app_attempt``): name, user, start, end, duration; stage
                  attempts, retried stages, tasks and failed tasks; total task time, run time, GC time and ratio;
                  memory and disk spill; the worst stage skew; executors added and removed.

Why per application attempt: YARN re-runs a failed application's driver as a new attempt under the same App ID,
and each attempt numbers its stages from 0 again (one log per attempt, ``App Attempt ID`` in its
``SparkListenerApplicationStart``); keyed by App ID and stage alone, attempts 1-4 of one application summed their
tasks into one row.  The key is the collector's (``collectors.spark.events.stage_key``).

Skew, in the manner of Dr. Elephant's ``GenericSkewHeuristic`` (LinkedIn, Apache 2.0): the task durations of a job
are split in two groups by two rounds of 1-D two-means starting at the mean (``Statistics.findTwoGroups``: split at
the middle, move the middle to the average of the two group means, split again); the **deviation ratio** is the
larger group mean over the smaller.  Severity thresholds (Dr. Elephant's defaults):

====================  ======  ========  ======  ========
                      LOW     MODERATE  SEVERE  CRITICAL
====================  ======  ========  ======  ========
deviation ratio >=    2       4         8       16
group A tasks >=      10      50        100     200
====================  ======  ========  ======  ========

The severity is the lower of the two (Dr. Elephant's ``Severity.min``): a ratio of 9 is SEVERE only when the
short-task group A has at least 100 tasks -- few tasks are not worth an alarm.  (Dr. Elephant's code applies the
ratio thresholds to ``(larger - smaller) / smaller``, i.e. ratio - 1; ``DEVIATION_BASIS = "difference"`` selects that.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SEVERITIES = ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")
DEVIATION_LIMITS = (2.0, 4.0, 8.0, 16.0)
TASKS_LIMITS = (10, 50, 100, 200)
#: "ratio": larger / smaller (as specified for hcep); "difference": (larger - smaller) / smaller (Dr. Elephant's code).
DEVIATION_BASIS = "ratio"
QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
STRAGGLER_QUERIES = ("Q3", "SlowTask", "FetchWait")
IMBALANCE_QUERIES = ("Q5", "Q6")
TABLES = ("durations", "skew", "queued", "anomalies", "spark_stages", "spark_apps")
#: The attributes of the Spark events the Spark tables read (from the archive's ``attrs`` JSON).
SPARK_TASK_SCHEMA = (
    "app_id string, app_attempt string, stage_id long, stage_attempt long, executor_id string, host string, "
    "status string, duration double, run_time double, gc_time double, memory_spill long, disk_spill long, "
    "fetch_wait double"
)
SPARK_STAGE_SCHEMA = (
    "app_id string, app_attempt string, stage_id long, stage_attempt long, stage_name string, status string, "
    "duration double, num_tasks long, data_bytes long"
)
SPARK_APP_SCHEMA = "app_id string, app_attempt string, app_name string, user string, duration double"
#: An application attempt; a stage attempt within it.  ``app_attempt`` may be null (local and client mode): grouped
#: by these columns, joined on the non-null strings ``app_key`` / ``stage_key`` built from them (``_keyed``).
APP_KEY = ("app_id", "app_attempt")
STAGE_KEY = ("app_id", "app_attempt", "stage_id", "stage_attempt")


# ------------------------------------------------------------------------------------------------ skew (pure)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def two_groups(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Dr. Elephant's ``findTwoGroups``: (shorter group, longer group)."""
    middle = _mean(values)
    for _ in range(2):
        small = [v for v in values if v < middle]
        large = [v for v in values if v >= middle]
        middle = (_mean(small) + _mean(large)) / 2
    return [v for v in values if v < middle], [v for v in values if v >= middle]


def severity_ascending(value: float, limits: Sequence[float]) -> int:
    """0 (NONE) .. 4 (CRITICAL): how many of the ascending limits ``value`` reaches."""
    return sum(1 for limit in limits if value >= limit)


def skew(values: Sequence[float], basis: str = DEVIATION_BASIS) -> dict[str, Any]:
    """The skew verdict of one job's task durations (see the module doc)."""
    a, b = two_groups(values)
    mean_a, mean_b = _mean(a), _mean(b)
    low, high = min(mean_a, mean_b), max(mean_a, mean_b)
    if not a or not b:
        ratio = 1.0
    elif low <= 0:
        ratio = float("inf") if high > 0 else 1.0
    else:
        ratio = high / low
    deviation = ratio if basis == "ratio" else ratio - 1.0
    by_deviation = severity_ascending(deviation, DEVIATION_LIMITS)
    by_tasks = severity_ascending(len(a), TASKS_LIMITS)
    return {
        "tasks": len(values),
        "group_a_tasks": len(a),
        "group_a_mean": mean_a,
        "group_b_tasks": len(b),
        "group_b_mean": mean_b,
        "ratio": ratio,
        "deviation_severity": SEVERITIES[by_deviation],
        "tasks_severity": SEVERITIES[by_tasks],
        "severity": SEVERITIES[min(by_deviation, by_tasks)],
    }


SKEW_SCHEMA = (
    "job_id string, kind string, tasks long, group_a_tasks long, group_a_mean double, group_b_tasks long, "
    "group_b_mean double, ratio double, deviation_severity string, tasks_severity string, severity string"
)


def _skew_group(pdf: Any) -> Any:
    import pandas as pd

    row = skew([float(v) for v in pdf["period"]])
    return pd.DataFrame([{"job_id": pdf["job_id"].iloc[0], "kind": pdf["type"].iloc[0], **row}])


# ------------------------------------------------------------------------------------------------ Spark jobs


def read_archive(spark: SparkSession, root: str, kind: str) -> DataFrame | None:
    """The archive's events or matches table (None when the archive has none)."""
    base = Path(root) / kind
    if not base.is_dir() or not any(base.rglob("*.parquet")):
        return None
    return spark.read.option("basePath", str(base)).parquet(str(base))


def tasks_frame(events: DataFrame) -> DataFrame:
    """Finished tasks with their job's user and queue (``unknown`` when the JobStart is not archived)."""
    from pyspark.sql import functions as F

    tasks = events.where(F.col("type").isin("Mapper", "Reducer") & F.col("period").isNotNull()).select(
        "job_id", "task_id", "host", "type", "period"
    )
    jobs = (
        events.where(F.col("type") == "JobStart")
        .groupBy("job_id")
        .agg(F.first("user", ignorenulls=True).alias("user"), F.first("queue", ignorenulls=True).alias("queue"))
    )
    return tasks.join(jobs, "job_id", "left").fillna(
        {"user": "unknown", "queue": "unknown", "host": "unknown", "job_id": "unknown"}
    )


def durations(tasks: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    quantiles = F.percentile_approx("period", list(QUANTILES), 10_000)
    frames = []
    for level, column in (("job", "job_id"), ("queue", "queue"), ("user", "user"), ("host", "host")):
        agg = tasks.groupBy(F.col(column).alias("key"), F.col("type").alias("kind")).agg(
            F.count(F.lit(1)).alias("tasks"),
            F.avg("period").alias("mean"),
            F.min("period").alias("min"),
            quantiles.alias("q"),
            F.max("period").alias("max"),
        )
        cols: list[Any] = [F.lit(level).alias("level"), "key", "kind", "tasks", "mean", "min"]
        cols += [F.col("q")[i].alias(f"p{round(q * 100)}") for i, q in enumerate(QUANTILES)]
        frames.append(agg.select(*cols, "max"))
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def skew_table(tasks: DataFrame) -> DataFrame:
    return tasks.select("job_id", "type", "period").groupBy("job_id", "type").applyInPandas(_skew_group, SKEW_SCHEMA)


def queued(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    io = events.where((F.col("type") == "DataIO") & F.col("size").isNotNull())
    running = (
        Window.partitionBy("job_id")
        .orderBy("ts", "batch", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return io.select("job_id", "task_id", "ts", "size", F.sum("size").over(running).alias("queued"))


def anomalies(
    matches: DataFrame,
    bucket_seconds: float,
    straggler: Sequence[str] = STRAGGLER_QUERIES,
    imbalance: Sequence[str] = IMBALANCE_QUERIES,
) -> DataFrame:
    from pyspark.sql import functions as F

    kind = F.when(F.col("query").isin(list(straggler)), F.lit("straggler")).when(
        F.col("query").isin(list(imbalance)), F.lit("imbalance")
    )
    tagged = matches.select("query", "end", kind.alias("kind")).where(F.col("kind").isNotNull())
    bucket = (F.floor(F.col("end") / bucket_seconds) * bucket_seconds).cast("double")
    return tagged.groupBy(bucket.alias("bucket"), "kind", "query").agg(F.count(F.lit(1)).alias("count"))


def _attrs(events: DataFrame, etype: str, schema: str) -> DataFrame:
    """The events of one type with their attributes as typed columns (``ts`` kept)."""
    from pyspark.sql import functions as F

    return (
        events.where(F.col("type") == etype).select("ts", F.from_json("attrs", schema).alias("a")).select("ts", "a.*")
    )


def _keyed(frame: DataFrame) -> DataFrame:
    """``frame`` with ``app_key`` = ``<app_id>[_<app_attempt>]`` and, where it has stage columns, ``stage_key`` =
    ``<app_key>/<stage_id>/<stage_attempt>``: the collector's ``stage_key``, built here so that an archive's events
    need not carry it."""
    from pyspark.sql import functions as F

    out = frame.withColumn("app_key", F.concat_ws("_", F.col("app_id"), F.col("app_attempt")))
    if "stage_id" in frame.columns:
        parts = [F.col("app_key"), F.col("stage_id").cast("string"), F.col("stage_attempt").cast("string")]
        out = out.withColumn("stage_key", F.concat_ws("/", *parts))
    return out


def spark_stages(events: DataFrame) -> DataFrame | None:
    """Per application and stage attempt (see the module doc); None when the archive holds no SparkTask."""
    from pyspark.sql import functions as F

    tasks = _keyed(_attrs(events, "SparkTask", SPARK_TASK_SCHEMA))
    if tasks.limit(1).count() == 0:
        return None
    ok = F.col("status") == "SUCCEEDED"
    quantiles = F.percentile_approx(F.when(ok, F.col("duration")), list(QUANTILES), 10_000)
    agg = tasks.groupBy("stage_key", "app_key", *STAGE_KEY).agg(
        F.count(F.lit(1)).alias("tasks"),
        F.sum((F.col("status") == "FAILED").cast("long")).alias("failed_tasks"),
        quantiles.alias("q"),
        F.max(F.when(ok, F.col("duration"))).alias("task_max"),
        F.sum("duration").alias("task_time"),
        F.sum("run_time").alias("run_time"),
        F.sum("gc_time").alias("gc_time"),
        F.sum("memory_spill").alias("memory_spill"),
        F.sum("disk_spill").alias("disk_spill"),
        F.max("fetch_wait").alias("fetch_wait_max"),
        F.min(F.col("ts") - F.col("duration")).alias("first_launch"),
    )
    cols: list[Any] = ["stage_key", "app_key", *STAGE_KEY, "tasks", "failed_tasks"]
    cols += [F.col("q")[i].alias(f"task_p{round(q * 100)}") for i, q in enumerate(QUANTILES)]
    cols += [
        "task_max",
        "task_time",
        "run_time",
        "gc_time",
        "memory_spill",
        "disk_spill",
        "fetch_wait_max",
        "first_launch",
    ]
    agg = agg.select(*cols)
    done = (
        _keyed(_attrs(events, "StageCompleted", SPARK_STAGE_SCHEMA))
        .drop("app_key", *STAGE_KEY)
        .withColumnRenamed("ts", "completed")
        .dropDuplicates(["stage_key"])
    )
    out = agg.join(done, "stage_key", "left")
    return out.select(
        *STAGE_KEY,
        "stage_key",
        "stage_name",
        "status",
        "num_tasks",
        "tasks",
        "failed_tasks",
        "duration",
        "completed",
        *[f"task_p{round(q * 100)}" for q in QUANTILES],
        "task_max",
        (F.col("task_max") / F.col("task_p50")).alias("skew"),
        "task_time",
        "run_time",
        "gc_time",
        F.when(F.col("run_time") > 0, F.col("gc_time") / F.col("run_time")).alias("gc_ratio"),
        "memory_spill",
        "disk_spill",
        "data_bytes",
        F.when(F.col("data_bytes") > 0, F.col("memory_spill") / F.col("data_bytes")).alias("spill_ratio"),
        "fetch_wait_max",
    )


def spark_apps(events: DataFrame, stages: DataFrame) -> DataFrame:
    """Per application attempt (see the module doc), from its stages and its application and executor events."""
    from pyspark.sql import functions as F

    per_stage = (
        _keyed(stages)
        .groupBy("app_key", *APP_KEY)
        .agg(
            F.count(F.lit(1)).alias("stage_attempts"),
            F.sum((F.col("stage_attempt") > 0).cast("long")).alias("stage_retries"),
            F.sum("tasks").alias("tasks"),
            F.sum("failed_tasks").alias("failed_tasks"),
            F.sum("task_time").alias("task_time"),
            F.sum("run_time").alias("run_time"),
            F.sum("gc_time").alias("gc_time"),
            F.sum("memory_spill").alias("memory_spill"),
            F.sum("disk_spill").alias("disk_spill"),
            F.max("skew").alias("worst_skew"),
        )
    )
    starts = (
        _keyed(_attrs(events, "SparkAppStart", SPARK_APP_SCHEMA))
        .groupBy("app_key")
        .agg(
            F.min("ts").alias("start"),
            F.first("app_name", ignorenulls=True).alias("app_name"),
            F.first("user", ignorenulls=True).alias("user"),
        )
    )
    ends = _keyed(_attrs(events, "SparkAppEnd", SPARK_APP_SCHEMA)).groupBy("app_key").agg(F.max("ts").alias("end"))
    executors = (
        _keyed(
            events.where(F.col("type").isin("ExecutorAdded", "ExecutorRemoved")).select(
                "type",
                F.get_json_object("attrs", "$.app_id").alias("app_id"),
                F.get_json_object("attrs", "$.app_attempt").alias("app_attempt"),
            )
        )
        .groupBy("app_key")
        .agg(
            F.sum((F.col("type") == "ExecutorAdded").cast("long")).alias("executors_added"),
            F.sum((F.col("type") == "ExecutorRemoved").cast("long")).alias("executors_removed"),
        )
    )
    out = per_stage.join(starts, "app_key", "left").join(ends, "app_key", "left").join(executors, "app_key", "left")
    return out.select(
        *APP_KEY,
        "app_name",
        "user",
        "start",
        "end",
        (F.col("end") - F.col("start")).alias("duration"),
        "stage_attempts",
        "stage_retries",
        "tasks",
        "failed_tasks",
        "task_time",
        "run_time",
        "gc_time",
        F.when(F.col("run_time") > 0, F.col("gc_time") / F.col("run_time")).alias("gc_ratio"),
        "memory_spill",
        "disk_spill",
        "worst_skew",
        F.coalesce("executors_added", F.lit(0)).alias("executors_added"),
        F.coalesce("executors_removed", F.lit(0)).alias("executors_removed"),
    )


def history(
    spark: SparkSession,
    archive: str,
    out: str | None = None,
    *,
    bucket_seconds: float = 300.0,
    straggler: Sequence[str] = STRAGGLER_QUERIES,
    imbalance: Sequence[str] = IMBALANCE_QUERIES,
    matches: DataFrame | None = None,
) -> dict[str, DataFrame]:
    """Every table from the archive at ``archive`` (``matches`` overrides its match records); written to ``out``
    (one Parquet directory per table, replaced) when given."""
    events = read_archive(spark, archive, "events")
    if matches is None:
        matches = read_archive(spark, archive, "matches")
    tables: dict[str, DataFrame] = {}
    if events is not None:
        tasks = tasks_frame(events).persist()
        tables["durations"] = durations(tasks)
        tables["skew"] = skew_table(tasks)
        tables["queued"] = queued(events)
        stages = spark_stages(events)
        if stages is not None:
            stages = stages.persist()
            tables["spark_stages"] = stages
            tables["spark_apps"] = spark_apps(events, stages)
    if matches is not None:
        tables["anomalies"] = anomalies(matches, bucket_seconds, straggler, imbalance)
    if out is not None:
        for name, frame in tables.items():
            frame.write.mode("overwrite").parquet(str(Path(out) / name))
    return tables
