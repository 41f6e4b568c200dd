"""``hcep archive``: events and match records into the Parquet archive (``app.spark.archive``).

    hcep archive FILE.jsonl... --to DIR [--pack FILE]       files (events and/or match records; '-' = stdin)
    hcep archive --kafka HOST:PORT --topic T --to DIR        a Kafka topic, through Spark (checkpointed)

Files are archived with pyarrow alone (no JVM): each line is an event, or a match record (it has ``query`` and
``match``).  ``--pack`` also matches the events as ``hcep match`` does (:class:`engine.evaluate.StreamedMatch`, the
one driver, under the pack's memory bounds; what they drop is said on stderr in ``hcep match``'s line) and archives
the records.  A Kafka topic is read by the ``hcep-kafka`` Spark data source; a rerun continues after what the
previous one archived, and ``--follow`` keeps archiving until interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from app.commands import CommandError


def configure(parser: argparse.ArgumentParser) -> None:
    from app.commands.argtypes import positive_seconds

    parser.add_argument("inputs", nargs="*", metavar="FILE", help="JSON lines of events or match records ('-': stdin)")
    parser.add_argument("--to", required=True, metavar="DIR", help="the archive root (created if missing)")
    parser.add_argument("--pack", metavar="FILE", help="also match the events with this pack and archive the records")
    parser.add_argument("--tick", type=positive_seconds, metavar="SECONDS", help="time granularity (pack's, or 0.1)")
    kafka = parser.add_argument_group("Kafka (through Spark)")
    kafka.add_argument("--kafka", metavar="HOST:PORT", help="read a topic from this broker instead of files")
    kafka.add_argument("--topic", metavar="T", help="topic of events")
    kafka.add_argument("--matches-topic", metavar="T", help="topic of match records")
    kafka.add_argument("--follow", action="store_true", help="keep archiving new messages until interrupted")
    kafka.add_argument("--checkpoint", metavar="DIR", help="offsets checkpoint (default DIR/_checkpoints/...)")
    kafka.add_argument("--master", metavar="URL", help="Spark master (default local[N])")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show it")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")


def run(args: argparse.Namespace) -> int:
    if args.kafka:
        if args.inputs:
            raise CommandError("hcep archive: give FILEs or --kafka, not both")
        return _run_kafka(args)
    if not args.inputs:
        raise CommandError("hcep archive: nothing to archive (give FILEs, '-' or --kafka)")
    return _run_files(args)


def _run_files(args: argparse.Namespace) -> int:
    from app.matching.packs import compile_spec, drops_line, limits_of, load_pack, pack_tick
    from app.spark.archive import ArchiveWriter, is_match_record
    from engine import DEFAULT_TICK, EventError
    from engine.evaluate import StreamedMatch
    from engine.events import decoder_for

    pack = load_pack(args.pack) if args.pack else None
    tick = args.tick or (pack_tick(pack) if pack else DEFAULT_TICK)
    compiled = [
        compile_spec(s.query, s.name, strategy=s.strategy, output=s.output, confidence=s.confidence, tick=tick)
        for s in (pack.queries if pack else ())
        if s.enabled
    ]
    events: list[Any] = []
    drops: str | None = None
    bar = _bar(args)
    with ArchiveWriter(args.to, tick=tick) as writer:
        for label, lineno, obj in _records(args.inputs, bar):
            try:
                if is_match_record(obj):
                    writer.add_match(obj)
                    continue
                if compiled:
                    events.append(decoder_for(tick).event(obj, writer.next_seq))
                writer.add_event(obj)
            except (EventError, KeyError, TypeError, ValueError) as err:
                raise CommandError(
                    f"{label}:{lineno}: invalid {'record' if is_match_record(obj) else 'event'}: {err}"
                ) from None
        if compiled:
            # As hcep match runs and writes them: the pack's memory bounds, growing runs as increments.
            matched = StreamedMatch(compiled, events, limits_of(args, pack), increments=True)
            writer.add_matches(matched)
            drops = drops_line("archive", matched.dropped())
    if bar is not None:
        bar.close()
    print(
        f"hcep archive: {writer.event_count} events, {writer.match_count} match records, {writer.files} files "
        f"-> {args.to}",
        file=sys.stderr,
    )
    if drops:
        print(drops, file=sys.stderr)
    return 0


def _bar(args: argparse.Namespace) -> Any:
    from app.spark.progress import wanted

    if not wanted(args.progress) or args.inputs == ["-"]:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    total = sum(os.path.getsize(p) for p in args.inputs if p != "-" and os.path.isfile(p))
    return tqdm(total=total, unit="B", unit_scale=True, desc="hcep archive", file=sys.stderr)


def _records(paths: list[str], bar: Any):
    """(file, line, decoded JSON) of every non-blank line; bad JSON is a CommandError naming the line."""
    from engine.events import SLOW, fast_value

    for path in paths:
        label = "<stdin>" if path == "-" else path
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as err:
            raise CommandError(f"{label}: cannot read: {err.strerror or err}") from None
        try:
            for lineno, raw in enumerate(stream, 1):
                if bar is not None:
                    bar.update(len(raw))
                value = fast_value(raw)  # orjson where it decodes as json.loads does; any other line as before
                if value is not SLOW:
                    yield label, lineno, value
                    continue
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8", errors="strict")
                if not text.strip():
                    continue
                try:
                    yield label, lineno, json.loads(text)
                except json.JSONDecodeError as err:
                    raise CommandError(f"{label}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
        except UnicodeDecodeError:
            raise CommandError(f"{label}: not UTF-8 text") from None
        finally:
            if path != "-":
                stream.close()


def _run_kafka(args: argparse.Namespace) -> int:
    if not (args.topic or args.matches_topic):
        raise CommandError("hcep archive: --kafka needs --topic and/or --matches-topic")
    try:
        from app.spark.kafka_source import archive_stream
        from app.spark.session import spark_session
    except ImportError as err:
        raise CommandError(f"hcep archive --kafka needs PySpark and kafka-python ({err})") from None
    from app.spark.progress import spark_progress, wanted

    tick = args.tick or 0.1
    jobs = [(t, "events") for t in [args.topic] if t] + [(t, "matches") for t in [args.matches_topic] if t]
    with spark_session(args.master) as spark, spark_progress(spark, "hcep archive", wanted(args.progress)):
        queries = [
            archive_stream(
                spark,
                args.kafka,
                topic,
                args.to,
                kind=kind,
                follow=args.follow,
                tick=tick,
                checkpoint=f"{args.checkpoint}/{kind}" if args.checkpoint else None,
            )
            for topic, kind in jobs
        ]
        if args.follow:
            try:
                for query in queries:
                    query.awaitTermination()
            except KeyboardInterrupt:
                for query in queries:
                    query.stop()
        for query in queries:
            if query.exception() is not None:
                raise CommandError(f"hcep archive: {query.exception()}")
    print(f"hcep archive: Kafka {', '.join(t for t, _ in jobs)} -> {args.to}", file=sys.stderr)
    return 0
