"""The ``hcep`` command line (docs/semantics.md section 8).

Start-up must stay cheap (``hcep --help`` well under a second): this module imports only the standard library's
``argparse`` and ``sys``; the engine (and lark, yaml) are imported inside the command functions.
"""

from __future__ import annotations

import argparse
import sys

from app import __version__
from app.commands.argtypes import OUTPUT_MODES, STRATEGIES
from app.errors import CommandError

__all__ = ["COMMANDS", "OUTPUT_MODES", "STRATEGIES", "CommandError", "build_parser", "main"]

#: Exit status for bad input (bad options, unreadable or invalid events, unknown query, query or pack errors).
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), as docs/semantics.md section 8 asks."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(message: str) -> str:
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[0] if lines else "error"


#: Every subcommand, the one way they are registered: (name, module, help) for ``app/commands/<module>.py``, which
#: exposes ``configure(parser)`` (its options and description) and ``run(args)`` (the exit status); a group instead
#: names no module and lists its children the same way.  Only the invoked module is imported, to keep start-up cheap
#: (``hcep --help`` lists the names and helps from this table alone).
COMMANDS: list[tuple[str, str | None, str, list[tuple[str, str, str]]]] = [
    ("match", "match", "match queries over a file of events, print match records as JSON lines", []),
    (
        "demo",
        "demo",
        "the live demo: Kafka, Ganglia, a simulated cluster, collectors, hcep run and the dashboard together "
        "(--replay: summarise the pack over a recorded trace)",
        [],
    ),
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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``hcep``; of the subcommands only the one ``argv`` names (default ``sys.argv``) is configured."""
    parser = _Parser(
        prog="hcep",
        description="hcep: complex event processing over imprecise timestamps, and Hadoop cluster monitoring.",
        epilog="Event format, query language and match records: see README.md and docs/semantics.md.",
    )
    from contracts.compiled import STATUS  # the engine's hot path: compiled or pure Python, and why

    parser.add_argument("--version", action="version", version=f"hcep {__version__} (engine hot path {STATUS})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    words = [w for w in (sys.argv[1:] if argv is None else argv) if not w.startswith("-")]
    for name, module, help_text, children in COMMANDS:
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        chosen = bool(words) and words[0] == name
        if module is not None:
            if chosen:
                _configure(cmd, module)
            continue
        group = cmd.add_subparsers(dest="subcommand", metavar="SOURCE", parser_class=_Parser, required=True)
        for child, child_module, child_help in children:
            leaf = group.add_parser(child, help=child_help, description=child_help)
            if chosen and len(words) > 1 and words[1] == child:
                _configure(leaf, child_module)
    return parser


def _configure(parser: argparse.ArgumentParser, module: str) -> None:
    from importlib import import_module

    mod = import_module(f"app.commands.{module}")
    mod.configure(parser)
    parser.set_defaults(func=mod.run)


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
