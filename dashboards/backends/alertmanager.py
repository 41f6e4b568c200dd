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
import requests

from contracts.alerts import parse_rfc3339, severity_rank
from contracts.http import failure_reason

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


def _matcher(name: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{escaped}"'


def fetch(
    url: str,
    *,
    silenced: bool = True,
    inhibited: bool = True,
    filter: Mapping[str, str] | None = None,  # noqa: A002 - Alertmanager's parameter name
    timeout: float = 2.0,
) -> list[dict[str, Any]]:
    """``GET /api/v2/alerts`` (active alerts, and silenced / inhibited ones unless told not to): the GettableAlerts.
    Raises ``ValueError`` for a URL that is not http(s) and ``OSError`` when Alertmanager does not answer as its
    v2 API does.  A read of its own (not ``app.alerts.alertmanager``): the dashboard imports nothing of the service.
    """
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"Alertmanager URL must be http(s)://HOST:PORT, got {url!r}")
    endpoint = url.rstrip("/") + "/api/v2/alerts"
    params: dict[str, Any] = {
        "active": "true",
        "silenced": _flag(silenced),
        "inhibited": _flag(inhibited),
        "unprocessed": "true",
    }
    if filter:
        params["filter"] = [_matcher(k, str(v)) for k, v in filter.items()]
    try:
        resp = requests.get(
            endpoint, params=params, timeout=(min(timeout, 2.0), timeout), headers={"User-Agent": "hcep-dashboard"}
        )
    except requests.RequestException as err:
        raise OSError(f"GET {endpoint}: cannot reach Alertmanager ({failure_reason(err)})") from None
    if not 200 <= resp.status_code < 300:
        detail = " ".join(resp.text.split())[:300] or resp.reason or "no body"
        raise OSError(f"GET {endpoint}: HTTP {resp.status_code}: {detail}")
    try:
        data = resp.json()
    except ValueError:
        raise OSError(f"GET {endpoint}: the answer is not JSON, so not Alertmanager's v2 API") from None
    if not isinstance(data, list):
        raise OSError(f"GET {endpoint}: expected a JSON list, got {type(data).__name__}: not Alertmanager's v2 API")
    return [a for a in data if isinstance(a, dict)]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def current_alerts(
    url: str,
    *,
    silenced: bool = True,
    inhibited: bool = True,
    filter: Mapping[str, str] | None = None,  # noqa: A002 - Alertmanager's parameter name
    timeout: float = 2.0,
) -> pd.DataFrame:
    """The alerts Alertmanager at ``url`` holds open (firing: resolved ones are never listed), with their
    silenced/inhibited state; ``silenced``/``inhibited`` False leave those out; ``filter`` is ``{label: value}``.
    Empty, with ``attrs["error"]``, when Alertmanager does not answer."""
    try:
        out = frame(fetch(url, silenced=silenced, inhibited=inhibited, filter=filter, timeout=timeout))
        out.attrs["error"] = None
    except (ValueError, OSError) as err:
        out = frame([])
        out.attrs["error"] = str(err)
    return out
