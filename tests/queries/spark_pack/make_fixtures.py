"""Regenerate the Spark pack's real event logs (``data/eventlogs/``) and what Spark counted (``data/manifest.json``).

    PYTHONPATH=. .venv/bin/python tests/queries/spark_pack/make_fixtures.py

Two genuine PySpark applications with ``spark.eventLog.enabled`` (Spark's default zstd codec, single files):

- ``local``: ``local[2]``, the planted problems of a local job (a skewed groupBy, one slowed task, a spilling window
  aggregation) and a clean job;
- ``cluster``: ``local-cluster[2,1,1024]`` (two executor JVMs of 512 MiB), a heap-filling ``collect_list`` (GC
  pressure), a shuffle fetch from a frozen executor, a clean job and an executor killed during a stage.

The jobs are in ``planted.py``.

The manifest records, per job group, the jobs and stages Spark's status tracker counted, so the tests can say which
stages an alert must (and must not) name without trusting the collector.  Runs in about three minutes.
"""

from __future__ import annotations

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
ROOT = HERE.parents[1]


def _session(app_name: str, log_dir: Path, master: str, conf: dict[str, str]) -> Any:
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
        .config("spark.eventLog.rolling.enabled", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _run(name: str, master: str, conf: dict[str, str], jobs: list[tuple[str, Any]]) -> dict[str, Any]:
    from tests.queries.spark_pack import planted

    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch) / "logs"
        logs.mkdir()
        spark = _session(f"hcep-pack-{name}", logs, master, conf)
        app_id = spark.sparkContext.applicationId
        groups: dict[str, Any] = {}
        for group, job in jobs:
            job(spark, group, Path(scratch))
            planted.drain(spark)
            groups[group] = planted.accounting(spark, group)
        spark.stop()
        (entry,) = os.listdir(logs)
        shutil.move(str(logs / entry), LOGS / entry)
    return {"name": name, "app_id": app_id, "path": entry, "master": master, "groups": groups}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    from tests.queries.spark_pack import planted

    if LOGS.exists():
        shutil.rmtree(LOGS)
    LOGS.mkdir(parents=True)
    started = time.monotonic()
    local = [
        ("skew", lambda s, g, _: planted.skewed_groupby(s, g)),
        ("slow", lambda s, g, _: planted.slow_task(s, g)),
        ("spill", lambda s, g, _: planted.spilling_window(s, g)),
        ("clean", lambda s, g, _: planted.clean_job(s, g)),
    ]
    cluster = [
        ("gc", lambda s, g, _: planted.gc_pressure(s, g)),
        ("stall", lambda s, g, _: planted.fetch_stall(s, g)),
        ("clean", lambda s, g, _: planted.clean_job(s, g)),
        ("lost", lambda s, g, scratch: planted.lost_executor(s, g, scratch / "executor-killed")),
    ]
    manifest = [
        _run("local", "local[2]", {}, local),
        _run(
            "cluster",
            "local-cluster[2,1,1024]",
            {"spark.executor.memory": "512m", "spark.shuffle.readHostLocalDisk": "false"},
            cluster,
        ),
    ]
    for entry in manifest:
        entry["spark_version"] = __import__("pyspark").__version__
    (DATA / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(manifest)} event logs to {LOGS} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
