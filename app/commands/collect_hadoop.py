"""``hcep collect hadoop PATH...``: Hadoop job history, AM logs and reduce task logs -> events as JSON lines.

Without ``--follow`` every file under the paths is read once and the events are written sorted by time.  With
``--follow`` the files (and new files appearing under directory paths) are tailed through rotation; events are
written as they come, and read positions are committed to ``--state`` after each flushed batch, so a restart resumes
without loss or repetition.  A summary line (files, lines, events, dead-lettered) goes to stderr.  A file in a
format not read (Hadoop 1 JobTracker history, a Spark event log, another kind of log4j log, a gzip-compressed one:
:mod:`collectors.hadoop.formats`) is named on stderr with why and counted per format in the summary (``--strict``:
exit 2); companions such as a job's ``conf.xml`` are merely counted as skipped.

With ``--kafka HOST:PORT`` the events go to the topic ``hcep.events.hadoop`` (``--topic``), keyed by job, up to
``--pack`` events of one partition per message, instead of stdout.  In ``--follow`` mode one producer lives as long
as the collector; each batch is flushed (every message acknowledged by the broker) before the read positions are
committed to ``--state``, so delivery is at-least-once: a crash can publish a batch twice, never lose it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any

from app.commands import CommandError, kafka_out
from app.commands.argtypes import non_negative


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories (searched recursively)")
    parser.add_argument("--follow", action="store_true", help="keep following the files (tail -F), across rotation")
    parser.add_argument(
        "--out", metavar="FILE", help="where to write the events ('-': stdout, the default without --kafka)"
    )
    parser.add_argument("--state", metavar="FILE", help="with --follow: read positions, committed after each batch")
    parser.add_argument("--deadletter", metavar="FILE", help="append malformed input here (JSON lines)")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help="time zone of the log timestamps (default UTC)")
    parser.add_argument("--delta", type=non_negative, default=0.5, metavar="S", help="uncertainty half-width (0.5 s)")
    parser.add_argument("--poll", type=non_negative, default=1.0, metavar="S", help="with --follow: poll interval")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show a progress bar"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when a file under the paths is in a format not read (each is named on stderr)",
    )
    parser.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)  # tests: stop following
    kafka_out.configure(parser, "hadoop")


def run(args: argparse.Namespace) -> int:
    from app.publish import PublishError
    from collectors.hadoop.common import zone
    from collectors.hadoop.deadletter import DeadLetterSink

    kafka_out.check("collect hadoop", args)
    try:
        tz = zone(args.tz)
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError for odd keys
        raise CommandError(f"unknown time zone {args.tz!r}") from None
    if not args.follow:
        missing = [p for p in args.paths if not os.path.exists(p)]
        if missing:
            raise CommandError(f"no such file or directory: {missing[0]}")
    path = kafka_out.out_path(args)
    try:
        publisher = kafka_out.open_publisher(args, "hadoop")
    except PublishError as err:
        return kafka_out.report("collect hadoop", err)
    deadletter = DeadLetterSink(args.deadletter) if args.deadletter else DeadLetterSink()
    out, close = _open_out(path, append=args.follow)
    try:
        if args.follow:
            return _follow(args, tz, deadletter, out, publisher)
        return _batch(args, tz, deadletter, out, publisher)
    except PublishError as err:
        return kafka_out.report("collect hadoop", err)
    finally:
        deadletter.close()
        if publisher is not None:
            publisher.close()
        if out is not None:
            if close:
                out.close()
            else:
                out.flush()


def _open_out(path: str | None, append: bool) -> tuple[IO[str] | None, bool]:
    if path is None:
        return None, False
    if path == "-":
        return sys.stdout, False
    try:
        return open(path, "a" if append else "w", encoding="utf-8"), True  # noqa: SIM115
    except OSError as err:
        raise CommandError(f"cannot write {path}: {err.strerror}") from None


# ------------------------------------------------------------------------------------------------------------- batch
def _batch(args: argparse.Namespace, tz: Any, deadletter: Any, out: IO[str] | None, publisher: Any) -> int:

    from collectors.hadoop.collect import Summary, collect, discover, sorted_events

    summary = Summary()
    total = sum(s.size for s in discover(args.paths))
    show = args.progress if args.progress is not None else (total > 16 * 1024 * 1024 and sys.stderr.isatty())
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="B", unit_scale=True, desc="collect hadoop", file=sys.stderr, leave=False)
    on_file = (lambda source: bar.update(source.size)) if bar is not None else None
    try:
        events = collect(args.paths, tz=tz, delta=args.delta, deadletter=deadletter, summary=summary, on_file=on_file)
        kafka_out.emit_sorted(sorted_events(events), out, publisher)
    finally:
        if bar is not None:
            bar.close()
    _print_report(args, summary)
    return _strict(args, summary)


#: How many files in a format not read the report names one by one.
NAMED_UNREAD = 20


def _print_report(args: argparse.Namespace, summary: Any) -> None:
    """The files in a format not read, each with why (never passed over in silence), then the summary."""
    for path, _, why in summary.unread[:NAMED_UNREAD]:
        print(f"collect hadoop: not read: {path}: {why}", file=sys.stderr)
    if len(summary.unread) > NAMED_UNREAD:
        print(f"collect hadoop: not read: {len(summary.unread) - NAMED_UNREAD} more", file=sys.stderr)
    print(summary.line(args.deadletter), file=sys.stderr)


def _strict(args: argparse.Namespace, summary: Any) -> int:
    """2 with ``--strict`` when a file was in a format not read, else 0."""
    if summary.unread and args.strict:
        print(f"collect hadoop: --strict: {len(summary.unread)} files not read", file=sys.stderr)
        return 2
    return 0


# ------------------------------------------------------------------------------------------------------------ follow
def _follow(args: argparse.Namespace, tz: Any, deadletter: Any, out: IO[str] | None, publisher: Any) -> int:
    from app.commands.follow_loop import follow
    from collectors.hadoop.collect import Deduper, Summary, line_parser, sniff
    from collectors.hadoop.common import Context, ParseStats
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.hadoop.formats import unread_format
    from collectors.hadoop.hostpace import HostPaces
    from collectors.hadoop.jhist import HEADER_BINARY, parse_jhist, sniff_header
    from collectors.hadoop.tail import Tailer

    summary = Summary()
    stats = summary.stats
    quiet = DeadLetterSink()  # replayed lines were dead-lettered in an earlier run already
    tailer = Tailer(args.state, replay=True)
    done: dict[str, list[int]] = tailer.extra.setdefault("binary_done", {})
    parsers: dict[str, Any] = {}
    unknown: dict[str, int] = {}
    binary_seen: dict[str, int] = {}
    dedupe = Deduper()
    host_paces = HostPaces()  # host_pace across jobs: each paced map attempt as it arrives (batch: in finish order)

    def emit(event: dict[str, Any]) -> None:
        if dedupe.keep(event):
            host_paces.annotate(event)
            kafka_out.emit(event, out, publisher)
            summary.written += 1

    def scan() -> None:
        for root in args.paths:
            if os.path.isdir(root):
                for dirpath, dirnames, filenames in os.walk(root):
                    dirnames.sort()
                    for name in sorted(filenames):
                        consider(os.path.abspath(os.path.join(dirpath, name)))
            else:
                consider(os.path.abspath(root))

    def consider(path: str) -> None:
        if path in parsers or path in done or unknown.get(path, 0) > 20 or not os.path.isfile(path):
            return  # known, finished, given up on, or not there yet (a later scan will see it)
        kind = sniff(path)
        if kind is None:
            unknown[path] = unknown.get(path, 0) + 1
            return
        if kind == "jhist" and sniff_header(path) == HEADER_BINARY:
            size = os.path.getsize(path)
            if binary_seen.get(path) != size:  # read once it stopped growing
                binary_seen[path] = size
                return
            ctx = Context(source=path, tz=tz, delta=args.delta, deadletter=deadletter, stats=ParseStats())
            for event in parse_jhist(path, ctx):
                emit(event)
            stats.add(ctx.stats)
            done[path] = [size]
            summary.files += 1
            return
        ctx = Context(source=path, tz=tz, delta=args.delta, deadletter=deadletter, stats=stats)
        parsers[path] = line_parser(kind, ctx)
        tailer.watch(path)
        summary.files += 1

    def step() -> None:
        for line in tailer.poll():
            parser = parsers.get(line.path)
            if parser is None:
                continue
            parser.ctx.source = line.source
            parser.ctx.deadletter = quiet if line.replay else deadletter
            events = parser.feed(line.text, line.lineno)
            for event in events:
                if line.replay:
                    if dedupe.keep(event):  # written before the restart: only remember it
                        host_paces.annotate(event)
                else:
                    emit(event)

    def close() -> None:
        tailer.close()
        summary.duplicates = dedupe.dropped
        # files never recognised (a log's first lines may lack its kind's markers: re-sniffed until it is stopped)
        summary.skipped = sum(1 for path in unknown if path not in parsers and path not in done)
        summary.unread = [
            (path, *what) for path in unknown if path not in parsers and (what := unread_format(path)) is not None
        ]
        _print_report(args, summary)

    code = follow(
        poll_seconds=args.poll,
        max_polls=args.max_polls,
        rescan_seconds=5.0,
        scan=scan,
        step=step,
        commit=tailer.commit,
        close=close,
        out=out,
        publisher=publisher,
        deadletter=deadletter,
    )
    return _strict(args, summary) if code == 0 else code
