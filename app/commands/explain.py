"""``hcep explain``: print, per query, the evaluator the engine chooses and its plan.

``hcep explain (--pack FILE [--query NAME] | --query-text TEXT) [--strategy S] [--output M] [--tick SECONDS]``

For each query: the NFA^b plan (states, edges, negations), the evaluator (``greta``, ``enumerate``, ``imprecise`` or
``nfa``, see :mod:`engine.plan.choose`) with the reason, and for GRETA its template graph -- states, transitions and
how each finds its predecessors (running total, Fenwick tree or scan), windows, groups and aggregates.  Nothing is
read from a stream.  Exit 0, or 2 with a one-line reason on bad input (as ``hcep match``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.commands import CommandError
from app.commands.argtypes import positive_seconds

STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")
OUTPUT_MODES = ("all", "distinct", "collapsed")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print, per query, the evaluator chosen (greta, enumerate, imprecise or nfa) with the reason, the NFA^b plan "
        "and, for GRETA, the template graph. Exit 0, or 2 on bad input."
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pack", metavar="FILE", help="a YAML query pack (e.g. queries/trends.yaml)")
    source.add_argument("--query-text", metavar="TEXT", help="one query's text (its name: 'query')")
    parser.add_argument("--query", metavar="NAME", help="with --pack: only this query (default: all of them)")
    parser.add_argument("--strategy", choices=STRATEGIES, help="event selection strategy (overrides the pack's)")
    parser.add_argument("--output", choices=OUTPUT_MODES, help="output mode (overrides the pack's)")
    parser.add_argument(
        "--tick", type=positive_seconds, metavar="SECONDS", help="time granularity (overrides the pack's; default 0.1)"
    )


def _compiled(args: argparse.Namespace) -> list[tuple[Any, str]]:
    """``(compiled query, note)`` for every query the options name."""
    from app.matching.packs import compile_spec, load_pack, named_queries, pack_tick

    if args.query and not args.pack:
        raise CommandError("hcep explain: --query NAME needs --pack FILE")
    if args.query_text is not None:
        from engine import DEFAULT_TICK
        from engine.language.ast import QueryError
        from engine.language.parser import parse_query

        def located(err: Any) -> str:
            where = f", line {err.line}, column {err.column}" if getattr(err, "line", 0) else ""
            return f"hcep explain: --query-text{where}: {getattr(err, 'reason', err)}"

        try:
            query = parse_query(args.query_text, name="query")
        except QueryError as err:
            raise CommandError(located(err)) from None
        cq = compile_spec(
            query,
            "query",
            strategy=args.strategy or query.strategy,
            output=args.output,
            confidence=None,
            tick=args.tick or DEFAULT_TICK,
            describe=located,
        )
        return [(cq, "")]
    pack = load_pack(args.pack)
    tick = args.tick or pack_tick(pack)
    specs = named_queries(pack, args.query, args.pack, "explain")
    return [
        (
            compile_spec(
                spec.query,
                spec.name,
                strategy=args.strategy or spec.strategy,
                output=args.output or spec.output,
                confidence=spec.confidence,
                tick=tick,
            ),
            "" if getattr(spec, "enabled", True) else " (disabled in the pack)",
        )
        for spec in specs
    ]


def run(args: argparse.Namespace) -> int:
    from engine.plan.choose import explain_plan

    compiled = _compiled(args)
    write = sys.stdout.write
    for i, (cq, note) in enumerate(compiled):
        if i:
            write("\n")
        text = explain_plan(cq)
        if note:
            first, _, rest = text.partition("\n")
            text = first + note + ("\n" + rest if rest else "")
        write(text + "\n")
    sys.stdout.flush()
    return 0
