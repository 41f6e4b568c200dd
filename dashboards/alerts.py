"""Alerts as the operator sees them: the transitions the pack's alert rules decided, one alert per rule and group
(a job, a reducer) with its current state, Alertmanager's view of them, and who acknowledged what.

Why transitions: ``hcep run`` writes each alert *transition* (fired, severity changed, resolved) to its store's
``alerts`` table and ``hcep match --alerts`` prints the same transitions (semantics section 8), so the store of the live
service and a data dir of files read the same way.  An alert is open when the latest transition of its fingerprint
(its label set, as Alertmanager identifies alerts) is a firing one.  A severity change resolves the old severity's
alert and fires the new one at the same moment (severity is a label); the view shows a *group* (rule + group labels,
without severity and tier) once, by its latest transition.  The types and ids come from :mod:`contracts.alerts`,
never from ``app``: the dashboard reads what the service wrote, it does not judge records itself.

Acknowledgements are keyed by the alert's fingerprint, so an escalated alert (new severity, new fingerprint) asks
for attention again.
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

from contracts.alerts import SEVERITIES, Alert, fingerprint, severity_rank

ALERT_COLUMNS = [
    "alert_id", "group", "alertname", "severity", "tier", "query", "kind", "job_id", "task_id", "host", "summary",
    "description", "confidence", "value", "starts_at", "ends_at", "ts", "state", "record_id", "evidence", "labels",
    "delivery", "source", "seq", "transition_id",
]  # fmt: skip
ACK_COLUMNS = ["acked", "acked_by", "acked_at", "ack_note"]
#: Display order of severities, most severe first.
SEVERITY_ORDER = {s: i for i, s in enumerate(reversed(SEVERITIES))}
#: Severities an operator is paged for: warning or worse (Alertmanager's convention).
URGENT = frozenset(s for s in SEVERITIES if severity_rank(s) >= severity_rank("warning"))
#: Labels that grade an alert rather than name it: a group is its labels without these.
GRADING_LABELS = ("severity", "tier")


def group_of(labels: Mapping[str, str]) -> str:
    """The alert's group: its rule and group labels without the grading ones (``MapDataSkew{job_id="j1",...}``)."""
    named = sorted((k, v) for k, v in labels.items() if k not in GRADING_LABELS and k != "alertname")
    return labels.get("alertname", "") + "{" + ",".join(f'{k}="{v}"' for k, v in named) + "}"


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _evidence(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(str(text or ""))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def is_alert(obj: Any) -> bool:
    """Is this parsed JSON line an alert object (``hcep match --alerts`` output or a webhook entry)?"""
    return isinstance(obj, dict) and isinstance(obj.get("labels"), dict) and "startsAt" in obj and "type" not in obj


def row_of(alert: Alert, source: str, seq: int, delivery: str = "", transition: str | None = None) -> dict[str, Any]:
    """One transition as a flat row of :data:`ALERT_COLUMNS`."""
    labels, notes = alert.labels, alert.annotations
    evidence = _evidence(notes.get("evidence"))
    return {
        "alert_id": alert.fingerprint,
        "group": group_of(labels),
        "alertname": labels.get("alertname", ""),
        "severity": labels.get("severity", ""),
        "tier": labels.get("tier"),
        "query": labels.get("query") or evidence.get("query"),
        "kind": labels.get("kind") or labels.get("anomaly"),  # older stores: the ``anomaly`` label
        "job_id": labels.get("job_id"),
        "task_id": labels.get("task_id"),
        "host": labels.get("host"),
        "summary": notes.get("summary", ""),
        "description": " ".join(notes.get("description", "").split()),
        "confidence": _number(notes.get("confidence")),
        "value": _number(notes.get("value")),
        "starts_at": alert.starts_at,
        "ends_at": alert.ends_at,
        "ts": alert.ends_at if alert.ends_at is not None else alert.starts_at,
        "state": alert.status,
        "record_id": evidence.get("record_id"),
        "evidence": evidence,
        "labels": dict(labels),
        "delivery": delivery,
        "source": source,
        "seq": seq,
        "transition_id": transition or alert.transition_id,
    }


def row_of_json(obj: Mapping[str, Any], source: str, seq: int, delivery: str = "") -> dict[str, Any] | None:
    """An alert object as sent (Alertmanager v2 ``to_json`` or a v4 webhook entry) -> a row; None if it is not one."""
    try:
        alert = Alert.from_json(dict(obj))
    except (ValueError, TypeError, AttributeError):
        return None
    return row_of(alert, source, seq, delivery) if alert.labels.get("alertname") else None


def transitions_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Transition rows -> a frame of :data:`ALERT_COLUMNS`, in the order they were decided."""
    frame = pd.DataFrame(list(rows), columns=ALERT_COLUMNS)
    for col in ("confidence", "value", "starts_at", "ends_at", "ts"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    frame["seq"] = pd.to_numeric(frame["seq"], errors="coerce").fillna(0).astype("int64")
    if frame.empty:
        return frame
    frame = frame.drop_duplicates("transition_id", keep="first")  # the same transition from two sources
    return frame.sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)


def latest(transitions: pd.DataFrame) -> pd.DataFrame:
    """One row per alert group: its latest transition (``state`` firing = open), plus ``transitions`` (how many the
    group had), ``first_fired`` (when the group first fired) and ``fired_summary`` (the summary of its latest firing
    transition: a resolution's own summary speaks of the record that cleared it, e.g. "0.0 GiB ... not fetched")."""
    extra = {
        "transitions": pd.Series(dtype="int64"),
        "first_fired": pd.Series(dtype="float64"),
        "fired_summary": pd.Series(dtype="object"),
    }
    if transitions.empty:
        return transitions.assign(**extra)
    counts = transitions.groupby("group")["transition_id"].size()
    first = transitions.groupby("group")["starts_at"].min()
    fired = transitions[transitions["state"] == "firing"].drop_duplicates("group", keep="last")
    fired = dict(zip(fired["group"], fired["summary"], strict=True))
    out = transitions.drop_duplicates("group", keep="last").copy()
    out["transitions"] = out["group"].map(counts).astype("int64")
    out["first_fired"] = out["group"].map(first)
    out["fired_summary"] = [fired.get(g, s) for g, s in zip(out["group"], out["summary"], strict=True)]
    return out.reset_index(drop=True)


def sort_for_display(alerts: pd.DataFrame) -> pd.DataFrame:
    """Most severe first, then by job and reducer, then oldest first."""
    if alerts.empty:
        return alerts
    rank = alerts["severity"].map(lambda s: -severity_rank(str(s)))
    return (
        alerts.assign(_r=rank, _j=alerts["job_id"].fillna(""), _t=alerts["task_id"].fillna(""))
        .sort_values(["_r", "_j", "_t", "starts_at"], kind="stable")
        .drop(columns=["_r", "_j", "_t"])
        .reset_index(drop=True)
    )


def with_alertmanager(alerts: pd.DataFrame, manager: pd.DataFrame | None) -> pd.DataFrame:
    """Add ``am_state`` (``active``, ``silenced``, ``inhibited``, ``unprocessed``, or ``not in Alertmanager``) to each
    alert, matched by label set (Alertmanager's own fingerprint is another hash of the same labels)."""
    out = alerts.copy()
    if manager is None:
        out["am_state"] = None
        return out
    states = (
        {
            fingerprint(dict(labels)): am_state(row)
            for labels, row in zip(manager["labels"], manager.to_dict("records"), strict=True)
        }
        if not manager.empty
        else {}
    )
    out["am_state"] = out["alert_id"].map(lambda fp: states.get(fp, "not in Alertmanager"))
    return out


def am_state(row: Mapping[str, Any]) -> str:
    """One word for an Alertmanager alert's status: silenced / inhibited are what ``suppressed`` means."""
    if row.get("silenced_by"):
        return "silenced"
    if row.get("inhibited_by"):
        return "inhibited"
    return str(row.get("state") or "unprocessed")


def only_in_alertmanager(alerts: pd.DataFrame, manager: pd.DataFrame | None) -> pd.DataFrame:
    """Alertmanager's open alerts that no transition here knows of (another source feeds it, or the store is not
    given): as alert rows of source ``alertmanager``."""
    if manager is None or manager.empty:
        return transitions_frame([])
    known = set(alerts["alert_id"]) if not alerts.empty else set()
    rows = []
    for i, row in enumerate(manager.to_dict("records")):
        labels = dict(row["labels"])
        if fingerprint(labels) in known:
            continue
        notes = {
            "summary": row.get("summary") or "",
            "evidence": json.dumps(row.get("evidence") or {}),
            "confidence": "" if row.get("confidence") is None else str(row["confidence"]),
        }
        alert = Alert(labels, notes, float(row.get("startsAt") or 0.0))
        rows.append(row_of(alert, "alertmanager", i))
    return transitions_frame(rows)


class AckBook:
    """Acknowledgements in a small JSON file ``{fingerprint: {by, at, note}}``; writes are atomic (temp file, rename).

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
