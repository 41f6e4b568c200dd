"""Ganglia sample rounds -> hcep events (semantics sections 1, 7): ``Metric``, ``LoadStd``, ``Balance``/``Imbalance``.

A *round* is one cluster's state at one sample time: what one poll of gmond returns, or one row time across a
cluster's RRD files.  Both sources are turned into :class:`Round` objects, so the derivation is the same for live
polling and history.  Every Ganglia event carries ``delta`` 7.5 s: Ganglia reports every 15 s, so the true time is
within half a period of the reported one.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.ganglia.xml import GangliaDocument, finite

DELTA = 7.5
DEFAULT_THRESHOLD = 1.0
LOAD_METRIC = "load_one"
DEFAULT_CLUSTER = "unspecified"


@dataclass(frozen=True, slots=True)
class Sample:
    """One host's value of one metric at ``ts`` (epoch seconds)."""

    host: str
    metric: str
    val: float
    ts: float
    units: str = ""


@dataclass(slots=True)
class Round:
    """One cluster's samples at one sample time ``ts``."""

    cluster: str
    ts: float
    samples: list[Sample] = field(default_factory=list)


def rounds_from_document(
    doc: GangliaDocument,
    *,
    cluster: str | None = None,
    default_cluster: str = DEFAULT_CLUSTER,
    up_only: bool = True,
    now: float | None = None,
) -> list[Round]:
    """One round per CLUSTER of a parsed dump (only ``cluster`` if given).

    The round's time is the cluster's LOCALTIME; each metric's time is LOCALTIME - TN (when it was reported).  Hosts
    that Ganglia considers down (silent > 4 x TMAX) are left out with ``up_only``: gmond keeps a dead host's last values
    forever, which would freeze the load statistics.  Non-numeric and non-finite values are left out.
    """
    rounds: list[Round] = []
    for c in doc.clusters:
        name = c.name or default_cluster
        if cluster is not None and name != cluster:
            continue
        if c.localtime is not None:
            ts = float(c.localtime)
        elif now is not None:
            ts = float(now)
        else:
            ts = float(max((h.reported for h in c.hosts), default=0))
        rnd = Round(name, ts)
        for host in c.hosts:
            if up_only and not host.is_up():
                continue
            for m in host.metrics.values():
                if finite(m.val):
                    rnd.samples.append(Sample(host.name, m.name, m.val, ts - m.tn, m.units))  # type: ignore[arg-type]
        rounds.append(rnd)
    return rounds


def rounds_from_samples(samples: Iterable[tuple[float, str, str, str, float]]) -> list[Round]:
    """Group ``(ts, cluster, host, metric, val)`` rows (e.g. from RRD files) into rounds by cluster and time."""
    by_key: dict[tuple[str, float], Round] = {}
    for ts, cluster, host, metric, val in samples:
        if not (isinstance(val, float | int) and math.isfinite(val)):
            continue
        key = (cluster, float(ts))
        rnd = by_key.get(key)
        if rnd is None:
            rnd = by_key[key] = Round(cluster, float(ts))
        rnd.samples.append(Sample(host, metric, float(val), float(ts)))
    return sorted(by_key.values(), key=lambda r: (r.ts, r.cluster))


def load_std(values: list[float]) -> tuple[float, float]:
    """``(population std-dev, mean)`` of ``values`` (non-empty, finite).

    Computed on values scaled by a power of two (exact), so that huge gmetric values cannot overflow the squares."""
    n = len(values)
    exponent = math.frexp(max(abs(v) for v in values))[1]
    xs = [math.ldexp(v, -exponent) for v in values]
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / n
    return math.ldexp(math.sqrt(var), exponent), math.ldexp(mean, exponent)


def round_events(
    rnd: Round,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    delta: float = DELTA,
    load_metric: str = LOAD_METRIC,
    metrics: Container[str] | None = None,
    raw: bool = True,
    fresh: Iterable[Sample] | None = None,
) -> list[dict[str, Any]]:
    """The events of one round: ``Metric`` per sample (``raw``; only ``metrics`` if given; only the ``fresh`` samples
    if given, see :class:`Deduplicator`), then ``LoadStd`` and ``Balance`` (val <= threshold) or ``Imbalance``
    (val > threshold) over all the round's samples, when any host reports ``load_metric``.

    A ``Metric`` of ``load_metric`` also carries the round's ``cluster_mean`` and ``cluster_std`` of that metric, so
    one event says whether its host is the outlier of an imbalanced cluster (the unbalancing-reducer query needs
    exactly that, and the round's statistics are known here at no cost)."""
    events: list[dict[str, Any]] = []
    cluster = rnd.cluster
    loads = {s.host: s.val for s in rnd.samples if s.metric == load_metric}  # one value per host
    stats = load_std(list(loads.values())) if loads else None
    if raw:
        for s in sorted(rnd.samples if fresh is None else fresh, key=lambda s: (s.host, s.metric)):
            if metrics is not None and s.metric not in metrics:
                continue
            events.append(
                {
                    "type": "Metric",
                    "ts": s.ts,
                    "id": f"ganglia/{cluster}/{s.host}/{s.metric}@{_fmt(s.ts)}",
                    "delta": delta,
                    "host": s.host,
                    "metric": s.metric,
                    "val": s.val,
                    "units": s.units,
                    "cluster": cluster,
                }
            )
            if stats is not None and s.metric == load_metric:
                events[-1]["cluster_mean"] = round(stats[1], 6)
                events[-1]["cluster_std"] = round(stats[0], 6)
    if stats is not None:
        std, mean = stats
        stamp = _fmt(rnd.ts)
        events.append(
            {
                "type": "LoadStd",
                "ts": rnd.ts,
                "id": f"ganglia/{cluster}/LoadStd@{stamp}",
                "delta": delta,
                "val": std,
                "mean": mean,
                "hosts": len(loads),
                "cluster": cluster,
            }
        )
        kind = "Imbalance" if std > threshold else "Balance"
        events.append(
            {
                "type": kind,
                "ts": rnd.ts,
                "id": f"ganglia/{cluster}/{kind}@{stamp}",
                "delta": delta,
                "val": std,
                "threshold": threshold,
                "cluster": cluster,
            }
        )
    return events


def _fmt(ts: float) -> str:
    return str(int(ts)) if float(ts).is_integer() else repr(float(ts))


class Deduplicator:
    """Drops what a previous poll already delivered, because polling faster than gmond samples repeats values.

    A round is dropped whole when its time is not newer than the cluster's last one.  A sample is dropped when its
    time is not newer than the last one of that host and metric, or newer by at most 1 s with the same value: its
    time (LOCALTIME - TN, both truncated to whole seconds by gmond) can move by a second between two polls.
    """

    def __init__(self) -> None:
        self._rounds: dict[str, float] = {}
        self._samples: dict[tuple[str, str, str], tuple[float, float]] = {}

    def fresh(self, rnd: Round) -> list[Sample] | None:
        """The round's samples not delivered before, or ``None`` when the whole round is a repeat."""
        if rnd.ts <= self._rounds.get(rnd.cluster, -math.inf):
            return None
        self._rounds[rnd.cluster] = rnd.ts
        fresh: list[Sample] = []
        for s in rnd.samples:
            key = (rnd.cluster, s.host, s.metric)
            last = self._samples.get(key)
            if last is not None and (s.ts <= last[0] or (s.ts - last[0] <= 1.0 and s.val == last[1])):
                continue
            self._samples[key] = (s.ts, s.val)
            fresh.append(s)
        return fresh
