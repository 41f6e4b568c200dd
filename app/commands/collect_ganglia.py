"""``hcep collect ganglia``: Ganglia metrics -> hcep events as JSON lines (docs/semantics.md sections 1 and 7).

Two sources:
  hcep collect ganglia --gmond HOST:PORT [--interval S] [--once] [--out FILE|-] [--threshold X] [--cluster NAME]
  hcep collect ganglia --rrd DIR [--since T] [--until T] [--out FILE|-] [--threshold X] [--cluster NAME]

``--gmond`` polls a gmond (8649) or gmetad's XML port (8651) every interval; ``--rrd`` replays gmetad's RRD files.
Bad documents never stop the collector: each is reported on stderr (one line), counted, and appended to
``--deadletter`` if given.  A summary line goes to stderr at the end.

``--kafka HOST:PORT`` publishes the events to ``hcep.events.ganglia`` (``--topic``), keyed by host (LoadStd and
Balance/Imbalance, which have none, spread over the partitions), up to ``--pack`` events per message, instead of
writing them to stdout; each poll round (``--rrd``: the whole replay) is flushed, acknowledged by the broker, before
the next one starts.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from typing import IO, Any

from app.commands import CommandError, kafka_out
from app.commands.argtypes import finite, positive

EXIT_OK, EXIT_POLL_FAILED = 0, 1

_RELATIVE = re.compile(r"^(?:-(\d+(?:\.\d+)?)\s*(s|m|h|d)?|(\d+(?:\.\d+)?)\s*(s|m|h|d)(?: ago)?)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_time(text: str, now: float | None = None) -> float:
    """Epoch seconds; ``-N[s|m|h|d]`` or ``N(s|m|h|d)`` (that long before now: ``--since 2h``, ``--since=-600``); or an
    ISO 8601 date-time (local time unless it has an offset)."""
    text = text.strip()
    rel = _RELATIVE.match(text)
    if rel:
        amount, unit = (rel.group(1), rel.group(2)) if rel.group(1) is not None else (rel.group(3), rel.group(4))
        return (time.time() if now is None else now) - float(amount) * _UNIT_SECONDS[unit]
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(f"not a time: {text!r}")
        return value
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(f"not a time: {text!r} (epoch seconds, -2h, or 2024-05-01T12:00:00)") from None


def _time_arg(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``collect ganglia`` options to ``parser``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gmond", metavar="HOST:PORT", help="poll this gmond (8649) or gmetad XML port (8651)")
    source.add_argument("--rrd", metavar="DIR", help="read gmetad's RRD files under DIR (its rrd_rootdir)")
    parser.add_argument("--interval", type=positive, default=15.0, metavar="S", help="seconds between polls (15)")
    parser.add_argument("--once", action="store_true", help="poll once and exit")
    parser.add_argument("--rounds", type=int, default=0, metavar="N", help="stop after N polls (0: run until Ctrl-C)")
    parser.add_argument("--timeout", type=positive, default=5.0, metavar="S", help="connect/read timeout (5)")
    parser.add_argument("--since", type=_time_arg, metavar="T", help="--rrd: from T (epoch, 2h, ISO; default 1h)")
    parser.add_argument("--until", type=_time_arg, metavar="T", help="--rrd: up to T (default now)")
    parser.add_argument(
        "--out", metavar="FILE", help="events as JSON lines to FILE, '-' = stdout (the default without --kafka)"
    )
    parser.add_argument(
        "--threshold", type=finite, default=1.0, metavar="X", help="load std-dev above X is Imbalance (1.0)"
    )
    parser.add_argument("--cluster", metavar="NAME", help="only this cluster (also the name of unclustered hosts)")
    parser.add_argument("--metrics", metavar="A,B", help="Metric events only for these metrics (default: all)")
    parser.add_argument("--no-metrics", action="store_true", help="no raw Metric events, only LoadStd/Balance")
    parser.add_argument("--delta", type=finite, default=7.5, metavar="S", help="events' delta in seconds (7.5)")
    parser.add_argument("--deadletter", metavar="FILE", help="append rejected documents here (JSON lines)")
    kafka_out.configure(parser, "ganglia")


def run(args: argparse.Namespace) -> int:
    """Run the collector; exit 0, or 1 when ``--once`` got no document.  Bad input raises CommandError (exit 2)."""
    from app.publish import PublishError
    from collectors.hadoop.deadletter import DeadLetterSink

    kafka_out.check("collect ganglia", args)
    options = {
        "threshold": args.threshold,
        "delta": args.delta,
        "metrics": set(args.metrics.split(",")) if args.metrics else None,
        "raw": not args.no_metrics,
    }
    path = kafka_out.out_path(args)
    try:
        publisher = kafka_out.open_publisher(args, "ganglia")
    except PublishError as err:
        return kafka_out.report("collect ganglia", err)
    try:
        out = None if path is None else sys.stdout if path == "-" else open(path, "a", encoding="utf-8")  # noqa: SIM115
    except OSError as err:
        if publisher is not None:
            publisher.close()
        raise CommandError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        deadletter = DeadLetterSink(args.deadletter) if args.deadletter else DeadLetterSink()
    except OSError as err:
        if out is not None and out is not sys.stdout:
            out.close()
        if publisher is not None:
            publisher.close()
        raise CommandError(f"cannot write {args.deadletter}: {err.strerror or err}") from None
    counts = {"events": 0, "polls": 0}
    sink = _Sink(out, publisher)
    try:
        if args.rrd:
            return _run_rrd(args, sink, deadletter, options, counts)
        return _run_poll(args, sink, deadletter, options, counts)
    except KeyboardInterrupt:
        return EXIT_OK
    except PublishError as err:
        return kafka_out.report("collect ganglia", err)
    finally:
        deadletter.close()
        if out is not None and out is not sys.stdout:
            out.close()
        if publisher is not None:
            publisher.close()
        polls = counts["polls"]
        what = "" if args.rrd else f"{polls} poll{'s' if polls != 1 else ''}, "
        print(f"ganglia: {what}{counts['events']} events, {deadletter.count} dead-lettered", file=sys.stderr)


class _Sink:
    """Where the events go: the JSON-lines output, the Kafka publisher, or both."""

    def __init__(self, out: IO[str] | None, publisher: Any) -> None:
        self.out = out
        self.publisher = publisher

    def write(self, events: Iterable[dict[str, Any]]) -> int:
        """Write and publish one round's events (the publisher then flushed: acknowledged); return how many."""
        out, publisher = self.out, self.publisher
        n = 0
        for event in events:
            kafka_out.emit(event, out, publisher, json.dumps(event, separators=(",", ":")))
            n += 1
        if out is not None:
            out.flush()
        return n

    def flush(self) -> None:
        if self.publisher is not None:
            self.publisher.flush()


