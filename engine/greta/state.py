"""Snapshot and restore of the trend-aggregate evaluators (:mod:`engine.greta.matcher`) as plain data.

What a snapshot holds (besides the header of :mod:`engine.snapshot`):

- every evaluator: the clock (``now``), the first and last relevant times (window bounds without WITHIN), the
  records emitted, and the events of the tick not yet processed (``batch``: a tick's events are concurrent);
- GRETA, *deferred* mode: the buffered events of the windows not yet closed (``buf``) and the next window to close;
- GRETA, *incremental* mode: the graph -- per transition its running aggregates per window, group and pending
  negative keys, and the negative trends registered on it; per state the vertices (event row, aggregates per
  window and key, whether the state may be left there) by event key, in their order; the results per window and
  group of the windows still open; the vertex times kept for ``runs_alive``; the same for each negative sub-pattern's
  graph -- and which windows were dropped and expired;
- the two-step enumerator: the NFA^b runtime's snapshot (:mod:`engine.runtime.state`) and the aggregates per window
  and group.

Aggregates are ints, or tuples of ints and numbers (``{"t": [...]}``), exact as they were; group keys are lists,
pending negative keys sorted lists of lists.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.greta.graph import EMPTY, Graph, _Bucket, _Vertex
from engine.plan.predicates import KleeneCell
from engine.snapshot import EventCodec, check_header, dec_float, enc_float, header, open_codec

if TYPE_CHECKING:
    from engine.greta.matcher import GretaMatcher, TrendEnumerator

GRETA = "greta"
ENUMERATE = "enumerate"


def _agg(x: Any) -> Any:
    if isinstance(x, tuple):
        return {"t": [enc_float(v) for v in x]}
    return enc_float(x)


def _unagg(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple(dec_float(v) for v in x["t"])
    return dec_float(x)


def _pending(p: frozenset[tuple[Any, ...]]) -> list[list[Any]]:
    return sorted((list(k) for k in p), key=lambda k: json.dumps(k, default=str))


def _unpending(p: list[list[Any]]) -> frozenset[tuple[Any, ...]]:
    return frozenset(tuple(k) for k in p) if p else EMPTY


def _by_key(d: dict[tuple[Any, frozenset[Any]], Any]) -> list[list[Any]]:
    return [[list(bound), _pending(pending), _agg(agg)] for (bound, pending), agg in d.items()]


def _unby_key(rows: list[list[Any]]) -> dict[tuple[Any, frozenset[Any]], Any]:
    return {(tuple(bound), _unpending(pending)): _unagg(agg) for bound, pending, agg in rows}


def _graph(g: Graph, events: EventCodec) -> dict[str, Any]:
    if g.staged:
        raise RuntimeError("a GRETA graph is snapshotted between ticks only")
    edges = []
    for e in g.edges:
        if e.mode == "fenwick":
            raise RuntimeError("the Fenwick mode runs in deferred graphs, which are never snapshotted")
        index = [
            [
                w,
                [
                    [list(bound), [[_pending(p), _agg(a)] for p, a in by_pending.items()]]
                    for bound, by_pending in table.items()
                ],
            ]
            for w, table in e.index.items()
        ]
        negs = None
        if e.negs is not None:
            negs = {
                "firsts": [enc_float(f) for f in e.negs.firsts],
                "keys": [list(k) for k in e.negs.keys],
                "maxfirst": enc_float(e.negs.maxfirst),
            }
        edges.append({"index": index, "negs": negs})
    store = [
        [
            s,
            [
                [
                    list(ekey),
                    [[events.ref(v.ev), [[w, _by_key(d)] for w, d in v.aggs.items()], v.exit_ok] for v in bucket.verts],
                ]
                for ekey, bucket in buckets.items()
            ],
        ]
        for s, buckets in g.store.items()
    ]
    results = [[w, [[list(bound), _agg(a)] for bound, a in rw.items()]] for w, rw in g.results.items()]
    return {
        "edges": edges,
        "store": store,
        "results": results,
        "live": [enc_float(t) for t in g.live],
        "children": [_graph(c, events) for c in g.children],
    }


def _ungraph(g: Graph, snap: Mapping[str, Any], events: EventCodec) -> None:
    for e, es in zip(g.edges, snap["edges"], strict=True):
        e.index = {
            w: {tuple(bound): {_unpending(p): _unagg(a) for p, a in by_pending} for bound, by_pending in table}
            for w, table in es["index"]
        }
        if es["negs"] is not None and e.negs is not None:
            e.negs.firsts = [dec_float(f) for f in es["negs"]["firsts"]]
            e.negs.keys = [tuple(k) for k in es["negs"]["keys"]]
            e.negs.maxfirst = dec_float(es["negs"]["maxfirst"])
    states = g.tpl.states
    g.store = {}
    for s, buckets in snap["store"]:
        kleene = states[s].kleene
        table: dict[tuple[Any, ...], _Bucket] = {}
        for ekey, verts in buckets:
            bucket = table[tuple(ekey)] = _Bucket()
            for row, aggs, exit_ok in verts:
                ev = events.event(row)
                ref = KleeneCell(ev, None, ()) if kleene else ev
                v = _Vertex(ev, ref, tuple(ekey), {w: _unby_key(d) for w, d in aggs}, exit_ok)
                bucket.times.append(v.t)
                bucket.verts.append(v)
        g.store[s] = table
    g.results = {w: {tuple(bound): _unagg(a) for bound, a in rw} for w, rw in snap["results"]}
    g.live = deque(dec_float(t) for t in snap["live"])
    for child, cs in zip(g.children, snap["children"], strict=True):
        _ungraph(child, cs, events)


def snapshot_greta(m: GretaMatcher, codec: EventCodec | None = None) -> dict[str, Any]:
    own = codec is None
    events = EventCodec(m.cq.tick) if codec is None else codec
    out = header(GRETA, m.name)
    out.update(_common(m, events))
    out["mode"] = m.mode
    if m.graph is not None:
        out["graph"] = _graph(m.graph, events)
        out["closed_below"] = m.closed_below
        out["expired_below"] = m.expired_below
    else:
        out["buf"] = [events.ref(e) for e in m.buf_events[m.head :]]
        out["next_wid"] = m.next_wid
    if own:
        out["events"] = events.table()
    return out


def restore_greta(m: GretaMatcher, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
    check_header(state, GRETA, m.name)
    if state["mode"] != m.mode:
        raise ValueError(f"query {m.name}: a GRETA snapshot of {state['mode']} mode cannot restore {m.mode} mode")
    events = open_codec(state, codec, m.cq.tick)
    _uncommon(m, state, events)
    if m.graph is not None:
        m.graph = Graph(m.template, m.layout, m.windows)
        _ungraph(m.graph, state["graph"], events)
        m.closed_below = state["closed_below"]
        m.expired_below = state["expired_below"]
    else:
        m.buf_events = [events.event(i) for i in state["buf"]]
        m.buf_times = [e.t for e in m.buf_events]
        m.head = 0
        m.next_wid = state["next_wid"]


def snapshot_enumerator(m: TrendEnumerator, codec: EventCodec | None = None) -> dict[str, Any]:
    own = codec is None
    events = EventCodec(m.cq.tick) if codec is None else codec
    out = header(ENUMERATE, m.name)
    out.update(_common(m, events))
    out["trends"] = m.trends
    out["results"] = [[w, [[list(g), _agg(a)] for g, a in groups.items()]] for w, groups in m.results.items()]
    out["inner"] = m.inner.snapshot(events)
    if own:
        out["events"] = events.table()
    return out


def restore_enumerator(m: TrendEnumerator, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
    check_header(state, ENUMERATE, m.name)
    events = open_codec(state, codec, m.cq.tick)
    _uncommon(m, state, events)
    m.trends = state["trends"]
    m.results = {w: {tuple(g): _unagg(a) for g, a in groups} for w, groups in state["results"]}
    m.inner.restore(state["inner"], events)


def _common(m: Any, events: EventCodec) -> dict[str, Any]:
    return {
        "now": enc_float(m.now),
        "fed": m.fed,
        "matches": m.matches,
        "first_sec": m.first_sec,
        "last_sec": m.last_sec,
        "batch": [events.ref(e) for e in getattr(m, "batch", ())],
        "batch_t": enc_float(getattr(m, "batch_t", -float("inf"))),
    }


def _uncommon(m: Any, state: Mapping[str, Any], events: EventCodec) -> None:
    m.now = dec_float(state["now"])
    m.fed = state["fed"]
    m.matches = state["matches"]
    m.first_sec = state["first_sec"]
    m.last_sec = state["last_sec"]
    if hasattr(m, "batch"):
        m.batch = [events.event(i) for i in state["batch"]]
        m.batch_t = dec_float(state["batch_t"])
