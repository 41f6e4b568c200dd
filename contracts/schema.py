"""The store's schema: its tables, their version and migrations, and one typed row per table that a checkpoint writes.

Why here: the writer (``app.store.Store``, inside ``hcep run``) and the readers (:class:`contracts.store.StoreReader`:
the dashboard, the demo, tools) must agree on the tables without importing each other; this module is that agreement.
The rows are ``NamedTuple``\\ s: typed fields for the code that builds them, and plain tuples for SQLite's parameter
binding (columns in the order of the ``INSERT`` statements of ``app.store``).

Tables (the dashboard may read all of them):

- ``matches``: one row per match record (docs/semantics.md section 5), ``id`` = :func:`contracts.records.record_id`;
- ``alerts``: the durable webhook outbox, one row per alert *transition* (fired, severity changed, resolved; see
  ``app.alerts.rules``), ``id`` = the transition's idempotency key, ``fingerprint`` = the alert's identity (its
  labels), ``state`` firing or resolved, ``starts_at``/``ends_at`` in event time, ``post`` the POST that carries it
  (its ``Idempotency-Key``, :func:`contracts.alerts.post_key`; fixed before its first try, NULL until then);
- ``alert_state``: per process, the alert rules' state (open groups, pending holds) at the last checkpoint;
- ``deadletter``: late and invalid events with the reason;
- ``offsets`` / ``checkpoints``: per partition and per process, what a restart resumes from;
- ``senders``: each process's last sign of life, so that another one can adopt a dead one's undelivered alerts;
- ``query_stats``: per query every few seconds, runs alive and partial matches shed (load shedding), kept a week;
- ``events``: the consumed events the dashboard plots (Ganglia's LoadStd / Balance / Imbalance and a downsampled
  ``Metric`` series of the load metric), ``event`` = the event's JSON.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from contracts.alerts import Alert
from contracts.records import MatchRecord, to_dict

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    id TEXT PRIMARY KEY, query TEXT NOT NULL, pack TEXT, confidence REAL, start REAL, "end" REAL,
    record TEXT NOT NULL, emitted_at REAL NOT NULL, instance TEXT, published INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS matches_by_time ON matches(emitted_at);
CREATE INDEX IF NOT EXISTS matches_unpublished ON matches(instance, published);
CREATE TABLE IF NOT EXISTS alerts (
    id TEXT PRIMARY KEY, query TEXT NOT NULL, webhook TEXT NOT NULL, severity TEXT, alert TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at REAL NOT NULL, created_at REAL NOT NULL,
    delivered_at REAL, last_error TEXT, owner TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS alerts_due ON alerts(owner, status, next_at);
CREATE TABLE IF NOT EXISTS deadletter (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, "offset" INTEGER NOT NULL, idx INTEGER NOT NULL,
    reason TEXT NOT NULL, event TEXT, at REAL NOT NULL, PRIMARY KEY (topic, partition, "offset", idx));
CREATE TABLE IF NOT EXISTS offsets (
    scope TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, position INTEGER NOT NULL,
    rebuild_from INTEGER NOT NULL, newest REAL, writer TEXT, seq INTEGER, updated_at REAL,
    PRIMARY KEY (scope, topic, partition));
CREATE TABLE IF NOT EXISTS senders (owner TEXT PRIMARY KEY, heartbeat_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS query_stats (
    ts REAL NOT NULL, query TEXT NOT NULL, runs INTEGER, shed INTEGER, instance TEXT);
CREATE INDEX IF NOT EXISTS query_stats_by_time ON query_stats(ts);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY, type TEXT NOT NULL, ts REAL NOT NULL, host TEXT, event TEXT NOT NULL, instance TEXT);
CREATE INDEX IF NOT EXISTS events_by_time ON events(ts);
CREATE TABLE IF NOT EXISTS checkpoints (
    scope TEXT PRIMARY KEY, seq INTEGER NOT NULL, released TEXT, horizon REAL, assignment TEXT, updated_at REAL);
CREATE TABLE IF NOT EXISTS alert_state (scope TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at REAL, owner TEXT);
"""

