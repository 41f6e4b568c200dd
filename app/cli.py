"""The ``hcep`` command line (docs/semantics.md section 8).

Start-up must stay cheap (``hcep --help`` well under a second): this module imports only the standard library's
``argparse`` and ``sys``; the engine (and lark, yaml) are imported inside the command functions.
"""

from __future__ import annotations

import argparse
import sys

from app import __version__
from app.commands import CommandError
from app.commands.argtypes import non_negative_int, non_negative_seconds, positive_seconds

#: Kept equal to ``engine.language.ast.STRATEGIES`` / ``OUTPUT_MODES`` (tests check it); listed here so that parsing
#: the command line does not import the engine.
STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")
OUTPUT_MODES = ("all", "distinct", "collapsed")

#: Exit status for bad input (bad options, unreadable or invalid events, unknown query, query or pack errors).
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), as docs/semantics.md section 8 asks."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(message: str) -> str:
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[0] if lines else "error"


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hcep",
        description="hcep: complex event processing over imprecise timestamps, and Hadoop cluster monitoring.",
        epilog="Event format, query language and match records: see README.md and docs/semantics.md.",
    )
    parser.add_argument("--version", action="version", version=f"hcep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    match = sub.add_parser(
        "match",
        help="match queries over a file of events, print match records as JSON lines",
        description="Match queries over EVENTS.jsonl (one JSON event per line; '-' reads stdin) and print one JSON "
        "match record per line on stdout, in order of completion. Exit 0 on success, 2 on bad input.",
    )
    match.add_argument("events", metavar="EVENTS.jsonl", help="events, one JSON object per line; '-' for stdin")
    source = match.add_mutually_exclusive_group(required=True)
    source.add_argument("--pack", metavar="FILE", help="a YAML query pack (e.g. queries/hadoop.yaml)")
    source.add_argument("--query-text", metavar="TEXT", help="one query's text (its name in the records: 'query')")
    match.add_argument("--query", metavar="NAME", help="with --pack: run only this query (default: all enabled)")
    match.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="event selection strategy (overrides the pack's; default skip_till_any_match)",
    )
    match.add_argument(
        "--confidence", type=_probability, metavar="C", help="confidence threshold 0..1 (overrides the pack's)"
    )
    match.add_argument("--output", choices=OUTPUT_MODES, help="output mode (overrides the pack's; default all)")
    match.add_argument(
        "--tick", type=positive_seconds, metavar="SECONDS", help="time granularity (overrides the pack's; default 0.1)"
    )
    match.add_argument(
        "--max-delta",
        type=non_negative_seconds,
        metavar="S",
        help="largest accepted half-width of an event's interval; a wider event is an error naming its line, as "
        "hcep run dead-letters it (default: the pack's settings.max_delta, else 7.5)",
    )
    match.add_argument(
        "--max-runs-per-key",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches per partition key of a query (runs held, or signatures enumerated for "
        "one closing event); beyond it they are dropped and counted on stderr (default: the pack's "
        "settings.limits.runs_per_key, else 20000; 0: unbounded)",
    )
    match.add_argument(
        "--max-runs",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches of a query in total (default: settings.limits.runs, else 200000; "
        "0: unbounded)",
    )
    match.add_argument(
        "--alerts",
        action="store_true",
        help="with --pack: print, instead of the records, exactly the alert objects `hcep run` would send for this "
        "input (the pack's alert rules; one Alertmanager v2 JSON object a line)",
    )
    match.add_argument(
        "--full-matches",
        action="store_true",
        help="write whole signatures: a growing run (Q4) lists its whole prefix in every record instead of the "
        "events since its previous record (docs/semantics.md section 5; quadratic, for tests and small inputs)",
    )
    match.set_defaults(func=_run_match)

    demo = sub.add_parser(
        "demo",
        help="the live demo: Kafka, Ganglia, a simulated cluster, collectors, hcep run and the dashboard together "
        "(--replay: summarise the pack over a recorded trace)",
        description="Start the whole system on this machine (loopback only) -- a Kafka broker, gmond and gmetad, a "
        "simulated Hadoop cluster running live, the collectors, the streaming service with the Hadoop pack and the "
        "dashboard -- print the dashboard's URL and what to look for, and supervise it all until Ctrl-C.  With "
        "--replay: run a query pack over a recorded trace and print a readable summary per query.",
    )
    from app.commands.demo import configure as _configure_demo

    _configure_demo(demo)
    demo.set_defaults(func=_run_demo)
    _add_module_commands(sub, argv)
    return parser


#: Subcommands implemented as ``app/commands/<module>.py`` exposing ``configure(parser)`` and ``run(args)``:
#: (name, module or None for a group, help, children).  Only the invoked one is imported, to keep start-up cheap.
MODULE_COMMANDS: list[tuple[str, str | None, str, list[tuple[str, str, str]]]] = [
    (
        "collect",
        None,
        "read a cluster's sources and print normalised events as JSON lines",
        [
            ("hadoop", "collect_hadoop", "Hadoop job history (.jhist), MRAppMaster and reduce task logs -> events"),
            (
                "ganglia",
                "collect_ganglia",
                "gmond/gmetad XML or gmetad RRD files -> Metric, LoadStd, Balance/Imbalance",
            ),
            (
                "spark",
                "collect_spark",
                "Spark event logs (single, rolling, .inprogress; lz4/lzf/snappy/zstd) -> events",
            ),
        ],
    ),
    ("simulate", "simulate", "simulate a Hadoop cluster that writes genuine logs and Ganglia metrics", []),
    ("run", "run", "the streaming service: Kafka in, matches and alerts out", []),
    ("explain", "explain", "print the evaluation plan chosen for each query", []),
    ("archive", "archive", "archive events and match records as Parquet, partitioned by date and type", []),
    ("batch", "batch", "run a query pack over recorded events or raw logs on Spark (same records as match)", []),
    ("stream", "stream", "run a query pack as a Spark Structured Streaming query (files or Kafka in, Parquet out)", []),
    ("history", "history", "Spark aggregates of the archive (task durations, skew, queued data, anomalies)", []),
    ("dashboard", "dashboard", "the ops dashboard (Streamlit, loopback): store, match files, Spark history", []),
]


def _module_exists(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(f"app.commands.{module}") is not None


def _add_module_commands(sub: argparse._SubParsersAction, argv: list[str] | None) -> None:
    words = [w for w in (sys.argv[1:] if argv is None else argv) if not w.startswith("-")]
    for name, module, help_text, children in MODULE_COMMANDS:
        modules = [module] if module else [m for _, m, _ in children]
        if not any(_module_exists(m) for m in modules):
            continue  # not built yet: not offered
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        chosen = bool(words) and words[0] == name
        if module is not None:
            if chosen:
                _configure(cmd, module)
            continue
        group = cmd.add_subparsers(dest="subcommand", metavar="SOURCE", parser_class=_Parser, required=True)
        for child, child_module, child_help in children:
            if _module_exists(child_module):
                leaf = group.add_parser(child, help=child_help, description=child_help)
                if chosen and len(words) > 1 and words[1] == child:
                    _configure(leaf, child_module)


def _configure(parser: argparse.ArgumentParser, module: str) -> None:
    from importlib import import_module

    mod = import_module(f"app.commands.{module}")
    mod.configure(parser)
    parser.set_defaults(func=mod.run)


def _run_match(args: argparse.Namespace) -> int:
    from app.commands.match import run

    return run(args)


def _run_demo(args: argparse.Namespace) -> int:
    from app.commands.demo import run

    return run(args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except CommandError as err:
        print(_one_line(str(err)), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error when Python flushes at exit.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy, so that there is one CommandError class.
    from app.cli import main as _main

    sys.exit(_main())
