"""Regenerate the real Spark event logs under ``data/eventlogs/`` and their accounting in ``data/manifest.json``.

    PYTHONPATH=. .venv/bin/python tests/collectors/spark/make_fixtures.py

Each fixture is a genuine local PySpark application with ``spark.eventLog.enabled`` (one JVM, one SparkContext after
another): a plain single file, one file per codec (lz4, lzf, snappy, zstd), a rolling event-log directory (Spark 4's
default form: zstd, rolled at the 2 MiB minimum) and an ``.inprogress`` file copied while its application ran and
cut in the middle of its last line.  The manifest records what Spark itself counted (its status tracker: jobs,
stages, tasks by outcome) so the tests can check the collector against Spark, not against itself.  Runs in about a
minute; the logs differ from run to run (times, ids), the tests only rely on the manifest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
LOGS = DATA / "eventlogs"
ROOT = HERE.parents[2]

#: A block size far below Spark's 32k default, so each compressed fixture holds many blocks (and stays small).
SMALL_BLOCKS = {"spark.io.compression.lz4.blockSize": "4k", "spark.io.compression.snappy.blockSize": "4k"}


def _session(app_name: str, log_dir: Path, conf: dict[str, str], master: str = "local[2]") -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(log_dir))
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _drain(spark: Any) -> None:
    """Wait until the listener bus has handed every event to the event-log writer."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(30_000)


def accounting(spark: Any, group: str) -> dict[str, Any]:
    """What Spark's status tracker counted for the jobs of ``group`` (``planted.accounting``), keyed by strings as
    the manifest stores them."""
    from tests.collectors.spark.planted import accounting as counted_by_spark

    counted = counted_by_spark(spark, group)
    return {part: {str(key): value for key, value in counted[part].items()} for part in ("jobs", "stages")}


# ------------------------------------------------------------------------------------------------------- the jobs
def skewed_groupby(spark: Any) -> None:
    """A groupBy whose key 0 holds 90 % of the rows (RDD API: no map-side combine, so the skew reaches the shuffle)."""
    rdd = spark.sparkContext.parallelize(range(20_000), 4).map(lambda i: (0 if i % 10 else i % 37, i))
    rdd.groupByKey(4).mapValues(lambda vs: sum(1 for _ in vs)).collect()


def retried_task(spark: Any) -> None:
    """One task fails on its first attempt and succeeds on the second (master local[2,2] allows one retry)."""

    def flaky(index: int, it: Any) -> Any:
        from pyspark import TaskContext

        if index == 1 and TaskContext.get().attemptNumber() == 0:
            raise RuntimeError("planted failure on the first attempt")
        return it

    spark.sparkContext.parallelize(range(100), 4).mapPartitionsWithIndex(flaky).count()


def failing_job(spark: Any) -> None:
    """A job whose task fails on every attempt: JobFailed, a failed stage with its reason."""

    def broken(index: int, it: Any) -> Any:
        if index == 0:
            raise ValueError("planted permanent failure")
        return it

    with contextlib.suppress(Exception):  # the failure is the point
        spark.sparkContext.parallelize(range(10), 2).mapPartitionsWithIndex(broken).count()


def sql_aggregation(spark: Any, partitions: int = 4) -> None:
    spark.range(0, 20_000, numPartitions=partitions).selectExpr("id % 7 AS k", "id AS v").groupBy("k").sum(
        "v"
    ).collect()


# ---------------------------------------------------------------------------------------------------- the fixtures
def _run_app(name: str, conf: dict[str, str], jobs: list[Any], master: str = "local[2]") -> dict[str, Any]:
    """Run one application into a scratch dir, move its log into LOGS, return its manifest entry."""
    with tempfile.TemporaryDirectory() as scratch:
        spark = _session(name, Path(scratch), conf, master)
        app_id = spark.sparkContext.applicationId
        spark.sparkContext.setJobGroup(name, name)
        for job in jobs:
            job(spark)
        _drain(spark)
        counted = accounting(spark, name)
        spark.stop()
        (entry,) = os.listdir(scratch)
        shutil.move(os.path.join(scratch, entry), LOGS / entry)
    return {"name": name, "app_id": app_id, "path": entry, **counted}


def _run_inprogress() -> dict[str, Any]:
    """Copy a plain single-file log while its application runs, cut inside its last line, keep only the copy."""
    with tempfile.TemporaryDirectory() as scratch:
        spark = _session(
            "inprogress", Path(scratch), {"spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"}
        )
        app_id = spark.sparkContext.applicationId
        spark.sparkContext.setJobGroup("inprogress", "inprogress")
        sql_aggregation(spark)
        _drain(spark)
        counted = accounting(spark, "inprogress")
        (entry,) = os.listdir(scratch)
        assert entry.endswith(".inprogress"), entry
        data = (Path(scratch) / entry).read_bytes()
        spark.stop()
    last = data.rstrip(b"\n").rfind(b"\n") + 1  # start of the last complete line
    cut = last + (len(data) - last) // 2
    (LOGS / entry).write_bytes(data[:cut])
    return {
        "name": "inprogress",
        "app_id": app_id,
        "path": entry,
        "cut_line": data[:cut].count(b"\n") + 1,
        "cut_event": json.loads(data[last:].decode())["Event"],
        **counted,
    }


def main() -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if LOGS.exists():
        shutil.rmtree(LOGS)
    LOGS.mkdir(parents=True)
    single = {"spark.eventLog.rolling.enabled": "false"}
    started = time.monotonic()
    manifest: list[dict[str, Any]] = []
    manifest.append(
        _run_app(
            "plain",
            {**single, "spark.eventLog.compress": "false"},
            [skewed_groupby, retried_task, failing_job],
            master="local[2,2]",
        )
    )
    for codec in ("lz4", "lzf", "snappy", "zstd"):
        conf = {**single, **SMALL_BLOCKS, "spark.eventLog.compress": "true", "spark.eventLog.compression.codec": codec}
        manifest.append(_run_app(codec, conf, [sql_aggregation, skewed_groupby]))
    rolling = {
        "spark.eventLog.rolling.enabled": "true",
        "spark.eventLog.rolling.maxFileSize": "2m",
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
    }
    manifest.append(_run_app("rolling", rolling, [lambda s: sql_aggregation(s, 300)] * 2))
    manifest.append(_run_inprogress())
    for entry in manifest:
        entry["spark_version"] = __import__("pyspark").__version__
    (DATA / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(manifest)} event logs to {LOGS} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
