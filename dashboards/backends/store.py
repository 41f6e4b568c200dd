"""The SQLite store of ``hcep run`` (``app.store``), opened read-only.

Why read the tables with SQL instead of ``app.store.Store``: the dashboard must never write to the service's store
(or create it), and it reads only columns that exist, so an older or newer schema degrades to fewer columns, not an
error.  Tables used: ``matches`` (``record`` = the match record JSON), ``alerts`` (the webhook outbox), ``deadletter``
(counted), ``query_stats`` when the service keeps one (runs alive, shed counts per query), and ``events`` (the
consumed Ganglia events the overview plots: LoadStd, Balance, Imbalance and downsampled load ``Metric`` samples; the
newest :data:`EVENTS_LIMIT` are read).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd

from dashboards import alerts, records

#: The newest rows of the ``events`` table read per load (the service keeps it bounded too).
EVENTS_LIMIT = 50_000


class StoreBackend:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"store:{self.path}"

    def version(self) -> tuple:
        out = []
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((suffix, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def _connect(self) -> sqlite3.Connection | None:
        if not self.path.is_file():
            return None
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0)
            db.execute("PRAGMA busy_timeout = 5000")
            return db
        except sqlite3.Error:
            return None

    @staticmethod
    def _columns(db: sqlite3.Connection, table: str) -> list[str]:
        return [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]

    def _rows(self, db: sqlite3.Connection, table: str, wanted: tuple[str, ...]) -> list[dict[str, Any]]:
        have = self._columns(db, table)
        cols = [c for c in wanted if c in have]
        if not cols:
            return []
        sql = "SELECT " + ", ".join(f'"{c}"' for c in cols) + f' FROM "{table}"'
        return [dict(zip(cols, row, strict=True)) for row in db.execute(sql)]

    def load(self) -> dict[str, pd.DataFrame]:
        db = self._connect()
        empty = {"matches": records.matches_frame([]), "events": records.events_frame([]),
                 "alerts": alerts.alerts_frame([]), "stats": pd.DataFrame()}
        if db is None:
            return empty
        try:
            match_rows = []
            for row in self._rows(db, "matches", ("id", "record", "emitted_at")):
                try:
                    record = json.loads(row.get("record") or "")
                except ValueError:
                    continue
                m = records.match_row(record, "store", row.get("id"))
                if m is not None:
                    m["emitted_at"] = row.get("emitted_at")
                    match_rows.append(m)
            outbox = self._rows(db, "alerts", ("id", "query", "severity", "alert", "status", "created_at"))
            stats = pd.DataFrame(self._rows(db, "query_stats", ("ts", "query", "runs", "shed", "events", "matches")))
            event_rows = self._events(db)
            dead = self._rows(db, "deadletter", ("reason",))
            if dead:
                stats.attrs["deadletter"] = len(dead)
        except sqlite3.Error:
            return empty
        finally:
            db.close()
        return {"matches": records.matches_frame(match_rows), "events": records.events_frame(event_rows),
                "alerts": alerts.from_outbox(outbox), "stats": stats}

    def _events(self, db: sqlite3.Connection) -> list[dict[str, Any]]:
        have = self._columns(db, "events")
        if not {"id", "event", "ts"} <= set(have):
            return []  # a store written before the service kept events
        sql = 'SELECT id, event FROM "events" ORDER BY ts DESC LIMIT ?'
        out = []
        for position, (rid, text) in enumerate(db.execute(sql, (EVENTS_LIMIT,))):
            try:
                obj = json.loads(text or "")
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("id") is None:
                obj["id"] = rid
            row = records.event_row(obj, position)
            if row is not None:
                out.append(row)
        return out
