"""``hcep collect spark LOGDIR``: Spark event logs -> hcep events as JSON lines (the Spark vocabulary).

LOGDIR is ``spark.eventLog.dir`` (single-file and rolling logs, any codec Spark writes), one rolling log's directory
or one log file; or, with ``--history-server URL``, every application a running Spark History Server lists (its event
logs fetched through its REST API: the same events).  What is not read is named on stderr (``--strict``: exit 2).
Without ``--follow`` every log is read once to its current end and the events are written sorted by time.  With
``--follow`` every log (and each new one) is tailed until its application stops: only complete lines are read, the
rename of ``.inprogress`` is followed, and what was consumed is committed to ``--state`` after each flushed batch, so
a restart neither loses nor repeats events.  A summary line goes to stderr.

With ``--bootstrap HOST:PORT`` (or ``--kafka``) the events go to the topic ``hcep.events.spark`` (``--topic``), keyed
by ``app_id`` so that an application's events stay in one partition, in the log's order; each batch is acknowledged
by the broker before its positions are committed (at-least-once).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any

from app.commands import CommandError, kafka_out
from app.commands.argtypes import non_negative, positive_seconds

SOURCE = "spark"
#: Kafka message key: an application's events stay in one partition (and so in the log's order).
KEYS = ("app_id",)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logdir",
        metavar="LOGDIR",
        nargs="?",
        help="Spark's event-log directory (spark.eventLog.dir), one "
        "rolling log's eventlog_v2_* directory, or one event-log file",
    )
    parser.add_argument(
        "--history-server",
        metavar="URL",
        help="instead of LOGDIR: every application a running Spark History Server lists (http://host:18080), its "
        "event logs fetched through the REST API (/api/v1/applications/ID/logs): the same events as from its log dir",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep following the logs as Spark writes them (new logs too) until stopped with Ctrl-C or SIGTERM",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the events as JSON lines ('-': stdout, the "
        "default without --bootstrap; with --follow the file is appended to)",
    )
    parser.add_argument(
        "--state",
        metavar="FILE",
        help="with --follow: what has been consumed, committed after each "
        "flushed batch, so a restart resumes without loss or repetition",
    )
    parser.add_argument(
        "--deadletter",
        metavar="FILE",
        help="append malformed lines here (JSON lines: source, location file:line, reason, raw)",
    )
    parser.add_argument(
        "--delta",
        type=non_negative,
        default=0.0,
        metavar="S",
        help="uncertainty half-width of every "
        "event in seconds (default 0: Spark's times are exact to the millisecond, on one clock)",
    )
    parser.add_argument(
        "--poll",
        type=positive_seconds,
        default=1.0,
        metavar="S",
        help="with --follow: seconds between looks at the logs (default 1)",
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show a progress bar (batch)"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when a file or directory in LOGDIR is not read (a format not read: each is named on stderr)",
    )
    parser.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)  # tests: stop following
    kafka_out.configure(parser, SOURCE, flags=("--bootstrap", "--kafka"))


def run(args: argparse.Namespace) -> int:
    if args.kafka is None and args.topic is not None:
        raise CommandError("collect spark: --topic needs --bootstrap")
    if args.state and not args.follow:
        raise CommandError("collect spark: --state needs --follow")
    if args.history_server is not None:
        if args.logdir is not None:
            raise CommandError("collect spark: give LOGDIR or --history-server, not both")
        if args.follow:
            raise CommandError("collect spark: --follow reads a log directory, not --history-server")
        if not args.history_server.startswith(("http://", "https://")):
            raise CommandError(f"collect spark: --history-server must be an http(s) URL, got {args.history_server}")
    elif args.logdir is None:
        raise CommandError("collect spark: give LOGDIR (Spark's event-log directory) or --history-server URL")
    root = args.logdir
    if root is None:
        return _run_output(args, None)
    if not os.path.exists(root):
        raise CommandError(f"collect spark: no such directory: {root}")
    if not os.access(root, os.R_OK | (os.X_OK if os.path.isdir(root) else 0)):
        raise CommandError(f"collect spark: cannot read {root}")
    try:
        from collectors.spark import layout

        if os.path.isfile(root) and layout.single_log(root) is None:
            raise CommandError(f"collect spark: not a Spark event log (by its name or first bytes): {root}")
        if os.path.isdir(root):
            os.listdir(root)
    except OSError as err:
        raise CommandError(f"collect spark: cannot read {root}: {err.strerror}") from None
    return _run_output(args, root)


def _run_output(args: argparse.Namespace, root: str | None) -> int:
    from app.publish import PublishError
    from collectors.hadoop.deadletter import DeadLetterSink

    follower = None
    if args.follow:
        from collectors.spark.collect import Follower

        assert root is not None  # run() refuses --follow with --history-server
        try:
            follower = Follower(root, delta=args.delta, state_path=args.state)
        except ValueError as err:
            raise CommandError(f"collect spark: {err}") from None
    path = kafka_out.out_path(args)
    out, close = _open_out(path, append=args.follow)
    deadletter = None
    publisher = None
    try:
        deadletter = _open_deadletter(args.deadletter, DeadLetterSink)
        publisher = kafka_out.open_publisher(args, SOURCE, KEYS)
        if follower is not None:
            follower.deadletter = deadletter
            return _follow(args, follower, out, publisher)
        return _batch(args, deadletter, out, publisher)
    except PublishError as err:
        return kafka_out.report("collect spark", err)
    finally:
        if deadletter is not None:
            deadletter.close()
        if publisher is not None:
            publisher.close()
        if out is not None:
            out.close() if close else out.flush()


def _open_out(path: str | None, append: bool) -> tuple[IO[str] | None, bool]:
    if path is None:
        return None, False
    if path == "-":
        return sys.stdout, False
    try:
        return open(path, "a" if append else "w", encoding="utf-8"), True  # noqa: SIM115 - closed by run()
    except OSError as err:
        raise CommandError(f"collect spark: cannot write {path}: {err.strerror}") from None


def _open_deadletter(path: str | None, sink: Any) -> Any:
    try:
        return sink(path) if path else sink()
    except OSError as err:
        raise CommandError(f"collect spark: cannot write {path}: {err.strerror}") from None


# ------------------------------------------------------------------------------------------------------------- batch
def _batch(args: argparse.Namespace, deadletter: Any, out: IO[str] | None, publisher: Any) -> int:
    from collectors.hadoop.collect import sorted_events
    from collectors.spark import layout
    from collectors.spark.collect import Summary, collect, log_size

    summary = Summary()
    remote = args.history_server is not None
    total = 0 if remote else sum(log_size(log) for log in layout.discover(args.logdir))
    show = args.progress if args.progress is not None else (total > 16 * 1024 * 1024 and sys.stderr.isatty())
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=total or None, unit="B", unit_scale=True, desc="collect spark", file=sys.stderr, leave=False)
    on_bytes = bar.update if bar is not None else None
    unreachable: tuple[type[Exception], ...] = ()
    try:
        if remote:
            from collectors.spark.history import HistoryServerError, collect_history

            unreachable = (HistoryServerError,)
            events = collect_history(
                args.history_server, delta=args.delta, deadletter=deadletter, summary=summary, on_bytes=on_bytes
            )
        else:
            events = collect(args.logdir, delta=args.delta, deadletter=deadletter, summary=summary, on_bytes=on_bytes)
        # sorting reads every event before the first is written: an unreachable History Server writes nothing
        kafka_out.emit_sorted(sorted_events(events), out, publisher)
    except unreachable as err:
        raise CommandError(f"collect spark: {err}") from None
    finally:
        if bar is not None:
            bar.close()
    _print_report(args, summary)
    return _strict(args, summary)


#: How many unread files the report names one by one.
NAMED_UNREAD = 20


def _print_report(args: argparse.Namespace, summary: Any) -> None:
    """The unread files, each with why (a format not read is never passed over in silence), then the summary."""
    from collectors.spark.layout import unread_reason

    paths = summary.skipped_paths
    for path in paths[:NAMED_UNREAD]:
        # a History Server's entries already say why (their files are gone with the temporary directory)
        why = f": {unread_reason(path)}" if os.path.lexists(path) else ""
        print(f"collect spark: not read: {path}{why}", file=sys.stderr)
    if len(paths) > NAMED_UNREAD:
        print(f"collect spark: not read: {len(paths) - NAMED_UNREAD} more", file=sys.stderr)
    print(summary.line(args.deadletter), file=sys.stderr)


def _strict(args: argparse.Namespace, summary: Any) -> int:
    """2 with ``--strict`` when something in LOGDIR was not read, else 0."""
    paths = summary.skipped_paths
    if paths and args.strict:
        print(f"collect spark: --strict: {len(paths)} files or directories not read", file=sys.stderr)
        return 2
    return 0


# ------------------------------------------------------------------------------------------------------------ follow
def _follow(args: argparse.Namespace, follower: Any, out: IO[str] | None, publisher: Any) -> int:
    from app.commands.follow_loop import follow

    def step() -> None:
        for event in follower.poll():
            kafka_out.emit(event, out, publisher)

    def close() -> None:
        follower.close()
        summary = follower.summary
        summary.unfinished = follower.unfinished()
        _print_report(args, summary)

    code = follow(
        poll_seconds=args.poll,
        max_polls=args.max_polls,
        rescan_seconds=2.0,
        scan=follower.scan,
        step=step,
        commit=follower.commit,
        close=close,
        out=out,
        publisher=publisher,
        deadletter=follower.deadletter,
    )
    return _strict(args, follower.summary) if code == 0 else code