def _run_rrd(
    args: argparse.Namespace, sink: _Sink, deadletter: Any, options: dict[str, Any], counts: dict[str, int]
) -> int:
    from collectors.ganglia.derive import round_events, rounds_from_samples
    from collectors.ganglia.rrd import RrdUnavailable, read_history

    since = args.since if args.since is not None else time.time() - 3600
    try:
        rows = read_history(args.rrd, since, args.until, cluster=args.cluster, deadletter=deadletter)
    except (FileNotFoundError, RrdUnavailable) as err:
        raise CommandError(str(err)) from None
    for rnd in rounds_from_samples(rows):
        counts["events"] += sink.write(round_events(rnd, **options))
    sink.flush()
    return EXIT_OK


def _run_poll(
    args: argparse.Namespace, sink: _Sink, deadletter: Any, options: dict[str, Any], counts: dict[str, int]
) -> int:
    from collectors.ganglia.derive import Deduplicator, round_events, rounds_from_document
    from collectors.ganglia.poll import PollError, parse_address, poll
    from collectors.ganglia.xml import XmlParser

    try:
        address = parse_address(args.gmond)
    except ValueError as err:
        raise CommandError(f"--gmond: {err}") from None
    origin = f"{address[0]}:{address[1]}"
    parser = XmlParser(deadletter)
    dedup = Deduplicator()
    rounds = 1 if args.once else max(args.rounds, 0)
    started = time.monotonic()
    done = 0
    while True:
        done += 1
        counts["polls"] = done
        try:
            data = poll(address, timeout=args.timeout, deadline=max(args.timeout, min(args.interval, 60.0)) * 2)
        except PollError as err:
            print(f"hcep collect ganglia: {err}", file=sys.stderr)
            if args.once:
                return EXIT_POLL_FAILED
        else:
            doc = parser.parse(data, origin)
            if doc is not None:
                default = args.cluster or "unspecified"
                for rnd in rounds_from_document(doc, cluster=args.cluster, default_cluster=default):
                    fresh = dedup.fresh(rnd)
                    if fresh is not None:
                        counts["events"] += sink.write(round_events(rnd, fresh=fresh, **options))
                sink.flush()
            else:
                deadletter.flush()
                print(f"hcep collect ganglia: {origin}: bad document: {parser.last_reason}", file=sys.stderr)
                if args.once:
                    return EXIT_POLL_FAILED
        if rounds and done >= rounds:
            return EXIT_OK
        # Fixed-rate schedule (no drift): poll number done + 1 is due at started + done * interval.
        time.sleep(max(0.0, started + done * args.interval - time.monotonic()))
