"""The local store: SQLite in WAL mode under a data dir, read by the dashboard, written by ``hcep run``.

Why SQLite: one file, readers (dashboard) never block the writer (WAL), and one transaction can hold a checkpoint's
match records, alert outbox rows, dead letters and consumer offsets together -- the atomicity the exactly-once
argument of :mod:`app.checkpoint` rests on.  ``synchronous=NORMAL``: a committed checkpoint survives the process
being killed (kill -9); only a power cut may lose the last one, and replay then redoes it.

The schema (tables, version, migrations) and the typed rows a checkpoint writes are :mod:`contracts.schema`, shared
with the read-only :class:`contracts.store.StoreReader`.  ``events`` is pruned here: kept for ``events_keep_seconds``
of event time and at most about ``events_max_rows`` rows (the oldest go first).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.testhooks import crash_point
from contracts.alerts import post_key
from contracts.records import MatchRecord
from contracts.schema import (
    MIGRATIONS,
    SCHEMA,
    SCHEMA_VERSION,
    STORE_FILE,
    AlertRow,
    AlertStateRow,
    CheckpointRow,
    DeadLetterRow,
    EventRow,
    MatchRow,
    OffsetRow,
)

__all__ = [
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STORE_FILE",
    "AlertRow",
    "AlertStateRow",
    "Batch",
    "CheckpointRow",
    "DeadLetterRow",
    "EventRow",
    "MatchRow",
    "OffsetRow",
    "Post",
    "Store",
    "store_path",
    "unwritable",
]

STATS_RETENTION = 7 * 86400.0  # seconds of query_stats kept
EVENTS_KEEP_SECONDS = 86400.0  # event time kept in the events table, behind its newest event
EVENTS_MAX_ROWS = 200_000  # rows kept in the events table (checked every EVENTS_MAX_ROWS // 10 inserts)


@dataclass
class Batch:
    """What one checkpoint writes, in one transaction."""

    matches: Sequence[MatchRow]
    alerts: Sequence[AlertRow]
    deadletters: Sequence[DeadLetterRow]
    offsets: Sequence[OffsetRow]
    checkpoint: CheckpointRow | None
    events: Sequence[EventRow] = field(default_factory=list)
    alert_state: AlertStateRow | None = None


@dataclass
class Post:
    """One POST of the webhook outbox: its ``Idempotency-Key`` (:func:`contracts.alerts.post_key` of its transition
    ids), the webhook, and its ``(transition id, webhook entry JSON)`` rows, in the order they are sent."""

    key: str
    webhook: str
    rows: list[tuple[str, str]]


def unwritable(err: BaseException) -> str | None:
    """The cause, when ``err`` says that the store (or a file beside it) cannot be written for now: ``disk full``
    (SQLITE_FULL, ENOSPC), ``quota exceeded`` (EDQUOT) or ``I/O error`` (SQLITE_IOERR_*, EIO).  The writer waits and
    retries: nothing is lost, a failed transaction is rolled back whole.  None for anything else (a bug, a corrupt
    file): that is raised."""
    if isinstance(err, sqlite3.Error):
        code = getattr(err, "sqlite_errorcode", None)
        if code is None:
            return "disk full" if "disk is full" in str(err) else None
        if code & 0xFF == sqlite3.SQLITE_FULL:
            return "disk full"
        if code & 0xFF == sqlite3.SQLITE_IOERR:
            return "I/O error"
        return None
    if isinstance(err, OSError):
        return {errno.ENOSPC: "disk full", errno.EDQUOT: "quota exceeded", errno.EIO: "I/O error"}.get(err.errno or 0)
    return None


def _rollback(db: sqlite3.Connection) -> None:
    """Roll back the transaction the caller began, if SQLite has not already: on SQLITE_FULL and most I/O errors it
    rolls back by itself, and a ROLLBACK then would raise over the real error."""
    if db.in_transaction:
        db.execute("ROLLBACK")


#: How long opening a store keeps trying to switch it to WAL while another process does the same.
WAL_SWITCH_SECONDS = 30.0


def _switch_to_wal(db: sqlite3.Connection, seconds: float) -> None:
    """``PRAGMA journal_mode = WAL``, tried again while another connection holds the lock.

    Two processes opening one new store at once (``hcep run`` instances sharing a data dir) both switch its journal
    mode; SQLite answers the loser "database is locked" at once, without calling the busy handler (the lock it would
    wait for is one its own shared lock blocks), so the busy timeout does not cover it."""
    deadline = time.monotonic() + seconds
    delay = 0.01
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def store_path(data_dir: str) -> str:
    return os.path.join(data_dir, STORE_FILE)


class Store:
    """One connection (use one per thread)."""

    def __init__(self, path: str, *, readonly: bool = False) -> None:
        self.path = path
        if not readonly:
            os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        self.db = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
        self.db.execute("PRAGMA busy_timeout = 30000")
        if not readonly:
            _switch_to_wal(self.db, WAL_SWITCH_SECONDS)
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        self.events_keep_seconds = EVENTS_KEEP_SECONDS
        self.events_max_rows = EVENTS_MAX_ROWS
        self._events_unchecked = EVENTS_MAX_ROWS  # inserts since the row cap was last checked (check at once)

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        """Create the tables, then bring an older store up to :data:`SCHEMA_VERSION`, in one transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path}: store schema version {version} is newer than this hcep's "
                    f"({SCHEMA_VERSION}); upgrade hcep or use another --data-dir"
                )
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            for step in range(max(version, 1), SCHEMA_VERSION):
                for table, column, kind in MIGRATIONS.get(step, []):
                    have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                    if column not in have:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    # ------------------------------------------------------------------ checkpoint
    def commit(self, batch: Batch) -> int:
        """Write a checkpoint atomically; return how many alerts were new (ids seen before are ignored)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            crash_point("checkpoint", "after BEGIN")
            if batch.matches:
                db.executemany(
                    'INSERT OR IGNORE INTO matches (id, query, pack, confidence, start, "end", record, emitted_at,'
                    " instance, extends) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [m if len(m) == 10 else (*m, None) for m in batch.matches],  # rows written before extends
                )
                crash_point("checkpoint", "after matches")
            new_alerts = 0
            if batch.alerts:
                before = db.total_changes
                db.executemany(
                    "INSERT OR IGNORE INTO alerts (id, query, webhook, severity, alert, status, next_at, created_at,"
                    " owner, fingerprint, state, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    batch.alerts,
                )
                new_alerts = db.total_changes - before
                crash_point("checkpoint", "after alerts")
            if batch.deadletters:
                db.executemany(
                    'INSERT OR IGNORE INTO deadletter (topic, partition, "offset", idx, reason, event, at)'
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    batch.deadletters,
                )
                crash_point("checkpoint", "after dead letters")
            if batch.events:
                self._add_events(batch.events)
                crash_point("checkpoint", "after events")
            now = time.time()
            for o in batch.offsets:
                db.execute(
                    "INSERT OR REPLACE INTO offsets (scope, topic, partition, position, rebuild_from, newest, writer,"
                    " seq, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        o.scope,
                        o.topic,
                        o.partition,
                        o.position,
                        o.rebuild_from,
                        _finite(o.newest),
                        o.writer,
                        o.seq,
                        now,
                    ),
                )
            crash_point("checkpoint", "after offsets")
            if batch.alert_state is not None:
                scope, state, owner = batch.alert_state
                db.execute(
                    "INSERT OR REPLACE INTO alert_state (scope, state, updated_at, owner) VALUES (?, ?, ?, ?)",
                    (scope, state, now, owner),
                )
            crash_point("checkpoint", "after alert state")
            c = batch.checkpoint
            if c is not None:
                db.execute(
                    "INSERT OR REPLACE INTO checkpoints (scope, seq, released, horizon, assignment, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (c.scope, c.seq, json.dumps(c.released), _finite(c.horizon), json.dumps(c.assignment), now),
                )
            crash_point("checkpoint", "before COMMIT")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        return new_alerts

    def _add_events(self, rows: Sequence[EventRow]) -> None:
        """Insert (ids seen before are ignored) and prune, inside the caller's transaction.  The time rule is one
        indexed range delete; the row cap costs a COUNT, so it runs once per ``events_max_rows // 10`` inserts."""
        db = self.db
        db.executemany(
            "INSERT OR IGNORE INTO events (id, type, ts, host, event, instance) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
        newest = max(r[2] for r in rows)
        db.execute("DELETE FROM events WHERE ts < ?", (newest - self.events_keep_seconds,))
        self._events_unchecked += len(rows)
        if self._events_unchecked >= max(1, self.events_max_rows // 10):
            self._events_unchecked = 0
            excess = db.execute("SELECT COUNT(*) FROM events").fetchone()[0] - self.events_max_rows
            if excess > 0:
                db.execute(
                    "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events ORDER BY ts LIMIT ?)", (excess,)
                )

    def checkpoint(self, scope: str) -> CheckpointRow | None:
        row = self.db.execute(
            "SELECT scope, seq, released, horizon, assignment FROM checkpoints WHERE scope = ?", (scope,)
        ).fetchone()
        if row is None:
            return None
        return CheckpointRow(
            row[0], row[1], json.loads(row[2]) if row[2] else None, row[3], json.loads(row[4]) if row[4] else []
        )

    def alert_state(self, scope: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT state FROM alert_state WHERE scope = ?", (scope,)).fetchone()
        return json.loads(row[0]) if row else None

    def adopt_alert_states(self, owner: str, now: float, silent_for: float) -> list[dict[str, Any]]:
        """Take (read and delete, in one transaction) the alert-rule states of processes whose sender has been silent
        for ``silent_for`` seconds: their open alerts and holds live on in the adopter, which took their partitions
        (as :meth:`adopt_orphans` does for their undelivered alerts)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            rows = self.db.execute(
                "SELECT scope, state FROM alert_state WHERE owner IS NOT NULL AND owner != ? AND owner IN"
                " (SELECT owner FROM senders WHERE heartbeat_at < ?)",
                (owner, now - silent_for),
            ).fetchall()
            for scope, _state in rows:
                self.db.execute("DELETE FROM alert_state WHERE scope = ?", (scope,))
            self.db.execute("COMMIT")
        except BaseException:
            _rollback(self.db)
            raise
        return [json.loads(state) for _scope, state in rows]

    def open_alerts(self) -> list[dict[str, Any]]:
        """The alerts firing now: per fingerprint the latest transition, when it is a firing one (webhook JSON)."""
        rows = self.db.execute(
            "SELECT a.alert FROM alerts a JOIN (SELECT fingerprint, MAX(rowid) AS last FROM alerts"
            " WHERE fingerprint IS NOT NULL GROUP BY fingerprint) l ON a.rowid = l.last WHERE a.state = 'firing'"
            " ORDER BY a.starts_at"
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def recent_resolved(self, since: float) -> list[dict[str, Any]]:
        """Resolved transitions written at or after ``since`` (wall clock), oldest first."""
        rows = self.db.execute(
            "SELECT alert FROM alerts WHERE state = 'resolved' AND created_at >= ? ORDER BY rowid", (since,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def offset(self, scope: str, topic: str, partition: int) -> OffsetRow | None:
        row = self.db.execute(
            "SELECT scope, topic, partition, position, rebuild_from, newest, writer, seq FROM offsets"
            " WHERE scope = ? AND topic = ? AND partition = ?",
            (scope, topic, partition),
        ).fetchone()
        return OffsetRow._make(row) if row else None

    def deadletter_offsets(self, topic: str, partition: int, lo: int, hi: int) -> set[tuple[int, int]]:
        """``{(offset, idx)}`` dead-lettered in ``[lo, hi)``: a replay skips them to repeat the same decisions."""
        rows = self.db.execute(
            'SELECT "offset", idx FROM deadletter WHERE topic = ? AND partition = ? AND "offset" >= ? AND "offset" < ?',
            (topic, partition, lo, hi),
        )
        return {(r[0], r[1]) for r in rows}

    # ------------------------------------------------------------------ outbox (alerts)
    def due_alerts(self, owner: str, now: float, limit: int = 100) -> list[tuple[str, str, str]]:
        """``(id, webhook, alert_json)`` of pending alerts whose next attempt is due, oldest first."""
        return self.db.execute(
            "SELECT id, webhook, alert FROM alerts WHERE owner = ? AND status = 'pending' AND next_at <= ?"
            " ORDER BY next_at, created_at LIMIT ?",
            (owner, now, limit),
        ).fetchall()

    def due_posts(self, owner: str, now: float, batch: int, limit: int = 200) -> list[Post]:
        """The POSTs to try now, oldest first: first those composed before (a try failed, or a crash came between
        the receiver's answer and :meth:`mark_delivered`), each with exactly the transitions it had, so that it goes
        out again under the same ``Idempotency-Key``; then new ones, of up to ``batch`` due transitions of one
        webhook, whose composition is committed (``alerts.post``) before this returns, hence before any is sent.
        A transition is thus carried by one POST and one key only, however often that POST is sent."""
        db = self.db
        posts: dict[str, Post] = {}
        rows = db.execute(
            "SELECT id, webhook, alert, post FROM alerts WHERE owner = ? AND status = 'pending' AND post IN"
            " (SELECT post FROM alerts WHERE owner = ? AND status = 'pending' AND post IS NOT NULL AND next_at <= ?)"
            " ORDER BY rowid",
            (owner, owner, now),
        ).fetchall()
        for tid, hook, alert, key in rows:
            posts.setdefault(key, Post(key, hook, [])).rows.append((tid, alert))
        fresh = "SELECT id, webhook, alert FROM alerts WHERE owner = ? AND status = 'pending' AND post IS NULL"
        fresh += " AND next_at <= ? ORDER BY next_at, created_at LIMIT ?"
        if db.execute(fresh, (owner, now, 1)).fetchone() is None:
            return list(posts.values())
        db.execute("BEGIN IMMEDIATE")  # read again under the write lock: an adoption may have moved rows meanwhile
        try:
            by_hook: dict[str, list[tuple[str, str]]] = {}
            for tid, hook, alert in db.execute(fresh, (owner, now, limit)).fetchall():
                by_hook.setdefault(hook, []).append((tid, alert))
            for hook, hook_rows in by_hook.items():
                for i in range(0, len(hook_rows), max(1, batch)):
                    chunk = hook_rows[i : i + max(1, batch)]
                    key = post_key(tid for tid, _ in chunk)
                    db.executemany(
                        "UPDATE alerts SET post = ? WHERE id = ? AND post IS NULL", [(key, tid) for tid, _ in chunk]
                    )
                    posts[key] = Post(key, hook, chunk)
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        return list(posts.values())

    def heartbeat(self, owner: str, now: float) -> None:
        self.db.execute("INSERT OR REPLACE INTO senders (owner, heartbeat_at) VALUES (?, ?)", (owner, now))

    def adopt_orphans(self, owner: str, now: float, silent_for: float) -> int:
        """Take over the pending alerts of senders silent for ``silent_for`` seconds (a process that died for good
        and whose partitions another process now reads): the outbox loses nothing when its writer is gone."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(
                "UPDATE alerts SET owner = ? WHERE status = 'pending' AND owner != ? AND owner IN"
                " (SELECT owner FROM senders WHERE heartbeat_at < ?)",
                (owner, owner, now - silent_for),
            )
            self.db.execute("COMMIT")
        except BaseException:
            _rollback(self.db)
            raise
        return cur.rowcount

    def next_due(self, owner: str) -> float | None:
        row = self.db.execute(
            "SELECT MIN(next_at) FROM alerts WHERE owner = ? AND status = 'pending'", (owner,)
        ).fetchone()
        return row[0] if row else None

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(sql, rows)
            self.db.execute("COMMIT")
        except BaseException:
            _rollback(self.db)
            raise

    def mark_delivered(self, ids: Sequence[str], now: float) -> None:
        self._many(
            "UPDATE alerts SET status = 'delivered', delivered_at = ?, attempts = attempts + 1,"
            " last_error = NULL WHERE id = ?",
            [(now, i) for i in ids],
        )

    def mark_failed(self, ids: Sequence[str], error: str, next_at: Iterable[float]) -> None:
        self._many(
            "UPDATE alerts SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE id = ?",
            [(error[:500], n, i) for i, n in zip(ids, next_at, strict=True)],
        )

    def attempts(self, ids: Sequence[str]) -> dict[str, int]:
        marks = ",".join("?" * len(ids))
        return dict(self.db.execute(f"SELECT id, attempts FROM alerts WHERE id IN ({marks})", list(ids)).fetchall())

    # ------------------------------------------------------------------ statistics
    def add_query_stats(
        self, rows: Sequence[tuple[float, str, int, int]], instance: str = "", keep_seconds: float = STATS_RETENTION
    ) -> None:
        """Append ``(ts, query, runs alive, partial matches shed)`` rows; drop rows older than ``keep_seconds``."""
        if not rows:
            return
        self._many(
            "INSERT INTO query_stats (ts, query, runs, shed, instance) VALUES (?, ?, ?, ?, ?)",
            [(*row, instance) for row in rows],
        )
        self.db.execute("DELETE FROM query_stats WHERE ts < ?", (max(r[0] for r in rows) - keep_seconds,))

    # ------------------------------------------------------------------ matches topic
    def unpublished(self, instance: str, limit: int = 10000) -> list[tuple[str, str, str]]:
        return self.db.execute(
            "SELECT id, query, record FROM matches WHERE instance = ? AND published = 0 ORDER BY emitted_at LIMIT ?",
            (instance, limit),
        ).fetchall()

    def mark_published(self, ids: Sequence[str]) -> None:
        self._many("UPDATE matches SET published = 1 WHERE id = ?", [(i,) for i in ids])

    # ------------------------------------------------------------------ readers (dashboard, tests)
    def recent_matches(self, limit: int = 100, query: str | None = None) -> list[MatchRecord]:
        """The newest stored match records (their JSON, as written), newest first."""
        sql = "SELECT record FROM matches"
        args: list[Any] = []
        if query:
            sql += " WHERE query = ?"
            args.append(query)
        sql += " ORDER BY emitted_at DESC LIMIT ?"
        args.append(limit)
        return [json.loads(r[0]) for r in self.db.execute(sql, args)]

    def recent_events(self, limit: int = 1000, types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The newest stored events (their JSON), oldest first."""
        sql = "SELECT id, event FROM events"
        args: list[Any] = []
        if types:
            sql += f" WHERE type IN ({','.join('?' * len(types))})"
            args.extend(types)
        sql += " ORDER BY ts DESC LIMIT ?"
        args.append(limit)
        out = []
        for rid, text in reversed(self.db.execute(sql, args).fetchall()):
            obj = json.loads(text)
            obj.setdefault("id", rid)
            out.append(obj)
        return out

    def alert_rows(self, status: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT id, query, webhook, severity, status, attempts, created_at, delivered_at, last_error FROM alerts"
        args: tuple[Any, ...] = ()
        if status:
            sql += " WHERE status = ?"
            args = (status,)
        cols = ("id", "query", "webhook", "severity", "status", "attempts", "created_at", "delivered_at", "last_error")
        return [dict(zip(cols, r, strict=True)) for r in self.db.execute(sql + " ORDER BY created_at", args)]

    def counts(self) -> dict[str, int]:
        one = self.db.execute
        return {
            "matches": one("SELECT COUNT(*) FROM matches").fetchone()[0],
            "alerts": one("SELECT COUNT(*) FROM alerts").fetchone()[0],
            "alerts_pending": one("SELECT COUNT(*) FROM alerts WHERE status = 'pending'").fetchone()[0],
            "alerts_delivered": one("SELECT COUNT(*) FROM alerts WHERE status = 'delivered'").fetchone()[0],
            "deadletter": one("SELECT COUNT(*) FROM deadletter").fetchone()[0],
            "events": one("SELECT COUNT(*) FROM events").fetchone()[0],
        }


def _finite(x: float | None) -> float | None:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return x
