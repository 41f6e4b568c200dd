"""Read metric history from gmetad's RRD files: ``<rrd_rootdir>/<cluster>/<host>/<metric>.rrd`` (DS ``sum``).

This is how the SASE++ case study fed the engine (gmetad writes RRDs, the engine reads them), and it lets a history be
replayed after the fact.  ``__SummaryInfo__`` directories (gmetad's per-cluster and per-grid sums) are skipped: the
events are per host.  A file that rrdtool cannot read is dead-lettered and skipped, never fatal.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.hadoop.deadletter import DeadLetterSink

SUMMARY_DIR = "__SummaryInfo__"


class RrdUnavailable(ImportError):
    """The ``rrdtool`` Python binding is not installed (``bash deploy/ganglia/install.sh`` installs it)."""


def _rrdtool() -> Any:
    try:
        import rrdtool
    except ImportError as err:
        raise RrdUnavailable(
            f"the rrdtool Python binding is missing ({err}): run 'bash deploy/ganglia/install.sh'"
        ) from None
    return rrdtool


@dataclass(frozen=True, slots=True)
class RrdFile:
    cluster: str
    host: str
    metric: str
    path: Path


def discover(
    rootdir: str | os.PathLike[str],
    *,
    cluster: str | None = None,
    hosts: Container[str] | None = None,
    metrics: Container[str] | None = None,
) -> list[RrdFile]:
    """The per-host RRD files under ``rootdir``, sorted.  Raises FileNotFoundError when ``rootdir`` is not a dir."""
    root = Path(rootdir)
    if not root.is_dir():
        raise FileNotFoundError(f"no RRD directory {root}")
    found: list[RrdFile] = []
    for cdir in sorted(p for p in root.iterdir() if p.is_dir() and p.name != SUMMARY_DIR):
        if cluster is not None and cdir.name != cluster:
            continue
        for hdir in sorted(p for p in cdir.iterdir() if p.is_dir() and p.name != SUMMARY_DIR):
            if hosts is not None and hdir.name not in hosts:
                continue
            for f in sorted(hdir.glob("*.rrd")):
                if metrics is None or f.stem in metrics:
                    found.append(RrdFile(cdir.name, hdir.name, f.stem, f))
    return found


def fetch(
    path: str | os.PathLike[str], since: float, until: float | None = None, cf: str = "AVERAGE"
) -> list[tuple[float, float]]:
    """``(ts, value)`` rows of one RRD's first data source with ``since <= ts <= until``, unknown rows left out.

    A row's time is the end of its consolidation interval (as ``rrdtool fetch`` prints it).  Raises
    ``rrdtool.OperationalError`` for an unreadable file.
    """
    rrdtool = _rrdtool()
    end = time.time() if until is None else until
    # Rows after the last update are unknown: not asking for them keeps a stale file's fetch short (years of rows).
    end = min(end, float(rrdtool.last(str(path))))
    if end < since:
        return []
    start = math.floor(since) - 1  # rrdtool returns the rows ending after --start: include the one ending at since
    stop = max(math.ceil(end), start + 1)
    (first, _last, step), _names, rows = rrdtool.fetch(str(path), cf, "--start", str(start), "--end", str(stop))
    out: list[tuple[float, float]] = []
    for i, row in enumerate(rows):
        ts = float(first + (i + 1) * step)
        value = row[0] if row else None
        if value is not None and since <= ts <= end:
            out.append((ts, float(value)))
    return out


def read_history(
    rootdir: str | os.PathLike[str],
    since: float,
    until: float | None = None,
    *,
    cluster: str | None = None,
    metrics: Container[str] | None = None,
    deadletter: DeadLetterSink | None = None,
) -> list[tuple[float, str, str, str, float]]:
    """Every known value since ``since``: ``(ts, cluster, host, metric, value)`` sorted by time (then cluster, host,
    metric).  Unreadable files go to ``deadletter`` and are skipped."""
    rrdtool = _rrdtool()
    rows: list[tuple[float, str, str, str, float]] = []
    for f in discover(rootdir, cluster=cluster, metrics=metrics):
        try:
            values = fetch(f.path, since, until)
        except rrdtool.OperationalError as err:
            if deadletter is not None:
                deadletter.write("ganglia-rrd", str(f.path), f"rrdtool cannot read it: {err}", "")
            continue
        rows.extend((ts, f.cluster, f.host, f.metric, v) for ts, v in values)
    rows.sort()
    return rows
