"""What the engine and the alert rules produced since the last checkpoint, waiting to be committed with it.

Nothing leaves the service before the checkpoint that commits it (:mod:`app.checkpoint`): match records
(:class:`contracts.records.MatchRecord`) and alert transitions (:class:`contracts.alerts.Alert`) wait here with the
dead letters and the events the dashboard plots, as the store's typed rows (:mod:`contracts.schema`); the
checkpointer writes them in one transaction and clears them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from app.metrics import Registry
from app.stream.config import STORE_EVENTS_PER_CHECKPOINT, ServiceConfig, Tp
from contracts.alerts import Alert
from contracts.records import MatchRecord, record_id
from contracts.schema import AlertRow, DeadLetterRow, EventRow, MatchRow


class Outputs:
    """The pending outputs of one process (cleared by each checkpoint and at each new epoch)."""

    def __init__(self, cfg: ServiceConfig, metrics: Registry) -> None:
        self.cfg = cfg
        self.metrics = metrics
        self.records: list[MatchRow] = []
        self.alerts: list[AlertRow] = []
        self.for_alertmanager: list[Alert] = []  # submitted to Alertmanager once committed
        self.dead: list[DeadLetterRow] = []
        self.dead_lines: list[str] = []  # the same, for the data dir's deadletter.jsonl
        self.events: list[EventRow] = []
        self.first_alert_at: float | None = None  # when the oldest pending alert was decided (monotonic)
        self.dirty = False  # anything to commit besides offsets
        kept = set(cfg.store_event_types) | ({"Metric"} if cfg.store_metric else set())
        #: the event types the store keeps (None: none)
        self.store_types: frozenset[str] | None = frozenset(kept) if kept else None
        self._metric_last: dict[Any, float] = {}  # host -> event time of its last stored load sample

    def clear(self) -> None:
        self.records, self.alerts, self.for_alertmanager = [], [], []
        self.dead, self.dead_lines, self.events = [], [], []
        self.first_alert_at = None
        self.dirty = False

    # ------------------------------------------------------------------ adding
    def record(self, record: MatchRecord, output: str, pack: str, now: float) -> str:
        """A match record (its id, :func:`contracts.records.record_id` under the query's ``output`` mode)."""
        rid = record_id(record, output)
        self.records.append(MatchRow.of(record, rid, pack, now, self.cfg.instance))
        self.dirty = True
        return rid

    def alert(self, alert: Alert, webhook: str, now: float, alertmanager: bool) -> None:
        """An alert transition into the outbox (``unrouted`` when its webhook has no URL) and, once committed, to
        Alertmanager."""
        status = "pending" if webhook in self.cfg.webhooks else "unrouted"
        self.alerts.append(AlertRow.of(alert, webhook, status, now, self.cfg.instance))
        if alertmanager:
            self.for_alertmanager.append(alert)
        if self.first_alert_at is None:
            self.first_alert_at = time.monotonic()
        self.dirty = True

    def dead_letter(self, tp: Tp, offset: int, idx: int, reason: str, shown: Any) -> None:
        """An event refused (``reason``: ``invalid: ...``, ``too_wide``, ``late``, ``behind_watermark``), counted."""
        kind = reason.split(":")[0]
        self.metrics.inc("hcep_deadletter_total", 1, {"reason": kind})
        if kind in ("late", "behind_watermark"):
            self.metrics.inc("hcep_late_events_total")
        text = shown if isinstance(shown, str) else json.dumps(shown, default=str)
        at = time.time()
        self.dead.append(DeadLetterRow(tp[0], tp[1], offset, idx, reason, text, at))
        self.dead_lines.append(
            json.dumps(
                {
                    "topic": tp[0],
                    "partition": tp[1],
                    "offset": offset,
                    "index": idx,
                    "reason": reason,
                    "event": text,
                    "at": at,
                }
            )
        )
        self.dirty = True

    def keep_event(self, ev: Any, obj: Mapping[str, Any], line: bytes) -> None:
        """Queue an event for the store's ``events`` table (its load ``Metric`` samples downsampled per host)."""
        keep_event(self.events, self._metric_last, self.cfg, self.metrics, ev, obj, line)


def keep_event(
    rows: list[Any], last: dict[Any, float], cfg: Any, metrics: Registry, ev: Any, obj: Mapping[str, Any], line: bytes
) -> None:
    """:meth:`Outputs.keep_event` on explicit state: ``rows`` pending, ``last`` the per-host downsampling clock."""
    if ev.type == "Metric" and ev.type not in cfg.store_event_types:
        if obj.get("metric") != cfg.store_metric:
            return
        host = obj.get("host")
        seen = last.get(host)
        if seen is not None and seen <= ev.ts < seen + cfg.store_metric_every:
            return  # downsampled
        last[host] = ev.ts
    if len(rows) >= STORE_EVENTS_PER_CHECKPOINT:
        metrics.inc("hcep_store_events_dropped_total")
        return
    host = obj.get("host")
    rows.append(
        EventRow(
            ev.id, ev.type, ev.ts, None if host is None else str(host), line.decode("utf-8", "replace"), cfg.instance
        )
    )
