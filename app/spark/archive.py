"""The Parquet archive of events and matches (pyarrow only: archiving must not need a JVM).

Layout (hive partitioning, readable by Spark, pyarrow, pandas and DuckDB alike)::

    ROOT/events/date=YYYY-MM-DD/type=T/part-<batch>-<i>.parquet
    ROOT/matches/date=YYYY-MM-DD/query=Q/part-<batch>-<i>.parquet

``date`` is the UTC day of the event's ``ts`` (of a match's ``start``); relative times land in 1970-01-01.
Why this schema: events are heterogeneous, so ``attrs`` (JSON of every attribute) is the authoritative copy and a few
typed columns (``job_id``, ``period``, ...) make the common aggregates cheap.  ``lo``/``hi`` are stored as the
engine computed them, so an event read back is the same event to the bit, and ``id`` is always stored (its default,
the input position, would change).  ``batch`` + ``seq`` give the input order (ties in time are broken by it).

Appends never touch existing files: every flush writes new files named after a batch id that is unique and sorts by
time (``<UTC timestamp>-<random>-<flush number>``).
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from app.spark.record_columns import match_text, record_of_row, return_text
from contracts.records import MatchRecord

EVENTS_DIR = "events"
MATCHES_DIR = "matches"
#: Typed copies of common attributes (docs/semantics.md section 7); the ``attrs`` JSON column holds every attribute.
STRING_ATTRS = ("job_id", "task_id", "attempt_id", "map_task", "host", "user", "queue", "status", "cluster", "metric")
NUMBER_ATTRS = ("period", "val", "size", "bytes", "mean", "threshold", "maps", "reduces", "hosts")
#: Typed copies of common RETURN names of the Hadoop pack.
RETURN_STRINGS = ("job_id", "task_id")

EVENT_SCHEMA = pa.schema(
    [
        ("batch", pa.string()),
        ("seq", pa.int64()),
        ("id", pa.string()),
        ("ts", pa.float64()),
        ("lo", pa.float64()),
        ("hi", pa.float64()),
    ]
    + [(name, pa.string()) for name in STRING_ATTRS]
    + [(name, pa.float64()) for name in NUMBER_ATTRS]
    + [("attrs", pa.string()), ("date", pa.string()), ("type", pa.string())]
)
MATCH_SCHEMA = pa.schema(
    [
        ("batch", pa.string()),
        ("seq", pa.int64()),
        ("id", pa.string()),  # a growing run's increments: the record id and the record it extends
        ("extends", pa.string()),
        ("match", pa.string()),
        ("confidence", pa.float64()),
        ("start", pa.float64()),
        ("end", pa.float64()),
        ("return", pa.string()),
    ]
    + [(name, pa.string()) for name in RETURN_STRINGS]
    + [("date", pa.string()), ("query", pa.string())]
)
EVENT_PARTITIONS = ("date", "type")
MATCH_PARTITIONS = ("date", "query")


_SPARK_TYPES = {pa.string(): "string", pa.int64(): "bigint", pa.float64(): "double"}


class ArchiveError(ValueError):
    """An archive file or row that cannot be read; the message names the file or the row's event.  The readers
    raise only this (found by fuzzing: Arrow's own errors, invalid UTF-8, a row whose ``attrs`` is not JSON)."""


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL of an archive schema (for writers that produce archive rows inside Spark)."""
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in schema)


def utc_day(ts: float) -> str:
    """The UTC date of epoch seconds, as the partition value."""
    try:
        return datetime.fromtimestamp(ts, UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return "invalid"


def new_batch_id() -> str:
    """Unique and sortable by creation time."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"{stamp}-{secrets.token_hex(4)}"


def _string(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def event_row(obj: Mapping[str, Any], seq: int, tick: float = 0.1) -> dict[str, Any]:
    """One archive row of a JSON event; raises ``engine.EventError`` on an invalid one (the engine decides)."""
    from engine.events import decoder_for

    ev = decoder_for(tick).event(obj, seq)
    row: dict[str, Any] = {"seq": seq, "id": ev.id, "type": ev.type, "ts": ev.ts, "lo": ev.lo, "hi": ev.hi}
    attrs = ev.attrs
    for name in STRING_ATTRS:
        row[name] = _string(attrs.get(name))
    for name in NUMBER_ATTRS:
        row[name] = _number(attrs.get(name))
    row["attrs"] = json.dumps(attrs, separators=(",", ":"), default=str)
    row["date"] = utc_day(ev.ts)
    return row


def match_row(record: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """One archive row of a match record (docs/semantics.md section 5)."""
    returned = record.get("return") or {}
    row: dict[str, Any] = {
        "seq": seq,
        "id": _string(record.get("id")),
        "extends": _string(record.get("extends")),
        "query": str(record["query"]),
        "match": match_text(record["match"]),
        "confidence": float(record.get("confidence", 1.0)),
        "start": float(record["start"]),
        "end": float(record["end"]),
        "return": return_text(returned),
    }
    for name in RETURN_STRINGS:
        row[name] = _string(returned.get(name)) if isinstance(returned, Mapping) else None
    row["date"] = utc_day(row["start"])
    return row


def record_from_row(row: Mapping[str, Any]) -> MatchRecord:
    """The match record of an archive row (inverse of :func:`match_row`): a growing run's increment keeps its
    ``id`` and ``extends`` (an archive written before increments has neither column: whole records)."""
    return record_of_row(row, id_column="id", return_column="return")


def event_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON event of an archive row (inverse of :func:`event_row`: the engine rebuilds the same Event)."""
    obj: dict[str, Any] = {"type": row["type"], "ts": row["ts"], "id": row["id"]}
    if row["lo"] != row["ts"] or row["hi"] != row["ts"]:
        obj["lo"], obj["hi"] = row["lo"], row["hi"]
    attrs = row.get("attrs")
    if attrs:
        try:
            extra = json.loads(attrs)
        except (ValueError, RecursionError) as err:
            raise ArchiveError(f"event {row.get('id')!r}: its attrs are not JSON ({str(err)[:80]})") from None
        if not isinstance(extra, dict):
            raise ArchiveError(f"event {row.get('id')!r}: its attrs are not a JSON object")
        obj.update(extra)
    return obj


def is_match_record(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "query" in obj and "match" in obj and "type" not in obj


class ArchiveWriter:
    """Buffers events and matches and writes them as new Parquet files every ``flush_rows`` rows (and on close).

    ``hcep archive`` uses it over files; the streaming service can hand it each event and match as they pass.
    """

    def __init__(self, root: str | os.PathLike[str], *, tick: float = 0.1, flush_rows: int = 200_000) -> None:
        self.root = Path(root)
        self.tick = tick
        self.flush_rows = flush_rows
        self.run = new_batch_id()
        self.flushes = 0
        self.events: list[dict[str, Any]] = []
        self.matches: list[dict[str, Any]] = []
        self.event_count = 0
        self.match_count = 0
        self.files = 0
        self._seq = 0  # events' input position over the writer's life: the default id, and the tie-break order
        self._match_seq = 0

    @property
    def next_seq(self) -> int:
        """The input position (default id) the next event gets."""
        return self._seq

    def add_event(self, obj: Mapping[str, Any]) -> None:
        self.events.append(event_row(obj, self._seq, self.tick))
        self._seq += 1
        if len(self.events) + len(self.matches) >= self.flush_rows:
            self.flush()

    def add_match(self, record: Mapping[str, Any]) -> None:
        self.matches.append(match_row(record, self._match_seq))
        self._match_seq += 1
        if len(self.events) + len(self.matches) >= self.flush_rows:
            self.flush()

    def add_events(self, objs: Iterable[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.add_event(obj)

    def add_matches(self, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self.add_match(record)

    def flush(self) -> None:
        """Write what is buffered as new files; the next rows get a new batch id."""
        if not self.events and not self.matches:
            return
        batch = f"{self.run}-{self.flushes:06d}"
        self.flushes += 1
        if self.events:
            self.files += _write(self.root / EVENTS_DIR, self.events, EVENT_SCHEMA, EVENT_PARTITIONS, batch)
            self.event_count += len(self.events)
            self.events = []
        if self.matches:
            self.files += _write(self.root / MATCHES_DIR, self.matches, MATCH_SCHEMA, MATCH_PARTITIONS, batch)
            self.match_count += len(self.matches)
            self.matches = []

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()


def _write(base: Path, rows: list[dict[str, Any]], schema: pa.Schema, partitions: tuple[str, ...], batch: str) -> int:
    for row in rows:
        row["batch"] = batch
    table = pa.Table.from_pylist(rows, schema=schema)
    written: list[str] = []
    ds.write_dataset(
        table,
        base,
        format="parquet",
        partitioning=ds.partitioning(pa.schema([(p, pa.string()) for p in partitions]), flavor="hive"),
        basename_template=f"part-{batch}-{{i}}.parquet",
        existing_data_behavior="overwrite_or_ignore",
        file_visitor=lambda f: written.append(f.path),
    )
    return len(written)


def read_table(root: str | os.PathLike[str], kind: str = EVENTS_DIR) -> pa.Table:
    """The whole events (or matches) table of an archive, partition columns included, in input order."""
    base = Path(root) / kind
    partitions = EVENT_PARTITIONS if kind == EVENTS_DIR else MATCH_PARTITIONS
    schema = EVENT_SCHEMA if kind == EVENTS_DIR else MATCH_SCHEMA
    if not base.is_dir():
        return schema.empty_table()
    try:
        dataset = ds.dataset(
            base,
            format="parquet",
            schema=schema,
            partitioning=ds.partitioning(pa.schema([(p, pa.string()) for p in partitions]), flavor="hive"),
        )
        table = dataset.to_table()
        table.validate(full=True)  # e.g. invalid UTF-8 in a string column: an error here, not when rows are read
        return table.sort_by([("batch", "ascending"), ("seq", "ascending")])
    except (pa.ArrowException, OSError, ValueError) as err:
        raise ArchiveError(f"{base}: unreadable archive: {str(err).splitlines()[0] if str(err) else err!r}") from None
