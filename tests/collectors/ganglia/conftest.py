"""Fixtures for the Ganglia tests: a real gmond + gmetad for the session, and the rrdtool binding.

The daemons are started once by ``deploy/ganglia/start.sh`` on free loopback ports in a temp dir, sampling and polling
every second (so RRD rows come quickly), and stopped by ``deploy/ganglia/stop.sh`` after the session.
Without the binaries the tests that need them are skipped, except under CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.collectors.ganglia.helpers import Ganglia, require

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy" / "ganglia"
BINARIES = ("gmond", "gmetad", "gmetric")
#: Sampling (gmond) and polling / RRD step (gmetad) in the tests, seconds.
PERIOD = 1


def _free_port(taken: set[int]) -> int:
    """A port free on 127.0.0.1 for both TCP and UDP (gmond uses the number for both)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            if port in taken:
                continue
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                    udp.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise RuntimeError("no free loopback port")


@pytest.fixture(scope="session")
def ganglia(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ganglia]:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    require(not missing, f"Ganglia binaries not installed: {', '.join(missing)}")
    require(shutil.which("cc") is not None or shutil.which("gcc") is not None, "no C compiler for loopback_bind.so")
    run_dir = tmp_path_factory.mktemp("ganglia")
    taken: set[int] = set()
    env = dict(
        os.environ,
        GANGLIA_RUN_DIR=str(run_dir),
        GANGLIA_CLUSTER="hcep-test",
        GMOND_PORT=str(_free_port(taken)),
        GMETAD_XML_PORT=str(_free_port(taken)),
        GMETAD_INTERACTIVE_PORT=str(_free_port(taken)),
        GANGLIA_COLLECT_EVERY=str(PERIOD),
        GANGLIA_POLL_INTERVAL=str(PERIOD),
        GANGLIA_OWNER_PID=str(os.getpid()),  # stopped even if this process dies without running the teardown
    )
    stop = ["bash", str(DEPLOY / "stop.sh")]
    try:
        started = subprocess.run(
            ["bash", str(DEPLOY / "start.sh")], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        if started.returncode != 0:
            logs = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in run_dir.glob("*.log"))
            pytest.fail(f"deploy/ganglia/start.sh failed ({started.returncode}):\n{started.stderr}{logs}")
        info = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
        yield Ganglia(
            gmond=info["GMOND"],
            gmetad=info["GMETAD"],
            interactive=info["GMETAD_INTERACTIVE"],
            gmond_pid=int(info["GMOND_PID"]),
            gmetad_pid=int(info["GMETAD_PID"]),
            run_dir=run_dir,
            rrd_rootdir=Path(info["RRD_ROOTDIR"]),
            cluster=info["CLUSTER"],
        )
    finally:
        subprocess.run(stop, env=env, capture_output=True, timeout=30, check=False)


@pytest.fixture(scope="session")
def rrdtool() -> ModuleType:
    try:
        import rrdtool as module
    except ImportError:
        module = None
    require(module is not None, "the rrdtool Python binding is not installed")
    return module  # type: ignore[return-value]
