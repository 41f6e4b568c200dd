"""Plain-data snapshots of evaluator state: the event table and the number codec every evaluator's
``snapshot()``/``restore()`` share (:mod:`engine.evaluator`).

A snapshot is JSON-serialisable (``json.dumps`` without a ``default``): dicts with string keys, lists, strings, ints,
finite floats, booleans and None.  Events are stored once, in a table, as ``[seq, Event.to_json()]``; the state
structures refer to them by their index in that table, so that an event shared by several runs (or several
evaluators of a pack, when they share one :class:`EventCodec`) is stored once and restored as one object -- the
evaluators compare events and shared Kleene bindings by identity.  Infinite times are stored as the strings ``"inf"``
and ``"-inf"``.  Configuration (the query, the uncertainty bound given at construction, memory bounds) is not state:
a snapshot is restored into an evaluator built the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from engine.events import Event

__all__ = ["SNAPSHOT_VERSION", "EventCodec", "SnapshotError", "canonical_keys", "dec_float", "enc_float"]

#: Bumped whenever a snapshot's layout changes; ``restore`` refuses another version.
SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """A snapshot that does not fit the evaluator it is restored into (kind, version or query)."""


def enc_float(x: Any) -> Any:
    """A time or bound as plain JSON: infinities become strings (JSON has no infinity).  An int passes as itself
    (GRETA's exact sums): typed ``Any`` so that the compiled module neither refuses nor converts it."""
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    return x


def dec_float(x: Any) -> Any:
    """The inverse of :func:`enc_float` (an int comes back as itself)."""
    if x == "inf":
        return math.inf
    if x == "-inf":
        return -math.inf
    return x


class EventCodec:
    """Events <-> table indexes.  One codec may serve several evaluators (a pack) so that shared events are stored once.

    ``tick`` is the tick the events were built at (the query's): restored events are rebuilt at it.
    """

    __slots__ = ("tick", "rows", "index", "events")

    def __init__(self, tick: float, rows: list[Any] | None = None) -> None:
        self.tick = tick
        self.rows: list[Any] = rows if rows is not None else []
        self.index: dict[int, int] = {}  # id(event) -> row (snapshotting)
        self.events: list[Event | None] = [None] * len(self.rows)  # row -> event (restoring)

    def ref(self, ev: Event) -> int:
        """The row of ``ev``, added on first use."""
        i = self.index.get(id(ev))
        if i is None:
            i = self.index[id(ev)] = len(self.rows)
            self.rows.append([ev.seq, ev.to_json()])
            self.events.append(ev)
        return i

    def event(self, i: int) -> Event:
        """The event of row ``i``, built once."""
        ev = self.events[i]
        if ev is None:
            seq, obj = self.rows[i]
            ev = self.events[i] = decode_event(obj, seq, self.tick)
        return ev

    def table(self) -> list[Any]:
        return self.rows


def canonical_keys(keys: Any) -> list[list[Any]]:
    """A set of RETURN keys (tuples) as a list in a canonical order (sets have none)."""
    return sorted((list(k) for k in keys), key=lambda k: json.dumps(k, sort_keys=True, default=str))


def decode_event(obj: Mapping[str, Any], seq: int, tick: float) -> Event:
    """An :class:`Event` from its ``to_json()`` and input position, with the same field values and types."""
    attrs = dict(obj)
    etype = attrs.pop("type")
    ts = attrs.pop("ts")
    eid = attrs.pop("id")
    lo = attrs.pop("lo", None)
    hi = attrs.pop("hi", None)
    return Event(etype, ts, attrs, id=eid, seq=seq, lo=lo, hi=hi, tick=tick)


def open_codec(state: Mapping[str, Any], codec: EventCodec | None, tick: float) -> EventCodec:
    """The codec a restore reads events through: the caller's (shared table) or the snapshot's own ``events``."""
    if codec is not None:
        return codec
    return EventCodec(tick, list(state.get("events", [])))


def check_header(state: Mapping[str, Any], kind: str, name: str) -> None:
    """Refuse a snapshot of another evaluator kind, layout version or query."""
    if state.get("kind") != kind or state.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(
            f"query {name}: a {state.get('kind')!r} snapshot (version {state.get('version')}) "
            f"cannot restore a {kind!r} evaluator (version {SNAPSHOT_VERSION})"
        )
    if state.get("query") != name:
        raise SnapshotError(f"a snapshot of query {state.get('query')!r} cannot restore query {name!r}")


def header(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "version": SNAPSHOT_VERSION, "query": name}
