"""Child processes that do not outlive their parent, and the process tree below a pid (Linux).

Shared by the live demo's supervisor (:mod:`app.demo.supervisor`) and ``hcep run --workers`` (:mod:`app.workers`).
"""

from __future__ import annotations

import os
import shutil


def with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that it gets SIGTERM when this process dies (setpriv sets the flag, then execs ``argv`` in the
    same process, whose parent is us); plain ``argv`` where setpriv is missing."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)


def descendants(pid: int) -> list[int]:
    """Every live process whose parent chain leads to ``pid`` (from /proc; Linux)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
        rest = stat[stat.rfind(")") + 2 :].split()
        if len(rest) > 1 and rest[1].isdigit():
            parents[int(entry)] = int(rest[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                found.append(child)
                frontier.append(child)
    return found
