"""A Spark application that loses an executor mid-stage, for the live collector test (run as its own process: the
test run's shared session is local mode, where the only executor is the driver and cannot be lost).

    python lost_executor_app.py EVENT_LOG_DIR ACCOUNTING_JSON

Master ``local-cluster[2,1,1024]``: a standalone master and worker inside this driver's JVM and two executor JVMs.
A shuffle's reduce task kills its own executor's JVM (SIGKILL, found by walking up from its Python worker): the
task fails with ExecutorLostFailure, the map output on that executor is gone, so the map stage runs again, and the
worker starts a new executor.  The job still succeeds.  Spark's own accounting (status tracker) goes to
ACCOUNTING_JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def executor_jvm(pid: int) -> int | None:
    """The executor JVM above ``pid`` (a Python worker, forked by pyspark's daemon, a child of the executor)."""
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


def main(log_dir: str, accounting_path: str) -> int:
    sys.path.insert(0, str(ROOT))
    from pyspark import TaskContext
    from pyspark.sql import SparkSession

    from tests.collectors.spark.planted import accounting, drain

    marker = Path(log_dir).parent / "executor-killed"
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("hcep-lost-executor")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir)
        .config("spark.eventLog.rolling.enabled", "false")
        .config("spark.executor.memory", "512m")
        .getOrCreate()
    )
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")

    def kill_once(index: int, it: Any) -> Any:
        ctx = TaskContext.get()
        if index == 0 and ctx.attemptNumber() == 0 and not marker.exists():
            marker.write_text(str(os.getpid()))
            jvm = executor_jvm(os.getpid())
            if jvm is not None:
                os.kill(jvm, signal.SIGKILL)
        return it

    sc.setJobGroup("lost-executor", "planted: an executor lost during a stage")
    total = (
        sc.parallelize(range(4000), 4)
        .map(lambda i: (i % 8, i))
        .reduceByKey(lambda a, b: a + b, 4)
        .mapPartitionsWithIndex(kill_once)
        .count()
    )
    drain(spark)
    counted = accounting(spark, "lost-executor")
    counted["app_id"] = sc.applicationId
    counted["result"] = total
    counted["killed"] = marker.exists()
    Path(accounting_path).write_text(json.dumps(counted, indent=1))
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(sys.argv[1], sys.argv[2]))
