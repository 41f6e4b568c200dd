"""The Parquet archive (``app.spark.archive``: ``ROOT/events``, ``ROOT/matches``, hive-partitioned), and the output
directory of ``hcep stream`` (the same ``matches/`` layout, plus its alert transitions in ``ROOT/alerts/*.jsonl``).

Why the typed columns and not the ``attrs`` JSON: the pages need only the common attributes (job, task, host,
period, val, size...), which the archive already keeps as columns; parsing every event's JSON would dominate a refresh.
The exception: the few Spark events the Spark view reads (application start and end, stage completions, executor
removals: a handful per stage, not one per task) get their attributes from ``attrs``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from dashboards import records
from dashboards.backends.jsonl import JsonlBackend

EVENTS_DIR, MATCHES_DIR, ALERTS_DIR = "events", "matches", "alerts"
#: Event types whose ``attrs`` JSON is expanded (what ``dashboards.spark`` reads of the events).
EXPANDED = frozenset({"SparkAppStart", "SparkAppEnd", "StageCompleted", "ExecutorRemoved"})


def _dataset(path: Path) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(path, format="parquet", partitioning="hive")


class ArchiveBackend:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.name = f"parquet:{self.root}"

    def _parquet_files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(self.root.rglob("*.parquet"))

    def _alerts(self) -> JsonlBackend:
        return JsonlBackend(self.root / ALERTS_DIR)

    def version(self) -> tuple[Any, ...]:
        files = self._parquet_files()
        newest = max((p.stat().st_mtime_ns for p in files), default=0)
        return (len(files), newest, self._alerts().version())

    def _events(self) -> pd.DataFrame:
        path = self.root / EVENTS_DIR
        if not path.is_dir():
            return records.events_frame([])
        try:
            frame = _dataset(path).to_table().to_pandas()
        except (OSError, ValueError):
            return records.events_frame([])
        rows = []
        for row in frame.to_dict("records"):
            attrs = row.pop("attrs", None)
            for key in ("batch", "seq", "date"):
                row.pop(key, None)
            if row.get("type") in EXPANDED and attrs:
                try:
                    extra = json.loads(attrs)
                except (TypeError, ValueError):
                    extra = {}
                row.update({k: v for k, v in extra.items() if row.get(k) is None and not isinstance(v, dict | list)})
            row["source"] = "archive"
            rows.append(row)
        return records.events_frame(rows)

    def _matches(self) -> pd.DataFrame:
        path = self.root / MATCHES_DIR
        if not path.is_dir():
            return records.matches_frame([])
        try:
            frame = _dataset(path).to_table().to_pandas()
        except (OSError, ValueError):
            return records.matches_frame([])
        rows = []
        for r in frame.to_dict("records"):
            try:
                record = {
                    "query": r["query"],
                    "match": json.loads(r["match"]),
                    "return": json.loads(r["return"]),
                    "confidence": r["confidence"],
                    "start": r["start"],
                    "end": r["end"],
                }
                for key in ("id", "extends"):  # a growing run's increments (archives before them lack the columns)
                    if isinstance(r.get(key), str):
                        record[key] = r[key]
            except (KeyError, TypeError, ValueError):
                continue
            row = records.match_row(record, "archive")
            if row is not None:
                rows.append(row)
        return records.matches_frame(rows)

    def load(self) -> dict[str, pd.DataFrame]:
        found = self._alerts().load()["alerts"] if (self.root / ALERTS_DIR).is_dir() else pd.DataFrame()
        return {"matches": self._matches(), "events": self._events(), "alerts": found, "stats": pd.DataFrame()}
