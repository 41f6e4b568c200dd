"""Snapshot and restore of the NFA^b runtime (:class:`engine.runtime.matcher.Matcher`) as plain data.

What a snapshot holds (besides the header of :mod:`engine.snapshot`):

- ``pools``: the runs, pool by pool in the pools' order (the order events lacking the partition attribute visit
  them), each run ``[k, kin, bind, t_first, t_last, t_prev, eqv, chain]``; a ``bind`` entry is ``None``, an event
  (its row, an int >= 0) or a Kleene binding (``-1 - cell``); ``chain`` is ``None`` or, for a run written as
  increments, ``[-1 - cell, record id]`` of its last record (a snapshot without it restores runs whose next record
  is whole);
- ``cells``: the Kleene bindings the runs share, ``[event row, previous cell or -1, component]``, each after its
  previous cell.  Running aggregates are recomputed on restore (they are a fold over the chain), and shared cells
  come back shared: distinct output merges runs by the identity of their bindings;
- ``neg``: per negated type, the candidate events still within the window;
- the clock (``now``, ``fed``), the ``emitted`` RETURN keys of distinct output, and the counters.

A pool's key is the partition value of its runs (``key_of(eqv[0])``), so it is not stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.output import key_of
from engine.plan.predicates import KleeneCell
from engine.runtime.run import Run
from engine.snapshot import EventCodec, canonical_keys, check_header, dec_float, enc_float, header, open_codec

if TYPE_CHECKING:
    from engine.runtime.matcher import Matcher

KIND = "nfa"


class _CellTable:
    """The Kleene cells a snapshot writes, each once, after the cells before it (a chain shared by runs is written
    once).  A class, not closures: mypyc makes nested functions that call each other a reference cycle (their
    environment holds them), so each snapshot's tables stayed garbage until a full collection."""

    __slots__ = ("events", "rows", "row_of")

    def __init__(self, events: EventCodec) -> None:
        self.events = events
        self.rows: list[list[int]] = []
        self.row_of: dict[int, int] = {}  # id(cell) -> row

    def cell(self, c: KleeneCell, k: int) -> int:
        row = self.row_of.get(id(c))
        if row is not None:
            return row
        row_of, rows = self.row_of, self.rows
        chain = []
        x: KleeneCell | None = c
        while x is not None and id(x) not in row_of:
            chain.append(x)
            x = x.prev
        for y in reversed(chain):
            prev = -1 if y.prev is None else row_of[id(y.prev)]
            row_of[id(y)] = len(rows)
            rows.append([self.events.ref(y.event), prev, k])
        return row_of[id(c)]

    def bound(self, b: Any, k: int) -> int | None:
        if b is None:
            return None
        if isinstance(b, KleeneCell):
            return -1 - self.cell(b, k)
        return self.events.ref(b)


def snapshot(m: Matcher, codec: EventCodec | None = None) -> dict[str, Any]:
    own = codec is None
    events = EventCodec(m.cq.tick) if codec is None else codec
    table = _CellTable(events)
    cells = table.rows
    bound = table.bound

    pools = []
    for runs in m.pools.values():
        pools.append(
            [
                [
                    r.k,
                    r.kin,
                    [bound(b, k) for k, b in enumerate(r.bind)],
                    enc_float(r.t_first),
                    enc_float(r.t_last),
                    enc_float(r.t_prev),
                    list(r.eqv),
                    None if r.chain is None else [bound(r.chain[0], r.k), r.chain[1]],
                ]
                for r in runs
            ]
        )
    out = header(KIND, m.name)
    out.update(
        {
            "now": enc_float(m.now),
            "fed": m.fed,
            "matches": m.matches,
            "shed_runs": m.shed_runs,
            "dropped_runs": m.dropped_runs,
            "cells": cells,
            "pools": pools,
            "neg": {etype: [events.ref(e) for e in evs] for etype, (_ts, evs) in m.neg_buf.items()},
            "emitted": canonical_keys(m.emitted),
        }
    )
    if own:
        out["events"] = events.table()
    return out


def restore(m: Matcher, state: Mapping[str, Any], codec: EventCodec | None = None) -> None:
    check_header(state, KIND, m.name)
    events = open_codec(state, codec, m.cq.tick)
    comps = m.comps
    cells: list[KleeneCell] = []
    for row, prev, k in state["cells"]:
        ev = events.event(row)
        before = cells[prev] if prev >= 0 else None
        cells.append(KleeneCell(ev, before, comps[k].aggs_step(None if before is None else before.aggs, ev)))

    def unbound(x: int | None) -> Any:
        if x is None:
            return None
        return cells[-1 - x] if x < 0 else events.event(x)

    m.pools = {}
    alive = 0
    for pool in state["pools"]:
        runs: list[Run] = []
        for k, kin, bind, t_first, t_last, t_prev, eqv, *rest in pool:
            chain = rest[0] if rest else None
            runs.append(
                Run(
                    k,
                    kin,
                    [unbound(b) for b in bind],
                    dec_float(t_first),
                    dec_float(t_last),
                    dec_float(t_prev),
                    tuple(eqv),
                    None if chain is None else (unbound(chain[0]), str(chain[1]), None),
                )
            )
        key = key_of(runs[0].eqv[0]) if m.partitioned else None
        m.pools[key] = runs
        alive += len(runs)
    m.alive = alive
    m.neg_buf = {}
    for etype in m.neg_types:
        evs = [events.event(i) for i in state["neg"].get(etype, [])]
        m.neg_buf[etype] = ([e.t for e in evs], evs)
    m.now = dec_float(state["now"])
    m.fed = state["fed"]
    m.matches = state["matches"]
    m.shed_runs = state["shed_runs"]
    m.dropped_runs = state["dropped_runs"]
    m.emitted = {tuple(k) for k in state["emitted"]}
