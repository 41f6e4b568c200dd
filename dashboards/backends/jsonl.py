"""A directory of JSON-lines files: match records (as ``hcep match`` prints them), alert transitions (as ``hcep
match --alerts`` prints them, e.g. ``alerts.jsonl``), events, and query statistics.

Why sniff each line instead of naming files: operators drop whatever they have into the directory (``hcep match``
output, ``hcep match --alerts`` output, a collector's output, a replayed trace) and the dashboard sorts it out; a
half-written last line of a file that is still growing is skipped, not an error.  Alert transitions keep their line
order (the order they were decided in), which decides an alert's latest state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from dashboards import alerts, records

SUFFIXES = (".jsonl", ".ndjson")


def classify(obj: Any) -> str | None:
    """``match``, ``alert``, ``event``, ``stats`` or None for one parsed line."""
    if not isinstance(obj, dict):
        return None
    if alerts.is_alert(obj):
        return "alert"
    if "query" in obj and "match" in obj and "type" not in obj:
        return "match"
    if "type" in obj and "ts" in obj:
        return "event"
    if "query" in obj and ("runs" in obj or "shed" in obj):
        return "stats"
    return None


class JsonlBackend:
    """Every ``*.jsonl`` file directly inside ``root``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.name = f"jsonl:{self.root}"

    def files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.suffix in SUFFIXES and p.is_file())

    def version(self) -> tuple[Any, ...]:
        out = []
        for path in self.files():
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((path.name, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {"match": [], "alert": [], "event": [], "stats": []}
        for path in self.files():
            position = 0  # an event's default id is its 0-based position in its file (docs/semantics.md section 1)
            try:
                with path.open("r", encoding="utf-8-sig", errors="replace") as stream:
                    for line in stream:
                        if not line.strip():
                            continue
                        try:
                            obj = json.loads(line)
                        except ValueError:
                            continue
                        kind = classify(obj)
                        if kind == "event":
                            row = records.event_row(obj, position)
                            position += 1
                            if row is not None:
                                row["source"] = path.name
                                found["event"].append(row)
                        elif kind == "match":
                            row = records.match_row(obj, path.name)
                            if row is not None:
                                found["match"].append(row)
                        elif kind == "alert":
                            row = alerts.row_of_json(obj, path.name, len(found["alert"]))
                            if row is not None:
                                found["alert"].append(row)
                        elif kind == "stats":
                            found["stats"].append(obj)
            except OSError:
                continue
        return found

    def load(self) -> dict[str, pd.DataFrame]:
        """All four frames at once (one pass over the files)."""
        found = self._read()
        return {
            "matches": records.matches_frame(found["match"]),
            "events": records.events_frame(found["event"]),
            "alerts": alerts.transitions_frame(found["alert"]),
            "stats": pd.DataFrame(found["stats"]),
        }
