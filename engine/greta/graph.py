"""The GRETA runtime graph: paper Algorithm 2 with its sections 5 (negation), 6 (windows, predicates, groups) and 7.

One *vertex* per (event, state) that starts a trend or extends one; edges are never stored.  A vertex keeps, per
window and per group, the aggregate over every sub-trend from a START event to it (:mod:`engine.greta.aggregates`):
``aggregate(e) = [e is START] + combine over valid predecessors p of aggregate(p)``, plus ``e``'s own values.  The
aggregates of END vertices add up to the result of each (window, group).

How predecessors are found, per transition ``src -> dst`` (its *mode*):

- ``total``   -- no edge predicate: a running combination of every ``src`` vertex, O(1) per event;
- ``fenwick`` -- one range predicate: a :class:`~engine.greta.fenwick.RangeIndex`, O(log n) (window known up front);
- ``scan``    -- anything else: every ``src`` vertex of the event's windows and compatible groups is tested, O(n).

Groups.  The equivalence attributes ``[a, ...]`` partition the stream, but an event lacking an attribute belongs to
every partition (semantics section 2).  So a trend's group is the merge of its events' keys (None = not bound yet): each
vertex keeps its aggregates per *bound key*, and extending a sub-trend merges keys or drops it on a conflict.

Negation.  A finished trend of a negative sub-pattern (a nested :class:`Graph` whose aggregate is the latest first
time, :class:`~engine.greta.aggregates.MaxFirstLayout`) from ``f`` to ``l`` removes every edge ``p -> e`` with
``p.t < f`` and ``l < e.t``.  Without groups and with a one-event negative pattern that is a *reset* of the
transition's index; otherwise the transition scans and checks, per edge, the negative trends that started after
``p``.  Such a trend only cancels a trend of the same group: when the group is not fully bound yet at the edge, the
negative trend's key rides along with the sub-trend (the ``F`` half of a vertex key) until it is decided.

Time.  Events of one tick are concurrent: a batch of them is first *looked up* (all predecessors are strictly
earlier), then negative trends finished in the batch are registered, then the batch's vertices are *committed* -- the
paper's time-based transactions (section 7).
"""

from __future__ import annotations

import itertools
import json
import math
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.events import Event
from engine.greta.aggregates import MaxFirstLayout
from engine.greta.fenwick import RangeIndex, domains, key_kind
from engine.plan.predicates import KleeneCell
from engine.plan.trend_template import Template, Transition, is_single_event

__all__ = ["Graph", "EMPTY", "NO_WINDOWS", "is_single_event"]

EMPTY: frozenset[Any] = frozenset()
NEG_INF = -math.inf
KEY0 = ((), EMPTY)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)


