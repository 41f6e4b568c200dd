"""The stateful operator's logic without Spark: micro-batches of lines through the router and the buckets, under
Spark's watermark rule (the maximum event time of earlier batches minus the delay), with an in-memory state store."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from app.spark.record_columns import record_of_row
from app.spark.stream.plan import StreamPlan
from app.spark.stream.sink import ORDER
from app.spark.stream.source import END_KEY, route
from app.spark.stream.state import OUT_COLUMNS, Bucket, MemoryStore, compiled_for, decode_meta, encode_meta

#: The in-memory group store (tests import it from here).
DictStore = MemoryStore


def count_reads(monkeypatch: Any, prefix: str) -> dict[str, int]:
    """Count the group stores' reads of keys starting with ``prefix`` (pages, segments) in ``["reads"]``."""
    got = {"reads": 0}
    get = DictStore.get

    def counting(self: DictStore, key: str) -> Any:
        got["reads"] += key.startswith(prefix)
        return get(self, key)

    monkeypatch.setattr(DictStore, "get", counting)
    return got


def route_lines(
    plan: StreamPlan, lines: Iterable[tuple[str, int, str]], max_wt: float
) -> tuple[dict[int, list[tuple]], float]:
    """A micro-batch's lines (file name, line number, text) as the router gives them: each bucket's rows (the
    operator's :data:`~app.spark.stream.state.ROW_FIELDS`), and the greatest event point so far (the watermark's)."""
    by_bucket: dict[int, list[tuple]] = {}
    for origin, pos, text in lines:
        for row in route(plan, origin, pos, text, f"{origin}:{pos}", 2**62):
            by_bucket.setdefault(row[0], []).append(row[1:-1])
            if row[3] != "marker" and row[3] != "bad":
                max_wt = max(max_wt, row[-1])
    return by_bucket, max_wt


def run_batches(
    plan: StreamPlan,
    batches: Iterable[Sequence[tuple[str, int, str]]],
    *,
    end: bool = True,
    drops: dict[str, int] | None = None,
    stores: dict[int, DictStore] | None = None,
    metas: dict[int, Any] | None = None,
    after_call: Callable[[Bucket, DictStore], None] | None = None,
    before_call: Callable[[int, list[tuple], int, DictStore, Any], None] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple]]:
    """``batches``: lists of (file name, line number, text).  Returns (records in emission order, dead rows);
    ``drops``, when given, gets what the memory bounds dropped per query (the operator's drops rows); ``stores``
    and ``metas``, the buckets' group stores and packed metas (bucket -> each, read and written as the calls go: a
    later run goes on from them); ``after_call(bucket, store)`` is called after each bucket's call, its meta saved;
    ``before_call(bucket number, rows, watermark ms, store, packed meta or None)`` before it (a failed attempt)."""
    compiled = compiled_for(plan)
    if metas is None:
        metas = {}
    if stores is None:
        stores = {}
    for b in range(plan.buckets):
        stores.setdefault(b, DictStore())
    max_wt = -math.inf
    records: list[dict[str, Any]] = []
    dead: list[tuple] = []
    batches = list(batches)
    if end:
        batches.append([("control", 0, json.dumps({END_KEY: "x"}))])
    for lines in batches:
        wm_ms = 0 if max_wt == -math.inf else int((max_wt - plan.bound) * 1000)
        by_bucket, max_wt = route_lines(plan, lines, max_wt)
        for b in range(plan.buckets):
            rows = by_bucket.get(b, [])
            if not rows and b not in metas:
                continue
            if before_call is not None:
                before_call(b, rows, wm_ms, stores[b], metas.get(b))
            bucket = Bucket(plan, compiled, decode_meta(metas[b]) if b in metas else None, stores[b], b)
            out = bucket.handle(rows, wm_ms)
            if bucket.empty():
                metas.pop(b, None)
            else:
                metas[b] = encode_meta(bucket.meta())
            if after_call is not None:
                after_call(bucket, stores[b])
            got = [dict(zip(OUT_COLUMNS, r, strict=True)) for r in out if r[0] == "record"]
            got.sort(key=lambda r: tuple(r[c] for c in ORDER))
            records.extend(record_of_row(r) for r in got)
            dead.extend(r for r in out if r[0] == "dead")
            if drops is not None:
                for r in out:
                    if r[0] == "dropped":
                        row = dict(zip(OUT_COLUMNS, r, strict=True))
                        drops[row["query"]] = drops.get(row["query"], 0) + row["emit_idx"]
    return records, dead
