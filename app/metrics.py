"""Prometheus text exposition on a loopback port, from a thread (no client library: the format is small).

Counters and gauges live in one :class:`Registry`; the service updates them on its own thread, the HTTP thread only
reads under the lock.  ``GET /metrics`` returns text format 0.0.4; ``GET /healthz`` returns ``ok``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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

    def render(self) -> str:
        lines: list[str] = []
        with self._lock:
            for name in sorted(self._values):
                kind, text = HELP.get(name, ("gauge", name))
                lines.append(f"# HELP {name} {text}")
                lines.append(f"# TYPE {name} {kind}")
                for labels, value in sorted(self._values[name].items()):
                    shown = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                    lines.append(f"{name}{{{shown}}} {_number(value)}" if shown else f"{name} {_number(value)}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


class MetricsServer:
    """Serve ``registry`` on ``127.0.0.1:port`` (0: any free port; :attr:`port` tells which)."""

    def __init__(self, registry: Registry, port: int = 0, host: str = "127.0.0.1") -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the metrics endpoint listens on loopback only")
        reg = registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] == "/metrics":
                    body = reg.render().encode()
                    ctype = "text/plain; version=0.0.4; charset=utf-8"
                elif self.path == "/healthz":
                    body, ctype = b"ok\n", "text/plain"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence access logs
                return

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="hcep-metrics", daemon=True)

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
