"""Reading the store of ``hcep run`` (SQLite, written by ``app.store``) without writing to it: :class:`StoreReader`.

Why here and not in ``app``: the dashboard, the demo and tools read the store, and they must not import the service
to do it (nor be able to create, migrate or lock the file).  The reader opens the file read-only (``mode=ro``), reads
only the columns that exist -- a store of an older schema version gives fewer fields, not an error -- and hands back
plain data and :class:`contracts.alerts.Alert` objects.  The schema (tables, version, migrations, typed rows) is
:mod:`contracts.schema`, next to this reader; the writer is ``app.store``.

Alerts: the ``alerts`` table holds one row per alert *transition* (fired, severity changed, resolved), in the order
they were decided (``rowid``); ``alert`` is the transition as an Alertmanager v4 webhook entry.  An alert is open
when the latest transition of its fingerprint is a firing one (:meth:`StoreReader.open_alerts`, as
``app.store.Store.open_alerts``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from contracts.alerts import Alert
from contracts.records import MatchRecord, follow_chain, merge_chain, whole


@dataclass(frozen=True, slots=True)
class AlertTransition:
    """One row of the store's ``alerts`` table: the transition and what the outbox knows of its delivery."""

    seq: int  #: the row's position (SQLite ``rowid``): later transitions have larger ones
    id: str  #: the transition id (``Alert.transition_id``; entries carry it in ``annotations.transition_id``)
    alert: Alert
    delivery: str  #: the outbox status: ``pending``, ``delivered`` or ``unrouted`` (no webhook configured)
    webhook: str
    created_at: float | None  #: wall clock of the checkpoint that wrote it
    delivered_at: float | None


