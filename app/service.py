"""Compatibility: ``hcep run``'s service now lives in :mod:`app.stream` (one module per job); this module keeps the
names other code and tests import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.stream import loop
from app.stream.config import POLL_EVENTS, STATS_EVERY, STORE_EVENTS_PER_CHECKPOINT, ServiceConfig
from app.stream.loop import run_service
from app.stream.outputs import keep_event
from engine.events import Event, EventDecoder

__all__ = [
    "POLL_EVENTS",
    "STATS_EVERY",
    "STORE_EVENTS_PER_CHECKPOINT",
    "Service",
    "ServiceConfig",
    "make_event_parser",
    "run_service",
]


def make_event_parser(tick: float) -> Callable[[Any], Event]:
    """``obj -> Event``: :meth:`engine.events.EventDecoder.event` (identical in result to ``event_from_json``)."""
    return EventDecoder(tick).event


class Service(loop.Service):
    """:class:`app.stream.loop.Service`, plus the event-keeping step on explicit state (``pending_events``,
    ``_metric_last``), as the older tests drive it without the rest of the service."""

    pending_events: list[Any]
    _metric_last: dict[Any, float]

    def _keep_event(self, ev: Any, obj: dict[str, Any], line: bytes) -> None:
        keep_event(self.pending_events, self._metric_last, self.cfg, self.metrics, ev, obj, line)
