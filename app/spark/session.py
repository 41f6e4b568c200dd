"""The one place a SparkSession is built: local[N] by default, any master URL on request.

Why one builder: every command and test must get the same settings (loopback only, no UI, small memory, quiet logs,
Arrow on) and, within one process, the same session -- a JVM start costs about 12 s here, so a test run shares one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.spark import worker_daemon

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Environment variable naming the default master (else ``local[N]`` with N = the CPU count, at most 4).
MASTER_ENV = "HCEP_SPARK_MASTER"
LOOPBACK = "127.0.0.1"
#: The packages the executors import (the engine runs inside them).
SHIPPED_PACKAGES = ("engine", "app", "collectors", "contracts", "queries")
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def default_master() -> str:
    """``$HCEP_SPARK_MASTER`` or ``local[N]`` (N = CPUs, capped at 4 to stay a good neighbour)."""
    return os.environ.get(MASTER_ENV) or f"local[{min(os.cpu_count() or 2, 4)}]"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def local_cores(master: str) -> int:
    """Cores of a ``local[N]`` master (``local[*]``: the CPU count); 2 for anything else."""
    if master.startswith("local[") and master.endswith("]"):
        inner = master[6:-1].split(",")[0]
        if inner == "*":
            return os.cpu_count() or 2
        if inner.isdigit():
            return max(int(inner), 1)
    return 1 if master == "local" else 2


def _python_path() -> None:
    """Local executors are child processes of this one: give them the project on PYTHONPATH (pytest's ``pythonpath``
    only changes ``sys.path``, which children do not inherit)."""
    root = str(PROJECT_ROOT)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def _project_zip() -> str:
    """The project's packages as one zip for remote executors (``addPyFile``)."""
    fd, path = tempfile.mkstemp(prefix="hcep-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in SHIPPED_PACKAGES:
            base = PROJECT_ROOT / package
            if not base.is_dir():
                continue
            for file in base.rglob("*"):
                if file.is_file() and "__pycache__" not in file.parts:
                    zf.write(file, file.relative_to(PROJECT_ROOT))
    return path


def build_session(
    master: str | None = None,
    *,
    app_name: str = "hcep",
    driver_memory: str = "1g",
    shuffle_partitions: int | None = None,
    ui: bool = False,
    log_level: str = "ERROR",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Get or create the process's SparkSession.

    Local masters bind the driver to 127.0.0.1 and keep the UI off unless ``ui``; a remote master (``spark://``,
    ``yarn``, ``k8s://``) gets the project's packages shipped as a zip, and the driver host is left to Spark (remote
    executors cannot connect back to a loopback address).  When a session already exists it is returned as is.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = master or default_master()
    local = is_local(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK  # the UI (when on) binds to it as well
        _python_path()
    cores = local_cores(master)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2 * cores, 2)))
        .config("spark.default.parallelism", str(max(2 * cores, 2)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.adaptive.enabled", "true")
    )
    if local:
        builder = builder.config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK)
    if worker_daemon.enabled(local):  # the workers' imports done once, before the fork (HCEP_SPARK_DAEMON=0: off)
        builder = builder.config("spark.python.daemon.module", worker_daemon.MODULE)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if not local:
        spark.sparkContext.addPyFile(_project_zip())
    return spark


@contextmanager
def spark_session(master: str | None = None, **options: Any) -> Iterator[SparkSession]:
    """A session for one command: stopped at the end only if this call created it (a test's shared session stays)."""
    from pyspark.sql import SparkSession

    existed = SparkSession.getActiveSession() is not None
    spark = build_session(master, **options)
    try:
        yield spark
    finally:
        if not existed:
            spark.stop()
