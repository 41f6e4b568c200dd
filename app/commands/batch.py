"""``hcep batch --pack FILE INPUT... [--master URL]``: the query pack over recorded input, on Spark.

The same records as ``hcep match`` on the same input (see :mod:`app.spark.batch` for how the stream is cut), for
inputs too large for one machine: JSON-lines files, the Parquet archive, or raw Hadoop logs, Spark event logs and
Ganglia XML dumps (through the collectors).  Records go to stdout as JSON lines (completion order) or, with ``--out
DIR``, to the archive layout of ``hcep archive`` (``DIR/matches/date=.../query=...``) without passing through the
driver.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from typing import Any

from app.commands import CommandError

KINDS = ("auto", "jsonl", "parquet", "raw")


def configure(parser: argparse.ArgumentParser) -> None:
    from app.commands.argtypes import OUTPUT_MODES, STRATEGIES, non_negative_seconds, positive_seconds, probability

    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSON-lines files or directories, an archive directory, or raw Hadoop, Spark event or Ganglia logs",
    )
    parser.add_argument("--pack", required=True, metavar="FILE", help="a YAML query pack (e.g. queries/hadoop.yaml)")
    parser.add_argument("--query", action="append", metavar="NAME", help="run only this query (repeatable)")
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master (default $HCEP_SPARK_MASTER or local[N]; e.g. local[2], spark://host:7077)",
    )
    parser.add_argument("--input-format", choices=KINDS, default="auto", help="how to read the inputs (auto)")
    parser.add_argument("--out", metavar="DIR", help="write the records as Parquet under DIR/matches (not stdout)")
    parser.add_argument("--partitions", type=int, metavar="N", help="Spark partitions of the match stage")
    parser.add_argument("--strategy", choices=STRATEGIES, help="event selection strategy (overrides the pack's)")
    parser.add_argument("--confidence", type=probability, metavar="C", help="confidence threshold (overrides)")
    parser.add_argument("--output", choices=OUTPUT_MODES, help="output mode (overrides the pack's)")
    parser.add_argument("--tick", type=positive_seconds, metavar="SECONDS", help="time granularity (overrides)")
    parser.add_argument(
        "--max-delta",
        type=non_negative_seconds,
        metavar="S",
        help="largest accepted half-width of an event's interval; a wider event is an error naming "
        "its line, as hcep run dead-letters it (default: the pack's settings.max_delta, else 7.5)",
    )
    parser.add_argument("--explain", action="store_true", help="print how the stream is cut on stderr")
    parser.add_argument(
        "--full-matches",
        action="store_true",
        help="whole signatures: a growing run (Q4) lists its whole prefix in every record instead of the events "
        "since its previous record (quadratic; for tests and small inputs)",
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show it")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")


def load_plans(args: argparse.Namespace) -> list[Any]:
    """The pack's query plans; also resolves ``args.max_delta`` (option, else pack setting, else 7.5) when present."""
    from app.matching.packs import load_pack, max_delta_of
    from app.spark.batch import compile_plan, plans_from_pack

    pack = load_pack(args.pack)
    if hasattr(args, "max_delta"):
        args.max_delta = max_delta_of(args, pack)
    names = args.query or None
    if names:
        missing = [n for n in names if n not in {s.name for s in pack.queries}]
        if missing:
            have = ", ".join(s.name for s in pack.queries) or "none"
            raise CommandError(f"hcep batch: no query named {missing[0]!r} in pack {args.pack} (it has: {have})")
    plans = plans_from_pack(
        pack, names, tick=args.tick, strategy=args.strategy, output=args.output, confidence=args.confidence
    )
    if not plans:
        raise CommandError(f"hcep batch: pack {args.pack} has no enabled query")
    for plan in plans:
        try:
            compile_plan(plan)
        except ValueError as err:
            raise CommandError(str(err)) from None
    return plans


def run(args: argparse.Namespace) -> int:
    import os

    from app.matching.packs import drops_line

    plans = load_plans(args)
    missing = [p for p in args.inputs if not os.path.exists(p)]
    if missing:
        raise CommandError(f"hcep batch: no such file or directory: {missing[0]}")
    try:
        from app.spark.batch import run_batch
        from app.spark.progress import spark_progress, wanted
        from app.spark.session import spark_session
    except ImportError as err:
        raise CommandError(f"hcep batch needs PySpark, pandas and pyarrow ({err})") from None

    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="hcep-batch-") as tmp,
        spark_session(args.master) as spark,
        spark_progress(spark, "hcep batch", wanted(args.progress)),
    ):
        try:
            result = run_batch(
                spark,
                args.inputs,
                plans,
                kind=args.input_format,
                partitions=args.partitions,
                tmp_dir=tmp,
                max_delta=args.max_delta,
                increments=not getattr(args, "full_matches", False),
            )
        except ValueError as err:
            raise CommandError(f"hcep batch: {err}") from None
        if args.explain:
            names = [p.name for p in plans]
            for fam in result.families:
                print(f"hcep batch: family {fam.fid}: {fam.describe(names)}", file=sys.stderr)
        if args.out:
            count = write_records(result.records(), args.out)
        else:
            count = 0
            write = sys.stdout.write
            for record in result.collect():
                write(json.dumps(record))
                write("\n")
                count += 1
            sys.stdout.flush()
        line = drops_line("batch", result.dropped())
        result.release()
    seconds = time.monotonic() - started
    print(f"hcep batch: {result.stats.events} events, {count} records, {seconds:.1f} s", file=sys.stderr)
    if line:
        print(line, file=sys.stderr)
    return 0


def write_records(records: Any, out: str) -> int:
    """Append the records to ``out/matches`` in the archive's layout (``app.spark.archive.MATCH_SCHEMA``)."""
    from pyspark.sql import functions as F

    from app.spark.archive import MATCHES_DIR, RETURN_STRINGS, new_batch_id

    frame = records.select(
        F.lit(new_batch_id()).alias("batch"),
        F.monotonically_increasing_id().alias("seq"),
        F.col("rid").alias("id"),
        "extends",
        "match",
        "confidence",
        "start",
        "end",
        F.col("ret").alias("return"),
        *[F.get_json_object("ret", f"$.{name}").alias(name) for name in RETURN_STRINGS],
        F.date_format(F.timestamp_seconds("start"), "yyyy-MM-dd").alias("date"),
        "query",
    ).persist()
    count = frame.count()
    frame.write.mode("append").partitionBy("date", "query").parquet(f"{out.rstrip('/')}/{MATCHES_DIR}")
    frame.unpersist()
    return count
