"""The live numbers of the streaming service: its Prometheus endpoint (``app.metrics``, ``GET /metrics``).

Why scrape it rather than the store: runs alive, events per second and watermark delay are gauges of the running
process, never committed to the store.  A scrape is a short loopback HTTP GET, done on every page run (not cached
with the data: these change even when no match does); a service that is down gives an empty result, not an error.
"""

from __future__ import annotations

import re
import urllib.request
from collections import defaultdict

import pandas as pd

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
#: Per-query series -> the columns of :meth:`dashboards.source.DashboardData.query_stats` they add to: ``shed`` sums
#: everything shed (events and partial matches), ``shed_runs`` only the partial matches (runs) shed.
PER_QUERY = {
    "hcep_runs_alive": ("runs",),
    "hcep_shed_events_total": ("shed",),
    "hcep_shed_total": ("shed",),
    "hcep_shed_runs_total": ("shed", "shed_runs"),
}


def parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text format -> (name, labels, value) samples (comments and bad lines skipped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = {
            k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
            for k, v in _LABEL.findall(m.group(2) or "")
        }
        out.append((m.group(1), labels, value))
    return out


def scrape(url: str, timeout: float = 2.0) -> list[tuple[str, dict[str, str], float]]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - the operator's own service
            return parse(resp.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return []


def query_frame(samples: list[tuple[str, dict[str, str], float]]) -> pd.DataFrame:
    """Per query: runs alive, everything shed and partial matches shed (columns ``query, runs, shed, shed_runs``;
    a column only when some series fills it)."""
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for name, labels, value in samples:
        if "query" not in labels:
            continue
        row = rows[labels["query"]]
        for column in PER_QUERY.get(name, ()):
            row[column] = row.get(column, 0.0) + value
    return pd.DataFrame([{"query": q, **v} for q, v in rows.items()])


def service_totals(samples: list[tuple[str, dict[str, str], float]]) -> dict[str, float]:
    """Service-wide series summed over their labels (``hcep_events_per_second``, ``hcep_buffered_events``...)."""
    out: dict[str, float] = defaultdict(float)
    for name, _, value in samples:
        out[name] += value
    return dict(out)
