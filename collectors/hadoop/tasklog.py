"""Reduce task syslog (shuffle) -> one DataPull and one DataIO(-bytes) per fetched map output.

The shuffle lines of a reduce container's syslog (Hadoop 2.x; 3.x logs the first three at DEBUG)::

    [fetcher#1] ShuffleSchedulerImpl: Assigning node07:13562 with 2 to fetcher#1
    [fetcher#1] ShuffleSchedulerImpl: assigned 2 of 2 to node07:13562 to fetcher#1
    [fetcher#1] Fetcher: for url=13562/mapOutput?job=job_X&reduce=3&map=attempt_X_m_1_0,... sent hash ...
    [fetcher#1] Fetcher: fetcher#1 about to shuffle output of map attempt_X_m_1_0 decomp: 2000 len: 2004 to MEMORY
    [fetcher#1] InMemoryMapOutput: Read 2000 bytes from map-output for attempt_X_m_1_0
    [fetcher#1] MergeManagerImpl: closeInMemoryFile -> map-output of size: 2000, inMemoryMapOutputs.size() -> 1, ...
    [fetcher#1] ShuffleSchedulerImpl: node07:13562 freed by fetcher#1 in 31ms

A pull lasts from "about to shuffle" to its "Read N bytes" line (``period``); ``bytes`` is the ``len`` on the wire, the
unit in which the map side's MAP_OUTPUT_MATERIALIZED_BYTES is counted, so Q4's running sum returns to zero.  ``host`` is
the node the output was pulled from (the fetcher's "Assigning"/"freed by" line); when that arrives after the Read line
the pull is held until it does.  The reducer is named by the EventFetcher start line (or the fetch URL).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from collectors.hadoop import events as E
from collectors.hadoop.common import Context, read_lines, run_lines
from collectors.hadoop.log4j import Log4jParser

_FETCHER = r"((?:local)?fetcher#\d+)"
_ABOUT = re.compile(
    r"^" + _FETCHER + r" about to shuffle output of map (attempt_\w+) decomp: (\d+) len: (\d+) to (\w+)$"
)
_READ = re.compile(r"^Read (\d+) bytes from map-output for (attempt_\w+)$")
_FREED = re.compile(r"^([^\s:]+)(?::(\d+))? freed by " + _FETCHER + r" in (\d+)m?s$")
_ASSIGNING = re.compile(r"^Assigning ([^\s:]+)(?::(\d+))? with (\d+) to " + _FETCHER + r"$")
_URL = re.compile(r"^for url=(\S+) sent hash and received reply$")
_EVENT_FETCHER = re.compile(r"^(attempt_\w+) Thread started: EventFetcher for fetching Map Completion Events$")
_TASK_DONE = re.compile(r"^Task:?\s*'?(attempt_\w+?)'? (?:is )?done\b")
_FAILED = re.compile(r"^Failed to shuffle output of (attempt_\w+) from (\S+)")


@dataclass
class _Pull:
    map_attempt: str
    fetcher: str
    start: float
    decomp: int
    length: int
    to: str
    loc: str
    end: float | None = None
    read_bytes: int | None = None


@dataclass
class _Fetcher:
    host: str = ""
    done: list[_Pull] = field(default_factory=list)


class ReduceLogParser(Log4jParser):
    """One reduce attempt's syslog."""

    kind = "reduce"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.reducer_attempt = ""
        self.reducer_task = ""
        self.fetchers: dict[str, _Fetcher] = {}
        self.pending: dict[str, _Pull] = {}

    def _fetcher(self, name: str) -> _Fetcher:
        f = self.fetchers.get(name)
        if f is None:
            f = self.fetchers[name] = _Fetcher()
        return f

    def _set_reducer(self, attempt_id: str) -> None:
        parsed = E.parse_attempt(attempt_id)
        if parsed is not None and parsed[2] == "r":
            self.reducer_attempt = attempt_id
            self.reducer_task = parsed[1]

    # ------------------------------------------------------------------------------------------------------------
    def _feed(self, line: str, lineno: int) -> list[E.Event]:
        rec = self.record(line, lineno)
        if rec is None:
            return []
        msg = rec.msg
        if "about to shuffle output of map" in msg:
            return self._about(rec.ts, msg, line, lineno)
        if "bytes from map-output for" in msg:
            return self._read(rec.ts, rec.thread, msg, line, lineno)
        if " freed by " in msg:
            return self._freed(rec.ts, msg, line, lineno)
        if msg.startswith("Assigning "):
            m = _ASSIGNING.match(msg)
            if m is None:
                return self.bad(lineno, "malformed fetcher assignment", line)
            self._fetcher(m.group(4)).host = m.group(1)
            self.used()
            return []
        if "sent hash and received reply" in msg:
            return self._url(msg, line, lineno)
        if "Thread started: EventFetcher" in msg:
            m = _EVENT_FETCHER.match(msg)
            if m is None or E.parse_attempt(m.group(1)) is None:
                return self.bad(lineno, "malformed EventFetcher start", line)
            self._set_reducer(m.group(1))
            self.used()
            return []
        if msg.startswith("Failed to shuffle output of"):
            m = _FAILED.match(msg)
            if m is not None:
                self.pending.pop(m.group(1), None)
                self.used()
            return []
        if not self.reducer_attempt and msg.startswith("Task"):
            m = _TASK_DONE.match(msg)
            if m is not None:
                self._set_reducer(m.group(1))
        return []

    def _about(self, ts: float, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _ABOUT.match(msg)
        if m is None or E.parse_attempt(m.group(2)) is None:
            return self.bad(lineno, "malformed 'about to shuffle' line", line)
        fetcher, map_attempt, decomp, length, to = m.groups()
        self.pending[map_attempt] = _Pull(map_attempt, fetcher, ts, int(decomp), int(length), to, f"line {lineno}")
        self.used()
        return []

    def _read(self, ts: float, thread: str, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _READ.match(msg)
        if m is None or E.parse_attempt(m.group(2)) is None:
            return self.bad(lineno, "malformed 'Read N bytes from map-output' line", line)
        self.used()
        pull = self.pending.pop(m.group(2), None)
        if pull is None:  # the start was not seen (rotated away, or a local-mode log): a pull of unknown length
            pull = _Pull(m.group(2), thread, ts, int(m.group(1)), int(m.group(1)), "", f"line {lineno}")
        pull.end, pull.read_bytes, pull.loc = ts, int(m.group(1)), f"line {lineno}"
        fetcher = self._fetcher(pull.fetcher)
        if fetcher.host:
            return self._emit(pull, fetcher.host)
        fetcher.done.append(pull)
        return []

    def _freed(self, ts: float, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _FREED.match(msg)
        if m is None:
            return self.bad(lineno, "malformed 'freed by fetcher' line", line)
        host, _port, name, _ms = m.groups()
        self.used()
        fetcher = self._fetcher(name)
        out: list[E.Event] = []
        for pull in fetcher.done:
            out.extend(self._emit(pull, host))
        fetcher.done.clear()
        for map_attempt in [a for a, p in self.pending.items() if p.fetcher == name]:
            pull = self.pending.pop(map_attempt)  # no Read line: the connection's end bounds the pull
            pull.end = ts
            out.extend(self._emit(pull, host, partial=True))
        fetcher.host = ""
        return out

    def _url(self, msg: str, line: str, lineno: int) -> list[E.Event]:
        m = _URL.match(msg)
        if m is None:
            return self.bad(lineno, "malformed fetch URL line", line)
        query = m.group(1).partition("?")[2]
        params = parse_qs(query)
        job = (params.get("job") or [""])[0]
        reduce = (params.get("reduce") or [""])[0]
        if not job.startswith("job_") or not reduce.isdigit():
            return self.bad(lineno, "fetch URL without job and reduce", line)
        if not self.reducer_task:
            self.reducer_task = E.reduce_task_id(job, int(reduce))
        self.used()
        return []

    def _emit(self, pull: _Pull, host: str, partial: bool = False) -> list[E.Event]:
        parsed = E.parse_attempt(pull.map_attempt)
        job_id = parsed[0] if parsed else ""
        task_id = self.reducer_task or "unknown"
        end = pull.end if pull.end is not None else pull.start
        extra: dict[str, Any] = {"reducer_attempt": self.reducer_attempt} if self.reducer_attempt else {}
        if pull.to:
            extra["to"] = pull.to
        if partial:
            extra["partial"] = True
        return [
            E.data_pull(
                end,
                self.ctx.eid(pull.loc),
                job_id=job_id,
                task_id=task_id,
                map_attempt=pull.map_attempt,
                host=host,
                period=end - pull.start,
                nbytes=pull.length,
                delta=self.ctx.delta,
                decomp=pull.decomp,
                **extra,
            ),
            E.data_io(
                end,
                self.ctx.eid(pull.loc, 1),
                job_id=job_id,
                task_id=task_id,
                size=-pull.length,
                delta=self.ctx.delta,
                map_attempt=pull.map_attempt,
            ),
        ]

    def _finish(self) -> list[E.Event]:
        out: list[E.Event] = []
        for fetcher in self.fetchers.values():
            for pull in fetcher.done:
                out.extend(self._emit(pull, ""))
            fetcher.done.clear()
        return out


def parse_reduce_log(path: str, ctx: Context | None = None) -> Iterator[E.Event]:
    """Events of one reduce task syslog file."""
    ctx = ctx or Context(source=path)
    return run_lines(ReduceLogParser(ctx), read_lines(path))
