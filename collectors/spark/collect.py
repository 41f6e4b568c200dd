"""Collect a Spark event-log directory: every log once (batch), or every log followed as it grows (:class:`Follower`).

Batch reads each log to its current end: a finished log whole, an unfinished one up to its last complete line (the
half-written rest is counted as partial, not dead).  The follower re-lists the directory, tails every log until it
is finished, and commits what it consumed to a state file, so a restart neither skips nor repeats: files are read
again from their start and the lines consumed before are replayed into the parser without being emitted.  Finished
logs are remembered in the state and not read again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark import layout
from collectors.spark.events import DEFAULT_DELTA, Event
from collectors.spark.listener import ListenerParser, ParseStats
from collectors.spark.reader import LogTail

STATE_VERSION = 1


#: How many unknown listener event kinds the summary names (the most frequent first).
NAMED_KINDS = 10


@dataclass
class Summary:
    logs: int = 0
    unfinished: int = 0
    files: int = 0
    skipped: int = 0
    written: int = 0
    stats: ParseStats = field(default_factory=ParseStats)
    skipped_paths: list[str] = field(default_factory=list)

    def line(self, deadletter_path: str | None) -> str:
        s = self.stats
        tail = "" if deadletter_path or not s.dead else " (use --deadletter FILE to keep them)"
        kinds = ""
        if s.unknown_kinds:
            named = ", ".join(f"{kind} {n}" for kind, n in s.unknown_kinds.most_common(NAMED_KINDS))
            more = len(s.unknown_kinds) - NAMED_KINDS
            kinds = f" ({len(s.unknown_kinds)} kinds: {named}{f', {more} more' if more > 0 else ''})"
        partial = f", {s.partial} unfinished last lines" if s.partial else ""
        return (
            f"collect spark: {self.logs} logs ({self.unfinished} unfinished), {self.files} files "
            f"({self.skipped} skipped), {s.lines} lines, {self.written} events, {s.ignored} ignored and "
            f"{s.unknown} unknown listener events{kinds}{partial}, {s.dead} dead-lettered{tail}"
        )


def open_tail(
    log: layout.EventLog,
    *,
    delta: float,
    deadletter: DeadLetterSink,
    stats: ParseStats,
    committed: dict[str, int] | None = None,
) -> LogTail:
    parser = ListenerParser(log.key, log.path, log.app, delta=delta, deadletter=deadletter, stats=stats)
    return LogTail(log, parser, committed)


def log_size(log: layout.EventLog) -> int:
    total = 0
    for file in log.files:
        with contextlib.suppress(OSError):
            total += os.path.getsize(file.path)
    return total


def collect(
    root: str,
    *,
    delta: float = DEFAULT_DELTA,
    deadletter: DeadLetterSink | None = None,
    summary: Summary | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Iterator[Event]:
    """Every event of every log under ``root``, log by log, each in its log's order."""
    deadletter = deadletter if deadletter is not None else DeadLetterSink()
    summary = summary if summary is not None else Summary()
    skipped: list[str] = []
    logs = layout.discover(root, skipped)
    summary.logs, summary.skipped, summary.skipped_paths = len(logs), len(skipped), skipped
    for log in logs:
        tail = open_tail(log, delta=delta, deadletter=deadletter, stats=summary.stats)
        for event in tail.events(batch=True, on_bytes=on_bytes):
            summary.written += 1
            yield event
        summary.files += tail.files_read
        summary.unfinished += not log.complete


class Follower:
    """Tails every log of a directory (new ones as they appear) until each is finished."""

    def __init__(
        self,
        root: str,
        *,
        delta: float = DEFAULT_DELTA,
        deadletter: DeadLetterSink | None = None,
        state_path: str | None = None,
        summary: Summary | None = None,
    ) -> None:
        self.root = root
        self.delta = delta
        self.deadletter = deadletter if deadletter is not None else DeadLetterSink()
        self.state_path = state_path
        self.summary = summary if summary is not None else Summary()
        self.tails: dict[str, LogTail] = {}
        self.finished: set[str] = set()
        self._saved: dict[str, dict[str, Any]] = self._load()
        self._quiet = DeadLetterSink()

    def scan(self) -> None:
        """Start following the logs that appeared since the last scan."""
        if not os.path.isdir(self.root) and not os.path.isfile(self.root):
            return
        skipped: list[str] = []
        for log in layout.discover(self.root, skipped):
            if log.key in self.tails or log.key in self.finished:
                continue
            saved = self._saved.get(log.key, {})
            if saved.get("done"):
                self.finished.add(log.key)  # finished before a restart: nothing new can come
                continue
            self.tails[log.key] = open_tail(
                log,
                delta=self.delta,
                deadletter=self.deadletter,
                stats=self.summary.stats,
                committed=saved.get("lines"),
            )
            self.summary.logs += 1
        self.summary.skipped, self.summary.skipped_paths = len(skipped), skipped

    def poll(self) -> Iterator[Event]:
        """The events written since the last poll, log by log."""
        for key, tail in list(self.tails.items()):
            before = tail.files_read
            for event in tail.events():
                self.summary.written += 1
                yield event
            self.summary.files += tail.files_read - before
            if tail.done:
                self.finished.add(key)
                self._saved[key] = {"done": True}
                del self.tails[key]

    def unfinished(self) -> int:
        return len(self.tails)

    def commit(self) -> None:
        """Persist what has been consumed, atomically (call it after the events are safely written)."""
        if not self.state_path:
            return
        logs = dict(self._saved)
        for key, tail in self.tails.items():
            lines = dict(tail.committed)
            lines.update(tail.consumed)
            logs[key] = {"done": False, "lines": lines}
        data = {"version": STATE_VERSION, "root": os.path.abspath(self.root), "logs": logs}
        directory = os.path.dirname(os.path.abspath(self.state_path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{self.state_path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.state_path)

    def close(self) -> None:
        for tail in self.tails.values():
            tail.close()

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.state_path or not os.path.exists(self.state_path):
            return {}
        try:
            with open(self.state_path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as err:
            raise ValueError(f"unreadable state file {self.state_path}: {err}") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION or not isinstance(data.get("logs"), dict):
            raise ValueError(f"state file {self.state_path} is not a collect-spark state (version {STATE_VERSION})")
        return dict(data["logs"])
