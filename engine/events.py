"""Events and the integer time domain (docs/semantics.md section 1).

An event is a typed record with a reported time ``ts`` and an uncertainty interval ``[lo, hi]`` in seconds.  The engine
never compares seconds: it works on integer ticks, ``[round(lo/tick), round(hi/tick)]`` inclusive, so that the
possible-worlds model of the papers (one uniformly likely integer point per event) is exact.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Container, Mapping
from typing import Any, cast

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
        ts: int | float,  # (int | float: as given; compiled, ``float`` would turn an int into a float)
        attrs: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        seq: int = 0,
        lo: int | float | None = None,
        hi: int | float | None = None,
        tick: float = DEFAULT_TICK,
    ) -> None:
        self.type = type
        self.ts: int | float = ts
        self.seq = seq
        self.id = id if id is not None else str(seq)
        self.lo: int | float = ts if lo is None else lo
        self.hi: int | float = ts if hi is None else hi
        self.attrs: dict[str, Any] = dict(attrs) if attrs else {}
        limit = seconds_limit(tick)
        # Chained comparisons are False for NaN: one test rejects NaN, infinities and absurd times before round().
        if not (-limit <= ts <= limit and -limit <= self.lo <= limit and -limit <= self.hi <= limit):
            raise EventError(
                f"event {self.id}: time out of range (ts {ts}, interval [{self.lo}, {self.hi}]; "
                f"|seconds| must be <= {limit:g} at tick {tick:g})"
            )
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

    def copy(self) -> Event:
        """A copy sharing the attributes (``copy.copy`` cannot copy a compiled :class:`Event`)."""
        c = _Decoded()
        c.type, c.ts, c.id, c.lo, c.hi, c.attrs = self.type, self.ts, self.id, self.lo, self.hi, self.attrs
        c.seq, c.tlo, c.thi, c.t = self.seq, self.tlo, self.thi, self.t
        return c

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


class _Decoded(Event):
    """An :class:`Event` made field by field -- by the decoder, which has checked what ``Event.__init__`` checks, and
    by :meth:`Event.copy` -- as ``Event.__init__`` would make it: compiled, ``object.__new__`` cannot make a native
    class, and the constructor's checks again and the copy of the attributes cost a third of the decoding."""

    __slots__ = ()

    def __init__(self) -> None:
        pass


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
    # float() of a huge int raises OverflowError; int(limit): compiled, an int compared with a float is made a float
    if isinstance(value, int) and abs(value) > int(limit):
        raise EventError(f"'{key}' is out of range: {_repr(value)} (|{key}| must be <= {limit:g} s)")
    value = float(value)
    if not math.isfinite(value):
        raise EventError(f"'{key}' must be a finite number, got {value!r}")
    if abs(value) > limit:
        raise EventError(f"'{key}' is out of range: {value!r} (|{key}| must be <= {limit:g} s)")
    return value


