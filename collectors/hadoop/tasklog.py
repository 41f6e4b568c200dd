"""Reduce task syslog (shuffle) -> DataPull and DataIO(-bytes) per fetched map output; map task syslog -> MapSplit.

Each fetch's start (``about to shuffle``) is a FetchStart, so a stalled fetch is visible while it lasts; a fetch
Hadoop gives up on (``Failed to shuffle output of M from H`` after a read timeout, ``Failed to connect to H``) is a
FetchFailed; the final merge ends the shuffle (ShuffleDone, with the partition's bytes and the outputs fetched).

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

import os
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
_CONNECT_FAILED = re.compile(r"^Failed to connect to (\S+) with (\d+) map outputs")
_FINAL_MERGE = re.compile(r"^finalMerge called with (\d+) in-memory map-outputs and (\d+) on-disk map-outputs")
_SPLIT = re.compile(r"^Processing split: (.*):(\d+)\+(\d+)$")
_JOB_TOKEN = re.compile(r"^Kind: mapreduce\.job, Service: (job_\w+),")


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
        self.shuffled_bytes = 0  # wire bytes of the map outputs fetched so far
        self.shuffled_maps = 0
        self.failures = 0
        self.shuffle_done = False

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
            if m is None:
                return []
            self.used()
            pull = self.pending.pop(m.group(1), None)
            return self._failed(rec.ts, lineno, m.group(2), map_attempt=m.group(1), started=pull)
        if msg.startswith("Failed to connect to "):
            m = _CONNECT_FAILED.match(msg)
            if m is None:
                return []
            self.used()
            return self._failed(rec.ts, lineno, m.group(1), outputs=int(m.group(2)))
        if msg.startswith("finalMerge called with") and not self.shuffle_done:
            m = _FINAL_MERGE.match(msg)
            if m is None:
                return []
            self.used()
            return self._shuffle_done(rec.ts, lineno)
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
        parsed = E.parse_attempt(map_attempt)
        host = self.fetchers[fetcher].host if fetcher in self.fetchers else ""
        return [
            E.fact(
                "FetchStart",
                ts,
                self.ctx.eid(f"line {lineno}"),
                delta=self.ctx.delta,
                job_id=parsed[0] if parsed else "",
                task_id=self.reducer_task or "unknown",
                map_task=parsed[1] if parsed else "",
                map_attempt=map_attempt,
                host=host,
                bytes=int(length),
                to=to,
            )
        ]

    def _failed(
        self,
        ts: float,
        lineno: int,
        where: str,
        *,
        map_attempt: str = "",
        outputs: int | None = None,
        started: _Pull | None = None,
    ) -> list[E.Event]:
        """A fetch Hadoop gave up on (a read or connect timeout, a reset): it is retried, and counted."""
        self.failures += 1
        parsed = E.parse_attempt(map_attempt) if map_attempt else None
        job_id = parsed[0] if parsed else (E.parse_task(self.reducer_task) or ("",))[0]
        attrs: dict[str, Any] = {
            "job_id": job_id,
            "task_id": self.reducer_task or "unknown",
            "host": where.rsplit(":", 1)[0] if where.rsplit(":", 1)[-1].isdigit() else where,
            "failures": self.failures,
        }
        if parsed:
            attrs.update(map_task=parsed[1], map_attempt=map_attempt)
        if outputs is not None:
            attrs["outputs"] = outputs
        if started is not None:
            attrs["waited"] = round(max(ts - started.start, 0.0), 3)
        return [E.fact("FetchFailed", ts, self.ctx.eid(f"line {lineno}"), delta=self.ctx.delta, **attrs)]

    def _shuffle_done(self, ts: float, lineno: int) -> list[E.Event]:
        """The reducer's shuffle is complete (MergeManager's final merge): the bytes of its partition are known."""
        self.shuffle_done = True
        task = self.reducer_task or "unknown"
        parsed = E.parse_task(task)
        extra = {"attempt_id": self.reducer_attempt} if self.reducer_attempt else {}
        return [
            E.fact(
                "ShuffleDone",
                ts,
                self.ctx.eid(f"line {lineno}"),
                delta=self.ctx.delta,
                job_id=parsed[0] if parsed else "",
                task_id=task,
                bytes=self.shuffled_bytes,
                maps=self.shuffled_maps,
                failures=self.failures,
                **extra,
            )
        ]

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
        self.shuffled_bytes += pull.length
        self.shuffled_maps += 1
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


class MapLogParser(Log4jParser):
    """One map attempt's syslog: its input split, known when it starts (``MapTask: Processing split: path:start+len``).

    The map syslog names its attempt only when it ends, so the split is tied to the attempt by the container the log
    belongs to (the container directory of the NodeManager's log layout), which the job history and the AM log give
    for every attempt (``container_id``), and to its job by the container id (or the job-token line)."""

    kind = "map"

    def __init__(self, ctx: Context, container_id: str = "") -> None:
        super().__init__(ctx)
        self.container_id = container_id
        self.job_id = E.job_of_container(container_id) or ""
        self.split_seen = False

    def _feed(self, line: str, lineno: int) -> list[E.Event]:
        rec = self.record(line, lineno)
        if rec is None:
            return []
        msg = rec.msg
        if not self.job_id and msg.startswith("Kind: mapreduce.job"):
            m = _JOB_TOKEN.match(msg)
            if m is not None:
                self.job_id = m.group(1)
                self.used()
            return []
        if msg.startswith("Processing split: ") and not self.split_seen:
            m = _SPLIT.match(msg)
            if m is None:
                self.ignored()  # not a file split (a DB or a combined split): no length to compare
                return []
            self.split_seen = True
            self.used()
            attrs: dict[str, Any] = {"job_id": self.job_id, "split_bytes": int(m.group(3))}
            attrs["split_start"], attrs["path"] = int(m.group(2)), m.group(1)
            if self.container_id:
                attrs["container_id"] = self.container_id
            return [E.fact("MapSplit", rec.ts, self.ctx.eid(f"line {lineno}"), delta=self.ctx.delta, **attrs)]
        return []


def container_of(path: str) -> str:
    """The container id of a NodeManager log file (``.../<application>/<container>/syslog``), else ''."""
    name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return name if E.job_of_container(name) else ""


def parse_map_log(path: str, ctx: Context | None = None) -> Iterator[E.Event]:
    """Events of one map task syslog file."""
    ctx = ctx or Context(source=path)
    return run_lines(MapLogParser(ctx, container_of(path)), read_lines(path))
