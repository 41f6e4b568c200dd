"""What every Hadoop parser shares: a per-file context, counters, and the never-raise line-parser contract.

A parser is a small state machine over one file's lines (``feed`` per line, ``finish`` at the end).  Each line ends up
in exactly one bucket of :class:`ParseStats` -- used (it produced or fed events), ignored (well formed, nothing we
need), continuation (a blank line or the tail of a multi-line log record) or dead (handed to the dead-letter sink) --
so the counts always add up, which is what the fuzz tests check.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from zoneinfo import ZoneInfo

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.events import DEFAULT_DELTA, Event, event_id


@dataclass
class ParseStats:
    lines: int = 0
    used: int = 0
    ignored: int = 0
    continuation: int = 0
    dead: int = 0
    events: int = 0

    def add(self, other: ParseStats) -> None:
        for name in ("lines", "used", "ignored", "continuation", "dead", "events"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def zone(name: str | tzinfo | None) -> tzinfo:
    """Log timestamps carry no zone: it is configuration (default UTC)."""
    if name is None:
        return ZoneInfo("UTC")
    if isinstance(name, tzinfo):
        return name
    return ZoneInfo(name)


@dataclass
class Context:
    """Where lines come from and where their events and rejects go."""

    source: str
    tz: tzinfo = field(default_factory=lambda: ZoneInfo("UTC"))
    delta: float = DEFAULT_DELTA
    deadletter: DeadLetterSink = field(default_factory=DeadLetterSink)
    stats: ParseStats = field(default_factory=ParseStats)

    def eid(self, location: str, index: int = 0) -> str:
        return event_id(self.source, location, index)


class LineParser:
    """Base of the line-oriented parsers.  Subclasses implement ``_feed`` and may override ``_finish``.

    ``_feed`` returns the events of the line and classifies it by calling one of ``used``/``ignored``/``continued``/
    ``bad``; an exception inside it is itself caught and dead-lettered, so ``feed`` never raises.
    """

    kind = "lines"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._bucket: str | None = None

    # -- classification (one bucket per line; the last call wins, a dead line stays dead) ---------------------------
    def used(self) -> None:
        if self._bucket != "dead":
            self._bucket = "used"

    def ignored(self) -> None:
        if self._bucket != "dead":
            self._bucket = "ignored"

    def continued(self) -> None:
        if self._bucket != "dead":
            self._bucket = "continuation"

    def bad(self, lineno: int, reason: str, raw: str) -> list[Event]:
        if self._bucket != "dead":
            self._bucket = "dead"
            self.ctx.deadletter.write(self.ctx.source, f"{self.ctx.source}:{lineno}", reason, raw)
        return []

    # -- driving ----------------------------------------------------------------------------------------------------
    def feed(self, line: str, lineno: int) -> list[Event]:
        """Parse one line (without its newline); never raises."""
        stats = self.ctx.stats
        stats.lines += 1
        self._bucket = None
        try:
            out = self._feed(line, lineno)
        except Exception as err:  # noqa: BLE001 - the contract is: bad input never stops the collector
            out = self.bad(lineno, f"parser error: {type(err).__name__}: {err}", line)
        bucket = self._bucket or "ignored"
        setattr(stats, bucket, getattr(stats, bucket) + 1)
        if bucket == "dead":
            out = []
        stats.events += len(out)
        return out

    def finish(self) -> list[Event]:
        """Events still pending at the end of the input (never raises)."""
        try:
            out = self._finish()
        except Exception:  # noqa: BLE001
            out = []
        self.ctx.stats.events += len(out)
        return out

    def _feed(self, line: str, lineno: int) -> list[Event]:
        raise NotImplementedError

    def _finish(self) -> list[Event]:
        return []


def run_lines(parser: LineParser, lines: Iterable[str], first_lineno: int = 1) -> Iterator[Event]:
    """Feed ``lines`` (newlines are stripped) to ``parser`` and yield its events, then the pending ones."""
    for lineno, line in enumerate(lines, first_lineno):
        yield from parser.feed(line.rstrip("\r\n"), lineno)
    yield from parser.finish()


def read_lines(path: str) -> Iterator[str]:
    """A file's lines as text; undecodable bytes become U+FFFD rather than an exception."""
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        yield from handle
