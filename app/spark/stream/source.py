"""The query's input: JSON-lines files (Spark's file source) or Kafka (:mod:`app.spark.kafka_source`), plus a
control directory for the end-of-input marker, parsed by the engine's decoder and routed to buckets.

Every line becomes rows (:data:`app.spark.stream.state.ROW_FIELDS`, :func:`route`): one per family that reads its
type, to its group's bucket -- or, for an event lacking the family's key (a keyless, cluster-wide event), one per
bucket.  Invalid lines become one ``bad`` row (dead-lettered by the operator).  The router packs a frame's rows of
one bucket into one Spark row (:data:`ROUTED_SCHEMA`).

Identity and order, so that a replay after a crash rebuilds the very same events: an event without ``id`` gets
``<file name>:<line>`` (files; lines counted from 0, blank ones included) or ``<topic>-<partition>@<offset>[#i]``
(Kafka, the i-th line of a packed message); ``seq`` (the tie-break of events of one tick) is the line or offset
behind ten bits of the file's or partition's hash.  Files are read whole (``wholetext``), so a file must be
complete when it appears in the directory: write it elsewhere and rename it in, as for any Spark file source.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.spark.events import canonical_key
from app.spark.stream.plan import KEYLESS_GROUP, WHOLE_GROUP, StreamPlan
from app.spark.stream.state import BAD, KEYLESS, MARKER, OWN, pack_rows
from engine.events import SLOW, EventError, decoder_for, fast_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Lines of the control directory: ``{"hcep_end": ID}`` ends the input (release and flush every group).
END_KEY = "hcep_end"
LINES_SCHEMA = "origin string, pos long, text string"
#: What the router gives the shuffle: per bucket, its rows of a frame packed into one value (see
#: :data:`app.spark.stream.state.IN_SCHEMA`), and their greatest ``wt`` for the watermark.
ROUTED_SCHEMA = "bucket int, rows binary, wt double"
_POS_BITS = 52
_POS_MASK = (1 << _POS_BITS) - 1


def seq_of(origin: str, pos: int, base: int | None = None) -> int:
    """Ten bits of the origin's hash, then the position: stable across runs, a Spark long, and the order of a file's
    lines -- but not unique: two files whose hashes agree in those bits share a seq at each line (a stream of one file
    a second has hundreds of such pairs after ten minutes).  Nothing may take a seq for an event's identity alone.
    ``base``: :func:`seq_base` of ``origin``, when the caller has it."""
    return (seq_base(origin) if base is None else base) | (pos & _POS_MASK)


def seq_base(origin: str) -> int:
    """:func:`seq_of`'s origin bits (once per file or message, not once per line)."""
    return (zlib.crc32(origin.encode()) & 0x3FF) << _POS_BITS


def route(
    plan: StreamPlan, origin: str, pos: int, text: str, default_id: str, max_width: int, base: int | None = None
) -> list[tuple]:
    """The routed rows of one line (see the module doc); ``wt``: the event's point in seconds (the watermark's).
    ``base``: :func:`seq_base` of ``origin``, when the caller has it (the router, once per file)."""
    text = text.strip()
    if not text:
        return []
    # orjson where it gives Python's value (issue 28: the standard decoder was ~5 % of the workers' time), else
    # Python's decoder and its message for a bad line
    obj = fast_value(text.encode("utf-8", "surrogatepass"))
    if obj is SLOW:
        try:
            obj = json.loads(text)
        except ValueError as err:
            return [_bad(f"invalid: not JSON ({str(err)[:80]})", origin, pos, text)]
    if isinstance(obj, dict) and END_KEY in obj and "type" not in obj:
        return [(b, 0, None, MARKER, 0, 0, 0, 0, "", "", origin, pos, False, 0.0) for b in range(plan.buckets)]
    seq = seq_of(origin, pos, base)
    if isinstance(obj, dict) and "id" not in obj:
        obj["id"] = default_id
        text = with_id(text, default_id, len(obj) == 1)
    try:
        ev = decoder_for(plan.tick).event(obj, seq)
    except EventError as err:
        return [_bad(f"invalid: {err}", origin, pos, text)]
    if ev.thi - ev.tlo > max_width:
        return [_bad("too_wide", origin, pos, text)]
    mid2 = ev.tlo + ev.thi
    wt = mid2 * plan.tick / 2
    out: list[tuple] = []

    def add(bucket: int, fid: int, gkey: str | None, kind: str) -> None:
        out.append((bucket, fid, gkey, kind, seq, mid2, ev.tlo, ev.thi, ev.type, text, origin, pos, not out, wt))

    for fam in plan.families:
        if not fam.wants(ev.type):
            continue
        if fam.attr is None:
            add(plan.bucket_of(fam.fid, WHOLE_GROUP), fam.fid, WHOLE_GROUP, OWN)
            continue
        key = canonical_key(ev.attrs.get(fam.attr))
        if key is None and plan.keyless_types is not None and ev.type not in plan.keyless_types:
            reason = f"undeclared_keyless: a {ev.type} without {fam.attr} (declare its type in --keyless-types)"
            return [_bad(reason, origin, pos, text)]
        if key is None:
            for b in range(plan.buckets):
                add(b, fam.fid, None, KEYLESS)
            continue
        add(plan.bucket_of(fam.fid, key), fam.fid, key, OWN)
        if fam.keyless and ev.type in fam.negated:  # a keyed event can cancel a keyless match
            add(plan.bucket_of(fam.fid, KEYLESS_GROUP), fam.fid, KEYLESS_GROUP, OWN)
    return out


