"""``--kafka`` for the collectors: the options, and the :class:`app.publish.Publisher` they describe.

Collectors publish through :mod:`app.publish` only (no engine import).  A broker that does not answer is reported
in one line on stderr and the collector exits 1 (:data:`EXIT_KAFKA`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from app.commands.argtypes import non_negative, positive_int, positive_seconds

EXIT_KAFKA = 1
DEFAULT_PACK = 50  # events per Kafka message: ~20x the service's throughput of one event per message


def configure(parser: argparse.ArgumentParser, source: str, *, flags: tuple[str, ...] = ("--kafka",)) -> None:
    """The Kafka options; ``flags`` names the broker option (``collect spark``: ``--bootstrap`` and ``--kafka``)."""
    group = parser.add_argument_group("publishing to Kafka")
    group.add_argument(
        *flags,
        dest="kafka",
        metavar="BOOTSTRAP",
        help="publish the events to this Kafka broker "
        "(HOST:PORT[,...]) instead of writing them to stdout (--out still writes a copy)",
    )
    group.add_argument("--topic", metavar="NAME", help=f"with --kafka: topic (default hcep.events.{source})")
    group.add_argument(
        "--pack",
        type=positive_int,
        default=DEFAULT_PACK,
        metavar="N",
        help=f"with --kafka: up to N events of one partition per message, as JSON lines "
        f"(default {DEFAULT_PACK}; 1 = one event per message)",
    )
    group.add_argument(
        "--linger",
        type=non_negative,
        default=20.0,
        metavar="MS",
        help="with --kafka: the producer waits up to MS ms to batch messages (20)",
    )
    group.add_argument(
        "--kafka-timeout",
        type=positive_seconds,
        default=15.0,
        metavar="S",
        help="with --kafka: give up when the broker does not answer within S seconds (15)",
    )


def check(parser_name: str, args: argparse.Namespace) -> None:
    """Options that only make sense with --kafka are an error without it."""
    from app.commands import CommandError

    if args.kafka is None and args.topic is not None:
        raise CommandError(f"{parser_name}: --topic needs --kafka")


def out_path(args: argparse.Namespace) -> str | None:
    """Where the JSON lines go: --out if given, else stdout unless publishing to Kafka."""
    if args.out is not None:
        return args.out
    return None if args.kafka else "-"


def open_publisher(args: argparse.Namespace, source: str, keys: tuple[str, ...] | None = None) -> Any:
    """The publisher the options describe, or None without --kafka.  Raises PublishError (broker unreachable).

    ``keys``: the event attributes tried for the message key (default: job, else host)."""
    if not args.kafka:
        return None
    from app.publish import DEFAULT_KEYS, Publisher

    return Publisher(
        args.kafka,
        source,
        topic=args.topic,
        pack=args.pack,
        linger_ms=int(args.linger),
        timeout=args.kafka_timeout,
        keys=keys or DEFAULT_KEYS,
    )


def report(command: str, err: Exception) -> int:
    print(f"hcep {command}: {err}", file=sys.stderr)
    return EXIT_KAFKA


def emit(event: dict[str, Any], out: Any, publisher: Any, text: str | None = None) -> None:
    """One collected event to the JSON-lines copy (``out``, may be None) and the publisher (may be None)."""
    if text is None:
        text = json.dumps(event)
    if out is not None:
        out.write(text)
        out.write("\n")
    if publisher is not None:
        publisher.send(event, text)


def emit_sorted(texts: Iterable[str], out: Any, publisher: Any) -> None:
    """A batch collection's events (JSON texts, in time order) out, then every message acknowledged: only then may
    the summary claim them (a broker that stops answering raises PublishError here)."""
    for text in texts:
        emit(json.loads(text) if publisher is not None else {}, out, publisher, text)
    if publisher is not None:
        publisher.flush()
