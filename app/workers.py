"""``hcep run --workers N``: N service processes in one consumer group, started and watched by one command.

One Python process runs the engine on one core (the GIL); the group shares the partitions between its members
(:mod:`app.stream`), so N members use N cores.  The workers are ordinary ``hcep run`` processes named
``INSTANCE-0`` .. ``INSTANCE-(N-1)``, each with its metrics on ``PORT + k``; they share the data directory (one store
for the dashboard), log to this process's stderr tagged with their name, and get SIGTERM should this process die
(``setpriv --pdeathsig``).

Supervision:

- SIGTERM / SIGINT: every worker is asked to stop (each commits a last checkpoint), SIGKILL after ``grace`` seconds;
- a worker that exits with an error status within ``startup`` seconds of its first start (a bad setting, an
  unreachable broker) stops them all, and its status is the command's;
- a worker that fails otherwise (a crash, killed by a signal, the OOM killer) is restarted after a back-off (1 s
  doubling to 30 s, reset after a minute of good health): checkpoints make the restart lose and duplicate nothing;
- a worker that exits 0 (``--exit-when-idle``, ``--max-seconds``) is done; the command ends when all are.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from app.processes import with_parent

log = logging.getLogger("hcep.workers")

#: The environment variable that tells a worker its name (its log lines carry it).
WORKER_ENV = "HCEP_WORKER"


@dataclass
class Worker:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    backoff: float = 1.0
    restarts: int = 0
    done: bool = False

    def start(self) -> None:
        env = dict(os.environ, **{WORKER_ENV: self.name})
        self.proc = subprocess.Popen(with_parent(self.argv), env=env, stdin=subprocess.DEVNULL)
        self.started_at = time.monotonic()
        self.restart_at = None

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """The running (or last) process; only asked after :meth:`start`."""
        assert self.proc is not None, f"worker {self.name} was never started"
        return self.proc


def worker_argv(base: list[str], instance: str, k: int, metrics_port: int | None) -> list[str]:
    """The command line of worker ``k``: ``base`` (the options shared by all) plus its name and metrics port (off,
    any free one, or ``metrics_port + k``)."""
    port = -1 if metrics_port is None else 0 if metrics_port == 0 else metrics_port + k
    return [
        sys.executable,
        "-m",
        "app.commands.run",
        *base,
        "--instance",
        f"{instance}-{k}",
        "--metrics-port",
        str(port),
    ]


def run_workers(
    base: list[str],
    n: int,
    instance: str,
    metrics_port: int | None,
    *,
    startup: float = 10.0,
    grace: float = 60.0,
    max_backoff: float = 30.0,
) -> int:
    """Start ``n`` workers and watch them until they are done or a signal asks to stop; the exit status."""
    workers = [Worker(f"{instance}-{k}", worker_argv(base, instance, k, metrics_port)) for k in range(n)]
    stop = {"requested": False}

    def on_signal(_signum: int, _frame: object) -> None:
        stop["requested"] = True

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    status = 0
    try:
        for w in workers:
            w.start()
        log.info("started %d workers: %s", n, ", ".join(f"{w.name} (pid {w.process.pid})" for w in workers))
        while not stop["requested"] and not all(w.done for w in workers):
            now = time.monotonic()
            for w in workers:
                if w.done:
                    continue
                if w.restart_at is not None:
                    if now >= w.restart_at:
                        w.start()
                        log.warning("restarted worker %s (pid %d, restart %d)", w.name, w.process.pid, w.restarts)
                    continue
                code = w.process.poll()
                if code is None:
                    if now - w.started_at > 60.0:
                        w.backoff = 1.0  # a minute of good health: the next failure is a fresh one
                    continue
                if code == 0:
                    w.done = True
                    log.info("worker %s finished", w.name)
                elif code > 0 and now - w.started_at < startup and w.restarts == 0:  # not killed: it gave up
                    log.error("worker %s exited with status %d at start; stopping the others", w.name, code)
                    status = code
                    stop["requested"] = True
                    break
                else:
                    w.restarts += 1
                    w.restart_at = now + w.backoff
                    log.error("worker %s exited with status %d; restarting it in %.0f s", w.name, code, w.backoff)
                    w.backoff = min(max_backoff, 2 * w.backoff)
            time.sleep(0.2)
    finally:
        for w in workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for w in workers:
            if w.proc is None:
                continue
            try:
                code = w.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("worker %s did not stop within %.0f s: killed", w.name, grace)
                w.proc.kill()
                code = w.proc.wait()
            if code and not status and not w.done and code not in (-signal.SIGTERM, 128 + signal.SIGTERM):
                status = code
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return status
