"""The distributed batch matcher: the engine runs inside Spark's executors, one stream per partition key value, and
the result is the set of records ``hcep match`` prints for the same input.

How the stream is cut, and why it stays exact:

- Queries are grouped into **families** by their partition attribute (the first equivalence attribute: ``job_id``
  for Q1/Q2/Q4, ``task_id`` for Q3/Q5/Q6).  Each family is one shuffle: rows are keyed ``(family, group key)``,
  repartitioned on it, sorted by time within a partition (``mid2``, then ``seq``: the runtime's order) and run
  through the family's matchers by ``mapInPandas``, one group at a time (:mod:`app.spark.batch_run`): an executor
  holds one key's events at a time, and the unpartitioned group is streamed, never held.
- Events carrying the key go to their key's group.  Events lacking it (cluster-wide Ganglia events such as
  ``LoadStd``) are shared by every partition (semantics section 2): they are broadcast to the executors, parsed once
  per executor, and merged into each group's stream where they can meet the group's own events (a keyless
  component between two keyed ones lies between two of the group's events; one before or after them at most
  WITHIN away: :func:`app.spark.batch_plan.query_margins`).  When there are too many of them to broadcast they
  are copied into the groups instead, by a bucketed range join.  They also form one more group, ``""``, that sees
  every keyless event (and keyed events of negated types, which can cancel a keyless match): matches made only of
  keyless events are taken from there and nowhere else; a keyed group keeps only matches holding one of its own
  events, and runs only the queries that can match a keyed event.
- The cut is exact when every run of the query is bound to one key.  skip_till_any_match is evaluated per signature
  (any subset of any partition's events), so it always is.  The NFA strategies (skip_till_next_match,
  partition_contiguity) consume events: an unbound run (started by a keyless event) takes the next event of *any*
  partition, so such a query is cut only when its first component's type always carries the key in this input, and
  collapsed output only when some singleton component's type does (else one collapsed record may merge partitions).
  strict_contiguity sees every event, and queries without equivalence have no key: those run unpartitioned, in one
  group.  :func:`app.spark.batch_plan.plan_families` checks this against the input's statistics.
- Signatures are de-duplicated across groups (a safety net: the rules above already give each match one home), and
  for ``distinct`` output the best confidence per RETURN value is kept, ties going to the earliest completion.

Records come back in completion order (the time of the event whose arrival completed them), as ``hcep match``
prints them; with imprecise events the exact moment an evaluator releases a record depends on the stream it saw, so
the order (not the set) may differ slightly from the single-process run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.spark.batch_plan import (
    Family,
    InputStats,
    QueryPlan,
    plan_families,
)
from app.spark.batch_run import KEYLESS_GROUP, RECORD_SCHEMA, WHOLE_GROUP, run_partition
from app.spark.events import key_column
from app.spark.record_columns import record_of_row
from contracts.records import MatchRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BatchResult", "QueryPlan", "compile_plan", "match_frame", "plans_from_pack", "run_batch"]

#: Up to this many groups, the group ranges of the keyless-event join (the fallback) are broadcast.
BROADCAST_GROUPS = 200_000
#: Up to this many keyless events per family are broadcast to the executors (else copied into the groups).
BROADCAST_KEYLESS = 1_000_000


def compile_plan(plan: QueryPlan) -> Any:
    from engine import compile_query

    return compile_query(
        plan.query,
        name=plan.name,
        strategy=plan.strategy,
        output=plan.output,
        confidence=plan.confidence,
        tick=plan.tick,
    )


def input_stats(parsed: DataFrame, attrs: Sequence[str]) -> InputStats:
    """One pass over the parsed input: the planner's statistics, and the first invalid line (ValueError)."""
    from pyspark.sql import functions as F

    valid = F.col("error").isNull()
    aggs = [
        F.count(F.lit(1)).alias("n"),
        F.max(F.col("thi") - F.col("tlo")).alias("w"),
        F.min(F.when(~valid, F.col("seq"))).alias("bad"),
    ]
    aggs += [F.sum(F.col(key_column(a)).isNull().cast("long")).alias(f"lack{i}") for i, a in enumerate(attrs)]
    aggs += [F.approx_count_distinct(key_column(a)).alias(f"keys{i}") for i, a in enumerate(attrs)]
    rows = parsed.groupBy("type").agg(*aggs).collect()
    bad = [r["bad"] for r in rows if r["bad"] is not None]
    if bad:
        first = parsed.where(F.col("seq") == min(bad)).where(~valid).select("error").first()
        raise ValueError(first["error"] if first else "invalid input")
    rows = [r for r in rows if r["type"] is not None]
    return InputStats(
        events=sum(r["n"] for r in rows),
        widest=max((r["w"] or 0 for r in rows), default=0),
        counts={r["type"]: r["n"] for r in rows},
        lacking={r["type"]: {a: r[f"lack{i}"] for i, a in enumerate(attrs)} for r in rows},
        keys={a: sum(r[f"keys{i}"] for r in rows) for i, a in enumerate(attrs)},
    )


