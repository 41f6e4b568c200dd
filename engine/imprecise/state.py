"""Snapshot and restore of the possible-worlds evaluator (:class:`engine.imprecise.evaluator.ImpreciseMatcher`).

What a snapshot holds (besides the header of :mod:`engine.snapshot`):

- ``buffers``: per type the buffered events (rows of the event table) in buffer order (lower bound, then arrival),
  with their arrival numbers when the buffer is indexed by the partition attribute, the widest interval and the
  arrival counter; the per-key index is rebuilt from them (a key's events in buffer order are its index's order);
- ``pending``: the closing events not yet enumerated, as the heap array ``[thi, seq, row]`` (its order is kept);
- ``held``: distinct records waiting for a better signature ``[confidence, record, deadline]`` in their order
  (their key is the record's RETURN values); ``emitted``: RETURN keys already output;
- the clock (``now``, ``umax``, ``fed``), the due moments (``wake``, ``prune_at``, ``next_deadline``), the counters,
  and the two memories that only skip fruitless work -- ``dead_ends`` and ``order_failed`` -- so the work done (and
  so the memory bounds, which count it) is the same after a restore.
"""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from typing import TYPE_CHECKING, Any

from engine.imprecise.buffers import Keyed, TypeBuffer
from engine.output import key_of, return_key
from engine.snapshot import EventCodec, canonical_keys, check_header, dec_float, enc_float, header, open_codec

if TYPE_CHECKING:
    from engine.imprecise.evaluator import ImpreciseMatcher

KIND = "imprecise"


def snapshot(m: ImpreciseMatcher, codec: EventCodec | None = None) -> dict[str, Any]:
    own = codec is None
    events = EventCodec(m.cq.tick) if codec is None else codec
    buffers = {}
    for etype, buf in m.buffers.items():
        arrs = None
        if buf.key is not None:
            arrival = {id(e): a for sub in buf.keyed.values() for e, a in zip(sub.events, sub.arrs, strict=True)}
            arrs = [arrival[id(e)] for e in buf.events]
        buffers[etype] = {
            "events": [events.ref(e) for e in buf.events],
            "arrs": arrs,
            "width": buf.width,
            "arrived": buf.arrived,
        }
    out = header(KIND, m.name)
    out.update(
        {
            "now": enc_float(m.now),
            "umax": m.umax,
            "fed": m.fed,
            "signatures": m.signatures,
            "matches": m.matches,
            "truncated": m.truncated,
            "skipped": m.skipped,
            "wake": enc_float(m.wake),
            "prune_at": enc_float(m.prune_at),
            "next_deadline": enc_float(m.next_deadline),
            "buffers": buffers,
            "pending": [[thi, seq, events.ref(z)] for thi, seq, z in m.pending],
            "held": [[conf, deepcopy(record), enc_float(deadline)] for conf, record, deadline in m.held.values()],
            "emitted": canonical_keys(m.emitted),
            "dead_ends": [[events.ref(e), enc_float(floor)] for e, floor in m._dead_ends.values()],
            "order_failed": [
                [key[0], events.ref(lev), events.ref(rev), list(key[3]), enc_float(floor)]
                for key, (floor, lev, rev) in m._order_failed.items()
            ],
        }
    )
    if own:
        out["events"] = events.table()
    return out


def restore(m: ImpreciseMatcher, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
    check_header(state, KIND, m.name)
    events = open_codec(state, codec, m.cq.tick)
    key = m.attrs[0] if m.attrs else None
    for etype, snap in state["buffers"].items():
        buf = m.buffers[etype] = TypeBuffer(key)
        buf.events = [events.event(i) for i in snap["events"]]
        buf.los = [e.tlo for e in buf.events]
        buf.width = snap["width"]
        buf.arrived = snap["arrived"]
        if key is not None:
            for e, arr in zip(buf.events, snap["arrs"], strict=True):
                v = key_of(e.attrs.get(key))
                sub = buf.keyed.get(v)
                if sub is None:
                    sub = buf.keyed[v] = Keyed()
                sub.events.append(e)
                sub.los.append(e.tlo)
                sub.arrs.append(arr)
    m.index_buffers()  # the join indexes are derived from the buffers, not stored
    m.pending = [(thi, seq, events.event(i)) for thi, seq, i in state["pending"]]
    m.held = {}
    for conf, record, deadline in state["held"]:
        m.held[return_key(record["return"].values())] = [conf, deepcopy(record), dec_float(deadline)]
    m.emitted = {tuple(k) for k in state["emitted"]}
    m._dead_ends = {}
    for i, floor in state["dead_ends"]:
        e = events.event(i)
        m._dead_ends[id(e)] = (e, dec_float(floor))
    m._order_failed = {}
    for k, lev_i, rev_i, eqv, floor in state["order_failed"]:
        lev, rev = events.event(lev_i), events.event(rev_i)
        m._order_failed[(k, id(lev), id(rev), tuple(eqv))] = (dec_float(floor), lev, rev)
    m.now = dec_float(state["now"])
    m.umax = state["umax"]
    m.fed = state["fed"]
    m.signatures = state["signatures"]
    m.matches = state["matches"]
    m.truncated = state["truncated"]
    m.skipped = state["skipped"]
    m.wake = dec_float(state["wake"])
    m.prune_at = dec_float(state["prune_at"])
    m.next_deadline = dec_float(state["next_deadline"])
