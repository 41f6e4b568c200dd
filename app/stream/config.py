"""The settings of ``hcep run`` (:class:`ServiceConfig`) and the loop's tuning constants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.alerts.webhook import Webhook

#: A topic partition as the loop names it.
Tp = tuple[str, int]

#: Events per loop turn (poll, merge, engine, maybe a checkpoint); the records per poll follow the observed number of
#: events per message (packed messages carry several).
POLL_EVENTS = 2000
#: Garbage-collector thresholds while the service runs (Python's default: 700, 10, 10), as benchmarked.
GC_THRESHOLD = (100_000, 50, 100)
#: Seconds between the ``query_stats`` rows (runs alive, partial matches shed per query) written for the dashboard.
STATS_EVERY = 5.0
#: At most this many events go to the store's ``events`` table per checkpoint (the rest are counted, not stored).
STORE_EVENTS_PER_CHECKPOINT = 5000
#: A checkpoint is due once this many match records wait for it.
RECORDS_PER_CHECKPOINT = 20000


@dataclass
class ServiceConfig:
    pack: str
    bootstrap: str
    group: str = "hcep"
    instance: str = "0"
    shared_topics: list[str] = field(default_factory=lambda: ["hcep.events.hadoop"])
    broadcast_topics: list[str] = field(default_factory=lambda: ["hcep.events.ganglia"])
    matches_topic: str | None = "hcep.matches"
    data_dir: str = ".run/hcep"
    metrics_port: int | None = 0
    allowed_lateness: float = 2.0  # seconds, on top of the largest delta
    max_delta: float = 7.5  # seconds: the widest half-interval accepted (Ganglia's)
    idle_timeout: float = 5.0
    checkpoint_interval: float = 1.0
    alert_delay: float = 0.02  # alerts wait at most this long for the checkpoint that commits them
    webhooks: dict[str, Webhook] = field(default_factory=dict)
    alertmanager: str | None = None  # base URL of an Alertmanager to deliver every alert to (v2 API)
    topic_partitions: int = 4  # partitions of topics this service creates when missing
    start_from: str = "earliest"  # where a partition without any checkpoint starts
    # Stop once idle: assigned, read up to the end offsets, the watermark buffer empty, and nothing new for this many
    # seconds since the assignment (benchmarks, tools; README "hcep run").
    exit_when_idle: float | None = None
    session_timeout: float = 10.0  # a killed member's partitions move (or come back to it) after this long
    alert_max_backoff: float = 30.0
    alert_orphan_after: float = 30.0  # adopt undelivered alerts of a process silent this long (shared store)
    drain_timeout: float = 5.0  # at a clean stop, how long to keep delivering committed alerts
    max_seconds: float | None = None
    shedding: bool = True  # apply the pack's settings.shedding (pSPICE); False: never shed
    limits: Any = None  # engine.runtime.limits.Limits; None: the pack's settings.limits
    # Events kept in the store's ``events`` table for the dashboard: these types, plus ``Metric`` samples of
    # ``store_metric`` at most one per host every ``store_metric_every`` seconds of event time (None: none).
    store_event_types: tuple[str, ...] = ("LoadStd", "Balance", "Imbalance")
    store_metric: str | None = "load_one"
    store_metric_every: float = 60.0
    store_events_keep: float = 86400.0  # seconds of event time kept
    store_events_max: int = 200_000  # rows kept

    @property
    def topics(self) -> list[str]:
        """Every topic read: the shared ones first, then the broadcast ones (their order ranks them in the merge)."""
        return list(self.shared_topics) + [t for t in self.broadcast_topics if t not in self.shared_topics]
