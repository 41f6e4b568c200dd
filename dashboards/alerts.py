"""Alerts as the operator sees them: from the service's outbox when there is one, else derived from the match records
with the pack's alert settings -- plus who acknowledged what.

Why derive: a replayed or batch-matched data dir has match records but no outbox; deriving with the service's own
identity (``app.checkpoint.record_id``) and summary text (``app.alerts.summary_text``) gives the same alert ids and
texts, so acknowledgements carry over when the live store later holds the same alerts.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dashboards.pack import Pack

ALERT_COLUMNS = ["alert_id", "ts", "query", "severity", "summary", "job_id", "task_id", "host", "confidence",
                 "status", "match_id", "source"]
ACK_COLUMNS = ["acked", "acked_by", "acked_at", "ack_note"]
SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}


def alert_id(record: Mapping[str, Any], output: str) -> str:
    """The service's idempotency key of the alert raised by ``record``."""
    from app.checkpoint import record_id

    return record_id(dict(record), output)


def summary(template: str | None, record: Mapping[str, Any]) -> str:
    from app.alerts import summary_text

    return summary_text(template, dict(record))


def derive(matches: pd.DataFrame, pack: Pack) -> pd.DataFrame:
    """One alert per match of a query whose pack entry has ``alert:`` (``distinct`` output: one per RETURN value)."""
    rows: list[dict[str, Any]] = []
    for m in matches.to_dict("records"):
        spec = pack.query(m["query"])
        if spec is None or spec.severity is None:
            continue
        record = {"query": m["query"], "match": m["match"], "return": m["return"], "confidence": m["confidence"],
                  "start": m["start"], "end": m["end"]}
        rows.append({
            "alert_id": alert_id(record, spec.output), "ts": m["end"], "query": m["query"],
            "severity": spec.severity, "summary": summary(spec.summary, record), "job_id": m["job_id"],
            "task_id": m["task_id"], "host": m["host"], "confidence": m["confidence"], "status": "derived",
            "match_id": m["id"], "source": m["source"],
        })
    return alerts_frame(rows)


def from_outbox(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of the store's ``alerts`` table (``alert`` = an Alertmanager alert object) -> alert rows."""
    out = []
    for row in rows:
        try:
            obj = json.loads(row.get("alert") or "{}")
        except ValueError:
            obj = {}
        labels, notes = obj.get("labels") or {}, obj.get("annotations") or {}
        ts = _number(notes.get("event_end"))
        out.append({
            "alert_id": row.get("id"), "ts": ts if ts is not None else _number(row.get("created_at")),
            "query": row.get("query") or labels.get("query"), "severity": row.get("severity") or labels.get("severity"),
            "summary": notes.get("summary", ""), "job_id": labels.get("job_id"), "task_id": labels.get("task_id"),
            "host": labels.get("host"), "confidence": _number(notes.get("confidence")),
            "status": row.get("status") or "", "match_id": None, "source": "store",
        })
    return alerts_frame(out)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def alerts_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=ALERT_COLUMNS)
    frame["ts"] = pd.to_numeric(frame["ts"], errors="coerce")
    frame["confidence"] = pd.to_numeric(frame["confidence"], errors="coerce")
    return frame


def merge(outbox: pd.DataFrame, derived: pd.DataFrame) -> pd.DataFrame:
    """The outbox wins for an id both have (it knows the delivery status); derived rows fill in its match links."""
    if outbox.empty:
        return derived.sort_values("ts", kind="stable").reset_index(drop=True)
    links = derived.set_index("alert_id")
    out = outbox.copy()
    for col in ("job_id", "task_id", "host", "match_id", "confidence"):
        known = out["alert_id"].map(links[col]) if not links.empty else None
        if known is not None:
            out[col] = out[col].where(out[col].notna(), known)
    extra = derived[~derived["alert_id"].isin(out["alert_id"])]
    frames = [f for f in (out, extra) if not f.empty]
    merged = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return merged.sort_values("ts", kind="stable").reset_index(drop=True)


class AckBook:
    """Acknowledgements in a small JSON file ``{alert_id: {by, at, note}}``; writes are atomic (temp file, rename).

    Why a sidecar: the store belongs to ``hcep run`` and the dashboard opens it read-only.
    """

    _lock = threading.Lock()

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None

    @property
    def writable(self) -> bool:
        if self.path is None:
            return False
        target = self.path if self.path.exists() else self.path.parent
        return target.exists() and os.access(target, os.W_OK)

    def read(self) -> dict[str, dict[str, Any]]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def acknowledge(self, ids: Iterable[str], by: str = "operator", note: str = "") -> int:
        """Mark ``ids`` acknowledged (already acknowledged ones keep their first ack); returns how many were new."""
        if self.path is None:
            raise OSError("no place to keep acknowledgements (give the dashboard a data dir)")
        with self._lock:
            book = self.read()
            now = time.time()
            new = 0
            for alert in ids:
                if alert and alert not in book:
                    book[alert] = {"by": by, "at": now, "note": note}
                    new += 1
            if new:
                self._write(book)
            return new

    def unacknowledge(self, ids: Iterable[str]) -> None:
        with self._lock:
            book = self.read()
            for alert in ids:
                book.pop(alert, None)
            self._write(book)

    def _write(self, book: dict[str, Any]) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".acks-", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(book, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def annotate(self, alerts: pd.DataFrame) -> pd.DataFrame:
        """Add the :data:`ACK_COLUMNS` to an alerts frame."""
        book = self.read()
        out = alerts.copy()
        out["acked"] = out["alert_id"].map(lambda a: a in book).astype(bool)
        out["acked_by"] = out["alert_id"].map(lambda a: book.get(a, {}).get("by"))
        out["acked_at"] = pd.to_numeric(out["alert_id"].map(lambda a: book.get(a, {}).get("at")), errors="coerce")
        out["ack_note"] = out["alert_id"].map(lambda a: book.get(a, {}).get("note"))
        return out
