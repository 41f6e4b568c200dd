"""The Python workers' daemon (:mod:`app.spark.worker_daemon`, issue 28 cut 5): the workers Spark forks come from it
with the modules already imported, give the same results, and a daemon whose imports fail still serves."""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.spark import worker_daemon

ROOT = Path(__file__).resolve().parents[3]
#: No test here depends on the machine's speed: these are only bounds for a hung daemon.
DEADLINE_S = 300.0


def _probe(frames: Iterator[Any]) -> Iterator[Any]:
    """``mapInPandas`` body: what the worker process found on arrival, and the sum of its ids (the result)."""
    import gc

    import pandas as pd
    import pyspark

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    facts = {
        "ppid": os.getppid(),
        "marker": os.environ.get("HCEP_WORKER_DAEMON", ""),
        "state_loaded": "app.spark.stream.state" in sys.modules,
        "frozen": gc.get_freeze_count(),
        "main": getattr(spec, "name", "") or "",
        "pyspark": pyspark.__file__ or "",
    }
    total = 0
    for frame in frames:
        total += int(frame["id"].sum())
    yield pd.DataFrame([{**facts, "total": total}])


@pytest.mark.spark
def test_the_workers_come_from_the_preloading_daemon(spark: Any) -> None:
    """Every task's worker was forked by this project's daemon (its parent set the marker), found the stream's state
    module and the frozen imports already there, and summed its partition right."""
    if not worker_daemon.enabled(True):
        pytest.skip(f"{worker_daemon.ENV}=0: PySpark's own daemon (the escape hatch)")
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == worker_daemon.MODULE
    schema = "ppid long, marker string, state_loaded boolean, frozen long, main string, pyspark string, total long"
    rows = spark.range(0, 10_000, numPartitions=4).mapInPandas(_probe, schema).collect()
    assert len(rows) == 4
    assert sum(r["total"] for r in rows) == sum(range(10_000))
    for r in rows:
        assert r["main"] == worker_daemon.MODULE, r
        assert r["marker"].startswith(f"pid={r['ppid']} "), r  # set by the process that forked this worker
        assert r["marker"].endswith("failed="), r  # nothing failed to preload
        loaded = int(r["marker"].split("loaded=")[1].split()[0])
        assert loaded == len(worker_daemon.PRELOAD), r
        assert r["state_loaded"], r
        assert r["frozen"] > 0, r
        assert " pyspark=installed " in r["marker"] and ".zip" not in r["pyspark"], r  # the bytecode-cached copy


def test_enabled_follows_the_env_and_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(worker_daemon.ENV, raising=False)
    assert worker_daemon.enabled(True) and not worker_daemon.enabled(False)
    monkeypatch.setenv(worker_daemon.ENV, "0")
    assert not worker_daemon.enabled(True)
    monkeypatch.setenv(worker_daemon.ENV, "1")
    assert worker_daemon.enabled(False)


def test_pyspark_zip_is_dropped_only_for_the_installed_packages_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, other = tmp_path / "site", tmp_path / "other"
    for base in (site, other):
        lib = base / "pyspark" / "python" / "lib"
        lib.mkdir(parents=True)
        (base / "pyspark" / "__init__.py").write_text("")
        (lib / "pyspark.zip").write_bytes(b"")
    own = str(site / "pyspark" / "python" / "lib" / "pyspark.zip")
    foreign = str(other / "pyspark" / "python" / "lib" / "pyspark.zip")  # its package's parent is not on the path
    monkeypatch.delitem(sys.modules, "pyspark", raising=False)
    monkeypatch.setattr(sys, "path", [own, foreign, str(tmp_path / "pyspark.zip"), str(site)])
    assert worker_daemon.prefer_installed_pyspark()
    assert sys.path == [foreign, str(tmp_path / "pyspark.zip"), str(site)]
    assert not worker_daemon.prefer_installed_pyspark()
    monkeypatch.setattr(sys, "path", [own, str(site)])
    monkeypatch.setitem(sys.modules, "pyspark", sys)  # already imported: too late to choose
    assert not worker_daemon.prefer_installed_pyspark() and sys.path == [own, str(site)]


def _read_exactly(stream: Any, n: int, what: str) -> bytes:
    fd = stream.fileno()
    ready, _, _ = select.select([fd], [], [], DEADLINE_S)
    assert ready, f"no {what} from the daemon within {DEADLINE_S} s"
    data: bytes = stream.read(n)
    assert len(data) == n, f"{what}: {data!r}"
    return data


def test_a_daemon_whose_imports_fail_still_serves(tmp_path: Path) -> None:
    """Planted modules: ``orjson`` raises (so do the project's modules that import it), another prints to standard
    output (the daemon's pipe to the JVM) and raises.  The daemon still reports its port, forks a worker that
    authenticates as PySpark's does, and names what it skipped on standard error."""
    pytest.importorskip("pyspark")
    (tmp_path / "orjson.py").write_text('raise RuntimeError("planted orjson failure")\n')
    (tmp_path / "hcep_planted_noise.py").write_text(
        'import os\nprint("noise on stdout")\nos.write(1, b"raw noise on fd 1")\nraise ImportError("planted")\n'
    )
    code = (
        "import sys; sys.argv = ['daemon', 'pyspark.worker']; import app.spark.worker_daemon as d; "
        "d.PRELOAD += ('hcep_planted_noise',); d.main()"
    )
    secret = b"planted-secret"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
        PYTHON_WORKER_FACTORY_SECRET=secret.decode(),
    )
    env.pop("PYTHON_UNIX_DOMAIN_ENABLED", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        (port,) = struct.unpack("!i", _read_exactly(proc.stdout, 4, "port"))
        assert 0 < port < 65536, port
        with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as sock:
            conn = sock.makefile("rwb")
            (pid,) = struct.unpack("!i", conn.read(4))  # the forked worker's pid
            assert pid > 0 and pid != proc.pid
            conn.write(struct.pack("!i", len(secret)) + secret)
            conn.flush()
            (n,) = struct.unpack("!i", conn.read(4))
            assert conn.read(n) == b"ok"  # PySpark's worker loop, in a child of the daemon
        _, err = proc.communicate(timeout=DEADLINE_S)  # closes its stdin: the JVM's way of stopping the daemon
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode(errors="replace")
    assert "orjson not preloaded (RuntimeError: planted orjson failure)" in text
    assert "hcep_planted_noise not preloaded (ImportError: planted)" in text
    assert "noise on stdout" in text and "raw noise on fd 1" in text  # sent to stderr, not into the port
    assert "pandas not preloaded" not in text
