"""What the live demo tells its viewer: where to look for each planted anomaly and which alert it raises (about
when), and a status line now and then.

The times are estimates from the simulator's ground truth: an anomaly becomes an alert when it became knowable from
the logs (``knowable_at``: the slow pull ended, the runaway reducer's host stood out in a Ganglia round, the map
output had waited three minutes, the skewed job ended) plus :data:`LATENCY` for the collectors, Kafka and the
service's watermark.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from contracts.alerts import severity_rank
from contracts.store import StoreReader

MIB = 1 << 20
#: Seconds from an anomaly being knowable in the logs to its alert: the collectors' polling, Kafka, the service's
#: watermark (allowed lateness) and its checkpoint.
LATENCY = 15.0
#: The alert rule of the Hadoop pack that finds each kind of anomaly (its ``anomaly`` label), and the view that shows
#: the records behind it.
RULES = {
    "unbalancing_reducer": ("UnbalancingReducer", "imbalance"),
    "slow_pull": ("ShufflePullStall", "stragglers"),
    "queued_output": ("HeldMapOutput", "queuing"),
    "skewed_mapper": ("MapperSkew", "jobs"),
    "skewed_reducer": ("ReducerSkew", "jobs"),
}


def _first(truth: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The first planted anomaly of ``kind`` (the first showcase round's): the truth also lists natural ones."""
    items = (truth.get("anomalies") or {}).get(kind) or []
    return next((a for a in items if a.get("planted")), None)


