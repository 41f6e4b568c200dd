"""``hcep history ARCHIVE --out DIR``: the history aggregates of an archive, as Spark jobs, to Parquet.

Tables (see :mod:`app.spark.history`): ``durations`` (task duration quantiles per job, queue, user, host), ``skew``
(Dr. Elephant-style severity per job), ``queued`` (queued map output per job over time) and ``anomalies`` (straggler
and imbalance matches per time bucket); over Spark applications' events also ``spark_stages`` (per stage attempt
of an application attempt: task-time quantiles, skew, GC, spill) and ``spark_apps`` (per application attempt).  The
anomalies come from the archive's match records; with ``--pack`` the archived events are matched first (by ``hcep
batch``'s distributed matcher) and those records are used instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from app.commands import CommandError


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def configure(parser: argparse.ArgumentParser) -> None:
    from app.commands.argtypes import positive_seconds

    parser.add_argument("archive", metavar="ARCHIVE", help="archive root (written by hcep archive / hcep batch --out)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the tables go (DIR/<table>/, replaced)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default local[N])")
    parser.add_argument(
        "--bucket",
        type=positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="time bucket of the anomaly counts (300)",
    )
    parser.add_argument("--pack", metavar="FILE", help="match the archived events with this pack for the anomalies")
    parser.add_argument(
        "--straggler-queries",
        type=_names,
        default=["Q3", "SlowTask", "FetchWait"],
        metavar="A,B",
        help="queries whose matches are stragglers (Q3,SlowTask,FetchWait)",
    )
    parser.add_argument(
        "--imbalance-queries",
        type=_names,
        default=["Q5", "Q6"],
        metavar="A,B",
        help="queries whose matches are load imbalances (Q5,Q6)",
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show it")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")


def run(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.archive):
        raise CommandError(f"hcep history: no such archive directory: {args.archive}")
    plans = None
    if args.pack:
        from app.commands.batch import load_plans

        args.query = args.strategy = args.output = args.confidence = args.tick = None
        plans = load_plans(args)
    try:
        from app.spark.history import history
        from app.spark.progress import spark_progress, wanted
        from app.spark.session import spark_session
    except ImportError as err:
        raise CommandError(f"hcep history needs PySpark, pandas and pyarrow ({err})") from None

    started = time.monotonic()
    with spark_session(args.master) as spark, spark_progress(spark, "hcep history", wanted(args.progress)):
        matches = None
        if plans is not None:
            matches = _match_archive(spark, args.archive, plans)
        tables = history(
            spark,
            args.archive,
            args.out,
            bucket_seconds=args.bucket,
            straggler=args.straggler_queries,
            imbalance=args.imbalance_queries,
            matches=matches,
        )
    counts = {name: _rows(os.path.join(args.out, name)) for name in tables}
    if not tables:
        raise CommandError(f"hcep history: {args.archive} holds no events and no match records")
    summary = ", ".join(f"{name} {n} rows" for name, n in counts.items())
    print(f"hcep history: {summary} -> {args.out} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


def _rows(directory: str) -> int:
    """Rows of a Parquet directory, from the files' footers (no Spark job)."""
    import pyarrow.parquet as pq

    return sum(
        pq.read_metadata(os.path.join(root, name)).num_rows
        for root, _, names in os.walk(directory)
        for name in names
        if name.endswith(".parquet")
    )


def _match_archive(spark, archive: str, plans):
    """The pack's records over the archived events, as a DataFrame with the columns ``anomalies`` needs."""
    from app.spark.batch import run_batch

    events = os.path.join(archive, "events")
    if not os.path.isdir(events):
        raise CommandError(f"hcep history: --pack given but {archive} holds no events")
    try:
        result = run_batch(spark, [events], plans, kind="parquet")
    except ValueError as err:
        raise CommandError(f"hcep history: {err}") from None
    return result.records().select("query", "end", "start", "confidence").persist()
