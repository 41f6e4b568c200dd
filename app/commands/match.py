"""``hcep match``: queries over a file of events -> match records as JSON lines (docs/semantics.md sections 5 and
8); ``--alerts``: the alert transitions ``hcep run`` would decide instead.  The reading, compiling and judging are
:mod:`app.matching`'s, shared with the other commands."""

from __future__ import annotations

import argparse
import json
import sys

from app.commands.argtypes import (
    OUTPUT_MODES,
    STRATEGIES,
    non_negative_int,
    non_negative_seconds,
    positive_seconds,
    probability,
)
from app.errors import CommandError
from app.matching.judge import judge
from app.matching.packs import (
    compiled_with_pack,
    drops_line,
    limits_of,
    load_pack,
    max_delta_of,
    named_queries,
    pack_tick,
)
from app.matching.read import built_types, frozen, read_events
from app.matching.write import write_records

DESCRIPTION = (
    "Match queries over EVENTS.jsonl (one JSON event per line; '-' reads stdin) and print one JSON match record per "
    "line on stdout, in order of completion. Exit 0 on success, 2 on bad input."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument("events", metavar="EVENTS.jsonl", help="events, one JSON object per line; '-' for stdin")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pack", metavar="FILE", help="a YAML query pack (e.g. queries/hadoop.yaml)")
    source.add_argument("--query-text", metavar="TEXT", help="one query's text (its name in the records: 'query')")
    parser.add_argument("--query", metavar="NAME", help="with --pack: run only this query (default: all enabled)")
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="event selection strategy (overrides the pack's; default skip_till_any_match)",
    )
    parser.add_argument(
        "--confidence", type=probability, metavar="C", help="confidence threshold 0..1 (overrides the pack's)"
    )
    parser.add_argument("--output", choices=OUTPUT_MODES, help="output mode (overrides the pack's; default all)")
    parser.add_argument(
        "--tick", type=positive_seconds, metavar="SECONDS", help="time granularity (overrides the pack's; default 0.1)"
    )
    parser.add_argument(
        "--max-delta",
        type=non_negative_seconds,
        metavar="S",
        help="largest accepted half-width of an event's interval; a wider event is an error naming its line, as "
        "hcep run dead-letters it (default: the pack's settings.max_delta, else 7.5)",
    )
    parser.add_argument(
        "--max-runs-per-key",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches per partition key of a query (runs held, or signatures enumerated for "
        "one closing event); beyond it they are dropped and counted on stderr (default: the pack's "
        "settings.limits.runs_per_key, else 20000; 0: unbounded)",
    )
    parser.add_argument(
        "--max-runs",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches of a query in total (default: settings.limits.runs, else 200000; "
        "0: unbounded)",
    )
    parser.add_argument(
        "--alerts",
        action="store_true",
        help="with --pack: print, instead of the records, exactly the alert objects `hcep run` would send for this "
        "input (the pack's alert rules; one Alertmanager v2 JSON object a line)",
    )
    parser.add_argument(
        "--full-matches",
        action="store_true",
        help="write whole signatures: a growing run (Q4) lists its whole prefix in every record instead of the "
        "events since its previous record (docs/semantics.md section 5; quadratic, for tests and small inputs)",
    )


def run(args: argparse.Namespace) -> int:
    """Print the records (or, ``--alerts``, the alert transitions); memory-limit drops counted on stderr."""
    from engine.evaluate import StreamedMatch

    if getattr(args, "alerts", False):
        return run_alerts(args)
    compiled, tick, pack = compiled_with_pack(args)
    # Only the types the queries read become events; the others are checked and kept as their clocks.
    events = read_events(args.events, tick, max_delta_of(args, pack), built_types(compiled))
    limits = limits_of(args, pack)
    # Growing runs as increments (docs/semantics.md section 5) unless --full-matches asks for whole signatures.
    full = getattr(args, "full_matches", False)
    matched = StreamedMatch(compiled, events, limits, increments=not full)  # Stamps (Events) pass too
    with frozen():
        write_records(matched, sys.stdout.write)  # written as they complete: an exponential output is never held
    sys.stdout.flush()
    bounds = f"--max-runs-per-key {limits.runs_per_key or 'none'}, --max-runs {limits.runs or 'none'}"
    line = drops_line("match", matched.dropped(), bounds)
    if line:
        print(line, file=sys.stderr)
    return 0


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
        named_queries(pack, args.query, args.pack, "match")  # a name the pack lacks: the one error of hcep match
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
