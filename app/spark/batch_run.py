"""The executor side of the batch matcher: one partition's groups through the engine (``mapInPandas`` body).

Rows arrive sorted by (family, group key, time, seq).  A keyed group's own events are gathered, the family's
broadcast keyless events that can meet them (per-type margins, :func:`app.spark.batch_plan.query_margins`) are
merged in, in the runtime's order, and the stream goes through the family's queries: one
:class:`engine.evaluate.PackRunner` per group, the driver of ``hcep match`` and ``hcep run``, under the pack's memory
bounds (``settings.limits``, carried by the plans; what they drop comes back as rows without a match).  The
unpartitioned group is streamed without gathering (it may be the whole input).  Records whose home is another group
are dropped here.
"""

from __future__ import annotations

import heapq
import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from app.spark.batch_plan import ANY_TYPE, Margins, QueryPlan, plans_limits
from app.spark.record_columns import record_columns
from engine.limits import Limits

#: Group keys that no canonical JSON value can take: the keyless group and the single group of unpartitioned queries.
KEYLESS_GROUP = ""
WHOLE_GROUP = "*"
#: Completion position of records released at the end of the input.
END = 2**62
RECORD_SCHEMA = (
    "fid int, gkey string, qidx int, query string, match string, confidence double, start double, `end` double, "
    "ret string, vkey string, emit_mid2 long, emit_seq long, emit_idx long, rid string, extends string"
)
RECORD_COLUMNS = [c.split()[0].strip("`") for c in RECORD_SCHEMA.split(", ")]


def drop_row(fid: int, gkey: str, qidx: int, query: str, n: int) -> tuple:
    """What a group's memory bounds dropped of one query (runs, or enumerations cut short): a row without a match
    (``match`` null), the count in ``emit_idx``; :class:`app.spark.batch.BatchResult` sums them apart from records."""
    return (fid, gkey, qidx, query, None, 0.0, 0.0, 0.0, None, None, END, END, n, None, None)


def order(ev: Any) -> tuple[int, int]:
    """The precise runtime's order: by point (midpoint), ties in input order."""
    return ev.tlo + ev.thi, ev.seq


class KeylessIndex:
    """A family's keyless events (parsed once per executor process), sorted for range look-ups."""

    def __init__(self, events: list[Any]) -> None:
        self.events = sorted(events, key=order)
        self.mid2 = [e.tlo + e.thi for e in self.events]
        self.widest = max((e.thi - e.tlo for e in self.events), default=0)

    def around(self, lo: int, hi: int, margins: Margins) -> list[Any]:
        """Keyless events whose type has a margin and whose interval meets [lo - left, hi + right]."""
        anyt = margins.get(ANY_TYPE)
        left = max((m[0] for m in margins.values()), default=0)
        right = max((m[1] for m in margins.values()), default=0)
        a = bisect_left(self.mid2, 2 * (lo - left - self.widest))
        b = bisect_right(self.mid2, 2 * (hi + right + self.widest))
        out = []
        for e in self.events[a:b]:
            m = margins.get(e.type, anyt)
            if m is None:
                continue
            if anyt is not None:
                m = (max(m[0], anyt[0]), max(m[1], anyt[1]))
            if e.thi >= lo - m[0] and e.tlo <= hi + m[1]:
                out.append(e)
        return out


_COMPILED: dict[str, list[Any]] = {}
_KEYLESS: dict[str, dict[int, KeylessIndex]] = {}


def compiled_queries(token: str, plans: Sequence[QueryPlan]) -> list[Any]:
    """Compiled once per executor process (Python workers are reused across tasks)."""
    from app.spark.batch_plan import QueryPlan  # noqa: F401 - unpickling needs the class importable
    from engine import compile_query

    got = _COMPILED.get(token)
    if got is None:
        got = _COMPILED[token] = [
            compile_query(
                p.query, name=p.name, strategy=p.strategy, output=p.output, confidence=p.confidence, tick=p.tick
            )
            for p in plans
        ]
    return got


def keyless_index(token: str, shared: Any, tick: float) -> dict[int, KeylessIndex]:
    """The broadcast keyless events, parsed once per executor process."""
    from engine.events import decoder_for

    got = _KEYLESS.get(token)
    if got is None:
        rows: dict[int, list[tuple[int, str]]] = shared.value if shared is not None else {}
        got = _KEYLESS[token] = {
            fid: KeylessIndex([decoder_for(tick).event(json.loads(text), seq) for seq, text in items])
            for fid, items in rows.items()
        }
    return got


