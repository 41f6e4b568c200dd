"""``hcep match``: queries over a file of events -> match records as JSON lines (SPEC sections 5 and 8)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from app.commands import CommandError

DEFAULT_STRATEGY = "skip_till_any_match"
DEFAULT_OUTPUT = "all"
DEFAULT_CONFIDENCE = 0.0


def read_events(path: str | os.PathLike[str], tick: float) -> list[Any]:
    """Read JSON-lines events from ``path`` (``"-"``: stdin).  Blank lines are skipped.

    Raises :class:`CommandError` with ``"FILE:LINE: reason"`` for a line that is not JSON or not a valid event.
    """
    from engine import EventError, event_from_json

    path = str(path)
    label = "<stdin>" if path == "-" else path
    if path == "-":
        return _parse_lines(sys.stdin.buffer, label, tick, event_from_json, EventError)
    try:
        with open(path, "rb") as stream:
            return _parse_lines(stream, label, tick, event_from_json, EventError)
    except OSError as err:
        raise CommandError(f"{label}: cannot read events: {err.strerror or err}") from None


def _parse_lines(stream: Iterable[bytes], label: str, tick: float, event_from_json, EventError) -> list[Any]:
    events: list[Any] = []
    for lineno, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError:
            raise CommandError(f"{label}:{lineno}: not UTF-8 text") from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise CommandError(f"{label}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
        try:
            # seq: the event's 0-based input position (its id when it has none).
            events.append(event_from_json(obj, seq=len(events), tick=tick))
        except EventError as err:
            raise CommandError(f"{label}:{lineno}: invalid event: {err}") from None
    return events


def load_pack(path: str | os.PathLike[str]):
    """Load a YAML pack; any problem with it becomes a :class:`CommandError` carrying the pack loader's message."""
    import yaml

    from engine.language.ast import QueryError
    from engine.language.packs import PackError, load_pack

    try:
        return load_pack(path)
    except (PackError, QueryError) as err:
        raise CommandError(str(err)) from None
    except yaml.YAMLError as err:
        raise CommandError(f"{path}: invalid YAML: {err}") from None
    except OSError as err:
        raise CommandError(f"{path}: cannot read pack: {err.strerror or err}") from None


def pack_tick(pack: Any) -> float:
    from engine import DEFAULT_TICK

    tick = getattr(pack, "tick", None)
    return float(tick) if tick else DEFAULT_TICK


def compile_spec(
    query: Any,
    name: str,
    *,
    strategy: str | None,
    output: str | None,
    confidence: float | None,
    tick: float,
    describe: Callable[[ValueError], str] = str,
) -> Any:
    """Compile one parsed query; a compile error (e.g. ``collapsed`` on an inconsistent predicate) -> CommandError.

    ``describe`` turns the engine's error into the message.
    """
    from engine import compile_query

    try:
        return compile_query(
            query,
            name=name,
            strategy=strategy or DEFAULT_STRATEGY,
            output=output or DEFAULT_OUTPUT,
            confidence=DEFAULT_CONFIDENCE if confidence is None else confidence,
            tick=tick,
        )
    except ValueError as err:  # QueryError is a ValueError
        raise CommandError(describe(err)) from None


def compiled_queries(args: argparse.Namespace) -> tuple[list[Any], float]:
    """The compiled queries the command line asks for and the tick they run at."""
    if args.query and not args.pack:
        raise CommandError("hcep match: --query NAME needs --pack FILE")
    if args.query_text is not None:
        from engine import DEFAULT_TICK
        from engine.language.ast import QueryError
        from engine.language.parser import parse_query

        tick = args.tick or DEFAULT_TICK
        try:
            query = parse_query(args.query_text, name="query")
            strategy = args.strategy or getattr(query, "strategy", None)
            cq = compile_spec(
                query,
                "query",
                strategy=strategy,
                output=args.output,
                confidence=args.confidence,
                tick=tick,
                describe=_query_text_error,
            )
        except QueryError as err:
            raise CommandError(_query_text_error(err)) from None
        return [cq], tick

    pack = load_pack(args.pack)
    tick = args.tick or pack_tick(pack)
    specs = list(pack.queries)
    if args.query:
        specs = [spec for spec in specs if spec.name == args.query]
        if not specs:
            names = ", ".join(spec.name for spec in pack.queries) or "none"
            raise CommandError(f"hcep match: no query named {args.query!r} in pack {args.pack} (it has: {names})")
    else:
        specs = [spec for spec in specs if getattr(spec, "enabled", True)]
        if not specs:
            raise CommandError(f"hcep match: pack {args.pack} has no enabled query")
    compiled = [
        compile_spec(
            spec.query,
            spec.name,
            strategy=args.strategy or spec.strategy,
            output=args.output or spec.output,
            confidence=spec.confidence if args.confidence is None else args.confidence,
            tick=tick,
        )
        for spec in specs
    ]
    return compiled, tick


