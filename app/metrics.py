"""Prometheus metrics of the service: a small registry the service thread updates, exposed with prometheus_client.

Why our own registry in front: the service sets some counters to cumulative totals it keeps itself (the shed counts
of earlier epochs plus the current one) and reads values back (events per second, tests), which prometheus_client's
Counter does not allow; a custom collector hands the values to prometheus_client, whose exposition format and WSGI
app serve ``GET /metrics`` (text format 0.0.4; OpenMetrics when asked).  ``GET /healthz`` returns ``ok``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

Labels = tuple[tuple[str, str], ...]

HELP = {
    "hcep_events_total": ("counter", "events read from Kafka (replayed events not counted again)"),
    "hcep_events_per_second": ("gauge", "events read per second over the last measurement interval"),
    "hcep_engine_events_total": ("counter", "events fed to the engine, in watermark order"),
    "hcep_consumer_lag_messages": ("gauge", "messages not yet read, per topic (end offset - position)"),
    "hcep_watermark_delay_seconds": ("gauge", "newest event time read minus the watermark (event time)"),
    "hcep_watermark_wallclock_delay_seconds": ("gauge", "wall clock minus the watermark (for epoch timestamps)"),
    "hcep_watermark_seconds": ("gauge", "the watermark: events before it have been released to the engine"),
    "hcep_buffered_events": ("gauge", "events waiting in the watermark buffer"),
    "hcep_runs_alive": ("gauge", "partial matches (runs or buffered candidates) per query"),
    "hcep_matches_total": ("counter", "match records committed, per query"),
    "hcep_alerts_total": ("counter", "alerts committed to the outbox, per query"),
    "hcep_alert_deliveries_total": ("counter", "webhook deliveries by result (delivered, failed)"),
    "hcep_deadletter_total": ("counter", "events dead-lettered, by reason"),
    "hcep_late_events_total": ("counter", "events that arrived behind the watermark (a subset of dead letters)"),
    "hcep_checkpoints_total": ("counter", "checkpoints committed"),
    "hcep_store_events_dropped_total": ("counter", "events not kept in the store's events table (per-checkpoint cap)"),
    "hcep_checkpoint_duration_seconds": ("gauge", "duration of the last checkpoint"),
    "hcep_assigned_partitions": ("gauge", "partitions this process reads"),
    "hcep_replaying": ("gauge", "1 while a restart rebuilds the engine state from the checkpoint"),
    "hcep_shed_runs_total": ("counter", "partial matches dropped by load shedding (pSPICE), per query"),
    "hcep_shed_events_total": ("counter", "input events dropped by load shedding (random_events policy only)"),
    "hcep_shed_latency_estimate_seconds": ("gauge", "the shedder's estimate of the latest event's latency"),
    "hcep_shed_latency_bound_seconds": ("gauge", "the pack's latency bound (settings.shedding.latency_bound_ms)"),
}


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[Labels, float]] = {}

    @staticmethod
    def _labels(labels: Mapping[str, object] | None) -> Labels:
        return tuple(sorted((k, str(v)) for k, v in labels.items())) if labels else ()

    def inc(self, name: str, amount: float = 1.0, labels: Mapping[str, object] | None = None) -> None:
        key = self._labels(labels)
        with self._lock:
            series = self._values.setdefault(name, {})
            series[key] = series.get(key, 0.0) + amount

    def set(self, name: str, value: float, labels: Mapping[str, object] | None = None) -> None:
        key = self._labels(labels)
        with self._lock:
            self._values.setdefault(name, {})[key] = value

    def get(self, name: str, labels: Mapping[str, object] | None = None) -> float:
        with self._lock:
            return self._values.get(name, {}).get(self._labels(labels), 0.0)

    def total(self, name: str) -> float:
        with self._lock:
            return sum(self._values.get(name, {}).values())


class _Collector:
    """Hands the registry's values to prometheus_client at each scrape."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        reg = self.registry
        with reg._lock:
            snapshot = {name: dict(series) for name, series in reg._values.items()}
        for name in sorted(snapshot):
            kind, text = HELP.get(name, ("gauge", name))
            series = snapshot[name]
            names = sorted({k for labels in series for k, _ in labels})
            family: Metric
            if kind == "counter":
                family = CounterMetricFamily(name, text, labels=names)
            else:
                family = GaugeMetricFamily(name, text, labels=names)
            for labels, value in sorted(series.items()):
                values = dict(labels)
                family.add_metric([values.get(n, "") for n in names], value)
            yield family


class MetricsServer:
    """Serve ``registry`` on ``127.0.0.1:port`` (0: any free port; :attr:`port` tells which)."""

    def __init__(self, registry: Registry, port: int = 0, host: str = "127.0.0.1") -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the metrics endpoint listens on loopback only")
        prom = CollectorRegistry(auto_describe=False)
        prom.register(_Collector(registry))
        metrics_app = make_wsgi_app(prom)

        def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            if path == "/healthz":
                start_response("200 OK", [("Content-Type", "text/plain")])
                return [b"ok\n"]
            if path != "/metrics":
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"not found\n"]
            return metrics_app(environ, start_response)

        class Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence access logs
                return

        class Server(ThreadingMixIn, WSGIServer):
            daemon_threads = True

        self.server = make_server(host, port, app, server_class=Server, handler_class=Quiet)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="hcep-metrics", daemon=True)

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
