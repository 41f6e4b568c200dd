"""``hcep match``: queries over a file of events -> match records as JSON lines (docs/semantics.md sections 5 and 8)."""

from __future__ import annotations

import argparse
import contextlib
import gc
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
#: The widest half-interval (``delta``) accepted, in seconds: the default of ``hcep run`` (Ganglia's 7.5 s).
DEFAULT_MAX_DELTA = 7.5


def read_events(
    path: str | os.PathLike[str], tick: float, max_delta: float | None = None, built: frozenset[str] | None = None
) -> list[Any]:
    """Read JSON-lines events from ``path`` (``"-"``: stdin).  Blank lines are skipped.

    Raises :class:`CommandError` with ``"FILE:LINE: reason"`` for a line that is not JSON or not a valid event, or
    (``max_delta`` given) an event wider than ``hcep run`` would accept: its ``too_wide`` rule, in ticks.
    ``built``: the event types to build (None: all); an event of another type is read and checked all the same but
    kept as its clock only (an :class:`engine.events.Stamp`), which is all a pack feeder needs of a type no query
    reads (:func:`built_types`).
    """
    from engine.events import EventDecoder

    decoder = EventDecoder(tick, max_delta)
    path = str(path)
    label = "<stdin>" if path == "-" else path
    if path == "-":
        return _parse_blocks(sys.stdin.buffer, label, decoder, built)
    try:
        with open(path, "rb") as stream:
            return _parse_blocks(stream, label, decoder, built)
    except OSError as err:
        raise CommandError(f"{label}: cannot read events: {err.strerror or err}") from None


def built_types(cqs: Iterable[Any]) -> frozenset[str] | None:
    """The event types the compiled queries' evaluators read (None: all), as :class:`engine.evaluate.PackFeeder`
    routes them: an event of any other type only moves their clocks."""
    from engine.evaluate import feed_types

    types: set[str] = set()
    for cq in cqs:
        needed = feed_types(cq)
        if needed is None:
            return None
        types |= needed
    return frozenset(types)


def decode_line(raw: bytes, first: bool) -> Any:
    """One JSON-lines line -> the decoded value (``None`` for a blank line); ``ValueError`` with the reason
    (:func:`engine.events.loads_json`)."""
    from engine.events import loads_json

    return loads_json(raw, first)


#: Bytes read at a time: lines are decoded a block at a time (:meth:`engine.events.EventDecoder.decode_block`).
BLOCK = 1 << 20


def blocks(stream: Any, size: int = BLOCK) -> Iterator[bytes]:
    """The bytes of ``stream`` (binary, ``read(n)``) in blocks of whole lines, about ``size`` bytes each (a longer
    line is one block); the last block may lack its final newline."""
    read = stream.read
    parts: list[bytes] = []
    while True:
        chunk = read(size)
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            parts.append(chunk)
            continue
        if parts:
            parts.append(chunk[:cut])
            yield b"".join(parts)
            parts = []
        else:
            yield chunk if cut == len(chunk) else chunk[:cut]
        if cut < len(chunk):
            parts.append(chunk[cut:])
    if parts:
        yield b"".join(parts)


