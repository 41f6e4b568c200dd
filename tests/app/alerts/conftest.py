"""Fixtures of the Alertmanager tests: a real Prometheus Alertmanager, started once per test session by
``deploy/alertmanager/start.sh`` on a free loopback port in a temporary run dir and stopped at the end, and the
in-process webhook receiver it notifies.  Never mocked.  Under ``CI=true`` an Alertmanager that cannot start fails
the tests (it must not turn into a skip).

Alertmanager's route uses short timers here (group_wait and group_interval 1 s), so a notification comes within
about a second of the alert; tests poll with deadlines instead of sleeping.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.alerts.alertmanager import Alertmanager
from tests.conftest import ROOT, free_port

DEPLOY = ROOT / "deploy" / "alertmanager"
CI = os.environ.get("CI") == "true"
#: Alertmanager's grouping timers in the tests (seconds).
GROUP_WAIT = 1.0
GROUP_INTERVAL = 1.0


def poll(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """``check()``'s first truthy value, retried until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what} (last: {last!r:.500})")
        time.sleep(interval)


# ------------------------------------------------------------------------------------------------ webhook receiver
@dataclass
class Receiver:
    """Where Alertmanager sends its notifications (webhook payload version 4): an HTTP server on 127.0.0.1."""

    url: str = ""
    notifications: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                try:
                    payload = json.loads(body)
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                payload["_received"] = time.time()
                with receiver.lock:
                    receiver.notifications.append(payload)
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="am-receiver", daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def about(self, job_id: str) -> list[dict[str, Any]]:
        """The notifications carrying an alert of ``job_id`` (tests use a job id of their own)."""
        with self.lock:
            return [n for n in self.notifications if any(a["labels"].get("job_id") == job_id for a in n["alerts"])]


# ----------------------------------------------------------------------------------------------------- the daemon
@dataclass
class Daemon:
    """One Alertmanager run by the deploy scripts."""

    port: int
    run_dir: Path
    receiver_url: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _script(self, name: str, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess:
        args = [
            "--run-dir",
            str(self.run_dir),
            "--port",
            str(self.port),
            "--receiver-url",
            self.receiver_url,
            "--group-wait",
            f"{GROUP_WAIT:g}s",
            "--group-interval",
            f"{GROUP_INTERVAL:g}s",
            "--repeat-interval",
            "1h",
            *extra,
        ]
        env = dict(os.environ, ALERTMANAGER_OWNER_PID=str(os.getpid()))  # stopped even if pytest is killed
        return subprocess.run(
            ["bash", str(DEPLOY / f"{name}.sh"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )

    def start(self) -> subprocess.CompletedProcess:
        done = self._script("start", timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"deploy/alertmanager/start.sh failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def stop(self) -> None:
        done = self._script("stop")
        if done.returncode != 0:
            raise RuntimeError(f"deploy/alertmanager/stop.sh failed ({done.returncode}): {done.stderr[-2000:]}")

    def status(self) -> subprocess.CompletedProcess:
        return self._script("status")


@pytest.fixture(scope="session")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.start()
    yield r
    r.stop()


@pytest.fixture(scope="session")
def alertmanager(receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = Daemon(free_port(), tmp_path_factory.mktemp("alertmanager"), receiver.url)
    try:
        daemon.start()
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        message = f"Alertmanager did not start (bash deploy/alertmanager/install.sh): {err}"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def client(alertmanager: Daemon) -> Iterator[Alertmanager]:
    c = Alertmanager(alertmanager.url, timeout=5.0)
    yield c
    c.close()
