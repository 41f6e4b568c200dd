"""The possible-worlds evaluator's event buffers: per type, sorted by lower bound and indexed by partition key, and
by the attributes that equality predicates join on (``TypeBuffer.index_on``)."""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

from engine.events import Event
from engine.output import key_of

NEG_INF = -math.inf


class Keyed:
    """The events of one type and one partition key (or without the key), sorted like their type buffer."""

    __slots__ = ("events", "los", "arrs")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.los: list[int] = []
        self.arrs: list[int] = []

    def add(self, e: Event, arr: int) -> None:
        if not self.los or e.tlo >= self.los[-1]:
            self.events.append(e)
            self.los.append(e.tlo)
            self.arrs.append(arr)
        else:
            i = bisect_left(self.los, e.tlo + 1)
            self.events.insert(i, e)
            self.los.insert(i, e.tlo)
            self.arrs.insert(i, arr)

    def bounds(self, lo_from: float, hi_exclusive: float) -> tuple[int, int]:
        los = self.los
        i = 0 if lo_from == NEG_INF else bisect_left(los, lo_from)
        j = len(los) if hi_exclusive == math.inf else bisect_left(los, hi_exclusive)
        return i, j

    def prune(self, min_thi: float, width: float = math.inf) -> None:
        """Drop the events with ``thi < min_thi``; ``width``: no event is wider (``thi - tlo``), so only those with a
        lower bound in ``[min_thi - width, min_thi)`` need a look (before: gone; after: kept)."""
        events, los = self.events, self.los
        a = 0 if width == math.inf else bisect_left(los, min_thi - width)
        b = bisect_left(los, min_thi)
        keep = [k for k in range(a, b) if events[k].thi >= min_thi]
        if a == 0 and len(keep) == b:
            return
        arrs = self.arrs
        self.events = [events[k] for k in keep] + events[b:]
        self.los = [los[k] for k in keep] + los[b:]
        self.arrs = [arrs[k] for k in keep] + arrs[b:]


