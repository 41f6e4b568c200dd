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

#: The largest |time| in seconds an event may carry (``ts``, ``lo``, ``hi``): 1e11 s is about the year 5138 as a Unix
#: time.  Anything larger is a unit mistake or garbage, and would overflow the tick arithmetic (``1e308 / 0.1``).
MAX_SECONDS = 1e11
#: The largest |tick index| of an interval end: far below 2**53, so that tick sums and midpoints stay exact floats.
MAX_TICKS = 2**50

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
        limit = seconds_limit(tick)
        # Chained comparisons are False for NaN: one test rejects NaN, infinities and absurd times before round().
        if not (-limit <= ts <= limit and -limit <= self.lo <= limit and -limit <= self.hi <= limit):
            raise EventError(f"event {self.id}: time out of range (ts {ts}, interval [{self.lo}, {self.hi}]; "
                             f"|seconds| must be <= {limit:g} at tick {tick:g})")
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


def seconds_limit(tick: float) -> float:
    """The largest |seconds| an event may carry at this tick: :data:`MAX_SECONDS`, or less where a tiny tick would
    make the tick index exceed :data:`MAX_TICKS`."""
    if not (tick > 0 and math.isfinite(tick)):
        raise EventError(f"the tick must be a positive number of seconds, got {tick!r}")
    return min(MAX_SECONDS, MAX_TICKS * tick)


def max_width_ticks(max_delta: float, tick: float) -> int:
    """The widest interval in ticks (``thi - tlo``) accepted under a half-width bound of ``max_delta`` seconds: what
    ``hcep run`` dead-letters as ``too_wide`` above, and ``hcep match``/``batch`` report as an error."""
    return math.ceil(2 * max_delta / tick) + 1


def _repr(value: Any) -> str:
    """A short repr for error messages (a fuzzed event may carry a megabyte-long value)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(obj: Mapping[str, Any], key: str, limit: float) -> float:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EventError(f"'{key}' must be a finite number, got {_repr(value)}")
    if isinstance(value, int) and abs(value) > limit:  # float() of a huge int raises OverflowError
        raise EventError(f"'{key}' is out of range: {_repr(value)} (|{key}| must be <= {limit:g} s)")
    value = float(value)
    if not math.isfinite(value):
        raise EventError(f"'{key}' must be a finite number, got {value!r}")
    if abs(value) > limit:
        raise EventError(f"'{key}' is out of range: {value!r} (|{key}| must be <= {limit:g} s)")
    return value


def event_from_json(
    obj: Any, seq: int, tick: float = DEFAULT_TICK, default_delta: float = 0.0
) -> Event:
    """Build an :class:`Event` from one decoded JSON object (SPEC section 1).

    ``seq`` is the 0-based input position (the id when ``id`` is absent).  Raises :class:`EventError` naming the key,
    and only that: NaN, infinities, huge numbers, ``lo > hi`` and negative or absurd ``delta`` are all reported.
    """
    if not isinstance(obj, Mapping):
        raise EventError(f"an event must be a JSON object, got {type(obj).__name__}")
    etype = obj.get("type")
    if not isinstance(etype, str) or not etype:
        raise EventError("'type' is required and must be a non-empty string")
    if "ts" not in obj:
        raise EventError("'ts' is required")
    limit = seconds_limit(tick)
    ts = _number(obj, "ts", limit)
    eid = obj.get("id")
    if eid is not None and not isinstance(eid, (str, int)):
        raise EventError(f"'id' must be a string, got {_repr(eid)}")
    if isinstance(eid, int) and not isinstance(eid, bool):
        try:
            eid = str(eid)
        except ValueError:  # more digits than int -> str converts (sys.get_int_max_str_digits)
            raise EventError(f"'id' must be a string, got {_repr(eid)}") from None
    if "lo" in obj or "hi" in obj:
        lo = _number(obj, "lo", limit) if "lo" in obj else ts
        hi = _number(obj, "hi", limit) if "hi" in obj else ts
    else:
        delta = _number(obj, "delta", limit) if "delta" in obj else default_delta
        if delta < 0:
            raise EventError(f"'delta' must be >= 0, got {delta}")
        lo, hi = ts - delta, ts + delta
        if not (-limit <= lo and hi <= limit):
            raise EventError(f"interval [{lo}, {hi}] ('ts' +- 'delta') is out of range (|seconds| must be <= "
                             f"{limit:g})")
    if hi < lo:
        raise EventError(f"interval [{lo}, {hi}] is empty ('hi' < 'lo')")
    attrs = {k: v for k, v in obj.items() if k not in RESERVED_KEYS}
    return Event(
        etype, ts, attrs, id=None if eid is None else str(eid), seq=seq, lo=lo, hi=hi, tick=tick
    )