def _compatible(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """No attribute bound in both keys to different values."""
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def _merge(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...] | None:
    out = []
    for x, y in zip(a, b, strict=True):
        if x is None:
            out.append(y)
        elif y is None or x == y:
            out.append(x)
        else:
            return None
    return tuple(out)


def _simplify(k: tuple[Any, ...], pending: frozenset[Any]) -> tuple[Any, ...] | None:
    """``(k, pending')``, or None when a negative trend in ``pending`` now surely cancels a trend of group ``k``.

    A pending negative key no longer compatible with ``k`` cannot cancel any more; one whose bound attributes are all
    bound in ``k`` (and equal) cancels."""
    keep = []
    for f in pending:
        if not _compatible(f, k):
            continue
        if all(k[i] is not None for i, x in enumerate(f) if x is not None):
            return None
        keep.append(f)
    return (k, frozenset(keep) if keep else EMPTY)


class _Vertex:
    __slots__ = ("ev", "t", "ref", "ekey", "aggs", "exit_ok")

    def __init__(self, ev: Event, ref: Any, ekey: tuple[Any, ...], aggs: dict[Any, Any], exit_ok: bool) -> None:
        self.ev = ev
        self.t = ev.t
        self.ref = ref
        self.ekey = ekey
        self.aggs = aggs  # wid -> {(bound key, pending negative keys): aggregate}
        self.exit_ok = exit_ok


class _Bucket:
    """The vertices of one state and one event key, in time order (for scans and expiry)."""

    __slots__ = ("times", "verts")

    def __init__(self) -> None:
        self.times: list[float] = []
        self.verts: list[_Vertex] = []


class _NegMatches:
    """Finished negative trends registered on one scanning transition, sorted by first time."""

    __slots__ = ("firsts", "keys", "maxfirst")

    def __init__(self) -> None:
        self.firsts: list[float] = []
        self.keys: list[tuple[Any, ...]] = []
        self.maxfirst = NEG_INF

    def add(self, first: float, key: tuple[Any, ...]) -> None:
        i = bisect_right(self.firsts, first)
        self.firsts.insert(i, first)
        self.keys.insert(i, key)
        if first > self.maxfirst:
            self.maxfirst = first

    def keys_after(self, t: float) -> frozenset[Any]:
        """Keys of the negative trends that start after ``t`` (all registered ones ended before the event)."""
        i = bisect_right(self.firsts, t)
        return frozenset(self.keys[i:]) if i < len(self.keys) else EMPTY

    def expire(self, horizon: float) -> None:
        cut = bisect_left(self.firsts, horizon)
        if cut:
            del self.firsts[:cut]
            del self.keys[:cut]


class _Edge:
    """A transition at run time: how it finds predecessors, its indexes and its negations."""

    __slots__ = (
        "tr",
        "src",
        "dst",
        "seq",
        "mode",
        "neg_mode",
        "pred",
        "bind",
        "range",
        "index",
        "negs",
        "vals",
        "domains",
    )

    def __init__(self, tr: Transition, n: int, mode: str, neg_mode: str | None) -> None:
        self.tr = tr
        self.src = tr.src
        self.dst = tr.dst
        self.seq = tr.kind == "seq"
        self.mode = mode
        self.neg_mode = neg_mode
        self.pred = tr.pred
        self.bind: list[Any] = [None] * n
        self.range = tr.range
        self.index: dict[int, dict[Any, Any]] = {}  # wid -> bound key -> pending -> running aggregate | RangeIndex
        self.negs = _NegMatches() if neg_mode == "scan" else None
        # fenwick: event key -> the window's predecessor keys (rank domain); group -> its rank spaces (kept across
        # negation resets)
        self.vals: dict[tuple[Any, ...], list[Any]] = {}
        self.domains: dict[tuple[Any, ...], dict[Any, Any]] = {}

    def to_scan(self) -> None:
        """Find predecessors by scanning; negations are then checked per edge (a reset empties no index)."""
        self.mode = "scan"
        if self.neg_mode is not None:
            self.neg_mode = "scan"
            if self.negs is None:
                self.negs = _NegMatches()

    def register(self, first: float, key: tuple[Any, ...]) -> None:
        """A negative trend from ``first`` finished (strictly before every later event)."""
        if self.neg_mode == "reset":
            self.index.clear()  # every indexed predecessor is earlier than ``first``: none may jump over it
        elif self.negs is not None:
            self.negs.add(first, key)


def _subkeys(key: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Every key that ``key`` extends (each bound attribute kept or unbound): the groups compatible with it."""
    options = [(x,) if x is None else (x, None) for x in key]
    return list(itertools.product(*options))


class Graph:
    """One GRETA graph of a template, shared by all windows (``windows.wids(t)``: an event's window ids;
    ``windows.start(wid)``: the first tick of a window).

    ``fast_events``: the events of the one window this graph will see, known up front; it turns on the Fenwick
    mode for transitions with a single range predicate.  ``results`` holds the END aggregates per window and group.
    """

    def __init__(self, tpl: Template, layout: Any, windows: Any, fast_events: Sequence[Event] | None = None) -> None:
        self.tpl = tpl
        self.layout = layout
        self.wids: Callable[[float], Sequence[int]] = windows.wids
        self.wstart: Callable[[int], float] = windows.start
        states = tpl.states
        n = len(states)
        self.n = n
        self.attrs = tpl.attrs
        self.keyed = bool(tpl.attrs)
        self.start = tpl.start
        self.end = tpl.end
        self.bind0: list[Any] = [None] * n
        self.bind_exit: list[Any] = [None] * n
        self.by_type: dict[str, list[int]] = {}
        for st in states:
            self.by_type.setdefault(st.type, []).append(st.index)
        self.edges: list[_Edge] = []
        self.children: list[Graph] = []
        for tr in tpl.transitions:
            neg_mode = None
            if tr.negations:
                single = all(is_single_event(t) for t in tr.negations)
                neg_mode = "reset" if single and not self.keyed else "scan"
            if neg_mode == "scan" or (tr.pred is not None and (tr.range is None or fast_events is None)):
                mode = "scan"
            elif tr.pred is None:
                mode = "total"
            else:
                mode = "fenwick"
            edge = _Edge(tr, n, mode, neg_mode)
            if mode == "scan":
                edge.to_scan()
            self.edges.append(edge)
            for neg in tr.negations:
                child = Graph(neg, MaxFirstLayout, NO_WINDOWS)
                child.parents.append(edge)
                self.children.append(child)
        if fast_events is not None:
            for edge in self.edges:
                if edge.mode == "fenwick":
                    self._rank_domain(edge, fast_events)
        self.incoming: list[list[_Edge]] = [[e for e in self.edges if e.dst == s] for s in range(n)]
        self.outgoing: list[list[_Edge]] = [
            [e for e in self.edges if e.src == s and e.mode != "scan"] for s in range(n)
        ]
        self.store: dict[int, dict[tuple[Any, ...], _Bucket]] = {e.src: {} for e in self.edges if e.mode == "scan"}
        self.parents: list[_Edge] = []  # set on a negative sub-pattern's graph
        self.results: dict[int, dict[tuple[Any, ...], Any]] = {}
        self.staged: list[tuple[int, _Vertex]] = []
        self.live: deque[float] = deque()  # vertex times, for runs_alive
        self._subkeys: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

    # ------------------------------------------------------------------ set-up

    def _rank_domain(self, edge: _Edge, events: Sequence[Event]) -> None:
        """Collect the predecessor keys of the window per event key; fall back to scanning on unrankable values."""
        src, dst = self.tpl.states[edge.src], self.tpl.states[edge.dst]
        spec = edge.range
        assert spec is not None  # a Fenwick edge has a range predicate
        bind = edge.bind
        vals: dict[tuple[Any, ...], list[Any]] = {}
        for ev in events:
            if ev.type == dst.type and key_kind(spec.dst_side(self.bind0, ev)) == "other":
                edge.to_scan()
                return
            if ev.type == src.type:
                bind[edge.src] = KleeneCell(ev, None, ()) if src.kleene else ev
                key = spec.src_side(bind, None)
                kind = key_kind(key)
                if kind == "other":
                    edge.to_scan()
                    return
                if kind is not None:
                    vals.setdefault(self._ekey(ev), []).append(key)
        edge.vals = vals

    def _ekey(self, ev: Event) -> tuple[Any, ...]:
        attrs = ev.attrs
        return tuple(_hashable(attrs.get(a)) for a in self.attrs)

    def _candidates(self, table: dict[Any, Any], key: tuple[Any, ...]) -> Iterable[tuple[tuple[Any, ...], Any]]:
        """Entries of ``table`` (keyed by group keys) whose key is compatible with ``key``."""
        if not self.keyed:
            entry = table.get(())
            return (((), entry),) if entry is not None else ()
        if None not in key:
            subs = self._subkeys.get(key)
            if subs is None:
                if len(self._subkeys) > 65536:  # a cache, not a record of every group ever seen
                    self._subkeys.clear()
                subs = self._subkeys[key] = _subkeys(key)
            return [(k, entry) for k in subs if (entry := table.get(k)) is not None]
        return [(k, entry) for k, entry in table.items() if _compatible(k, key)]

    def _extend(self, bound: tuple[Any, ...], pending: frozenset[Any], ekey: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The vertex key of a sub-trend with group ``bound`` extended by an event with key ``ekey``."""
        k: tuple[Any, ...] | None
        if None not in ekey:
            if not _compatible(bound, ekey):
                return None
            k = ekey
        else:
            k = _merge(bound, ekey)
            if k is None:
                return None
        if pending:
            return _simplify(k, pending)
        return (k, EMPTY)

    # ------------------------------------------------------------------ one tick

    def step(self, batch: Sequence[Event]) -> None:
        """Process the events of one tick (time order across calls)."""
        self.lookup(batch)
        self.commit()

    def lookup(self, batch: Sequence[Event]) -> None:
        """Compute the new vertices of ``batch`` from strictly earlier ones (nothing is inserted yet)."""
        for child in self.children:
            child.lookup(batch)
        staged = []
        states = self.tpl.states
        for ev in batch:
            targets = self.by_type.get(ev.type)
            if not targets:
                continue
            ekey = self._ekey(ev) if self.keyed else ()
            wids = self.wids(ev.t)
            for s in targets:
                local = states[s].local
                if local is not None and not local(self.bind0, ev):
                    continue
                v = self._compute(ev, s, ekey, wids)
                if v is not None:
                    staged.append((s, v))
        self.staged = staged

    def commit(self) -> None:
        """Register the negative trends finished in this tick, then insert this tick's vertices."""
        for child in self.children:
            child.commit()
        staged, self.staged = self.staged, []
        for s, v in staged:
            self._insert(s, v)

    def _compute(self, ev: Event, s: int, ekey: tuple[Any, ...], wids: Sequence[int]) -> _Vertex | None:
        st = self.tpl.states[s]
        entry_ok = st.entry is None or bool(st.entry(self.bind0, ev))
        pre: dict[int, dict[Any, Any]] = {}
        if entry_ok and s in self.start:
            unit = self.layout.start(ev)
            k0 = (ekey, EMPTY)
            for w in wids:
                pre[w] = {k0: unit}
        for edge in self.incoming[s]:
            if edge.seq and not entry_ok:
                continue
            mode = edge.mode
            if mode == "total":
                self._gather_total(edge, ekey, wids, pre)
            elif mode == "scan":
                self._gather_scan(edge, ev, ekey, wids, pre)
            else:
                self._gather_fenwick(edge, ev, ekey, wids, pre)
        if not pre:
            return None
        ref = KleeneCell(ev, None, ()) if st.kleene else ev
        exit_ok = True
        if st.exit is not None:
            self.bind_exit[s] = ref
            exit_ok = bool(st.exit(self.bind_exit, None))
        deltas = self.layout.own(s, ev)
        if deltas:
            apply = self.layout.apply
            pre = {w: {k: apply(a, deltas) for k, a in d.items()} for w, d in pre.items()}
        return _Vertex(ev, ref, ekey, pre, exit_ok)

    def _gather_total(self, edge: _Edge, ekey: tuple[Any, ...], wids: Sequence[int], pre: dict[Any, Any]) -> None:
        add = self.layout.add
        index = edge.index
        for w in wids:
            table = index.get(w)
            if not table:
                continue
            pw = pre.get(w)
            if pw is None:
                pw = pre[w] = {}
            for bound, by_pending in self._candidates(table, ekey):
                for pending, agg in by_pending.items():
                    key = self._extend(bound, pending, ekey) if self.keyed else KEY0
                    if key is None:
                        continue
                    old = pw.get(key)
                    pw[key] = agg if old is None else add(old, agg)

    def _gather_fenwick(
        self, edge: _Edge, ev: Event, ekey: tuple[Any, ...], wids: Sequence[int], pre: dict[Any, Any]
    ) -> None:
        assert edge.range is not None  # a Fenwick edge has a range predicate
        q = edge.range.dst_side(self.bind0, ev)
        if key_kind(q) is None:
            return
        add = self.layout.add
        for w in wids:
            table = edge.index.get(w)
            if not table:
                continue
            pw = pre.get(w)
            if pw is None:
                pw = pre[w] = {}
            for bound, by_pending in self._candidates(table, ekey):
                for pending, ranks in by_pending.items():
                    agg = ranks.query(q)
                    if agg is None:
                        continue
                    key = self._extend(bound, pending, ekey) if self.keyed else KEY0
                    if key is None:
                        continue
                    old = pw.get(key)
                    pw[key] = agg if old is None else add(old, agg)

    def _gather_scan(
        self, edge: _Edge, ev: Event, ekey: tuple[Any, ...], wids: Sequence[int], pre: dict[Any, Any]
    ) -> None:
        buckets = self.store[edge.src]
        if not buckets:
            return
        add = self.layout.add
        pred, bind, slot, seq = edge.pred, edge.bind, edge.src, edge.seq
        keyed = self.keyed
        negs = edge.negs
        lo = self.wids_start(wids)
        if negs is not None and not keyed and negs.maxfirst > lo:
            lo = negs.maxfirst  # an edge is valid iff no negative trend starts after p (and they all ended)
        for _ek, bucket in self._candidates(buckets, ekey):
            verts = bucket.verts
            i0 = bisect_left(bucket.times, lo) if lo != NEG_INF else 0
            for p in verts[i0:] if i0 else verts:
                if seq and not p.exit_ok:
                    continue
                if pred is not None:
                    bind[slot] = p.ref
                    if not pred(bind, ev):
                        continue
                cancel = negs.keys_after(p.t) if (negs is not None and keyed) else EMPTY
                paggs = p.aggs
                for w in wids:
                    d = paggs.get(w)
                    if d is None:
                        continue
                    pw = pre.get(w)
                    if pw is None:
                        pw = pre[w] = {}
                    for (bound, pending), agg in d.items():
                        if keyed:
                            key = self._extend(bound, pending | cancel if cancel else pending, ekey)
                            if key is None:
                                continue
                        else:
                            key = KEY0
                        old = pw.get(key)
                        pw[key] = agg if old is None else add(old, agg)

    def wids_start(self, wids: Sequence[int]) -> float:
        """The first tick of the earliest of ``wids`` (predecessors before it share none of them)."""
        return self.wstart(wids[0]) if wids else NEG_INF

    def _insert(self, s: int, v: _Vertex) -> None:
        add = self.layout.add
        for edge in self.outgoing[s]:
            if edge.seq and not v.exit_ok:
                continue
            if edge.mode == "total":
                for w, d in v.aggs.items():
                    table = edge.index.setdefault(w, {})
                    for (bound, pending), agg in d.items():
                        by_pending = table.get(bound)
                        if by_pending is None:
                            by_pending = table[bound] = {}
                        old = by_pending.get(pending)
                        by_pending[pending] = agg if old is None else add(old, agg)
            else:  # fenwick
                assert edge.range is not None  # a Fenwick edge has a range predicate
                edge.bind[s] = v.ref
                key = edge.range.src_side(edge.bind, None)
                if key_kind(key) is None:
                    continue
                for w, d in v.aggs.items():
                    table = edge.index.setdefault(w, {})
                    for (bound, pending), agg in d.items():
                        by_pending = table.get(bound)
                        if by_pending is None:
                            by_pending = table[bound] = {}
                        ranks = by_pending.get(pending)
                        if ranks is None:
                            ranks = by_pending[pending] = RangeIndex(self._domain(edge, bound), edge.range.op, add)
                        ranks.insert(key, agg)
        buckets = self.store.get(s)
        if buckets is not None:
            bucket = buckets.get(v.ekey)
            if bucket is None:
                bucket = buckets[v.ekey] = _Bucket()
            bucket.times.append(v.t)
            bucket.verts.append(v)
        self.live.append(v.t)
        if s in self.end and v.exit_ok:
            if self.parents:
                for d in v.aggs.values():
                    for (bound, pending), first in d.items():
                        if not pending:
                            for edge in self.parents:
                                edge.register(first, bound)
            else:
                for w, d in v.aggs.items():
                    rw = self.results.get(w)
                    if rw is None:
                        rw = self.results[w] = {}
                    for (bound, pending), agg in d.items():
                        if pending:
                            continue  # a negative trend of a still-unbound group lies inside: it cancels
                        old = rw.get(bound)
                        rw[bound] = agg if old is None else add(old, agg)

    def _domain(self, edge: _Edge, bound: tuple[Any, ...]) -> dict[str, list[Any]]:
        """The rank spaces of group ``bound``: the predecessor keys of the events whose key ``bound`` extends."""
        cached = edge.domains.get(bound)
        if cached is None:
            if not self.keyed:
                keys: list[Any] = edge.vals.get((), [])
            else:
                keys = []
                for k in _subkeys(bound):
                    keys.extend(edge.vals.get(k, ()))
            cached = edge.domains[bound] = domains(keys)
        return cached

    # ------------------------------------------------------------------ windows and expiry

    def drop_windows(self, below: int) -> None:
        """Forget the indexes of windows with id < ``below`` (closed)."""
        for edge in self.edges:
            for w in [w for w in edge.index if w < below]:
                del edge.index[w]
        for w in [w for w in self.results if w < below]:
            del self.results[w]

    def expire(self, horizon: float) -> None:
        """Drop what no event at or after ``horizon`` can use: vertices, registered and partial negative trends."""
        for buckets in self.store.values():
            for ek in list(buckets):
                bucket = buckets[ek]
                cut = bisect_left(bucket.times, horizon)
                if cut:
                    del bucket.times[:cut]
                    del bucket.verts[:cut]
                    if not bucket.verts:
                        del buckets[ek]
        for edge in self.edges:
            if edge.negs is not None:
                edge.negs.expire(horizon)
        if self.parents:  # a negative graph: its running "latest first" values older than the horizon are useless
            for edge in self.edges:
                if edge.mode != "total":
                    continue
                for table in edge.index.values():
                    for bound in list(table):
                        by_pending = table[bound]
                        for pending in [p for p, first in by_pending.items() if first < horizon]:
                            del by_pending[pending]
                        if not by_pending:
                            del table[bound]
        live = self.live
        while live and live[0] < horizon:
            live.popleft()
        for child in self.children:
            child.expire(horizon)

    def vertices(self) -> int:
        """Vertices created and not expired (this graph and its negative sub-pattern graphs)."""
        return len(self.live) + sum(child.vertices() for child in self.children)


class _NoWindows:
    """Negative sub-pattern graphs have no windows: a negative trend between two events lies in their window."""

    @staticmethod
    def wids(t: float) -> tuple[int]:
        return (0,)

    @staticmethod
    def start(wid: int) -> float:
        return NEG_INF


NO_WINDOWS = _NoWindows()
