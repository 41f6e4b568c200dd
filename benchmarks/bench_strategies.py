"""Event selection strategies under load: the SASE+ paper's stock benchmark and the ``SEQ(A a, B+ b[], C c)`` sweep.

Run from the repository root::

    python3 -m benchmarks.bench_strategies            # full run, a few minutes
    python3 -m benchmarks.bench_strategies --quick    # smoke run, seconds

Part 1 (digest-nfab section 11): ``Stock`` events one tick apart, ``symbol`` uniform over 2 values, price a random walk
(up with p = 0.7, down / same with (1 - p) / 2 each, wrapping within 1..1000), volume uniform 1..1000, and::

    PATTERN SEQ(Stock+ a[], Stock b) WHERE [symbol] AND a[1].price % 500 = 0 AND <P> AND b.volume < 150 WITHIN W s

with P in {p1 = true, p2 = a[i].price > a[i-1].price, p3 = a[i].price > max|min|avg(a[..i-1].price)}, strategies s2
(partition_contiguity) and s3 (skip_till_next_match), W in {500, 1000, 1500, 2000}; 200 * W events per symbol.
skip_till_any_match enumerates every subset, so it runs on small windows only (8, 16, 32).

Part 2: ``SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v < X WITHIN W s`` under the four strategies (and
skip_till_any_match with collapsed output), W in {10, 100, 1000}, X in {10, 50, 90} over v uniform in 0..99, i.e.
10 / 50 / 90 % of the B events qualify.

Every configuration is time-boxed (``--budget`` seconds of matcher time) and capped on runs alive (``--max-runs``);
throughput is the rate over the events that ran.  Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Sequence

from benchmarks.common import (
    STRATEGY_SHORT,
    LazyStream,
    RunResult,
    abc_stream,
    fmt_float,
    fmt_int,
    fmt_rate,
    print_table,
    run_config,
    stock_stream,
)
from engine.plan.compiler import compile_query

STOCK_PREDICATES: dict[str, str | None] = {
    "p1": None,
    "p2": "a[i].price > a[i-1].price",
    "p3-max": "a[i].price > max(a[..i-1].price)",
    "p3-min": "a[i].price > min(a[..i-1].price)",
    "p3-avg": "a[i].price > avg(a[..i-1].price)",
}
STOCK_STRATEGIES = {"s2": "partition_contiguity", "s3": "skip_till_next_match"}
ABC_STRATEGIES: list[tuple[str, str]] = [
    ("skip_till_any_match", "all"),
    ("skip_till_any_match", "collapsed"),
    ("skip_till_next_match", "all"),
    ("partition_contiguity", "all"),
    ("strict_contiguity", "all"),
]
COLUMNS = ["events", "events/s", "matches", "runs mean", "runs max", "events/match", "stopped"]


def stock_query(p: str | None, window: int) -> str:
    """The SASE+ paper's query template (digest-nfab section 11) for predicate ``p`` and window ``window``."""
    where = "[symbol] AND a[1].price % 500 = 0" + (f" AND {p}" if p else "") + " AND b.volume < 150"
    return f"PATTERN SEQ(Stock+ a[], Stock b) WHERE {where} WITHIN {window} s"


def abc_query(x: int, window: int) -> str:
    """The ``SEQ(A a, B+ b[], C c)`` template with a Kleene predicate of selectivity ``x`` %."""
    return f"PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v < {x} WITHIN {window} s"


def result_cells(r: RunResult) -> list[str]:
    return [
        fmt_int(r.events),
        fmt_rate(r.rate),
        fmt_int(r.matches),
        fmt_float(r.runs_mean, 2),
        fmt_int(r.runs_max),
        fmt_float(r.match_len, 1),
        r.stopped or "-",
    ]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_strategies", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: few configurations, small streams, short budget")
    ap.add_argument("--only", choices=("stock", "abc"), help="run one part only")
    ap.add_argument("--budget", type=float, help="seconds of matcher time per configuration (default 2, quick 0.2)")
    ap.add_argument("--max-runs", type=int, default=200_000, help="stop a configuration above this many runs alive")
    ap.add_argument("--sample-every", type=int, default=1000, help="sample runs alive every N events")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    g = ap.add_argument_group("stock (SASE+ paper)")
    g.add_argument("--symbols", type=int, default=2)
    g.add_argument("--p-up", type=float, default=0.7, help="probability that a price goes up")
    g.add_argument("--scale", type=float, help="stream length = scale * 200 * W events per symbol (default 1)")
    g.add_argument("--windows", help="comma-separated W in ticks (default 500,1000,1500,2000)")
    g.add_argument("--any-windows", help="W for skip_till_any_match (default 8,16,32)")
    g.add_argument("--predicates", help=f"comma-separated subset of {','.join(STOCK_PREDICATES)}")
    g = ap.add_argument_group("SEQ(A a, B+ b[], C c)")
    g.add_argument("--partitions", type=int, default=10, help="distinct values of k")
    g.add_argument("--abc-events", type=int, help="events per configuration (default 200000)")
    g.add_argument("--abc-windows", help="comma-separated W in ticks (default 10,100,1000)")
    g.add_argument("--selectivity", help="comma-separated X for b[i].v < X, v uniform in 0..99 (default 10,50,90)")
    args = ap.parse_args(argv)
    q = args.quick
    args.budget = args.budget if args.budget is not None else (0.2 if q else 2.0)
    args.scale = args.scale if args.scale is not None else (0.05 if q else 1.0)
    args.windows = _ints(args.windows or ("500" if q else "500,1000,1500,2000"))
    args.any_windows = _ints(args.any_windows or ("8" if q else "8,16,32"))
    args.predicates = args.predicates.split(",") if args.predicates else (["p1", "p2"] if q else list(STOCK_PREDICATES))
    unknown = [p for p in args.predicates if p not in STOCK_PREDICATES]
    if unknown:
        ap.error(f"unknown predicate(s) {', '.join(unknown)}")
    args.abc_events = args.abc_events or (5_000 if q else 200_000)
    args.abc_windows = _ints(args.abc_windows or ("10,100" if q else "10,100,1000"))
    args.selectivity = _ints(args.selectivity or ("10,90" if q else "10,50,90"))
    return args