# ------------------------------------------------------------------------------------------------ the cut


def _family_base(parsed: DataFrame, fam: Family) -> DataFrame:
    from pyspark.sql import functions as F

    base = parsed.where(F.col("error").isNull())
    if fam.types is not None:
        base = base.where(F.col("type").isin(sorted(fam.types)))
    return base


def family_rows(spark: SparkSession, parsed: DataFrame, fam: Family, stats: InputStats) -> DataFrame:
    """The shuffled rows of one family: ``fid, gkey, seq, mid2, keyed, json``."""
    from pyspark.sql import functions as F

    base = _family_base(parsed, fam)
    cols = ["seq", "mid2", "json"]

    def out(frame: DataFrame, gkey: Any, keyed: Any) -> DataFrame:
        return frame.select(F.lit(fam.fid).alias("fid"), gkey.alias("gkey"), *cols, keyed.alias("keyed"))

    if fam.attr is None:
        return out(base, F.lit(WHOLE_GROUP), F.lit(False))
    key = F.col(key_column(fam.attr))
    keyed = base.where(key.isNotNull())
    keyless = base.where(key.isNull())
    parts = []
    if fam.keyed:
        parts.append(out(keyed, key, F.lit(True)))
        if not fam.broadcast:
            small = stats.keys.get(fam.attr, 0) <= BROADCAST_GROUPS
            parts.append(_copied(keyed.withColumn("gkey", key), keyless, fam, stats.widest, small, out))
    if fam.keyless:
        if fam.negated:  # a keyed event can cancel a keyless match
            parts.append(out(keyed.where(F.col("type").isin(sorted(fam.negated))), F.lit(KEYLESS_GROUP), F.lit(True)))
        if fam.broadcast:  # one placeholder row, so that the keyless group exists
            placeholder = spark.createDataFrame(
                [(fam.fid, KEYLESS_GROUP, -1, -1, None, False)],
                "fid int, gkey string, seq long, mid2 long, json string, keyed boolean",
            )
            parts.append(placeholder)
        else:
            parts.append(out(keyless, F.lit(KEYLESS_GROUP), F.lit(False)))
    if not parts:
        return out(base.limit(0), F.lit(KEYLESS_GROUP), F.lit(False))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _copied(keyed: DataFrame, keyless: DataFrame, fam: Family, widest: int, small: bool, out: Any) -> DataFrame:
    """The fallback for too many keyless events: copy each into every group whose span it can meet (a bucketed
    range join over the family's widest margin)."""
    from pyspark.sql import functions as F

    reach = fam.reach
    if reach >= 2**60:
        groups = keyed.select("gkey").distinct()
        return out(keyless.crossJoin(F.broadcast(groups) if small else groups), F.col("gkey"), F.lit(False))
    size = max(reach, 1)
    ranges = keyed.groupBy("gkey").agg((F.min("tlo") - reach).alias("lo"), (F.max("thi") + reach).alias("hi"))
    # An event is put in the bucket of its lower bound; a group covers every bucket such an event can fall in.
    ranges = ranges.withColumn(
        "bucket", F.explode(F.sequence(F.floor((F.col("lo") - widest) / size), F.floor(F.col("hi") / size)))
    )
    events = keyless.withColumn("bucket", F.floor(F.col("tlo") / size))
    joined = events.join(F.broadcast(ranges) if small else ranges, "bucket")
    joined = joined.where((F.col("thi") >= F.col("lo")) & (F.col("tlo") <= F.col("hi")))
    return out(joined, F.col("gkey"), F.lit(False))