def with_id(text: str, eid: str, alone: bool) -> str:
    """The text of a JSON object line (stripped, so it ends with its closing brace) with ``"id": eid`` added last:
    parsed, it is exactly the line's object with ``id`` added, as ``obj["id"] = eid`` does (the same keys and values
    in the same order; JSON whitespace before the brace is kept).  Written into the text rather than the object
    dumped again: ``json.dumps`` of every event was about 5 % of the Python workers at 20,000 events/s (issue 28,
    cut 15).  ``alone``: the object had no key before (``{}``), so no comma."""
    plain = eid.isascii() and eid.isprintable() and '"' not in eid and "\\" not in eid
    value = f'"{eid}"' if plain else json.dumps(eid)
    return f'{{"id":{value}}}' if alone else f'{text[:-1]},"id":{value}}}'


#: Rows of one bucket packed into one value (:func:`app.spark.stream.state.pack_rows`) at most this many at a time:
#: a backlog's frame of many files must not become one huge value.
PACK_ROWS = 50_000


def routed_frame(rows: list[tuple]) -> Any:
    """The router's rows (:func:`route`'s) as a :data:`ROUTED_SCHEMA` frame: a bucket's rows packed into one value
    (up to :data:`PACK_ROWS` a value, in their order), ``wt`` the greatest of theirs (the watermark is the stream's
    greatest ``wt``, so packing leaves it as it was)."""
    import numpy as np
    import pandas as pd

    by_bucket: dict[int, list[tuple]] = {}
    for r in rows:
        got = by_bucket.get(r[0])
        if got is None:
            got = by_bucket[r[0]] = []
        got.append(r)
    buckets: list[int] = []
    packed: list[bytes] = []
    top: list[float] = []
    for bucket, mine in sorted(by_bucket.items()):
        for i in range(0, len(mine), PACK_ROWS):
            part = mine[i : i + PACK_ROWS]
            buckets.append(bucket)
            packed.append(pack_rows([r[1:13] for r in part]))
            top.append(max(r[13] for r in part))
    return pd.DataFrame(
        {
            "bucket": np.array(buckets, dtype="int32"),
            "rows": np.array(packed, dtype=object),
            "wt": np.array(top, dtype="float64"),
        }
    )


def _bad(reason: str, origin: str, pos: int, text: str) -> tuple:
    return (0, 0, None, BAD, 0, 0, 0, 0, reason, text[:2000], origin, pos, True, 0.0)


def router(plan: StreamPlan, max_width: int) -> Any:
    """``mapInPandas`` body: :data:`LINES_SCHEMA` (one row per file or message) -> :data:`ROUTED_SCHEMA`."""

    def body(frames: Iterator[Any]) -> Iterator[Any]:
        for pdf in frames:
            out: list[tuple] = []
            for origin, pos, text in zip(pdf["origin"], pdf["pos"], pdf["text"], strict=True):
                name, pos = str(origin), int(pos)
                lines = (text or "").split("\n")
                kafka = pos >= 0
                base = seq_base(name)
                file = os.path.basename(name)
                for i, line in enumerate(lines):
                    if kafka:
                        at = pos * 4096 + i
                        eid = f"{name}@{pos}" if len(lines) == 1 else f"{name}@{pos}#{i}"
                    else:
                        at = i
                        eid = f"{file}:{i}"
                    out.extend(route(plan, name, at, line, eid, max_width, base))
            yield routed_frame(out)

    return body


def file_lines(spark: SparkSession, directory: str, max_files: int | None = None) -> DataFrame:
    """Whole files of ``directory`` as they land: ``origin`` = the file's path, ``pos`` = -1 (lines numbered later)."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format("text").option("wholetext", "true")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    frame = reader.load(directory)
    return frame.select(
        F.col("_metadata.file_path").alias("origin"), F.lit(-1).cast("long").alias("pos"), F.col("value").alias("text")
    )


def kafka_lines(
    spark: SparkSession, bootstrap: str, topics: list[str], starting: str = "earliest", max_per_trigger: int = 0
) -> DataFrame:
    """Kafka messages through the ``hcep-kafka`` Python data source: ``origin`` = ``topic-partition``, ``pos`` = the
    offset (Spark's checkpoint holds the offsets)."""
    from pyspark.sql import functions as F

    from app.spark.kafka_source import NAME, register

    register(spark)
    reader = (
        spark.readStream.format(NAME)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", starting)
    )
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    frame = reader.load()
    return frame.select(
        F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("origin"),
        F.col("offset").alias("pos"),
        F.col("value").cast("string").alias("text"),
    )


def control_dir(checkpoint: str) -> Path:
    return Path(checkpoint) / "control"


def write_end_marker(checkpoint: str, marker: str) -> Path:
    """Drop an end-of-input marker into the control directory (written aside, then renamed in: one whole file)."""
    base = control_dir(checkpoint)
    base.mkdir(parents=True, exist_ok=True)
    tmp = base.parent / f".end-{marker}.tmp"
    tmp.write_text(json.dumps({END_KEY: marker}) + "\n")
    final = base / f"end-{marker}.jsonl"
    os.replace(tmp, final)
    return final


def routed_events(spark: SparkSession, lines: DataFrame, checkpoint: str, plan: StreamPlan, max_width: int) -> Any:
    """The operator's input: the lines and the control directory's, routed, under the pack's watermark (the ``wt``
    column carries it and is dropped before the operator, so late rows reach it to be counted)."""
    from pyspark.sql import functions as F

    control_dir(checkpoint).mkdir(parents=True, exist_ok=True)
    control = file_lines(spark, str(control_dir(checkpoint)))
    routed = lines.unionByName(control).mapInPandas(router(plan, max_width), ROUTED_SCHEMA)
    delay = f"{max(int(round(plan.bound * 1000)), 0)} milliseconds"
    watermarked = routed.withColumn("wt", F.timestamp_seconds("wt")).withWatermark("wt", delay)
    return watermarked.drop("wt")