class TypeBuffer:
    """Buffered events of one type sorted by lower bound (ties in arrival order), for range look-ups by bisection,
    and the same events indexed by the value of the query's first equivalence attribute (``key``; events without it in
    a shared list that every key sees).  ``width`` is the widest interval seen, so that the events whose upper bound
    can reach a floor start at or after ``floor - width``."""

    __slots__ = ("events", "los", "width", "key", "keyed", "arrived", "by_attr")

    def __init__(self, key: str | None = None) -> None:
        self.events: list[Event] = []
        self.los: list[int] = []
        self.width = 0
        self.key = key
        self.keyed: dict[Any, Keyed] = {}
        self.arrived = 0
        # attr -> value -> the events with that value (hashable values only; a missing value is never equal)
        self.by_attr: dict[str, dict[Any, Keyed]] = {}

    def add(self, e: Event) -> None:
        # Arrival order is nearly lower-bound order; keep the list sorted by tlo for bisection.
        if not self.los or e.tlo >= self.los[-1]:
            self.events.append(e)
            self.los.append(e.tlo)
        else:
            i = bisect_left(self.los, e.tlo + 1)
            self.events.insert(i, e)
            self.los.insert(i, e.tlo)
        w = e.thi - e.tlo
        if w > self.width:
            self.width = w
        if self.key is not None:
            v = key_of(e.attrs.get(self.key))
            sub = self.keyed.get(v)
            if sub is None:
                sub = self.keyed[v] = Keyed()
            sub.add(e, self.arrived)
            self.arrived += 1
        for attr, index in self.by_attr.items():
            _index_one(index, attr, e)

    def index_on(self, attr: str) -> None:
        """Also index the events by ``attr`` (those buffered already included), for :meth:`joined`."""
        if attr not in self.by_attr:
            index = self.by_attr[attr] = {}
            for e in self.events:
                _index_one(index, attr, e)

    def joined(self, attr: str, value: Any, eqv: tuple[Any, ...], floor: float, hi_exclusive: float) -> list[Event]:
        """:meth:`candidates` narrowed to the events whose ``attr`` may equal ``value`` (a superset of those for
        which the predicate ``x.attr = value`` holds; the caller still checks it), in the same order.  The partition
        index wins when the key is bound; an unhashable ``value`` (a JSON list) falls back to every candidate."""
        index = self.by_attr.get(attr)
        if index is None or (self.key is not None and eqv[0] is not None):
            return self.candidates(eqv, floor, hi_exclusive)
        if value is None:
            return []  # "=" with a missing value is never true
        try:
            sub = index.get(value)
        except TypeError:
            return self.candidates(eqv, floor, hi_exclusive)
        if sub is None:
            return []
        i, j = sub.bounds(NEG_INF if floor == NEG_INF else floor - self.width, hi_exclusive)
        return sub.events[i:j]

    def span(self, floor: float, hi_exclusive: float) -> list[Event]:
        """Events whose lower bound is < ``hi_exclusive`` and whose upper bound may be >= ``floor`` (a superset: the
        caller still tests ``thi``)."""
        los = self.los
        i = 0 if floor == NEG_INF else bisect_left(los, floor - self.width)
        j = len(los) if hi_exclusive == math.inf else bisect_left(los, hi_exclusive)
        return self.events[i:j]

    def span_key(self, value: Any, floor: float, hi_exclusive: float) -> list[Event]:
        """:meth:`span` restricted to the events whose key is ``value`` or missing (``value`` not None), in the same
        order."""
        lo_from = NEG_INF if floor == NEG_INF else floor - self.width
        mine = self.keyed.get(key_of(value))
        shared = self.keyed.get(None)
        if shared is None or not shared.events:
            if mine is None:
                return []
            i, j = mine.bounds(lo_from, hi_exclusive)
            return mine.events[i:j]
        i2, j2 = shared.bounds(lo_from, hi_exclusive)
        if mine is None or not mine.events:
            return shared.events[i2:j2]
        i1, j1 = mine.bounds(lo_from, hi_exclusive)
        if i1 == j1:
            return shared.events[i2:j2]
        if i2 == j2:
            return mine.events[i1:j1]
        a, b = mine, shared  # merge by (tlo, arrival): the order of the type buffer
        out = []
        while i1 < j1 and i2 < j2:
            if (a.los[i1], a.arrs[i1]) <= (b.los[i2], b.arrs[i2]):
                out.append(a.events[i1])
                i1 += 1
            else:
                out.append(b.events[i2])
                i2 += 1
        out.extend(a.events[i1:j1])
        out.extend(b.events[i2:j2])
        return out

    def candidates(self, eqv: tuple[Any, ...], floor: float, hi_exclusive: float) -> list[Event]:
        """:meth:`span`, through the key index when the key is bound in ``eqv`` (its first entry)."""
        if self.key is not None and eqv[0] is not None:
            return self.span_key(eqv[0], floor, hi_exclusive)
        return self.span(floor, hi_exclusive)

    def prune(self, min_thi: float) -> None:
        """Drop the events with ``thi < min_thi``.  Sorted by ``tlo`` and none wider than :attr:`width`: those with
        ``tlo < min_thi - width`` are all gone and those with ``tlo >= min_thi`` all kept, so only the band between
        is looked at (a prune a quarter window passed over the whole buffer three times)."""
        events, los, width = self.events, self.los, self.width
        a = bisect_left(los, min_thi - width)
        b = bisect_left(los, min_thi)
        band = events[a:b]
        kept = [e for e in band if e.thi >= min_thi]
        if a == 0 and len(kept) == len(band):
            return
        gone = events[:a]
        if len(kept) != len(band):
            gone += [e for e in band if e.thi < min_thi]
        self.events = kept + events[b:]
        self.los = [e.tlo for e in kept] + los[b:]
        if self.key is not None:
            _prune_values(self.keyed, {key_of(e.attrs.get(self.key)) for e in gone}, min_thi, width)
        for attr, index in self.by_attr.items():
            values = set()
            for e in gone:
                try:
                    values.add(e.attrs.get(attr))
                except TypeError:  # unhashable: never indexed
                    continue
            _prune_values(index, values, min_thi, width)


def _prune_values(index: dict[Any, Keyed], values: set[Any], min_thi: float, width: float) -> None:
    """Prune the lists of ``values`` in ``index`` (the values of the events just pruned), dropping emptied ones."""
    for v in values:
        sub = index.get(v)
        if sub is not None:
            sub.prune(min_thi, width)
            if not sub.events:
                del index[v]


def _index_one(index: dict[Any, Keyed], attr: str, e: Event) -> None:
    """File ``e`` under its value of ``attr``: an equality join can only hold for a value that is there and hashable
    (a JSON list or object equals only another one, which the caller then looks up without the index)."""
    v = e.attrs.get(attr)
    if v is None:
        return
    try:
        sub = index.get(v)
    except TypeError:
        return
    if sub is None:
        sub = index[v] = Keyed()
    sub.add(e, 0)
