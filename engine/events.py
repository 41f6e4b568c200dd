"""Events and the integer time domain (SPEC section 1).

An event is a typed record with a reported time ``ts`` and an uncertainty interval ``[lo, hi]`` in seconds.  The engine
never compares seconds: it works on integer ticks, ``[round(lo/tick), round(hi/tick)]`` inclusive, so that the
possible-worlds model of the papers (one uniformly likely integer point per event) is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

DEFAULT_TICK = 0.1

#: Keys of the event JSON object that are not attributes.
RESERVED_KEYS = frozenset({"type", "ts", "id", "delta", "lo", "hi"})


class EventError(ValueError):
    """A JSON object that is not a valid event; the message says which key is wrong."""


class Event:
    """One event.  ``tlo``/``thi`` are the tick interval; ``t`` is the point the precise evaluators order by.

    ``seq`` is the input position, used to break ties between events of one tick and as the default id.
    """

    __slots__ = ("type", "ts", "id", "lo", "hi", "attrs", "seq", "tlo", "thi", "t")

    def __init__(
        self,
        type: str,
        ts: float,
        attrs: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        seq: int = 0,
        lo: float | None = None,
        hi: float | None = None,
        tick: float = DEFAULT_TICK,
    ) -> None:
        self.type = type
        self.ts = ts
        self.seq = seq
        self.id = id if id is not None else str(seq)
        self.lo = ts if lo is None else lo
        self.hi = ts if hi is None else hi
        self.attrs: dict[str, Any] = dict(attrs) if attrs else {}
        self.tlo = round(self.lo / tick)
        self.thi = round(self.hi / tick)
        if self.thi < self.tlo:
            raise EventError(f"event {self.id}: interval [{self.lo}, {self.hi}] is empty")
        # Precise evaluators use the interval midpoint (exact for precise events, where tlo == thi).
        mid2 = self.tlo + self.thi
        self.t = mid2 // 2 if mid2 % 2 == 0 else mid2 / 2

    @property
    def precise(self) -> bool:
        return self.tlo == self.thi

    def get(self, attr: str) -> Any:
        """The attribute ``attr``; ``ts`` is the reported time; ``None`` when the event lacks it."""
        if attr == "ts":
            return self.ts
        return self.attrs.get(attr)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "ts": self.ts, "id": self.id}
        if self.lo != self.ts or self.hi != self.ts:
            out["lo"], out["hi"] = self.lo, self.hi
        out.update(self.attrs)
        return out

    def __repr__(self) -> str:
        span = f"{self.tlo}" if self.tlo == self.thi else f"{self.tlo}..{self.thi}"
        return f"Event({self.type} id={self.id} t={span} {self.attrs})"


def _number(obj: Mapping[str, Any], key: str) -> float:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EventError(f"'{key}' must be a finite number, got {value!r}")
    return float(value)


def event_from_json(
    obj: Any, seq: int, tick: float = DEFAULT_TICK, default_delta: float = 0.0
) -> Event:
    """Build an :class:`Event` from one decoded JSON object (SPEC section 1).

    ``seq`` is the 0-based input position (the id when ``id`` is absent).  Raises :class:`EventError` naming the key.
    """
    if not isinstance(obj, Mapping):
        raise EventError(f"an event must be a JSON object, got {type(obj).__name__}")
    etype = obj.get("type")
    if not isinstance(etype, str) or not etype:
        raise EventError("'type' is required and must be a non-empty string")
    if "ts" not in obj:
        raise EventError("'ts' is required")
    ts = _number(obj, "ts")
    eid = obj.get("id")
    if eid is not None and not isinstance(eid, (str, int)):
        raise EventError(f"'id' must be a string, got {eid!r}")
    if "lo" in obj or "hi" in obj:
        lo = _number(obj, "lo") if "lo" in obj else ts
        hi = _number(obj, "hi") if "hi" in obj else ts
    else:
        delta = _number(obj, "delta") if "delta" in obj else default_delta
        if delta < 0:
            raise EventError(f"'delta' must be >= 0, got {delta}")
        lo, hi = ts - delta, ts + delta
    if hi < lo:
        raise EventError(f"interval [{lo}, {hi}] is empty ('hi' < 'lo')")
    attrs = {k: v for k, v in obj.items() if k not in RESERVED_KEYS}
    return Event(
        etype, ts, attrs, id=None if eid is None else str(eid), seq=seq, lo=lo, hi=hi, tick=tick
    )
