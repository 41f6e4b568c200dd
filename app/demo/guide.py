"""What the live demo tells its viewer: where to look for each injected fault and which alert it raises (about when),
and a status line now and then.

The faults are the simulator's (``ground_truth.json``, semantics section 9): their kind, entity, onset and end.  Which
alert names a kind is the Hadoop pack's business (each alert rule labels its ``kind``); the guide reads that from the
pack and otherwise says "the alert for <kind>".  The times are estimates: a fault's onset plus how long its cause takes
to show (:data:`SHOWS_AFTER`, from the kinds' floors: a skewed task 2 minutes longer, output held 3 minutes, a fetch
stalled a minute) plus :data:`LATENCY` for the collectors, Kafka and the service's watermark.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from contracts.alerts import severity_rank
from contracts.store import StoreReader

MIB = 1 << 20
#: Seconds from a fault's cause showing in the logs to its alert: the collectors' polling, Kafka, the service's
#: watermark (allowed lateness) and its checkpoint.
LATENCY = 15.0
#: Seconds from a fault's onset until its cause reaches the kind's floor (semantics section 9): what a rule waits for.
SHOWS_AFTER = {
    "hung_fetch": 60.0,
    "runaway_reducer": 60.0,
    "held_output": 180.0,
    "map_data_skew": 120.0,
    "reduce_data_skew": 120.0,
    "slow_node": 300.0,
}
#: The dashboard view that shows each kind's records, and what to call the fault's cause.
VIEWS = {
    "runaway_reducer": ("imbalance", "a reducer spins and drives its host's load_one up"),
    "hung_fetch": ("stragglers", "one shuffle fetch of a reducer stalls"),
    "held_output": ("queuing", "the job's reducers get no container while its map output waits"),
    "map_data_skew": ("jobs", "one map reads a split several times the job's median"),
    "reduce_data_skew": ("jobs", "one reducer gets a partition several times the median"),
    "slow_node": ("overview", "every task attempt on one host runs several times slower (a failing disk)"),
}


def alerts_by_kind(pack: Path | None) -> dict[str, list[str]]:
    """Kind -> the names of the pack's alert rules labelled with it (``labels: {kind: ...}``); empty without a pack."""
    if pack is None:
        return {}
    import yaml

    try:
        doc = yaml.safe_load(Path(pack).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    out: dict[str, list[str]] = {}
    for rule in doc.get("alerts") or []:
        kind = ((rule or {}).get("labels") or {}).get("kind")
        if isinstance(kind, str) and rule.get("name"):
            out.setdefault(kind, []).append(str(rule["name"]))
    return out


def first_faults(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The first targeted fault of each kind (the first showcase round's), in onset order."""
    first: dict[str, dict[str, Any]] = {}
    for f in truth.get("faults") or []:
        if f.get("entity") and f.get("onset") is not None and f["kind"] not in first:
            first[f["kind"]] = f
    return sorted(first.values(), key=lambda f: f["onset"])


def alert_name(kind: str, names: dict[str, list[str]]) -> str:
    found = names.get(kind)
    return " or ".join(found) if found else f"the alert for {kind}"


def expected_alerts(truth: dict[str, Any], names: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """The alerts the first showcase round should raise, earliest first: ``kind``, ``rule`` (the pack's alert names
    for the kind, a list, maybe empty), ``label`` and ``entity`` (what the alert must name: ``job_id``, ``task_id`` or
    ``host``), ``job_id`` (the fault's job, when it has one), ``view`` and ``at`` (epoch seconds, about when)."""
    names = names or {}
    out = []
    for f in first_faults(truth):
        label, entity = next(iter(f["entity"].items()))
        jobs = (f.get("affected") or {}).get("job_id") or []
        out.append(
            {
                "kind": f["kind"],
                "rule": names.get(f["kind"], []),
                "label": label,
                "entity": entity,
                "job_id": jobs[0] if label != "host" and jobs else None,
                "view": VIEWS[f["kind"]][0],
                "at": float(f["onset"]) + SHOWS_AFTER[f["kind"]] + LATENCY,
            }
        )
    return sorted(out, key=lambda e: e["at"])


def look_for(truth: dict[str, Any], url: str, start: float, names: dict[str, list[str]] | None = None) -> list[str]:
    """Lines naming each fault of the first showcase round, the view (URL) that shows it, and the alert it raises
    about when (seconds after the simulated cluster's start)."""
    out: list[str] = []
    url = url.rstrip("/")
    names = names or {}
    faults = {f["kind"]: f for f in first_faults(truth)}
    for e in expected_alerts(truth, names):
        f = faults[e["kind"]]
        view, cause = VIEWS[e["kind"]]
        query = f"?{'task' if e['label'] == 'task_id' else 'job_detail'}={quote(e['entity'])}" if e["job_id"] else ""
        out.append(f"{e['kind']:<17} {url}/{view}{query}")
        out.append(
            f"                  {cause}: {e['label']} {e['entity']}, severity {f['severity']:g}, from "
            f"+{f['onset'] - start:.0f} s to +{f['end'] - start:.0f} s (alert {alert_name(e['kind'], names)} about "
            f"+{e['at'] - start:.0f} s)"
        )
    out.append(f"Alerts            {url}/alerts   (and Overview {url}/ , Queries {url}/queries)")
    out.append(
        "                  the open alerts by job, reducer and host, warning or worse, each with its rule and "
        "evidence; Alertmanager's state beside them"
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