def expected_alerts(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The alerts the first showcase round should raise, earliest first: ``kind``, ``rule``, ``job_id``,
    ``task_id`` (for the per-reducer rules), ``view`` and ``at`` (epoch seconds, about when it shows)."""
    out = []
    for kind, (rule, view) in RULES.items():
        a = _first(truth, kind)
        if a is None:
            continue
        knowable = float(a.get("knowable_at") or a.get("job_end") or a.get("ts") or a.get("end") or 0.0)
        task = a.get("task_id") if kind in ("slow_pull", "unbalancing_reducer") else None
        out.append(
            {"kind": kind, "rule": rule, "job_id": a["job_id"], "task_id": task, "view": view, "at": knowable + LATENCY}
        )
    return sorted(out, key=lambda e: e["at"])


def look_for(truth: dict[str, Any], url: str, start: float) -> list[str]:
    """Lines naming each planted anomaly of the first showcase round, the view (URL) that shows it, and the alert it
    raises about when (seconds after the simulated cluster's start)."""
    out: list[str] = []
    url = url.rstrip("/")
    when = {e["kind"]: e["at"] - start for e in expected_alerts(truth)}
    if (a := _first(truth, "queued_output")) is not None:
        out.append(f"Queuing     {url}/queuing")
        out.append(
            f"            {a['job_id']} keeps {a['peak_queued_bytes'] / MIB:.0f} MiB of map output waiting for "
            f"{a['held_for']:.0f} s before its reducers fetch it (Q4 from about +{a['start'] - start:.0f} s; "
            f"alert HeldMapOutput once held 3 minutes, about +{when['queued_output']:.0f} s)"
        )
    if (a := _first(truth, "slow_pull")) is not None:
        out.append(f"Stragglers  {url}/stragglers?task={quote(a['task_id'])}")
        out.append(
            f"            reducer {a['task_id']}: one shuffle pull from {a['host']} takes {a['period']:.1f} s "
            f"against {a['mean_before']:.2f} s before it (Q3; alert ShufflePullStall about "
            f"+{when['slow_pull']:.0f} s)"
        )
    if (a := _first(truth, "skewed_mapper")) is not None:
        out.append(f"Jobs        {url}/jobs?job_detail={quote(a['job_id'])}")
        out.append(
            f"            straggling mapper {a['task_id']}: {a['duration']:.0f} s against a median of "
            f"{a['median']:.0f} s in {a['job_id']} (Q1 once the job ends; alert MapperSkew about "
            f"+{when['skewed_mapper']:.0f} s)"
        )
    if (a := _first(truth, "skewed_reducer")) is not None:
        out.append(
            f"            straggling reducer {a['task_id']}: {a['duration']:.0f} s against a median of "
            f"{a['median']:.0f} s (Q2, job {a['job_id']}; alert ReducerSkew about "
            f"+{when['skewed_reducer']:.0f} s)"
        )
    if (a := _first(truth, "unbalancing_reducer")) is not None:
        out.append(f"Imbalance   {url}/imbalance?task={quote(a['task_id'])}")
        out.append(
            f"            reducer {a['task_id']} on {a['host']} drives its host far above the cluster's load "
            f"(std-dev up to {a['load_std_max_during']}, threshold {a['threshold']}) from "
            f"+{a['start'] - start:.0f} s to +{a['end'] - start:.0f} s (Q7; alert UnbalancingReducer about "
            f"+{when['unbalancing_reducer']:.0f} s)"
        )
    out.append(f"Alerts      {url}/alerts   (and Overview {url}/ , Queries {url}/queries)")
    out.append(
        "            the open alerts by job and reducer, warning or worse, each with its rule and evidence; "
        "Alertmanager's state beside them"
    )
    return out


#: The Spark application's planted problems (``app.demo.spark_app``): (what, the rules it raises, about when after the
#: application starts, in seconds: its JVM start, the stage's run, the collector's poll and the service).
SPARK_PROBLEMS = (
    ("a stage spilling well over a GiB of execution memory (the demo-spill job)", "StageSpill", 60),
    (
        "a skewed groupBy whose hot key's task runs about three minutes (the demo-skew job)",
        "TaskStraggler and StageSkew",
        240,
    ),
)


def spark_look_for(url: str) -> list[str]:
    """Lines naming the Spark application's planted problems, the view that shows them and the alerts they raise."""
    where = f"{url.rstrip('/')}/spark" if url else "the Spark view"
    return [
        f"Spark: {what}: {where} -- alert {rules}, about {at // 60} min {at % 60:02d} s after the Spark "
        f"application starts"
        for what, rules, at in SPARK_PROBLEMS
    ]


def store_counts(store: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(matches per query, open alerts per severity) in the service's store, read-only; empty while it is not
    there."""
    reader = StoreReader(store)
    with reader:
        matches = reader.match_counts()
        open_alerts: dict[str, int] = {}
        for alert in reader.open_alerts():
            open_alerts[alert.severity] = open_alerts.get(alert.severity, 0) + 1
    return matches, open_alerts


def split_open(open_alerts: dict[str, int]) -> tuple[int, int]:
    """(warning or worse, info) of counts per severity."""
    urgent = sum(n for s, n in open_alerts.items() if severity_rank(s) >= severity_rank("warning"))
    return urgent, sum(open_alerts.values()) - urgent


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


def status_line(elapsed: float, store: Path, metrics_url: str, open_alerts: dict[str, int]) -> str:
    """One line: events in, matches per query, and the open alerts (per severity, from the webhook receiver)."""
    matches, _ = store_counts(store)
    live = scrape(metrics_url, ("hcep_events_total", "hcep_late_events_total", "hcep_watermark_delay_seconds"))
    found = ", ".join(f"{q} {n}" for q, n in matches.items()) or "none yet"
    events = f"{live['hcep_events_total']:.0f} events in" if "hcep_events_total" in live else "service not answering"
    late = f", {live['hcep_late_events_total']:.0f} late" if live.get("hcep_late_events_total") else ""
    urgent, info = split_open(open_alerts)
    minutes, seconds = divmod(int(elapsed), 60)
    return (
        f"[+{minutes}:{seconds:02d}] {events}{late}; matches: {found}; open alerts: {urgent} warning or worse, "
        f"{info} info"
    )
