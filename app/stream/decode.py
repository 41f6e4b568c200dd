"""Message bytes -> events: JSON lines decoded by the project's one decoder, or refused with a reason.

A Kafka message holds one event or several as JSON lines.  Each line becomes an :class:`engine.events.Event`, or --
for a type no query reads and the store does not keep -- just its clock ``(t, thi)``, which is all the watermark and
the rebuild points need of it (most Ganglia ``Metric`` samples: building them would be a third of the service's
work).  A line that is not JSON, not a valid event (:func:`engine.events.event_from_json`'s rules and bounds) or
wider than ``max_delta`` is refused with the reason the dead letter records: ``invalid: ...`` or ``too_wide``.
"""

from __future__ import annotations

from typing import Any

from engine.events import Event, EventDecoder, EventError


class Refused(Exception):
    """A line that is no acceptable event: ``reason`` for the dead letter, ``shown`` what it records of the line."""

    def __init__(self, reason: str, shown: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.shown = shown


class MessageDecoder:
    """Decodes the lines of messages.  ``built``: the event types to build (None: all); others are only clocked."""

    def __init__(self, tick: float, max_delta: float, built: frozenset[str] | None) -> None:
        self.events = EventDecoder(tick, max_delta, fast_json=True)
        self.built = built

    @staticmethod
    def lines(value: bytes | None) -> list[bytes] | tuple[bytes]:
        """The lines of a message (blank ones included: the caller skips them, keeping each line's index)."""
        value = value or b""
        return value.split(b"\n") if b"\n" in value else (value,)

    def decode(self, line: bytes) -> tuple[Any, Event | None, float, int]:
        """``(obj, event, t, thi)``: the decoded object and its event -- or, for a type not built, None and the
        event's clock.  Raises :class:`Refused`."""
        events = self.events
        try:
            obj = events.loads(line)
            built = self.built
            if built is not None and type(obj) is dict:
                etype = obj.get("type")
                if type(etype) is not str or etype not in built:
                    point = events.point(obj)
                    if point is not None:
                        t, tlo, thi = point
                        if events.too_wide(tlo, thi):
                            raise Refused("too_wide", obj)
                        return obj, None, t, thi
            ev = events.event(obj)
        except (ValueError, EventError) as err:  # orjson's JSONDecodeError is a ValueError
            raise Refused(f"invalid: {err}", line.decode("utf-8", "replace")) from None
        if events.too_wide(ev.tlo, ev.thi):
            raise Refused("too_wide", obj)
        return obj, ev, ev.t, ev.thi
