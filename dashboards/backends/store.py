"""The SQLite store of ``hcep run``, read through :class:`contracts.store.StoreReader` (read-only, never created).

Why the contracts' reader and not ``app.store.Store``: the dashboard must never write to the service's store (or
create or migrate it), and it must not import the service; the reader reads only the columns that exist, so an older
or newer schema degrades to fewer columns, not an error.  Tables used: ``matches`` (the match records), ``alerts``
(one row per alert transition, with its delivery status), ``deadletter`` (counted), ``query_stats`` (runs alive, shed
counts per query) and ``events`` (the consumed Ganglia events the overview plots: LoadStd, Balance, Imbalance and
downsampled load ``Metric`` samples; the newest :data:`EVENTS_LIMIT` are read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from contracts.store import StoreReader
from dashboards import alerts, records

#: The newest rows of the ``events`` table read per load (the service keeps it bounded too).
EVENTS_LIMIT = 50_000


class StoreBackend:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"store:{self.path}"
        self.reader = StoreReader(self.path)

    def version(self) -> tuple[Any, ...]:
        return self.reader.version()

    def load(self) -> dict[str, pd.DataFrame]:
        # A reader of its own per load: a reader used as a context manager keeps its connection on itself, and two
        # page runs (two browser tabs, or a rerun starting while the last one stops) may load at once.
        with StoreReader(self.path) as store:
            match_rows = []
            for rid, record, emitted_at in store.matches():
                m = records.match_row(record, "store", rid or None)
                if m is not None:
                    m["emitted_at"] = emitted_at
                    match_rows.append(m)
            transitions = [alerts.row_of(t.alert, "store", t.seq, t.delivery, t.id) for t in store.alert_transitions()]
            stats = pd.DataFrame(store.query_stats())
            stats.attrs["deadletter"] = store.deadletter_count()
            event_rows = []
            for position, obj in enumerate(store.events(EVENTS_LIMIT)):
                row = records.event_row(obj, position)
                if row is not None:
                    event_rows.append(row)
        return {
            "matches": records.matches_frame(match_rows),
            "events": records.events_frame(event_rows),
            "alerts": alerts.transitions_frame(transitions),
            "stats": stats,
        }
