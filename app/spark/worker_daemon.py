"""PySpark's worker daemon with the Python workers' imports done once, before any fork (issue 28, cut 5).

Why: on Linux the JVM starts ``python -m <spark.python.daemon.module> pyspark.worker`` once per executor and that
daemon forks every Python worker; :mod:`pyspark.daemon` imports almost nothing, so each forked worker imported
PySpark (from ``pyspark.zip``: no bytecode cache), pandas, pyarrow and the engine itself -- about 1 CPU-s a worker,
15-18 % of the workers' samples in a short ``hcep stream`` run, all of it on the first micro-batch.  Imported here,
the workers inherit the modules already loaded (copy-on-write pages), and :func:`gc.freeze` keeps them out of the
full collection PySpark's daemon runs after every task.  Spark starts one daemon per kind of Python runner (here two:
the router's ``mapInPandas`` and the stateful operator), so the daemon's own imports count twice: PySpark comes from
the installed package when ``pyspark.zip`` is that package's own copy (:func:`prefer_installed_pyspark`).

Only imports happen here: no SparkSession, no py4j gateway, no socket, no thread of ours (pandas/pyarrow start
native threads -- OpenBLAS's pool, Arrow's jemalloc background thread -- which both shut down or reset around
``fork`` through their own ``pthread_atfork`` handlers).  A module that fails to import is skipped: the worker
imports it itself as it always did, and the daemon is :func:`pyspark.daemon.manager` whatever happened before.

``HCEP_SPARK_DAEMON=0`` turns it off (PySpark's own daemon, the escape hatch); ``=1`` turns it on for a remote
master too (its executors' Python must import this project).  The daemon tells its workers what it did in
``$HCEP_WORKER_DAEMON`` (read by the tests).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from pathlib import Path

#: The module the JVM starts instead of ``pyspark.daemon`` (``spark.python.daemon.module``).
MODULE = "app.spark.worker_daemon"
#: ``0``: PySpark's own daemon; ``1``: this one even for a remote master; unset: this one for local masters.
ENV = "HCEP_SPARK_DAEMON"
#: Set by the daemon for its workers: ``pid=<daemon pid> pyspark=installed|path loaded=<n> failed=<module,...>``.
MARKER_ENV = "HCEP_WORKER_DAEMON"
#: What the workers of ``hcep stream`` and ``hcep batch`` import anyway (PySpark's worker and Arrow serializers, the
#: stateful processor's API, the engine and the modules the pickled functions name), in import order.
PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.streaming.stateful_processor",
    "pyspark.sql.streaming.stateful_processor_api_client",
    "pyspark.sql.streaming.stateful_processor_util",
    "pyspark.sql.streaming.value_state_client",
    "pyspark.sql.streaming.map_state_client",
    "pyspark.sql.streaming.proto.StateMessage_pb2",  # protobuf: the state API's messages
    "pandas",
    "pyarrow",
    "orjson",
    "engine",
    "engine.events",
    "engine.evaluate",
    "app.spark.events",
    "app.spark.batch_run",
    "app.spark.batch",
    "app.spark.stream.state",
    "app.spark.stream.source",
)


def enabled(local: bool) -> bool:
    """Whether a session should name this daemon: ``$HCEP_SPARK_DAEMON`` if set, else only for a local master
    (a remote executor's Python finds the project only once a task has added the shipped zip to its path)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    return local


def prefer_installed_pyspark() -> bool:
    """Take ``<pkg>/python/lib/pyspark.zip`` (the JVM puts it first on ``PYTHONPATH``) off ``sys.path`` when it is the
    zip inside the very ``pyspark`` package ``<pkg>`` that ``sys.path`` also holds: the same files, but zipimport keeps
    no bytecode cache, so every process compiled PySpark again (0.4-0.5 CPU-s here).  Anything else stays."""
    if "pyspark" in sys.modules:
        return False
    on_path = {os.path.realpath(p) for p in sys.path if p}
    dropped = False
    for entry in list(sys.path):
        if os.path.basename(entry) != "pyspark.zip":
            continue
        package = Path(entry).resolve().parents[2]  # <pkg>/python/lib/pyspark.zip -> <pkg>
        if package.name == "pyspark" and (package / "__init__.py").is_file() and str(package.parent) in on_path:
            sys.path.remove(entry)
            dropped = True
    return dropped


def preload(modules: tuple[str, ...] | None = None) -> tuple[list[str], list[str]]:
    """Import ``modules`` (:data:`PRELOAD`) one by one, never raising: (imported, failed).  Standard output is the
    daemon's pipe to the JVM (it reads the port from it), so anything an import prints goes to standard error."""
    loaded: list[str] = []
    failed: list[str] = []
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        for name in PRELOAD if modules is None else modules:
            try:
                importlib.import_module(name)
            except BaseException as exc:  # noqa: BLE001 - a worker must still start, whatever an import does
                if isinstance(exc, KeyboardInterrupt):
                    raise
                failed.append(name)
                print(f"hcep worker daemon: {name} not preloaded ({type(exc).__name__}: {exc})", file=sys.stderr)
            else:
                loaded.append(name)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    return loaded, failed


def main() -> None:
    """Preload, freeze what was loaded out of the garbage collector's walks, then serve as PySpark's daemon."""
    gc.disable()  # no collection while importing: fewer freed holes in the pages the workers share
    try:
        source = "installed" if prefer_installed_pyspark() else "path"
        loaded, failed = preload()
        os.environ[MARKER_ENV] = f"pid={os.getpid()} pyspark={source} loaded={len(loaded)} failed={','.join(failed)}"
    except Exception as exc:  # noqa: BLE001 - e.g. no file descriptor left: serve unloaded
        print(f"hcep worker daemon: nothing preloaded ({type(exc).__name__}: {exc})", file=sys.stderr)
    finally:
        gc.freeze()
        gc.enable()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
