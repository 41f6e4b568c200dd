"""Batch collection: find Hadoop files under paths, tell their kinds apart, parse, drop cross-source duplicates, sort.

Kinds are told apart by name and content: ``*.jhist`` or an ``Avro-Json``/``Avro-Binary`` first line is job history;
a syslog that mentions ``MRAppMaster`` is an ApplicationMaster log; one with shuffle classes (``EventFetcher``,
``Fetcher``, ``ShuffleSchedulerImpl``, ``ReduceTask``) is a reduce task log; one with ``MapTask: Processing split`` a
map task log (its container is its directory's name).  Other files are skipped; those that look like a history or
log file in a format not read (Hadoop 1 JobTracker history, a Spark event log, another log4j log, a gzip-compressed
one) are named (:mod:`collectors.hadoop.formats`): ``Summary.unread``.

A job seen through both its history file and its AM log yields the same facts twice; history files are read first
and the later copy is dropped (:func:`collectors.hadoop.events.semantic_key`), because they carry exact times, user,
queue and byte counters.
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import IO

from collectors.hadoop.amlog import AmLogParser
from collectors.hadoop.common import Context, LineParser, ParseStats, read_lines, run_lines, zone
from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.events import DEFAULT_DELTA, Event, semantic_key
from collectors.hadoop.formats import unread_format
from collectors.hadoop.hostpace import HostPaces
from collectors.hadoop.jhist import HEADER_BINARY, HEADER_JSON, JhistJsonParser, parse_jhist, sniff_header
from collectors.hadoop.tasklog import MapLogParser, ReduceLogParser, container_of

KINDS = ("jhist", "am", "reduce", "map")
_ORDER = {kind: i for i, kind in enumerate(KINDS)}
_SNIFF_BYTES = 128 * 1024
_SKIP_SUFFIXES = ("_tmp", ".xml", ".summary", ".gz", ".crc", ".swp", ".jsonl", ".json")
# The AM's own loggers (a reduce log names the MRAppMaster in messages: "Reporting fetch failure for M to MRAppMaster.")
_AM_MARKERS = ("org.apache.hadoop.mapreduce.v2.app.", "MRAppMaster: Created MRAppMaster")
_REDUCE_MARKERS = ("EventFetcher", "task.reduce.", "ShuffleSchedulerImpl", "mapred.ReduceTask", "reduce.Fetcher")
_MAP_MARKERS = ("mapred.MapTask: Processing split", "MapTask metrics system started")


def sniff(path: str) -> str | None:
    """The kind of a Hadoop file (``jhist``, ``am``, ``reduce``), or None for anything else."""
    name = os.path.basename(path)
    if sniff_header(path) in (HEADER_JSON, HEADER_BINARY) or name.endswith(".jhist"):
        return "jhist"
    if name.endswith(_SKIP_SUFFIXES):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    if any(marker in head for marker in _AM_MARKERS):
        return "am"
    if any(marker in head for marker in _REDUCE_MARKERS):
        return "reduce"
    if any(marker in head for marker in _MAP_MARKERS):
        return "map"
    return None


def line_parser(kind: str, ctx: Context) -> LineParser:
    """A fresh line parser for a file of this kind (JSON job history, AM log or reduce log)."""
    if kind == "jhist":
        return JhistJsonParser(ctx)
    if kind == "am":
        return AmLogParser(ctx)
    if kind == "reduce":
        return ReduceLogParser(ctx)
    if kind == "map":
        return MapLogParser(ctx, container_of(ctx.source))
    raise ValueError(f"unknown kind {kind!r}")


@dataclass
class Source:
    path: str
    kind: str
    size: int


def discover(paths: Iterable[str], skipped: list[str] | None = None) -> list[Source]:
    """The Hadoop files under ``paths`` (files or directories, walked recursively), history first."""
    found: list[Source] = []
    seen: set[str] = set()
    for root in paths:
        candidates: list[str]
        if os.path.isdir(root):
            candidates = []
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                candidates.extend(os.path.join(dirpath, name) for name in sorted(filenames))
        else:
            candidates = [root]
        for path in candidates:
            real = os.path.abspath(path)
            if real in seen:
                continue
            seen.add(real)
            kind = sniff(real)
            if kind is None:
                if skipped is not None:
                    skipped.append(real)
                continue
            try:
                size = os.path.getsize(real)
            except OSError:
                size = 0
            found.append(Source(real, kind, size))
    found.sort(key=lambda s: _ORDER[s.kind])  # stable: keeps the walk order within a kind
    return found


def parse_source(
    source: Source, *, tz: tzinfo, delta: float, deadletter: DeadLetterSink, stats: ParseStats
) -> Iterator[Event]:
    """Events of one file; its counts are added to ``stats``."""
    ctx = Context(source=source.path, tz=tz, delta=delta, deadletter=deadletter, stats=ParseStats())
    try:
        if source.kind == "jhist":
            yield from parse_jhist(source.path, ctx)
        else:
            yield from run_lines(line_parser(source.kind, ctx), read_lines(source.path))
    except OSError as err:
        ctx.stats.dead += 1
        deadletter.write(source.path, source.path, f"unreadable file: {err}", "")
    finally:
        stats.add(ctx.stats)


class Deduper:
    """Keeps the first event of each semantic key (bounded, so a long follow does not grow without end)."""

    def __init__(self, limit: int = 4_000_000) -> None:
        self.seen: dict[tuple[str, ...], None] = {}
        self.limit = limit
        self.dropped = 0

    def keep(self, event: Event) -> bool:
        key = semantic_key(event)
        if key is None:
            return True
        if key in self.seen:
            self.dropped += 1
            return False
        self.seen[key] = None
        if len(self.seen) > self.limit:
            for old in list(self.seen)[: self.limit // 4]:
                del self.seen[old]
        return True


@dataclass
class Summary:
    files: int = 0
    skipped: int = 0
    stats: ParseStats = field(default_factory=ParseStats)
    duplicates: int = 0
    written: int = 0
    #: Skipped files in a format not read: (path, format, why), in walk order.
    unread: list[tuple[str, str, str]] = field(default_factory=list)

    def line(self, deadletter_path: str | None) -> str:
        s = self.stats
        tail = "" if deadletter_path or not s.dead else " (use --deadletter FILE to keep them)"
        unread = ""
        if self.unread:
            counts = Counter(fmt for _, fmt, _ in self.unread)
            unread = f"; {len(self.unread)} in formats not read: " + ", ".join(f"{f} {n}" for f, n in counts.items())
        return (
            f"collect hadoop: {self.files} files ({self.skipped} skipped{unread}), {s.lines} lines, "
            f"{self.written} events ({self.duplicates} duplicates dropped), {s.dead} dead-lettered{tail}"
        )


def collect(
    paths: Iterable[str],
    *,
    tz: str | tzinfo | None = None,
    delta: float = DEFAULT_DELTA,
    deadletter: DeadLetterSink | None = None,
    summary: Summary | None = None,
    on_file: Callable[[Source], None] | None = None,
) -> Iterator[Event]:
    """Every event under ``paths`` in file order (not sorted), cross-source duplicates dropped."""
    tzinfo_ = zone(tz)
    deadletter = deadletter or DeadLetterSink()
    summary = summary if summary is not None else Summary()
    skipped: list[str] = []
    sources = discover(paths, skipped)
    summary.files, summary.skipped = len(sources), len(skipped)
    summary.unread = [(path, *what) for path in skipped if (what := unread_format(path)) is not None]
    dedupe = Deduper()
    paced: list[Event] = []  # held back for host_pace, which needs every job's earlier attempts on the host
    for source in sources:
        for event in parse_source(source, tz=tzinfo_, delta=delta, deadletter=deadletter, stats=summary.stats):
            if dedupe.keep(event):
                summary.written += 1
                if event["type"] == "Mapper" and "pace" in event:
                    paced.append(event)
                else:
                    yield event
        summary.duplicates = dedupe.dropped
        if on_file is not None:
            on_file(source)
    paced.sort(key=lambda e: float(e["ts"]))  # finish order: each sees only attempts that finished before it started
    host_paces = HostPaces()
    for event in paced:
        host_paces.annotate(event)
        yield event


def _sort_key(item: tuple[float, int, str]) -> tuple[float, int]:
    return item[0], item[1]


def sorted_events(events: Iterable[Event], chunk: int = 400_000) -> Iterator[str]:
    """The events as JSON lines in time order (ties in input order), with sorted runs spilled to disk past ``chunk``."""
    runs: list[IO[str]] = []
    buffer: list[tuple[float, int, str]] = []
    seq = 0
    try:
        for event in events:
            buffer.append((float(event["ts"]), seq, json.dumps(event, separators=(", ", ": "))))
            seq += 1
            if len(buffer) >= chunk:
                runs.append(_spill(buffer))
                buffer = []
        buffer.sort(key=_sort_key)
        if not runs:
            for item in buffer:
                yield item[2]
            return
        streams = [_read_run(run) for run in runs] + [iter(buffer)]
        for item in heapq.merge(*streams, key=_sort_key):
            yield item[2]
    finally:
        for run in runs:
            run.close()


def _spill(buffer: list[tuple[float, int, str]]) -> IO[str]:
    buffer.sort(key=_sort_key)
    run = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed by sorted_events
    for ts, seq, text in buffer:
        run.write(f"{ts!r}\t{seq}\t{text}\n")
    run.seek(0)
    return run


def _read_run(run: IO[str]) -> Iterator[tuple[float, int, str]]:
    for line in run:
        ts, seq, text = line.rstrip("\n").split("\t", 2)
        yield float(ts), int(seq), text
