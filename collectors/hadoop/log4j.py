"""log4j record headers as Hadoop writes them, and zone-aware timestamp conversion.

Container syslogs use ``%d{ISO8601} %p [%t] %c: %m%n``::

    2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster ...

Daemon and console layouts differ a little (no thread, ``%c{2} (%F:%M(%L)) - %m``, ``yy/MM/dd HH:mm:ss``); those are
accepted too.  A line that does not start like a timestamp is the continuation of the previous record (stack traces,
multi-line diagnostics); a line that starts like one but is not a valid header is malformed.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import NamedTuple

from collectors.hadoop.common import Context, LineParser
from engine.events import MAX_SECONDS

_LEVELS = "TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL"
_TAIL = r"(?:\[(?P<thread>[^\]]*)\] +)?(?P<cls>[\w.$-]+)(?: \(\S*\))? ?[:-](?: (?P<msg>.*))?$"
_ISO_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[,.](?P<ms>\d{3}) +(?P<level>" + _LEVELS + r") +" + _TAIL
)
_CONSOLE_RE = re.compile(r"^(?P<ts>\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) +(?P<level>" + _LEVELS + r") +" + _TAIL)
#: What a header starts with; such a line that fails the full patterns is malformed, not a continuation.
LOOKS_LIKE_HEADER = re.compile(r"^\d{2,4}[-/]\d{1,2}[-/]\d")


class Record(NamedTuple):
    ts: float
    level: str
    thread: str
    cls: str
    msg: str


class HeaderError(ValueError):
    """A line that looks like a log record header but is not a valid one."""


class Clock:
    """Turns ``yyyy-MM-dd HH:mm:ss`` (zone-less, as logged) into epoch seconds in the configured zone, with a cache."""

    def __init__(self, tz: tzinfo) -> None:
        self.tz = tz
        self._cache: dict[str, float] = {}

    def epoch(self, stamp: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> float:
        value = self._cache.get(stamp)
        if value is None:
            try:
                value = datetime.strptime(stamp, fmt).replace(tzinfo=self.tz).timestamp()
            except ValueError as err:
                raise HeaderError(f"bad timestamp {stamp!r}: {err}") from None
            if not -MAX_SECONDS <= value <= MAX_SECONDS:  # year 9999 parses, but no engine takes it
                raise HeaderError(f"timestamp {stamp!r} out of range (after the year 5138)")
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[stamp] = value
        return value


def parse_header(line: str, clock: Clock) -> Record | None:
    """The record of a header line; None for a continuation line; HeaderError for a malformed header."""
    m = _ISO_RE.match(line)
    if m is not None:
        ts = clock.epoch(m.group("ts")) + int(m.group("ms")) / 1000.0
    else:
        m = _CONSOLE_RE.match(line)
        if m is None:
            if LOOKS_LIKE_HEADER.match(line):
                raise HeaderError("malformed log record header")
            return None
        ts = clock.epoch(m.group("ts"), "%y/%m/%d %H:%M:%S")
    return Record(ts, m.group("level"), m.group("thread") or "", m.group("cls"), m.group("msg") or "")


class Log4jParser(LineParser):
    """A line parser over log4j output: records start with a header line; other lines continue the record before."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.clock = Clock(ctx.tz)
        self.seen_header = False

    def record(self, line: str, lineno: int) -> Record | None:
        """The line's record, or ``None`` after classifying a continuation or dead-lettering a bad header."""
        try:
            rec = parse_header(line, self.clock)
        except HeaderError as err:
            self.bad(lineno, str(err), line)
            return None
        if rec is None:
            if not line.strip() or self.seen_header:
                self.continued()
            else:
                self.bad(lineno, "text before the first log record", line)
            return None
        self.seen_header = True
        return rec