class StoreReader:
    """Read-only access to one store file.  Each read opens a connection of its own (cheap for SQLite) unless used
    as a context manager, which keeps one open; a missing file reads as empty."""

    def __init__(self, path: str | Path, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._db: sqlite3.Connection | None = None

    # ------------------------------------------------------------------------------------------------ connections
    def __enter__(self) -> StoreReader:
        self._db = self._connect()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connect(self) -> sqlite3.Connection | None:
        if not self.path.is_file():
            return None
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=self.timeout)
            db.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            return db
        except sqlite3.Error:
            return None

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection | None]:
        if self._db is not None:
            yield self._db
            return
        db = self._connect()
        try:
            yield db
        finally:
            if db is not None:
                db.close()

    def version(self) -> tuple[tuple[str, int, int], ...]:
        """Changes whenever the writer commits (the file's and its WAL's mtime and size): a cache key."""
        out = []
        for suffix in ("", "-wal"):
            try:
                st = Path(str(self.path) + suffix).stat()
            except OSError:
                continue
            out.append((suffix, st.st_mtime_ns, st.st_size))
        return tuple(out)

    # ------------------------------------------------------------------------------------------------ schema
    @staticmethod
    def _columns(db: sqlite3.Connection, table: str) -> list[str]:
        try:
            return [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]
        except sqlite3.Error:
            return []

    def schema_version(self) -> int:
        """The store's ``PRAGMA user_version`` (0 for a missing file or a store older than versioning)."""
        with self._conn() as db:
            if db is None:
                return 0
            try:
                return int(db.execute("PRAGMA user_version").fetchone()[0])
            except sqlite3.Error:
                return 0

    def rows(self, table: str, wanted: tuple[str, ...], order: str = "rowid") -> list[dict[str, Any]]:
        """The ``wanted`` columns that exist of every row of ``table`` (in ``order``), as dicts; [] without it."""
        with self._conn() as db:
            if db is None:
                return []
            have = set(self._columns(db, table))
            cols = [c for c in wanted if c in have]
            if not cols:
                return []
            sql = "SELECT " + ", ".join(f'"{c}"' for c in cols) + f' FROM "{table}"'
            if order == "rowid" or order in have:
                sql += f' ORDER BY "{order}"' if order != "rowid" else " ORDER BY rowid"
            try:
                return [dict(zip(cols, row, strict=True)) for row in db.execute(sql)]
            except sqlite3.Error:
                return []

    # ------------------------------------------------------------------------------------------------ records
    def matches(self) -> list[tuple[str, MatchRecord, float | None]]:
        """``(record id, match record, emitted_at)`` of every stored match record (docs/semantics.md section 5)."""
        out: list[tuple[str, MatchRecord, float | None]] = []
        for row in self.rows("matches", ("id", "record", "emitted_at")):
            try:
                record = json.loads(row.get("record") or "")
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append((str(row.get("id") or ""), cast(MatchRecord, record), row.get("emitted_at")))
        return out

    def record(self, rid: str) -> MatchRecord | None:
        """The stored match record of id ``rid`` (as written: an increment of a growing run lists only what it
        adds, see :meth:`whole_record`), or None."""
        with self._conn() as db:
            return None if db is None else self._record(db, rid)

    @staticmethod
    def _record(db: sqlite3.Connection, rid: str) -> MatchRecord | None:
        try:
            row = db.execute('SELECT record FROM "matches" WHERE id = ?', (rid,)).fetchone()
            record = json.loads(row[0]) if row is not None and row[0] else None
        except (sqlite3.Error, ValueError):
            return None
        return cast(MatchRecord, record) if isinstance(record, dict) else None

    def whole_record(self, rid: str) -> tuple[MatchRecord, bool] | None:
        """The record of id ``rid`` with its whole signature, the chain of a growing run's increments followed
        (docs/semantics.md section 5; a store older than increments holds whole records), and whether the chain was
        complete (False: a record it extends is not in the store); None without the record."""
        with self._conn() as db:
            if db is None:
                return None
            record = self._record(db, rid)
            if record is None:
                return None
            if record.get("extends") is None:
                return record, True
            chain, complete = follow_chain(record, lambda parent: self._record(db, parent))
        return whole(record, merge_chain(chain)), complete

    def events(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` stored events (their JSON, ``id`` filled in from the row), newest first."""
        with self._conn() as db:
            if db is None or not {"id", "event", "ts"} <= set(self._columns(db, "events")):
                return []  # a store written before the service kept events
            out = []
            try:
                cursor = db.execute('SELECT id, event FROM "events" ORDER BY ts DESC LIMIT ?', (limit,))
                for rid, text in cursor:
                    try:
                        obj = json.loads(text or "")
                    except ValueError:
                        continue
                    if isinstance(obj, dict):
                        if obj.get("id") is None:
                            obj["id"] = rid
                        out.append(obj)
            except sqlite3.Error:
                return out
            return out

    def deadletter_count(self) -> int:
        with self._conn() as db:
            if db is None or not self._columns(db, "deadletter"):
                return 0
            try:
                return int(db.execute('SELECT COUNT(*) FROM "deadletter"').fetchone()[0])
            except sqlite3.Error:
                return 0

    def query_stats(self) -> list[dict[str, Any]]:
        """Per query every few seconds: runs alive and what was shed (``ts, query, runs, shed`` and any extras)."""
        return self.rows("query_stats", ("ts", "query", "runs", "shed", "shed_runs", "events", "matches"), "ts")

    def match_counts(self) -> dict[str, int]:
        """Match records per query."""
        with self._conn() as db:
            if db is None or "query" not in self._columns(db, "matches"):
                return {}
            try:
                return dict(db.execute('SELECT query, COUNT(*) FROM "matches" GROUP BY query ORDER BY query'))
            except sqlite3.Error:
                return {}

    # ------------------------------------------------------------------------------------------------ alerts
    def alert_transitions(self) -> list[AlertTransition]:
        """Every alert transition, oldest first (a v1 store's rows, written before transitions, read the same)."""
        out = []
        wanted = ("rowid", "id", "alert", "status", "webhook", "created_at", "delivered_at")
        with self._conn() as db:
            if db is None:
                return []
            have = set(self._columns(db, "alerts"))
            cols = [c for c in wanted if c == "rowid" or c in have]
            if "alert" not in cols:
                return []
            sql = "SELECT " + ", ".join(cols) + ' FROM "alerts" ORDER BY rowid'
            try:
                rows = [dict(zip(cols, row, strict=True)) for row in db.execute(sql)]
            except sqlite3.Error:
                return []
        for row in rows:
            try:
                obj = json.loads(row.get("alert") or "")
                alert = Alert.from_json(obj) if isinstance(obj, dict) else None
            except (ValueError, TypeError):
                alert = None
            if alert is None:
                continue
            out.append(
                AlertTransition(
                    int(row["rowid"]),
                    str(row.get("id") or alert.transition_id),
                    alert,
                    str(row.get("status") or ""),
                    str(row.get("webhook") or ""),
                    row.get("created_at"),
                    row.get("delivered_at"),
                )
            )
        return out

    def open_alerts(self) -> list[Alert]:
        """The alerts firing now: per fingerprint the latest transition, when it is a firing one; oldest first."""
        latest: dict[str, AlertTransition] = {}
        for t in self.alert_transitions():
            latest[t.alert.fingerprint] = t
        firing = [t.alert for t in latest.values() if t.alert.ends_at is None]
        return sorted(firing, key=lambda a: a.starts_at)
