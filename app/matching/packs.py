"""Packs as the command-line options ask: load, choose the queries, compile them, the tick, ``max_delta`` and
memory limits; any problem is a :class:`app.errors.CommandError` naming the file or option."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import CommandError

if TYPE_CHECKING:
    from engine.language.ast import Query
    from engine.language.packs import Pack, QuerySpec
    from engine.limits import Limits
    from engine.plan.compiler import CompiledQuery

DEFAULT_STRATEGY = "skip_till_any_match"
DEFAULT_OUTPUT = "all"
DEFAULT_CONFIDENCE = 0.0
#: The widest half-interval (``delta``) accepted, in seconds: the default of ``hcep run`` (Ganglia's 7.5 s).
DEFAULT_MAX_DELTA = 7.5


def max_delta_of(args: argparse.Namespace, pack: Pack | None = None) -> float:
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


def load_pack(path: str | os.PathLike[str]) -> Pack:
    """Load a YAML pack; any problem with it becomes a :class:`CommandError` carrying the pack loader's message."""
    import yaml

    from engine.language.ast import QueryError
    from engine.language.packs import PackError, load_pack
    from engine.limits import LimitsError, from_settings

    try:
        pack = load_pack(path)
        from_settings(pack.settings)  # checked here, where every command loads it (hcep batch and stream apply it)
        return pack
    except LimitsError as err:
        raise CommandError(f"{path}: {err}") from None
    except (PackError, QueryError) as err:
        raise CommandError(str(err)) from None
    except yaml.YAMLError as err:
        raise CommandError(f"{path}: invalid YAML: {err}") from None
    except OSError as err:
        raise CommandError(f"{path}: cannot read pack: {err.strerror or err}") from None


def pack_tick(pack: Pack) -> float:
    """The pack's tick in seconds (the engine's default when it names none)."""
    from engine import DEFAULT_TICK

    tick = getattr(pack, "tick", None)
    return float(tick) if tick else DEFAULT_TICK


def compile_spec(
    query: Query | str,
    name: str,
    *,
    strategy: str | None,
    output: str | None,
    confidence: float | None,
    tick: float,
    describe: Callable[[ValueError], str] = str,
) -> CompiledQuery:
    """Compile one parsed query; a compile error (e.g. ``collapsed`` on an inconsistent predicate) -> CommandError.

    ``describe`` turns the engine's error into the message.
    """
    from engine.plan.compiler import compile_query

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


def compiled_queries(args: argparse.Namespace) -> tuple[list[CompiledQuery], float]:
    """The compiled queries the command line asks for and the tick they run at."""
    compiled, tick, _ = compiled_with_pack(args)
    return compiled, tick


def compiled_with_pack(args: argparse.Namespace) -> tuple[list[CompiledQuery], float, Pack | None]:
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
    specs = named_queries(pack, args.query, args.pack, "match")
    if not args.query:
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


def _query_text_error(err: ValueError) -> str:
    """A QueryError of --query-text, located in the option rather than in a query called "query"."""
    line = getattr(err, "line", 0)
    where = f", line {line}, column {getattr(err, 'column', 0)}" if line else ""
    return f"hcep match: --query-text{where}: {getattr(err, 'reason', err)}"


def limits_of(args: argparse.Namespace, pack: Pack | None = None) -> Limits:
    """The pack's ``settings.limits`` (or the defaults) under ``--max-runs-per-key`` / ``--max-runs``."""
    from engine.runtime.limits import LimitsError, from_settings

    try:
        limits = from_settings(getattr(pack, "settings", None) if pack is not None else None)
    except LimitsError as err:
        raise CommandError(f"{args.pack}: {err}") from None
    return limits.with_overrides(getattr(args, "max_runs_per_key", None), getattr(args, "max_runs", None))


def named_queries(pack: Pack, name: str | None, path: str, command: str) -> list[QuerySpec]:
    """The pack's queries, or (``--query NAME``) the one so named; a name the pack lacks is a one-line error that
    lists the names it has."""
    specs = list(pack.queries)
    if name:
        specs = [spec for spec in specs if spec.name == name]
        if not specs:
            names = ", ".join(spec.name for spec in pack.queries) or "none"
            raise CommandError(f"hcep {command}: no query named {name!r} in pack {path} (it has: {names})")
    return specs


def drops_line(command: str, drops: Mapping[str, int], bounds: str = "the pack's settings.limits") -> str | None:
    """The stderr line every command prints when the memory bounds dropped partial matches (None: nothing dropped),
    so that ``hcep match``, ``batch`` and ``stream`` say the same thing of the same bound."""
    per = ", ".join(f"{name} {n:,}" for name, n in drops.items() if n)
    if not per:
        return None
    return (
        f"hcep {command}: memory limits dropped partial matches (runs dropped, or enumerations cut short): {per} "
        f"({bounds}); some matches may be missing"
    )


def data_path(*parts: str) -> Path:
    """A file shipped in the ``queries`` package (the Hadoop pack, the sample traces)."""
    here = Path(__file__).resolve().parents[2] / "queries"
    if here.is_dir():
        return here.joinpath(*parts)
    from importlib.resources import files

    return Path(str(files("queries").joinpath(*parts)))
