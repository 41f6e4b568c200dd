"""The live demo's Spark application: a small real PySpark application (``local[2]``, event logging on) with two
planted problems the Spark pack finds at its production gates, run next to the simulated Hadoop cluster.

    python -m app.demo.spark_app --log-dir DIR [--every S] [--rounds N] [--scale X]

Each round, under job groups of its own:

1. **spill**, alone (it needs the heap): a window aggregation over whole partitions with the window buffer's spill
   thresholds set low (for this query only): well over a GiB of execution memory spilled against a few MiB of
   shuffle input -- StageSpill when the stage completes, about a minute in;
2. **skew** (in a thread of its own, beside the clean job): a groupBy whose key 0 holds 95 % of the rows; each value
   costs a little *sleep* (no CPU: the demo shares two cores), so the hot key's reduce task runs about 2.7 minutes
   while the other seven take a second or two -- TaskStraggler when that task ends and StageSkew when the stage
   completes, about four minutes in;
3. **clean**: even tasks, for contrast (nothing to find).

Then it waits ``--every`` seconds and runs another round (the demo's showcase period), until SIGTERM or SIGINT, which
stop the SparkContext so the event log is finished (Spark drops ``.inprogress`` from its name).  ``--scale`` shrinks
the sizes and the sleep for a quick try.  Everything binds to 127.0.0.1; the UI is off.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Any

#: Rows of the skewed groupBy (95 % on key 0) and the sleep per value: 190,000 x 0.85 ms ~ 2.7 minutes for the hot
#: task, past the pack's gates (a task of 2.5 minutes, 2 minutes over the median).
SKEW_ROWS = 200_000
SLEEP_PER_VALUE = 0.00085
#: Rows of the spilling window aggregation (two window partitions over four input partitions): 300,000 spilled
#: 1.24 GB of execution memory here (linear in the rows), past the pack's 1 GiB gate; 400,000 ran out of a 768 MiB
#: heap, and 320,000 out of 1 GiB while the skewed job ran beside it: the spill runs first, alone, on 1.5 GiB.
SPILL_ROWS = 300_000


def session(log_dir: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("hcep-demo-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1536m")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir)
        .config("spark.eventLog.rolling.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spill(spark: Any, rows: int) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ("spark.sql.windowExec.buffer.in.memory.threshold", "spark.sql.windowExec.buffer.spill.threshold")
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        spark.conf.set(keys[0], "500")
        spark.conf.set(keys[1], "2000")
        df = spark.range(0, rows, numPartitions=4).selectExpr("id % 2 AS k", "id AS v")
        df.withColumn("m", F.max("v").over(Window.partitionBy("k"))).agg(F.sum("m")).collect()
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def skew(spark: Any, rows: int, per_value: float) -> None:
    def slow(values: Any) -> int:
        items = list(values)
        time.sleep(len(items) * per_value)
        return len(items)

    rdd = spark.sparkContext.parallelize(range(rows), 4).map(lambda i: (0 if i % 20 else i % 97, i))
    rdd.groupByKey(8).mapValues(slow).collect()


def clean(spark: Any) -> None:
    def even(index: int, it: Any) -> Any:
        time.sleep(1.0)
        return it

    spark.sparkContext.parallelize(range(800), 8).mapPartitionsWithIndex(even).count()


def _job(spark: Any, group: str, job: Any, stop: threading.Event) -> None:
    sc = spark.sparkContext
    if stop.is_set():
        return
    sc.setJobGroup(group, f"hcep demo: {group}")  # a local property of this (pinned) thread
    try:
        job()
    except Exception:  # a job cancelled by the stop signal; anything else is a real failure
        if not stop.is_set():
            raise
        return
    finally:
        sc.setJobGroup("", "")
    print(f"spark_app: {group} done", flush=True)


def run_round(spark: Any, scale: float, stop: threading.Event) -> None:
    """One round: the spilling job alone, then the skewed job in a thread beside the clean one (local[2]: the hot
    task holds one core, sleeping, while the other runs the rest)."""
    failed: list[BaseException] = []
    _job(spark, "demo-spill", lambda: spill(spark, max(int(SPILL_ROWS * scale), 1000)), stop)

    def skewed() -> None:
        try:
            _job(
                spark,
                "demo-skew",
                lambda: skew(spark, max(int(SKEW_ROWS * scale), 1000), SLEEP_PER_VALUE * scale),
                stop,
            )
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
            failed.append(err)

    thread = threading.Thread(target=skewed, name="demo-skew", daemon=True)
    thread.start()
    _job(spark, "demo-clean", lambda: clean(spark), stop)
    while thread.is_alive():
        thread.join(0.5)
    if failed:
        raise failed[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.demo.spark_app", description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", required=True, help="spark.eventLog.dir (created if missing)")
    parser.add_argument("--every", type=float, default=600.0, help="seconds between rounds (600)")
    parser.add_argument("--rounds", type=int, default=0, help="stop after N rounds (0: until SIGTERM)")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink rows and sleep (1.0)")
    args = parser.parse_args(argv)
    os.makedirs(args.log_dir, exist_ok=True)
    stop = threading.Event()
    spark = session(args.log_dir)

    def on_signal(*_: Any) -> None:
        # The main thread is inside a py4j call (a job's collect): cancel from another thread, so that the job
        # fails at once and the context stops cleanly, finishing the event log.
        stop.set()
        threading.Thread(target=spark.sparkContext.cancelAllJobs, daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    print(f"spark_app: {spark.sparkContext.applicationId} logging to {args.log_dir}", flush=True)
    done = 0
    try:
        while not stop.is_set():
            run_round(spark, args.scale, stop)
            done += 1
            if args.rounds and done >= args.rounds:
                break
            stop.wait(args.every)
    finally:
        spark.stop()  # finishes the event log (drops .inprogress)
    print(f"spark_app: stopped after {done} round(s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
