"""The Spark history tables (``hcep history ARCHIVE --out DIR``, :mod:`app.spark.history`): one Parquet directory per
table -- ``durations``, ``skew``, ``queued``, ``anomalies`` -- read with pyarrow (no JVM in the dashboard).

Why apart from the live data: these are aggregates over weeks, recomputed by a batch job, not match records; the views
show them beside the live matches ("this job now" against "jobs like it before").
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pandas as pd


class HistoryTables:
    """Tables under ``root``, each re-read only when its files change."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[Any, ...], pd.DataFrame]] = {}

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.name.startswith((".", "_")) and any(p.rglob("*.parquet"))
        )

    @staticmethod
    def _version(path: Path) -> tuple[Any, ...]:
        files = sorted(path.rglob("*.parquet"))
        return tuple((str(f), f.stat().st_mtime_ns) for f in files)

    def table(self, name: str) -> pd.DataFrame:
        path = self.root / name
        if not path.is_dir():
            return pd.DataFrame()
        try:
            version = self._version(path)
        except OSError:
            return pd.DataFrame()
        with self._lock:
            hit = self._cache.get(name)
            if hit is not None and hit[0] == version:
                return hit[1]
        import pyarrow.dataset as ds

        try:
            frame = ds.dataset(path, format="parquet", partitioning="hive").to_table().to_pandas()
        except (OSError, ValueError):
            frame = pd.DataFrame()
        with self._lock:
            self._cache[name] = (version, frame)
        return frame