def _query_text_error(err: Any) -> str:
    """A QueryError of --query-text, located in the option rather than in a query called "query"."""
    where = f", line {err.line}, column {err.column}" if getattr(err, "line", 0) else ""
    return f"hcep match: --query-text{where}: {getattr(err, 'reason', err)}"


def run(args: argparse.Namespace) -> int:
    from engine import match_events

    if getattr(args, "alerts", False):
        return run_alerts(args)
    compiled, tick = compiled_queries(args)
    events = read_events(args.events, tick)
    records = match_events(compiled, events)
    write = sys.stdout.write
    for record in records:
        write(json.dumps(record))
        write("\n")
    sys.stdout.flush()
    return 0


#: The widest half-interval ``hcep run`` accepts by default (ServiceConfig.max_delta): it fixes the imprecise
#: evaluators' uncertainty bound, and so the moment each record comes out, which ``--alerts`` must reproduce.
RUN_MAX_DELTA = 7.5


def run_alerts(args: argparse.Namespace) -> int:
    """``--alerts``: the pack's alert transitions for the input, one Alertmanager v2 JSON object a line."""
    import dataclasses

    if not args.pack:
        raise CommandError("hcep match: --alerts needs --pack FILE (the alert rules live in the pack)")
    overridden = [f"--{o}" for o in ("strategy", "confidence", "output", "tick") if getattr(args, o, None) is not None]
    if overridden:
        raise CommandError(f"hcep match: --alerts judges the pack as hcep run runs it; {', '.join(overridden)} "
                           "does not apply")
    pack = load_pack(args.pack)
    if args.query:
        if not any(spec.name == args.query for spec in pack.queries):
            names = ", ".join(spec.name for spec in pack.queries) or "none"
            raise CommandError(f"hcep match: no query named {args.query!r} in pack {args.pack} (it has: {names})")
        pack = dataclasses.replace(pack, queries=tuple(dataclasses.replace(q, enabled=q.name == args.query)
                                                       for q in pack.queries))
    if not any(q.enabled for q in pack.queries):
        raise CommandError(f"hcep match: pack {args.pack} has no enabled query")
    events = read_events(args.events, pack_tick(pack))
    write = sys.stdout.write
    for alert in judge(pack, events):
        write(json.dumps(alert.to_json()))
        write("\n")
    sys.stdout.flush()
    return 0


def judge(pack: Any, events: list[Any], max_delta: float = RUN_MAX_DELTA) -> Iterator[Any]:
    """The alert transitions ``hcep run`` decides for ``events``: the pack as the service runs it (its own
    strategies, outputs and thresholds, the service's uncertainty bound ``max_delta``, no flush at the end: a live
    stream has no end), the records judged by the pack's alert rules in stream time (the largest event point fed, in
    seconds: events of one tick share it, so the order of ties cannot move an alert)."""
    import math

    from app.alerts.rules import AlertEngine
    from app.pack_runner import PackRunner
    from engine.runtime.matcher import sort_events

    tick = pack_tick(pack)
    umax = math.ceil(2 * max_delta / tick) + 1
    runner = PackRunner(pack, umax, shedding=False, lazy_ids=True)
    engine = AlertEngine(pack)
    now = -math.inf
    for ev in sort_events(events):
        t = ev.t * tick  # stream time: the event's point in seconds, as the service counts it
        if t > now:
            now = t
        yield from engine.advance(now)
        for _spec, record in runner.feed(ev):
            yield from engine.observe(record, now)


def data_path(*parts: str) -> Path:
    """A file shipped in the ``queries`` package (the Hadoop pack, the sample traces)."""
    here = Path(__file__).resolve().parents[2] / "queries"
    if here.is_dir():
        return here.joinpath(*parts)
    from importlib.resources import files

    return Path(str(files("queries").joinpath(*parts)))