class Group:
    """One group: its queries' runner (:class:`engine.evaluate.PackRunner`: the one driver, under the pack's memory
    bounds, as ``hcep match`` runs them), which event ids carry the key, what it keeps."""

    def __init__(
        self,
        fid: int,
        gkey: str,
        queries: list[int],
        compiled: list[Any],
        widest: int,
        keyless: KeylessIndex | None,
        margins: Margins,
        increments: bool = True,
        limits: Limits | None = None,
    ) -> None:
        from engine.evaluate import PackRunner

        self.fid, self.gkey = fid, gkey
        self.queries = queries
        self.runner = PackRunner.of([compiled[q] for q in queries], widest, limits=limits, increments=increments)
        self.qidx = {compiled[q].name: q for q in queries}  # query name -> its index in the plan
        self.chain_keyed: dict[str, bool] = {}  # a chain's latest record id -> whether its whole signature holds a key
        self.keyless = keyless
        self.margins = margins
        self.gather = keyless is not None and gkey != WHOLE_GROUP
        self.own: list[Any] = []
        self.keyed: dict[str, bool] = {}
        self.idx = 0

    def add(self, ev: Any, keyed: bool, out: list[tuple]) -> None:
        if keyed or ev.id not in self.keyed:
            self.keyed[ev.id] = keyed
        if self.gather:
            self.own.append(ev)
        else:
            self._feed(ev, out)

    def finish(self) -> list[tuple]:
        out: list[tuple] = []
        if self.gather:
            assert self.keyless is not None, "a gathering group is given the keyless events"
            self.own.sort(key=order)
            if self.gkey == KEYLESS_GROUP:
                shared = self.keyless.events
            elif self.own:
                lo = min(e.tlo for e in self.own)
                hi = max(e.thi for e in self.own)
                shared = self.keyless.around(lo, hi, self.margins)
            else:
                shared = []
            for ev in shared:
                self.keyed.setdefault(ev.id, False)
            for ev in heapq.merge(self.own, shared, key=order):
                self._feed(ev, out)
        for cq, record in self.runner.flush():
            self._emit(self.qidx[cq.name], record, END, END, out)
        for name, n in self.runner.limit_drops().items():
            if n:
                out.append(drop_row(self.fid, self.gkey, self.qidx[name], name, n))
        return out

    def _feed(self, ev: Any, out: list[tuple]) -> None:
        for cq, record in self.runner.feed(ev):
            self._emit(self.qidx[cq.name], record, ev.tlo + ev.thi, ev.seq, out)

    def _emit(self, q: int, record: Mapping[str, Any], mid2: int, seq: int, out: list[tuple]) -> None:
        self.idx += 1
        rid = record.get("id")
        if self.gkey != WHOLE_GROUP:
            holds_key = any(self.keyed.get(i, False) for ids in record["match"].values() for i in ids)
            if rid is not None:  # an increment's home is its whole signature's: the chain's so far, and what it adds
                holds_key = self.chain_keyed.pop(record.get("extends") or "", False) or holds_key
                self.chain_keyed[rid] = holds_key
            if holds_key != (self.gkey != KEYLESS_GROUP):
                return  # this match's home is another group
        out.append(
            (
                self.fid,
                self.gkey,
                q,
                *record_columns(record),
                mid2,
                seq,
                self.idx,
                rid,
                record.get("extends"),
            )
        )


def run_partition(
    batches: Iterator[Any],
    token: str,
    plans: Sequence[QueryPlan],
    families: dict[int, tuple[list[int], list[int], list[int], Margins]],
    widest: int,
    shared: Any,
    increments: bool = True,
) -> Iterator[Any]:
    """``mapInPandas`` body (see the module doc).  ``families``: fid -> (queries of keyed groups, of the keyless
    group, of the whole group, keyless margins); ``shared``: the broadcast keyless events per family, or None."""
    import pandas as pd

    from engine.events import decoder_for

    compiled = compiled_queries(token, plans)
    limits = plans_limits(plans)
    tick = plans[0].tick if plans else 0.1
    index = keyless_index(token, shared, tick)
    decode = decoder_for(tick).event
    group: Group | None = None
    for pdf in batches:
        out: list[tuple] = []
        for fid, gkey, seq, text, keyed in zip(
            pdf["fid"], pdf["gkey"], pdf["seq"], pdf["json"], pdf["keyed"], strict=True
        ):
            if group is None or group.fid != fid or group.gkey != gkey:
                if group is not None:
                    out.extend(group.finish())
                fid = int(fid)
                keyed_q, keyless_q, whole_q, margins = families[fid]
                queries = whole_q if gkey == WHOLE_GROUP else keyless_q if gkey == KEYLESS_GROUP else keyed_q
                group = Group(fid, gkey, queries, compiled, widest, index.get(fid), margins, increments, limits)
            if text is None:
                continue  # the keyless group's placeholder row
            group.add(decode(json.loads(text), int(seq)), bool(keyed), out)
        if out:
            yield pd.DataFrame(out, columns=RECORD_COLUMNS)
    if group is not None:
        tail = group.finish()
        if tail:
            yield pd.DataFrame(tail, columns=RECORD_COLUMNS)