def _parse_blocks(
    stream: Any, label: str, decoder: Any, built: frozenset[str] | None = None, size: int = BLOCK
) -> list[Any]:
    """Decode every line with ``decoder`` (an :class:`engine.events.EventDecoder`), ``size`` bytes at a time; the
    first bad line is an error, named by its line number."""
    from engine.events import LineError

    events: list[Any] = []
    lineno = 0
    with no_collection():  # events hold no cycles: collections while they pile up would only scan them again
        for block in blocks(stream, size):
            try:
                got, lines = decoder.decode_block(block, len(events), built, first=lineno == 0)
            except LineError as err:
                raise CommandError(f"{label}:{lineno + err.index + 1}: {err.message}") from None
            events.extend(got)
            lineno += lines
    return events


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector off for the block (as it was after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Every object alive now out of the cyclic collector's reach (:func:`gc.freeze`): the events read, which live
    until the end and hold no cycles.  Without it each full collection while matching scans them all again (records
    held a moment longer made ``hcep match`` of a 267,000-event file twice as slow).  They are left frozen after
    the block: the command ends there, and unfreezing cost Q1 of the issue-20 benchmark a tenth of its time; frozen
    objects are still freed when their last reference goes (only cyclic garbage among them would stay, in a process
    that runs ``hcep match`` in-process many times)."""
    gc.freeze()
    yield


def _parse_lines(stream: Iterable[bytes], label: str, decoder: Any) -> list[Any]:
    """Decode every line with ``decoder`` (an :class:`engine.events.EventDecoder`); the first bad one is an error."""
    from engine.events import EventError

    events: list[Any] = []
    for lineno, raw in enumerate(stream, 1):
        try:
            obj = decoder.loads(raw, lineno == 1)
        except ValueError as err:
            raise CommandError(f"{label}:{lineno}: {err}") from None
        if obj is None:
            continue
        try:
            # seq: the event's 0-based input position (its id when it has none).
            ev = decoder.event(obj, len(events))
        except EventError as err:
            raise CommandError(f"{label}:{lineno}: invalid event: {err}") from None
        if decoder.too_wide(ev.tlo, ev.thi):
            raise CommandError(f"{label}:{lineno}: {decoder.wide_reason(ev)}")
        events.append(ev)
    return events


def max_delta_of(args: argparse.Namespace, pack: Any = None) -> float:
    """``--max-delta``, else the pack's ``settings.max_delta``, else :data:`DEFAULT_MAX_DELTA` (as ``hcep run``)."""
    from engine.events import MAX_SECONDS

    value = getattr(args, "max_delta", None)
    if value is None and pack is not None:
        value = (getattr(pack, "settings", None) or {}).get("max_delta")
        bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_SECONDS
        if value is not None and bad:
            raise CommandError(
                f"{args.pack}: settings.max_delta must be a number of seconds in [0, {MAX_SECONDS:g}], got {value!r}"
            )
    return DEFAULT_MAX_DELTA if value is None else float(value)


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
    compiled, tick, _ = compiled_with_pack(args)
    return compiled, tick


def compiled_with_pack(args: argparse.Namespace) -> tuple[list[Any], float, Any]:
    """:func:`compiled_queries` and the loaded pack (``None`` with ``--query-text``)."""
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
        return [cq], tick, None

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
    return compiled, tick, pack


def _query_text_error(err: Any) -> str:
    """A QueryError of --query-text, located in the option rather than in a query called "query"."""
    where = f", line {err.line}, column {err.column}" if getattr(err, "line", 0) else ""
    return f"hcep match: --query-text{where}: {getattr(err, 'reason', err)}"


def limits_of(args: argparse.Namespace, pack: Any = None) -> Any:
    """The pack's ``settings.limits`` (or the defaults) under ``--max-runs-per-key`` / ``--max-runs``."""
    from engine.runtime.limits import LimitsError, from_settings

    try:
        limits = from_settings(getattr(pack, "settings", None) if pack is not None else None)
    except LimitsError as err:
        raise CommandError(f"{args.pack}: {err}") from None
    return limits.with_overrides(getattr(args, "max_runs_per_key", None), getattr(args, "max_runs", None))


def run(args: argparse.Namespace) -> int:
    from engine.evaluate import StreamedMatch

    if getattr(args, "alerts", False):
        return run_alerts(args)
    compiled, tick, pack = compiled_with_pack(args)
    # Only the types the queries read become events; the others are checked and kept as their clocks.
    events = read_events(args.events, tick, max_delta_of(args, pack), built_types(compiled))
    limits = limits_of(args, pack)
    # Growing runs as increments (docs/semantics.md section 5) unless --full-matches asks for whole signatures.
    matched = StreamedMatch(compiled, events, limits, increments=not getattr(args, "full_matches", False))
    write = sys.stdout.write
    with frozen():
        for record in matched:  # written as they complete: an exponential output is never held
            write(json.dumps(record))
            write("\n")
    sys.stdout.flush()
    drops = matched.dropped()
    if drops:
        per = ", ".join(f"{name} {n:,}" for name, n in drops.items())
        bounds = f"--max-runs-per-key {limits.runs_per_key or 'none'}, --max-runs {limits.runs or 'none'}"
        print(
            f"hcep match: memory limits dropped partial matches (runs dropped, or enumerations cut short): {per} "
            f"({bounds}); some matches may be missing",
            file=sys.stderr,
        )
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
        raise CommandError(
            f"hcep match: --alerts judges the pack as hcep run runs it; {', '.join(overridden)} does not apply"
        )
    pack = load_pack(args.pack)
    if args.query:
        if not any(spec.name == args.query for spec in pack.queries):
            names = ", ".join(spec.name for spec in pack.queries) or "none"
            raise CommandError(f"hcep match: no query named {args.query!r} in pack {args.pack} (it has: {names})")
        pack = dataclasses.replace(
            pack, queries=tuple(dataclasses.replace(q, enabled=q.name == args.query) for q in pack.queries)
        )
    if not any(q.enabled for q in pack.queries):
        raise CommandError(f"hcep match: pack {args.pack} has no enabled query")
    max_delta = max_delta_of(args, pack)
    tick = pack_tick(pack)
    from engine.plan.compiler import compile_spec as compile_pack_query

    built = built_types(compile_pack_query(q, tick) for q in pack.queries if q.enabled)
    events = read_events(args.events, tick, max_delta, built)
    write = sys.stdout.write
    with frozen():
        for alert in judge(pack, events, max_delta, limits_of(args, pack)):
            write(json.dumps(alert.to_json()))
            write("\n")
    sys.stdout.flush()
    return 0


def judge(pack: Any, events: list[Any], max_delta: float = RUN_MAX_DELTA, limits: Any = None) -> Iterator[Any]:
    """The alert transitions ``hcep run`` decides for ``events``: the pack as the service runs it (its own
    strategies, outputs and thresholds, the service's uncertainty bound ``max_delta``, no flush at the end: a live
    stream has no end), the records judged by the pack's alert rules in stream time (the largest event point fed, in
    seconds: events of one tick share it, so the order of ties cannot move an alert)."""
    import math

    from app.alerts.rules import AlertEngine
    from engine.evaluate import PackRunner
    from engine.runtime.matcher import sort_events

    tick = pack_tick(pack)
    umax = math.ceil(2 * max_delta / tick) + 1
    runner = PackRunner(pack, umax, shedding=False, limits=limits, lazy_ids=True, increments=True)
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