def _broadcast_keyless(spark: SparkSession, parsed: DataFrame, families: list[Family]) -> Any:
    """The keyless events of every broadcast family, as {fid: [(seq, json), ...]} on every executor."""
    from pyspark.sql import functions as F

    shared: dict[int, list[tuple[int, str]]] = {}
    for fam in families:
        if fam.attr is None or not fam.broadcast:
            continue
        rows = _family_base(parsed, fam).where(F.col(key_column(fam.attr)).isNull()).select("seq", "json").collect()
        shared[fam.fid] = [(r["seq"], r["json"]) for r in rows]
    return spark.sparkContext.broadcast(shared) if shared else None


# ------------------------------------------------------------------------------------------------ driver


@dataclass
class BatchResult:
    """The groups' records (before the cross-group merge) and how the input was cut."""

    matched: DataFrame  # RECORD_SCHEMA rows
    families: list[Family]
    stats: InputStats
    plans: list[QueryPlan]
    parsed: DataFrame  # cached for the several passes: release() frees it
    _drops: dict[str, int] | None = None

    def release(self) -> None:
        self.parsed.unpersist()

    def collect(self) -> list[MatchRecord]:
        """The records (semantics section 5) in completion order, merged on the driver (no more Spark stages).
        What the memory bounds dropped is kept for :meth:`dropped`."""
        rows = [r.asDict() for r in self.matched.collect()]
        self._drops = sum_drops(r for r in rows if r["match"] is None)
        records = [r for r in rows if r["match"] is not None]
        return [to_record(r) for r in merge_rows(records, self.distinct_queries())]

    def dropped(self) -> dict[str, int]:
        """Per query with drops: partial matches the groups' memory bounds dropped (runs, or enumerations cut short;
        ``hcep match``'s count: a group holds one key, so ``runs_per_key`` binds as in one process, while ``runs``
        bounds each group).  Read from :meth:`collect`'s rows, else one more pass over the input."""
        if self._drops is None:
            from pyspark.sql import functions as F

            rows = self.matched.where(F.col("match").isNull()).select("query", "emit_idx").collect()
            self._drops = sum_drops(r.asDict() for r in rows)
        return dict(self._drops)

    def records(self) -> DataFrame:
        """The same merge as a DataFrame, for results too large for the driver (unordered)."""
        from pyspark.sql import functions as F
        from pyspark.sql.window import Window

        unique = self.matched.where(F.col("match").isNotNull()).dropDuplicates(["query", "match", "rid"])
        distinct = sorted(self.distinct_queries())
        if not distinct:
            return unique
        best = Window.partitionBy("query", "vkey").orderBy(F.col("confidence").desc(), *[F.col(c) for c in ORDER])
        ranked = unique.withColumn("_rank", F.when(F.col("query").isin(distinct), F.row_number().over(best)))
        return ranked.where(F.col("_rank").isNull() | (F.col("_rank") == 1)).drop("_rank")

    def distinct_queries(self) -> set[str]:
        return {p.name for p in self.plans if p.output == "distinct"}


