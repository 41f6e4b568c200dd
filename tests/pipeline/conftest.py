"""Fixtures of the pipeline tests: a webhook receiver and the ``hcep run`` command line.  The Kafka broker fixture
(``kafka_broker``, one per test session) lives in tests/conftest.py, shared with the Spark tests."""

from __future__ import annotations

import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Broker, free_port  # noqa: F401 - re-exported for the pipeline tests


# ------------------------------------------------------------------------------------------------ webhook receiver
@dataclass
class Receiver:
    """An Alertmanager-style webhook receiver on loopback that records every alert it is sent."""

    url: str = ""
    posts: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    received_at: dict[str, float] = field(default_factory=dict)
    fail: bool = False  # answer 503 to every POST
    lock: threading.Lock = field(default_factory=threading.Lock)
    down: Callable[[], None] = lambda: None  # stop listening (connections refused); ``up()`` listens again
    up: Callable[[], None] = lambda: None

    def alert_ids(self) -> list[str]:
        """The transition id of every alert entry received (contracts.alerts.transition_id), repeats included."""
        from contracts.alerts import transition_id

        with self.lock:
            return [transition_id(a) for p in self.posts for a in p["alerts"]]

    def alert_keys(self) -> list[tuple[str, str]]:
        """``(fingerprint, status)`` of every entry: what several processes agree on (their stream clocks, and so
        the moments they decide, differ by partition)."""
        with self.lock:
            return [(a["fingerprint"], a["status"]) for p in self.posts for a in p["alerts"]]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if rec.fail:
                self.send_response(503)
                self.end_headers()
                return
            data = json.loads(body)
            with rec.lock:
                rec.posts.append(data)
                rec.bodies.append(body)
                rec.headers.append(dict(self.headers.items()))
                now = time.time()
                from contracts.alerts import transition_id

                for a in data["alerts"]:
                    rec.received_at.setdefault(transition_id(a), now)
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    servers: list[http.server.ThreadingHTTPServer] = []

    def up(port: int = 0) -> None:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        rec.url = f"http://127.0.0.1:{server.server_address[1]}/alerts"

    def down() -> None:
        while servers:
            server = servers.pop()
            server.shutdown()
            server.server_close()

    up()
    port = int(rec.url.split(":")[2].split("/")[0])
    rec.down = down  # the receiver gone: connections refused
    rec.up = lambda: up(port)  # back, on the same port
    try:
        yield rec
    finally:
        down()


# ------------------------------------------------------------------------------------------------ the service
def run_command(
    bootstrap: str,
    pack: str,
    data_dir: Path,
    *,
    prefix: str | None = None,
    topics: str | None = None,
    broadcast: str | None = None,
    group: str | None = None,
    instance: str = "0",
    webhook: str | None = None,
    metrics_port: int = -1,
    extra: list[str] | None = None,
    shedding: bool = False,
) -> list[str]:
    """The ``hcep run`` command line of a test; shedding is off unless asked for, because the exactly-once tests
    count every alert, and a backlog that outlives the pack's latency bound would (by design) cost some.
    ``prefix`` names the usual layout: topics ``PREFIX.hadoop``, broadcast ``PREFIX.ganglia``, group ``PREFIX``."""
    if prefix is not None:
        topics = topics or f"{prefix}.hadoop"
        broadcast = broadcast or f"{prefix}.ganglia"
        group = group or prefix
    if topics is None or broadcast is None or group is None:
        raise TypeError("run_command needs prefix, or topics, broadcast and group")
    cmd = [
        sys.executable,
        "-m",
        "app.commands.run",
        "--pack",
        pack,
        "--bootstrap",
        bootstrap,
        "--data-dir",
        str(data_dir),
        "--topics",
        topics,
        "--broadcast",
        broadcast,
        "--group",
        group,
        "--instance",
        instance,
        "--metrics-port",
        str(metrics_port),
        "--matches-topic",
        f"{group}.matches",
        "--checkpoint-interval",
        "0.2",
        "--idle-timeout",
        "1",
        "--session-timeout",
        "3",
        "--log-level",
        "INFO",
    ]
    if webhook:
        cmd += ["--webhook", f"ops={webhook}"]
    if not shedding:
        cmd.append("--no-shedding")
    return cmd + (extra or [])


def start_service(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=full_env)


def stop_services(procs: list[subprocess.Popen], timeout: float = 30.0) -> None:
    """SIGTERM every process still running (a clean stop commits a last checkpoint), then wait for each; one that
    does not stop within ``timeout`` seconds is killed."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()


def scrape(port: int) -> dict[str, float]:
    """The service's Prometheus metrics, ``name{labels}`` -> value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def holds(port: int, partitions: float) -> bool:
    """Does the service with metrics on ``port`` hold this many partitions (False while it is not serving)?"""
    try:
        return scrape(port).get("hcep_assigned_partitions") == partitions
    except OSError:
        return False


def wait_until(pred: Any, timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """Topic names of one test: unique per process, test and run, so tests sharing the broker never meet."""
    return f"t{os.getpid()}-{request.node.name[:30].replace('_', '-')}-{random.randrange(10**6)}"