#: The schema's version (``PRAGMA user_version``).  1: the tables above without the alert-transition columns;
#: 2: ``alerts.fingerprint``, ``state``, ``starts_at``, ``ends_at`` and the ``alert_state`` table; 3:
#: ``matches.extends`` (growing runs written as increments, semantics section 5); 4: ``alerts.post`` (a re-sent POST
#: carries the same transitions under the same key).
SCHEMA_VERSION = 4
#: Each step takes the store from version ``n`` to ``n + 1``: ``(table, column, type)`` added where missing.
MIGRATIONS: dict[int, list[tuple[str, str, str]]] = {
    1: [
        ("alerts", "fingerprint", "TEXT"),
        ("alerts", "state", "TEXT"),
        ("alerts", "starts_at", "REAL"),
        ("alerts", "ends_at", "REAL"),
    ],
    2: [("matches", "extends", "TEXT")],
    3: [("alerts", "post", "TEXT")],
}

#: The store's file name inside a data dir.
STORE_FILE = "hcep.sqlite"


class MatchRow(NamedTuple):
    """A ``matches`` row."""

    id: str
    query: str
    pack: str
    confidence: float | None
    start: float | None
    end: float | None
    record: str  #: the record's JSON (docs/semantics.md section 5)
    emitted_at: float
    instance: str
    extends: str | None = None  #: the record this one extends (an increment of a growing run)

    @classmethod
    def of(cls, record: MatchRecord, rid: str, pack: str, emitted_at: float, instance: str) -> MatchRow:
        text = json.dumps(to_dict(record), default=str)
        return cls(
            rid,
            record["query"],
            pack,
            record["confidence"],
            record["start"],
            record["end"],
            text,
            emitted_at,
            instance,
            record.get("extends"),
        )


class AlertRow(NamedTuple):
    """An ``alerts`` (outbox) row: one alert transition and its delivery state."""

    id: str  #: the transition id (:attr:`contracts.alerts.Alert.transition_id`)
    rule: str  #: the rule's name (column ``query``)
    webhook: str
    severity: str
    alert: str  #: the transition as an Alertmanager v4 webhook entry (JSON)
    status: str  #: ``pending`` (to deliver) or ``unrouted`` (no webhook configured)
    next_at: float
    created_at: float
    owner: str
    fingerprint: str
    state: str  #: ``firing`` or ``resolved``
    starts_at: float
    ends_at: float | None

    @classmethod
    def of(cls, alert: Alert, webhook: str, status: str, now: float, owner: str) -> AlertRow:
        return cls(
            alert.transition_id,
            alert.labels.get("alertname", ""),
            webhook,
            alert.severity,
            json.dumps(alert.to_webhook()),
            status,
            now,
            now,
            owner,
            alert.fingerprint,
            alert.status,
            alert.starts_at,
            alert.ends_at,
        )


class DeadLetterRow(NamedTuple):
    """A ``deadletter`` row: where the event was, why it was refused, the event (JSON or the raw text)."""

    topic: str
    partition: int
    offset: int
    idx: int
    reason: str
    event: str
    at: float


class EventRow(NamedTuple):
    """An ``events`` row (the dashboard's plotted events)."""

    id: str
    type: str
    ts: float
    host: str | None
    event: str
    instance: str


class OffsetRow(NamedTuple):
    """One partition's checkpoint: read up to ``position``; replay from ``rebuild_from``; ``newest`` = the newest
    event time (ticks) before ``rebuild_from``, for the lateness rule."""

    scope: str
    topic: str
    partition: int
    position: int
    rebuild_from: int
    newest: float | None
    writer: str
    seq: int


class CheckpointRow(NamedTuple):
    """One process's checkpoint: the release key of the last event fed (K), the horizon (H), the assignment."""

    scope: str
    seq: int
    released: list[Any] | None
    horizon: float | None
    assignment: list[list[Any]]  #: [[topic, partition], ...]


class AlertStateRow(NamedTuple):
    """An ``alert_state`` row: the alert rules' state of one process (JSON)."""

    scope: str
    state: str
    owner: str
