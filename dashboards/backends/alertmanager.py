"""The alerts open right now, as Prometheus Alertmanager holds them (``GET /api/v2/alerts``), for the Alerts view.

Why Alertmanager and not only the store: it is where operators act on alerts -- silences and inhibitions live there,
and it resolves an alert whose source stopped re-sending it -- so "open", "silenced" and "inhibited" are its answer.
Like :mod:`dashboards.backends.metrics` this is a live read on every page run, never cached with the data; an
Alertmanager that is down gives an empty frame whose ``attrs["error"]`` says why, not an exception.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from contracts.alerts import parse_rfc3339, severity_rank

COLUMNS = [
    "alertname", "severity", "tier", "query", "job_id", "task_id", "app_id", "host", "summary", "confidence",
    "startsAt", "endsAt", "state", "silenced_by", "inhibited_by", "fingerprint", "generator_url", "evidence",
    "labels",
]  # fmt: skip


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _time(value: Any) -> float | None:
    try:
        return parse_rfc3339(str(value or ""))
    except ValueError:
        return None


def row(alert: Mapping[str, Any]) -> dict[str, Any]:
    """One GettableAlert -> one row: labels and annotations flattened, times as epoch seconds, ``state`` one of
    ``active``, ``suppressed`` (silenced or inhibited: see ``silenced_by``/``inhibited_by``) or ``unprocessed``."""
    labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
    notes = {str(k): str(v) for k, v in (alert.get("annotations") or {}).items()}
    status = alert.get("status") or {}
    try:
        evidence = json.loads(notes["evidence"]) if "evidence" in notes else None
    except ValueError:
        evidence = notes["evidence"]
    return {
        "alertname": labels.get("alertname", ""),
        "severity": labels.get("severity", ""),
        "tier": labels.get("tier"),
        "query": labels.get("query"),
        "job_id": labels.get("job_id"),
        "task_id": labels.get("task_id"),
        "app_id": labels.get("app_id"),
        "host": labels.get("host"),
        "summary": notes.get("summary", ""),
        "confidence": _number(notes.get("confidence")),
        "startsAt": _time(alert.get("startsAt")),
        "endsAt": _time(alert.get("endsAt")),
        "state": str(status.get("state") or ""),
        "silenced_by": list(status.get("silencedBy") or []),
        "inhibited_by": list(status.get("inhibitedBy") or []),
        "fingerprint": str(alert.get("fingerprint", "")),
        "generator_url": str(alert.get("generatorURL", "")),
        "evidence": evidence,
        "labels": labels,
    }


def frame(alerts: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """GettableAlerts -> a frame of :data:`COLUMNS`, most severe first, then oldest first."""
    out = pd.DataFrame([row(a) for a in alerts], columns=COLUMNS)
    out["confidence"] = pd.to_numeric(out["confidence"], errors="coerce")
    out["startsAt"] = pd.to_numeric(out["startsAt"], errors="coerce")
    out["endsAt"] = pd.to_numeric(out["endsAt"], errors="coerce")
    if out.empty:
        return out
    rank = out["severity"].map(severity_rank)
    return (
        out.assign(_rank=-rank)
        .sort_values(["_rank", "startsAt", "fingerprint"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )


def current_alerts(
    url: str,
    *,
    silenced: bool = True,
    inhibited: bool = True,
    filter: Mapping[str, str] | None = None,
    timeout: float = 2.0,
) -> pd.DataFrame:  # noqa: A002
    """The alerts Alertmanager at ``url`` holds open (firing: resolved ones are never listed), with their
    silenced/inhibited state; ``silenced``/``inhibited`` False leave those out; ``filter`` is ``{label: value}``.
    Empty, with ``attrs["error"]``, when Alertmanager does not answer."""
    from app.alerts.alertmanager import Alertmanager, AlertmanagerError

    try:
        client = Alertmanager(url, timeout=timeout, connect_timeout=min(timeout, 2.0))
    except ValueError as err:
        out = frame([])
        out.attrs["error"] = str(err)
        return out
    try:
        out = frame(client.alerts(active=True, silenced=silenced, inhibited=inhibited, filter=filter))
        out.attrs["error"] = None
    except AlertmanagerError as err:
        out = frame([])
        out.attrs["error"] = str(err)
    finally:
        client.close()
    return out
