"""The daemons of the live demo -- a Kafka broker (with its ZooKeeper), Ganglia's gmond and gmetad, and Prometheus
Alertmanager -- started and stopped through the project's own scripts (``deploy/kafka``, ``deploy/ganglia``,
``deploy/alertmanager``).

Idempotent: a daemon that already runs (its ``status.sh`` says so) is reused and left running at the end; only what
the demo started is stopped.  Each script's output goes to a log file under the demo dir.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: The repository (or installed tree) root: ``deploy/`` lives next to ``app/``.
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


class ServiceError(Exception):
    """A deploy script failed; the message names it and points at its log."""


@dataclass
class Service:
    """One deploy/<name>/ set of scripts with its arguments and environment."""

    name: str  #: "kafka", "ganglia" or "alertmanager"
    title: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    log: Path | None = None
    #: Environment only for a fresh start (not when reusing a running one), e.g. start.sh's owner watcher.
    fresh_env: dict[str, str] = field(default_factory=dict)
    started: bool = False  #: True when the demo started it (and so stops it)
    info: dict[str, str] = field(default_factory=dict)  #: start.sh's KEY=VALUE lines

    def _script(
        self, action: str, timeout: float, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        script = DEPLOY / self.name / f"{action}.sh"
        if not script.exists():
            raise ServiceError(f"{script} not found (is this a checkout of the hcep repository?)")
        env = {**os.environ, **self.env, **(extra_env or {})}
        try:
            # A session of its own: Ctrl-C in the terminal must not kill a script half-way (the demo stops cleanly
            # after the step instead).
            done = subprocess.run(
                ["bash", str(script), *self.args],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as err:
            self._log(action, "", f"timed out after {timeout:.0f} s\n{_text(err.stderr)}")
            raise ServiceError(
                f"deploy/{self.name}/{action}.sh did not finish in {timeout:.0f} s (log: {self.log})"
            ) from None
        self._log(action, done.stdout, done.stderr)
        return done

    def _log(self, action: str, out: str, err: str) -> None:
        if self.log is None:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(f"$ deploy/{self.name}/{action}.sh {' '.join(self.args)}\n{err}{out}\n")

    def running(self) -> bool:
        return self._script("status", 60).returncode == 0

    def start(self, timeout: float = 240.0) -> bool:
        """Start it unless it runs; True when this call started it."""
        was_running = self.running()
        done = self._script("start", timeout, None if was_running else self.fresh_env)
        if done.returncode != 0:
            last = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["(no message)"]
            raise ServiceError(f"deploy/{self.name}/start.sh failed: {last[0]} (log: {self.log})")
        self.info = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        self.started = not was_running
        return self.started

    def watch(self, owner_pid: int) -> None:
        """Have a detached watcher run ``stop.sh`` once ``owner_pid`` is gone, should the demo die without stopping
        what it started (as ``deploy/ganglia/start.sh`` does with ``GANGLIA_OWNER_PID``)."""
        loop = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; shift; exec bash "$@"'
        log = open(self.log, "ab") if self.log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
        try:
            self._watcher = subprocess.Popen(
                [
                    "bash",
                    "-c",
                    loop,
                    "hcep-demo-watch",
                    str(owner_pid),
                    str(DEPLOY / self.name / "stop.sh"),
                    *self.args,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        finally:
            if not isinstance(log, int):
                log.close()

    def stop(self, timeout: float = 120.0) -> None:
        """Stop it if the demo started it."""
        watcher = getattr(self, "_watcher", None)
        if watcher is not None and watcher.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(watcher.pid, signal.SIGTERM)  # the demo stops it itself
            watcher.wait(10)
        if not self.started:
            return
        done = self._script("stop", timeout)
        self.started = False
        if done.returncode != 0:
            print(f"demo: deploy/{self.name}/stop.sh failed (log: {self.log})", file=sys.stderr)


def kafka(run_dir: Path, port: int, zk_port: int, log: Path) -> Service:
    return Service(
        "kafka", "Kafka broker", ["--run-dir", str(run_dir), "--port", str(port), "--zk-port", str(zk_port)], log=log
    )


def ganglia(
    run_dir: Path,
    cluster: str,
    gmond_port: int,
    xml_port: int,
    interactive_port: int,
    step: int,
    log: Path,
    owner_pid: int | None = None,
) -> Service:
    """gmond muted (it reports only what gmetric sends: the simulated nodes, not this machine) and gmetad polling it
    every ``step`` seconds."""
    env = {
        "GANGLIA_RUN_DIR": str(run_dir),
        "GANGLIA_CLUSTER": cluster,
        "GMOND_PORT": str(gmond_port),
        "GMETAD_XML_PORT": str(xml_port),
        "GMETAD_INTERACTIVE_PORT": str(interactive_port),
        "GANGLIA_POLL_INTERVAL": str(step),
        "GANGLIA_MUTE": "1",
    }
    # start.sh's watcher stops the daemons if the demo dies without cleaning up (only for daemons the demo starts).
    fresh = {"GANGLIA_OWNER_PID": str(owner_pid)} if owner_pid is not None else {}
    return Service("ganglia", "gmond and gmetad", [], env=env, log=log, fresh_env=fresh)


def alertmanager(run_dir: Path, port: int, receiver_url: str, log: Path, owner_pid: int | None = None) -> Service:
    """Alertmanager on 127.0.0.1:``port``, notifying ``receiver_url`` with the scripts' short demo timers (group_wait
    1 s, group_interval 2 s).  A running one in ``run_dir`` is reused, its config re-rendered for this receiver."""
    args = ["--run-dir", str(run_dir), "--port", str(port), "--receiver-url", receiver_url]
    # start.sh's watcher stops it if the demo dies without cleaning up (only when the demo starts it).
    fresh = {"ALERTMANAGER_OWNER_PID": str(owner_pid)} if owner_pid is not None else {}
    return Service("alertmanager", "Alertmanager", args, log=log, fresh_env=fresh)


def _text(output: str | bytes | None) -> str:
    """What a timed-out script printed, as text (``TimeoutExpired`` may carry bytes even under ``text=True``)."""
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output