def sum_drops(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Per query, the drop counts of :func:`app.spark.batch_run.drop_row` rows (queries without drops left out)."""
    out: dict[str, int] = {}
    for row in rows:
        if row["emit_idx"]:
            out[row["query"]] = out.get(row["query"], 0) + int(row["emit_idx"])
    return out


#: Completion order of records (see the module doc).
ORDER = ("emit_mid2", "emit_seq", "qidx", "emit_idx", "gkey")


def merge_rows(rows: list[dict[str, Any]], distinct: set[str]) -> list[dict[str, Any]]:
    """Cross-group merge: one record per signature; for distinct queries one per RETURN value (best confidence, then
    the earliest completion); completion order."""
    rows = sorted(rows, key=lambda r: tuple(r[c] for c in ORDER))
    seen: set[tuple[str, str, str | None]] = set()
    best: dict[tuple[str, str], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        sig = (row["query"], row["match"], row.get("rid"))
        if sig in seen:
            continue
        seen.add(sig)
        if row["query"] in distinct:
            value = (row["query"], row["vkey"])
            held = best.get(value)
            if held is None or row["confidence"] > held["confidence"]:
                best[value] = row
            continue
        out.append(row)
    out.extend(best.values())
    out.sort(key=lambda r: tuple(r[c] for c in ORDER))
    return out


def to_record(row: Any) -> MatchRecord:
    """The record (semantics section 5) of an operator row: a growing run's increments keep their ``id`` and
    ``extends`` (:func:`app.spark.record_columns.record_of_row`)."""
    return record_of_row(row)


def match_frame(
    spark: SparkSession,
    parsed: DataFrame,
    plans: Sequence[QueryPlan],
    *,
    partitions: int | None = None,
    increments: bool = True,
) -> BatchResult:
    """Plan and run the batch match over a parsed event frame (see :mod:`app.spark.events`).  Raises ValueError with
    ``FILE:LINE: reason`` when an input line is not a valid event."""
    from pyspark import StorageLevel

    plans = list(plans)
    compiled = [compile_plan(p) for p in plans]
    attrs = sorted({cq.equivalence[0] for cq in compiled if cq.equivalence})
    parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        stats = input_stats(parsed, attrs)
    except ValueError:
        parsed.unpersist()
        raise
    families = plan_families(compiled, stats)
    for fam in families:
        fam.broadcast = fam.attr is not None and stats.keyless(fam.types, fam.attr) <= BROADCAST_KEYLESS
    shared = _broadcast_keyless(spark, parsed, families)
    rows = None
    for fam in families:
        part = family_rows(spark, parsed, fam, stats)
        rows = part if rows is None else rows.unionByName(part)
    assert rows is not None
    nparts = partitions or _match_partitions(spark, stats.events)
    token = uuid.uuid4().hex
    members = {fam.fid: (fam.keyed, fam.keyless, fam.queries, fam.margins) for fam in families}
    widest = stats.widest

    def body(batches: Iterator[Any]) -> Iterator[Any]:
        return run_partition(batches, token, plans, members, widest, shared, increments)

    matched = (
        rows.repartition(nparts, "fid", "gkey")
        .sortWithinPartitions("fid", "gkey", "mid2", "seq")
        .mapInPandas(body, RECORD_SCHEMA)
    )
    return BatchResult(matched, families, stats, plans, parsed)


def _match_partitions(spark: SparkSession, events: int) -> int:
    """About 100,000 events per task, at least the shuffle partitions, and a multiple of the cores so that the last
    round of tasks keeps every core busy."""
    cores = max(spark.sparkContext.defaultParallelism, 1)
    wanted = max(int(spark.conf.get("spark.sql.shuffle.partitions") or 200), events // 100_000, 1)
    return -(-wanted // cores) * cores


def run_batch(
    spark: SparkSession,
    paths: Sequence[str],
    plans: Sequence[QueryPlan],
    *,
    kind: str = "auto",
    partitions: int | None = None,
    tmp_dir: str | None = None,
    max_delta: float | None = None,
    increments: bool = True,
) -> BatchResult:
    """Read the inputs and match them: the whole of ``hcep batch`` short of printing.  Raw logs are converted into
    ``tmp_dir`` (default: a new temporary directory), which must live until the result is consumed.  An event wider
    than ``max_delta`` seconds (``hcep run``'s rule) is an input error naming its line."""
    from app.spark.events import read_inputs
    from engine.events import max_width_ticks

    compiled = [compile_plan(p) for p in plans]
    attrs = sorted({cq.equivalence[0] for cq in compiled if cq.equivalence})
    tick = plans[0].tick if plans else 0.1
    max_width = None if max_delta is None else max_width_ticks(max_delta, tick)
    parsed = read_inputs(spark, paths, tick, attrs, kind, tmp_dir, max_width)
    return match_frame(spark, parsed, plans, partitions=partitions, increments=increments)


def plans_from_pack(
    pack: Any,
    names: Sequence[str] | None = None,
    *,
    tick: float | None = None,
    strategy: str | None = None,
    output: str | None = None,
    confidence: float | None = None,
) -> list[QueryPlan]:
    """The enabled queries of a loaded pack (or those named), with ``hcep match``'s overrides and the pack's memory
    bounds (``settings.limits``; :class:`engine.limits.LimitsError`, a ValueError naming the key, when invalid)."""
    from engine.limits import from_settings

    limits = from_settings(getattr(pack, "settings", None))
    specs = [s for s in pack.queries if (s.name in names if names else s.enabled)]
    resolved_tick = tick or pack.tick
    return [
        QueryPlan(
            s.name,
            s.query,
            strategy or s.strategy,
            output or s.output,
            s.confidence if confidence is None else confidence,
            resolved_tick,
            limits,
        )
        for s in specs
    ]
