"""The one place a SparkSession is built: local[N] by default, any master URL on request.

Why one builder: every command and test must get the same settings (loopback only, no UI, small memory, quiet logs,
Arrow on) and, within one process, the same session -- a JVM start costs about 12 s here, so a test run shares one.
"""

from __future__ import annotations

import os
import sys
import tempfile
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


#: What remote executors unpack the project into (Spark names an archive's directory after its file) and put on
#: their Python workers' ``PYTHONPATH`` (relative: the workers run in the executor's working directory).
PROJECT_ARCHIVE = "hcep-project.tgz"
#: The compiled hot path beside the packages (``contracts.compiled``), shipped with them.
COMPILED_DIR = ".hcep-compiled"


def _project_archive() -> str:
    """The project's packages for remote executors, with the compiled hot path (``deploy/compile_engine.py``) beside
    them as in the tree: an executor whose Python and sources match the build's manifest runs it compiled, as the
    driver does; any other runs the same code pure (``contracts.compiled``).  A zip on ``sys.path`` (``addPyFile``)
    cannot hold extension modules, so the executors unpack this archive instead (``addArchive``)."""
    import atexit
    import shutil
    import tarfile

    workdir = tempfile.mkdtemp(prefix="hcep-")
    atexit.register(shutil.rmtree, workdir, True)  # the driver serves it to executors until the process ends
    path = Path(workdir) / PROJECT_ARCHIVE

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in Path(info.name).parts else info

    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for part in (*SHIPPED_PACKAGES, COMPILED_DIR):
            if (PROJECT_ROOT / part).is_dir():
                tar.add(PROJECT_ROOT / part, arcname=part, filter=keep)
    return str(path)


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
    ``yarn``, ``k8s://``) gets the project's packages shipped as an archive (``PROJECT_ARCHIVE``), and the driver
    host is left to Spark (remote executors cannot connect back to a loopback address).  When a session already
    exists it is returned as is.
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
    if not local:  # the project, unpacked from PROJECT_ARCHIVE (added below), on the executors' Python path
        builder = builder.config("spark.executorEnv.PYTHONPATH", PROJECT_ARCHIVE)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if not local:
        spark.sparkContext.addArchive(_project_archive())
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
