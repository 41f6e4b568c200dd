"""``hcep run --workers N``: one command, N members of the group, a crashed member restarted (app/workers.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from app.processes import descendants
from app.workers import run_workers, worker_argv
from tests.pipeline.conftest import Broker, Receiver, holds, run_command, start_service, wait_until
from tests.pipeline.test_pipeline import _ensure, publish_in_chunks
from tests.pipeline.workload import PACK, expected_keys, hadoop_and_ganglia


def _two_free_ports() -> int:
    """A port P with P + 1 free as well (worker k serves its metrics on P + k)."""
    for _ in range(100):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise RuntimeError("no two consecutive free ports")


def _is_worker(pid: int) -> bool:
    try:
        return b"app.commands.run" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone
        return False


def _workers(parent: subprocess.Popen) -> list[int]:
    """The worker processes of a ``--workers`` command (setpriv execs the worker in the process it runs in)."""
    return [pid for pid in descendants(parent.pid) if _is_worker(pid)]


def test_workers_share_the_group_and_a_crashed_one_is_restarted(
    kafka_broker: Broker, receiver: Receiver, prefix: str, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap
    hadoop, ganglia = hadoop_and_ganglia(jobs=8, seed=45)
    expected = expected_keys(PACK, hadoop + ganglia)
    _ensure(bootstrap, prefix)
    port = _two_free_ports()
    cmd = run_command(
        bootstrap,
        PACK,
        tmp_path / "data",
        prefix=prefix,
        instance="w",
        webhook=receiver.url,
        metrics_port=port,
        extra=["--workers", "2", "--alert-orphan-after", "3"],
    )
    log = tmp_path / "run.log"
    parent = start_service(cmd, log)
    try:
        wait_until(
            lambda: holds(port, 3.0) and holds(port + 1, 3.0),
            60,
            "both workers to hold 2 Hadoop partitions + the Ganglia one",
        )
        workers = _workers(parent)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)
        wait_until(lambda: "restarted worker" in log.read_text(), 30, "the supervisor to restart the killed worker")
        wait_until(lambda: len(_workers(parent)) == 2 and workers[0] not in _workers(parent), 30, "two workers again")
        publish_in_chunks(bootstrap, prefix, hadoop, ganglia, chunks=2, pause=0.5)
        wait_until(lambda: set(receiver.alert_keys()) >= set(expected), 120, "all expected alerts")
        text = log.read_text()
        assert "[w-0] " in text and "[w-1] " in text  # each worker's lines carry its name
        survivors = _workers(parent)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=90) == 0, log.read_text()[-3000:]
    finally:
        if parent.poll() is None:
            parent.kill()
    assert set(receiver.alert_keys()) == set(expected)
    assert survivors and not any(_is_worker(pid) for pid in survivors)  # SIGTERM to the command stopped them all


def test_a_worker_failing_at_start_stops_the_command_with_its_status(tmp_path: Path) -> None:
    started = time.monotonic()
    status = run_workers(["--pack", str(tmp_path / "missing.yaml")], 2, "x", None)
    assert status == 2 and time.monotonic() - started < 30


def test_worker_names_and_metrics_ports() -> None:
    def tail(argv: list[str]) -> list[str]:
        return argv[argv.index("--instance") :]

    assert tail(worker_argv(["--pack", "p.yaml"], "w", 1, 9464)) == ["--instance", "w-1", "--metrics-port", "9465"]
    assert tail(worker_argv([], "w", 1, 0))[-1] == "0"  # any free port, for each
    assert tail(worker_argv([], "w", 1, None))[-1] == "-1"  # off
