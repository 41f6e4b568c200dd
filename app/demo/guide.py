"""What the live demo tells its viewer: where to look for each planted anomaly, and a status line now and then."""

from __future__ import annotations

import sqlite3
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

MIB = 1 << 20


def _first(truth: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The first planted anomaly of ``kind`` (the first showcase round's): the truth also lists natural ones."""
    items = (truth.get("anomalies") or {}).get(kind) or []
    return next((a for a in items if a.get("planted")), None)


def look_for(truth: dict[str, Any], url: str, start: float) -> list[str]:
    """Lines naming each planted anomaly of the first showcase round, the view (URL) that shows it and about when
    (seconds after the simulated cluster's start)."""
    out: list[str] = []
    url = url.rstrip("/")
    if (a := _first(truth, "queued_output")) is not None:
        out.append(f"Queuing     {url}/queuing")
        out.append(f"            {a['job_id']} keeps {a['peak_queued_bytes'] / MIB:.0f} MiB of map output waiting for "
                   f"{a['held_for']:.0f} s before its reducers fetch it (Q4; from about +{a['start'] - start:.0f} s, "
                   f"held over 3 minutes from about +{a['knowable_at'] - start:.0f} s)")
    if (a := _first(truth, "slow_pull")) is not None:
        out.append(f"Stragglers  {url}/stragglers?task={quote(a['task_id'])}")
        out.append(f"            reducer {a['task_id']}: one shuffle pull from {a['host']} takes {a['period']:.1f} s "
                   f"against {a['mean_before']:.2f} s before it (Q3; about +{a['ts'] - start + 15:.0f} s)")
    if (a := _first(truth, "skewed_mapper")) is not None:
        out.append(f"Jobs        {url}/jobs?job_detail={quote(a['job_id'])}")
        out.append(f"            straggling mapper {a['task_id']}: {a['duration']:.0f} s against a median of "
                   f"{a['median']:.0f} s in {a['job_id']} (Q1, once the job ends, about "
                   f"+{a['job_end'] - start + 15:.0f} s)")
    if (a := _first(truth, "skewed_reducer")) is not None:
        out.append(f"            straggling reducer {a['task_id']}: {a['duration']:.0f} s against a median of "
                   f"{a['median']:.0f} s (Q2, job {a['job_id']}, about +{a['job_end'] - start + 15:.0f} s)")
    if (a := _first(truth, "unbalancing_reducer")) is not None:
        back = a.get("rebalanced_at") or a["end"]
        out.append(f"Imbalance   {url}/imbalance?task={quote(a['task_id'])}")
        out.append(f"            reducer {a['task_id']} on {a['host']} pushes the cluster's load std-dev to "
                   f"{a['load_std_max_during']} (threshold {a['threshold']}) from +{a['start'] - start:.0f} s to "
                   f"+{a['end'] - start:.0f} s; found (Q5) once balanced again, about +{back - start + 15:.0f} s")
    out.append(f"Overview    {url}/   and   Alerts  {url}/alerts   and   Queries  {url}/queries")
    out.append("            the load std-dev curve with its imbalance rounds; the warnings (slow pull, imbalance); "
               "matches and runs per query")
    return out


def store_counts(store: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(matches per query, alerts per severity) in the service's store, read-only; empty while it is not there."""
    if not store.exists():
        return {}, {}
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return {}, {}
    try:
        matches = dict(db.execute("SELECT query, COUNT(*) FROM matches GROUP BY query ORDER BY query").fetchall())
        alerts = dict(db.execute("SELECT COALESCE(severity, '?'), COUNT(*) FROM alerts GROUP BY 1").fetchall())
        return matches, alerts
    except sqlite3.Error:
        return {}, {}
    finally:
        db.close()


def scrape(url: str, names: tuple[str, ...]) -> dict[str, float]:
    """The sums of some series of a Prometheus endpoint (empty when it does not answer)."""
    try:
        with urllib.request.urlopen(url, timeout=2.0) as resp:  # noqa: S310 - our own service, on loopback
            text = resp.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in names:
            try:
                out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
    return out


def status_line(elapsed: float, store: Path, metrics_url: str, alerts: dict[str, int]) -> str:
    matches, _ = store_counts(store)
    live = scrape(metrics_url, ("hcep_events_total", "hcep_late_events_total", "hcep_watermark_delay_seconds"))
    found = ", ".join(f"{q} {n}" for q, n in matches.items()) or "none yet"
    events = f"{live['hcep_events_total']:.0f} events in" if "hcep_events_total" in live else "service not answering"
    late = f", {live['hcep_late_events_total']:.0f} late" if live.get("hcep_late_events_total") else ""
    sent = ", ".join(f"{n} {s}" for s, n in sorted(alerts.items())) or "none"
    minutes, seconds = divmod(int(elapsed), 60)
    return f"[+{minutes}:{seconds:02d}] {events}{late}; matches: {found}; alerts received: {sent}"