def bench_stock(args: argparse.Namespace) -> None:
    """Part 1: the SASE+ paper's stock benchmark, one table of all configurations plus a throughput pivot."""
    stream = LazyStream(stock_stream(seed=args.seed, symbols=args.symbols, p_up=args.p_up))
    rows: list[list[str]] = []
    pivot: dict[tuple[str, str], dict[int, str]] = {}
    plan: list[tuple[int, str, str, int]] = []
    for w in args.windows:
        for es in STOCK_STRATEGIES:
            for p in args.predicates:
                plan.append((w, es, p, args.sample_every))
    for w in args.any_windows:
        for p in args.predicates:
            plan.append((w, "any", p, 1))
    for w, es, p, every in plan:
        strategy = STOCK_STRATEGIES.get(es, "skip_till_any_match")
        cq = compile_query(stock_query(STOCK_PREDICATES[p], w), name=f"stock-{p}", strategy=strategy, tick=1.0)
        limit = max(1, int(args.scale * 200 * w * args.symbols))
        r = run_config(cq, stream, limit, args.budget, sample_every=every, max_runs=args.max_runs)
        rows.append([str(w), p, es] + result_cells(r))
        pivot.setdefault((p, es), {})[w] = fmt_rate(r.rate) + ("*" if r.stopped else "")
    print_table(
        f"Stock (SASE+ paper): SEQ(Stock+ a[], Stock b), {args.symbols} symbols, p_up={args.p_up}, "
        f"{args.scale:g} x 200 x W events per symbol, budget {args.budget:g} s",
        ["W", "P", "ES"] + COLUMNS,
        rows,
        plain=args.plain,
    )
    windows = sorted({w for w, *_ in plan})
    print_table(
        "Stock: events/s by window W (* = stopped on the time budget or the runs cap)",
        ["P", "ES"] + [f"W={w}" for w in windows],
        [[p, es] + [cols.get(w, "") for w in windows] for (p, es), cols in pivot.items()],
        plain=args.plain,
    )


def bench_abc(args: argparse.Namespace) -> None:
    """Part 2: SEQ(A a, B+ b[], C c) under every strategy, varying window and Kleene selectivity."""
    stream = LazyStream(abc_stream(seed=args.seed, partitions=args.partitions))
    rows: list[list[str]] = []
    for w in args.abc_windows:
        for x in args.selectivity:
            for strategy, output in ABC_STRATEGIES:
                cq = compile_query(abc_query(x, w), name="abc", strategy=strategy, output=output, tick=1.0)
                blowup = strategy == "skip_till_any_match" and output == "all"
                r = run_config(
                    cq,
                    stream,
                    args.abc_events,
                    args.budget,
                    sample_every=1 if blowup else args.sample_every,
                    max_runs=args.max_runs,
                )
                label = STRATEGY_SHORT[strategy] + ("/collapsed" if output == "collapsed" else "")
                rows.append([str(w), f"{x}%", label] + result_cells(r))
    print_table(
        f"SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v < X: {args.partitions} partitions, A/B/C = 20/60/20 %, "
        f"up to {args.abc_events:,} events, budget {args.budget:g} s",
        ["W", "sel", "strategy"] + COLUMNS,
        rows,
        plain=args.plain,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the tables; return the exit status."""
    args = parse_args(argv)
    started = time.perf_counter()
    print(
        f"bench_strategies {'--quick ' if args.quick else ''}on Python {platform.python_version()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}), "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    try:
        if args.only in (None, "stock"):
            bench_stock(args)
        if args.only in (None, "abc"):
            bench_abc(args)
    finally:
        gc.unfreeze()  # undo LazyStream's gc.freeze (matters when main runs inside another program, e.g. pytest)
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