def event_from_json(obj: Any, seq: int, tick: float = DEFAULT_TICK, default_delta: float = 0.0) -> Event:
    """Build an :class:`Event` from one decoded JSON object (docs/semantics.md section 1).

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
            raise EventError(
                f"interval [{lo}, {hi}] ('ts' +- 'delta') is out of range (|seconds| must be <= {limit:g})"
            )
    if hi < lo:
        raise EventError(f"interval [{lo}, {hi}] is empty ('hi' < 'lo')")
    attrs = {k: v for k, v in obj.items() if k not in RESERVED_KEYS}
    return Event(etype, ts, attrs, id=None if eid is None else str(eid), seq=seq, lo=lo, hi=hi, tick=tick)


# ------------------------------------------------------------------------------------------------ the one decoder
def loads_json(raw: bytes | str, first: bool = False) -> Any:
    """One line of JSON text -> the decoded value (``None`` for a blank line); ``ValueError`` with the reason.

    Python's own decoder: integers stay exact and a message names the column.  Besides bad JSON it raises a plain
    ``ValueError`` for an integer of more than 4,300 digits and ``RecursionError`` for deep nesting: both are bad
    input, reported as such, never a crash.  ``first``: the first line of a file, which may carry a byte-order mark.
    """
    if isinstance(raw, bytes):
        try:
            line = raw.decode("utf-8-sig" if first else "utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8 text") from None
    else:
        line = raw.lstrip("\ufeff") if first else raw
    if not line.strip():
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON: {err.msg} (column {err.colno})") from None
    except (ValueError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err).split(";")[0]
        raise ValueError(f"invalid JSON: {reason}") from None


def _fast_loads() -> Callable[[bytes | str], Any]:
    """orjson's decoder (~4x the standard library's on small objects), else the standard library's.

    Stricter than Python's: NaN and infinities, lone surrogates and integers beyond 64 bits are not JSON to it (the
    last become floats), so a stream decoded with it never stores a string SQLite cannot encode."""
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still works
        return json.loads
    return cast("Callable[[bytes | str], Any]", loads)


#: Digits -> "0": 19 zeros in the translated text are 19 digits in a row, perhaps an integer beyond 64 bits, which
#: orjson turns into a float; such text goes to Python's decoder, which keeps it exact.  (A translation and a substring
#: search: a tenth of a regular expression's time on a block.)
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _long_digits(raw: bytes) -> bool:
    return _LONG_RUN in raw.translate(_DIGITS_TO_ZERO)


def _orjson_loads() -> Callable[[bytes], Any] | None:
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency
        return None
    return cast("Callable[[bytes], Any]", loads)


_ORJSON = _orjson_loads()


#: What :func:`fast_value` answers for a line it leaves to Python's decoder.
SLOW = object()


def fast_value(raw: bytes) -> Any:
    """orjson's value of a line where it is the value Python's ``json.loads`` gives (see :func:`loads_exact`), else
    :data:`SLOW`: the caller decodes the line as it always has (with its own messages for what is bad)."""
    if _ORJSON is not None and not _long_digits(raw):
        try:
            return _ORJSON(raw)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return SLOW


def loads_exact(raw: bytes, first: bool = False) -> Any:
    """:func:`loads_json` -- the same value, the same ``ValueError`` -- at orjson's speed where that is the same.

    orjson decodes the line unless it holds 19 digits in a row (an integer beyond 64 bits would become a float); any
    line orjson refuses (bad JSON, NaN, lone surrogates, a byte-order mark, a blank line) is decoded again by
    :func:`loads_json`, which accepts it or gives today's message.  orjson accepts nothing Python's decoder refuses
    and, for what both accept, gives equal values (floats are correctly rounded by both, duplicate keys keep the
    last value at the first key's place)."""
    value = fast_value(raw)
    return loads_json(raw, first) if value is SLOW else value


class LineError(ValueError):
    """A bad line of a block (:meth:`EventDecoder.decode_block`): ``index`` (0-based in the block) and ``message``,
    the text ``hcep match`` prints after ``FILE:LINE:``."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


class Stamp(Event):
    """The clock of an event whose type no query reads: what the pack feeder, the evaluators' clocks, the time sort
    (``t``, ``seq``) and the stream time need of it, without its attributes.  Reading ``attrs`` (or ``ts``, ``lo``,
    ``hi``) of a stamp is an ``AttributeError``, never a silently empty event.

    An :class:`Event` whose constructor sets nothing (the decoder sets ``type``, ``t``, ``tlo``, ``thi``, ``seq`` and
    ``id``), so that it passes wherever an event may: an evaluator that takes every type (``wants`` None, the trend
    evaluators) is handed stamps and skips their types, as it skips any type it does not name."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"Stamp({self.type} id={self.id} t={self.tlo}..{self.thi})"


class EventDecoder:
    """The project's one way from event JSON to :class:`Event`: ``hcep match``, ``batch`` (and Spark's readers), the
    streaming service and the archive all decode through it.

    :meth:`event` is :func:`event_from_json` with a fast path for the common shape (``type``, a numeric ``ts``, an
    optional numeric ``delta`` and string ``id``): it fills the event's slots directly, skipping the constructor's
    keyword handling and second copy of the attributes (a third of the service's per-event decoding cost), with an
    identical result -- the bounds included, since NaN, infinities and absurd numbers fail the same chained
    comparisons and fall through to :func:`event_from_json`, which reports them.  :meth:`point` gives the clock of
    an event of that shape without building it (types no query reads), :meth:`too_wide` the ``--max-delta`` rule.

    JSON text: :meth:`loads` is Python's decoder for files (exact integers, messages with the column) or, with
    ``fast_json``, orjson's for streams (see :func:`_fast_loads`).  :meth:`decode_block` reads a block of JSON lines
    at once (``hcep match``): orjson wherever its value is Python's (:func:`loads_exact`), the messages of the
    per-line path, and only the event types asked for built (the others as :class:`Stamp`, their clocks)."""

    __slots__ = ("tick", "limit", "max_delta", "widest", "loads")

    def __init__(self, tick: float = DEFAULT_TICK, max_delta: float | None = None, *, fast_json: bool = False) -> None:
        self.tick = tick
        self.limit = seconds_limit(tick)
        self.max_delta = max_delta
        #: the widest interval accepted, in ticks (``thi - tlo``); None: any
        self.widest = None if max_delta is None else max_width_ticks(max_delta, tick)
        self.loads: Callable[..., Any] = _fast_loads() if fast_json else loads_json

    def event(self, obj: Any, seq: int = 0) -> Event:
        """:func:`event_from_json` ``(obj, seq, tick)``; ``obj`` is not modified.  Raises :class:`EventError`."""
        if type(obj) is dict and "lo" not in obj and "hi" not in obj:
            etype: Any = obj.get("type")
            ts: Any = obj.get("ts")
            delta: Any = obj.get("delta", 0.0)
            eid: Any = obj.get("id")
            lim = self.limit
            if (
                type(etype) is str
                and etype
                and type(ts) in (float, int)
                and type(delta) in (float, int)
                and 0 <= delta <= lim
                and -lim <= ts <= lim
                and -lim <= ts - delta
                and ts + delta <= lim
                and (eid is None or type(eid) is str)
            ):
                tick = self.tick
                ts = float(ts)
                attrs = obj.copy()
                del attrs["type"], attrs["ts"]
                if "delta" in attrs:
                    del attrs["delta"]
                if "id" in attrs:
                    del attrs["id"]
                ev = _Decoded()
                ev.type = etype
                ev.ts = ts
                ev.seq = seq
                ev.id = str(seq) if eid is None else eid
                ev.lo = lo = ts - delta
                ev.hi = hi = ts + delta
                ev.attrs = attrs
                ev.tlo = tlo = round(lo / tick)
                ev.thi = thi = round(hi / tick)
                mid2 = tlo + thi
                ev.t = mid2 // 2 if mid2 % 2 == 0 else mid2 / 2
                return ev
        return event_from_json(obj, seq, self.tick)

    def decode_block(
        self, block: bytes, seq: int = 0, built: Container[str] | None = None, *, first: bool = False
    ) -> tuple[list[Event | Stamp], int]:
        """JSON lines (``block``: whole lines, the last newline optional) -> ``(events, lines)``: what
        :func:`loads_json` and :meth:`event` make of each line, numbered from ``seq`` (blank and ``null`` lines are
        skipped), and the number of lines read.  ``built``: the event types to build; an event of another type of the
        common shape becomes a :class:`Stamp` (its clock only; its line is checked all the same).  ``first``: the
        block starts the file (a byte-order mark).  Raises :class:`LineError` at the first bad line, with the message
        of :func:`loads_json`, ``invalid event: ...`` (:class:`EventError`) or :meth:`wide_reason`.

        The same events as a loop of :meth:`loads` and :meth:`event` (see :func:`loads_exact`), for a third of the
        cost: orjson, the fast path of :meth:`event` inline, the decoded dict kept as the attributes."""
        lines = block.split(b"\n")
        ended = block.endswith(b"\n")
        if ended:
            lines.pop()
        n = len(lines)
        fast = _ORJSON if _ORJSON is not None and not _long_digits(block) else None
        out: list[Event | Stamp] = []
        append = out.append
        tick, lim, widest = self.tick, self.limit, self.widest
        for i, raw in enumerate(lines):
            obj: Any
            try:
                if fast is None:
                    raise ValueError
                obj = fast(raw)
            except ValueError:
                text = raw + b"\n" if ended or i < n - 1 else raw
                try:
                    obj = loads_exact(text, first and i == 0)
                except ValueError as err:
                    raise LineError(i, str(err)) from None
                if obj is None:
                    continue
            else:
                if obj is None:
                    continue
            s = seq + len(out)
            if type(obj) is dict and "lo" not in obj and "hi" not in obj:
                etype: Any = obj.get("type")
                ts: Any = obj.get("ts")
                delta: Any = obj.get("delta", 0.0)
                eid: Any = obj.get("id")
                if (
                    type(etype) is str
                    and etype
                    and type(ts) in (float, int)
                    and type(delta) in (float, int)
                    and 0 <= delta <= lim
                    and -lim <= ts <= lim
                    and -lim <= ts - delta
                    and ts + delta <= lim
                    and (eid is None or type(eid) is str)
                ):
                    ts = float(ts)
                    lo = ts - delta
                    hi = ts + delta
                    tlo = round(lo / tick)
                    thi = round(hi / tick)
                    mid2 = tlo + thi
                    if built is None or etype in built:
                        del obj["type"], obj["ts"]
                        if "delta" in obj:
                            del obj["delta"]
                        if "id" in obj:
                            del obj["id"]
                        ev: Event = _Decoded()
                        ev.type = etype
                        ev.ts = ts
                        ev.seq = s
                        ev.id = str(s) if eid is None else eid
                        ev.lo = lo
                        ev.hi = hi
                        ev.attrs = obj
                        ev.tlo = tlo
                        ev.thi = thi
                        ev.t = mid2 // 2 if mid2 % 2 == 0 else mid2 / 2
                        if widest is not None and thi - tlo > widest:
                            raise LineError(i, self.wide_reason(ev))
                        append(ev)
                    else:
                        if widest is not None and thi - tlo > widest:
                            raise LineError(i, self.wide_reason(self.event(obj, s)))
                        st = Stamp()
                        st.type = etype
                        st.t = mid2 // 2 if mid2 % 2 == 0 else mid2 / 2
                        st.tlo = tlo
                        st.thi = thi
                        st.seq = s
                        st.id = str(s) if eid is None else eid
                        append(st)
                    continue
            try:
                ev = self.event(obj, s)
            except EventError as err:
                raise LineError(i, f"invalid event: {err}") from None
            if widest is not None and ev.thi - ev.tlo > widest:
                raise LineError(i, self.wide_reason(ev))
            append(ev)
        return out, n

    def point(self, obj: Any) -> tuple[float, int, int] | None:
        """``(t, tlo, thi)`` of an event of the common shape, without building it (what the service needs of a type
        no query reads: its clock); None for any other object, which :meth:`event` then decodes or rejects."""
        if type(obj) is not dict:
            return None
        etype: Any = obj.get("type")
        ts: Any = obj.get("ts")
        delta: Any = obj.get("delta", 0.0)
        eid: Any = obj.get("id")
        lim = self.limit
        if (
            type(etype) is str
            and etype
            and type(ts) in (float, int)
            and type(delta) in (float, int)
            and 0 <= delta <= lim
            and -lim <= ts <= lim
            and -lim <= ts - delta
            and ts + delta <= lim
            and (eid is None or type(eid) is str)
            and "lo" not in obj
            and "hi" not in obj
        ):
            tick = self.tick
            tlo = round((ts - delta) / tick)
            thi = round((ts + delta) / tick)
            mid2 = tlo + thi
            return (mid2 // 2 if mid2 % 2 == 0 else mid2 / 2), tlo, thi
        return None

    def too_wide(self, tlo: int, thi: int) -> bool:
        """Wider than ``max_delta`` allows (``hcep run`` dead-letters it as ``too_wide``; ``match`` reports it)."""
        return self.widest is not None and thi - tlo > self.widest

    def wide_reason(self, ev: Event) -> str:
        """What ``hcep match`` and ``batch`` say of an event :meth:`too_wide` rejects."""
        return (
            f"event wider than --max-delta {self.max_delta:g} s: interval [{ev.lo:g}, {ev.hi:g}] "
            f"(raise --max-delta to accept it)"
        )


@functools.lru_cache(maxsize=16)
def decoder_for(tick: float) -> EventDecoder:
    """A shared :class:`EventDecoder` of a tick, without a width bound (per-row callers: the archive, Spark)."""
    return EventDecoder(tick)
