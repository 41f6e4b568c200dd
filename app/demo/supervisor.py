"""Child processes of the live demo: each in a process group of its own, with its output in a log file, stopped
group-wide (SIGTERM, then SIGKILL after a grace period) so that nothing it started outlives it.

A child's own process group matters twice: Ctrl-C in the terminal reaches only the demo (which then stops the
children in order, instead of all of them dying at once and looking like crashes), and stopping a child stops its
own children too (``hcep dashboard`` runs Streamlit as a child).  And should the demo itself be killed outright
(SIGKILL, no chance to clean up), each child gets SIGTERM from the kernel (``setpriv --pdeathsig``, util-linux)
instead of living on as an orphan.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.processes import descendants, with_parent

__all__ = ["Child", "Supervisor", "descendants", "with_parent"]


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    log: Path
    #: What this child does, for messages ("the Hadoop collector").
    title: str = ""
    #: A clean exit (status 0) is expected and fine (e.g. the simulator at the end of its scenario).
    may_finish: bool = False
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    reported: bool = False

    def start(self, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            # start_new_session: a process group (and session) of its own, see the module docstring.
            self.proc = subprocess.Popen(
                with_parent(self.argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 12) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)  # the group id is the child's pid (start_new_session)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM to the child's process group, SIGKILL to the group after ``grace`` seconds; the exit status.

        The group is signalled even when the leader has exited already, so a grandchild it left behind goes too."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.proc.wait()
        self.signal_group(signal.SIGKILL)  # stragglers of the group, if any
        return self.proc.returncode


@dataclass
class Supervisor:
    """Starts children, watches them, and stops them all in reverse order of start."""

    children: list[Child] = field(default_factory=list)
    say: Callable[[str], None] = print

    def start(self, child: Child, env: dict[str, str] | None = None, cwd: str | None = None) -> Child:
        child.start(env=env, cwd=cwd)
        self.children.append(child)
        return child

    def failed(self) -> Child | None:
        """The first child that exited when it should not have (not reported before), else None."""
        for child in self.children:
            code = child.poll()
            if code is None or child.reported:
                continue
            child.reported = True
            if code == 0 and child.may_finish:
                self.say(f"demo: {child.title or child.name} finished (log: {child.log})")
                continue
            return child
        return None

    def stop_all(self, grace: float = 15.0, order: Sequence[str] | None = None) -> dict[str, int | None]:
        """Stop every child (in ``order`` of names first, then the rest newest first); their exit statuses."""
        first = [c for name in (order or ()) for c in self.children if c.name == name]
        rest = [c for c in reversed(self.children) if c not in first]
        codes: dict[str, int | None] = {}
        for child in first + rest:
            was_alive = child.alive()
            codes[child.name] = child.stop(grace)
            if was_alive:
                self.say(f"demo: stopped {child.title or child.name} (pid {child.pid})")
        return codes

    def pids(self) -> list[int]:
        return [c.pid for c in self.children if c.pid is not None]
