"""GRETA vs trend enumeration against events per window (GRETA paper section 10.2, digest-greta section 11).

Run from the repository root::

    python3 -m benchmarks.bench_greta            # 10 ... 100,000 events per window, 20 s budget per configuration
    python3 -m benchmarks.bench_greta --quick    # 10 ... 1,000 events, 1 s budget
    python3 -m benchmarks.bench_greta --readme   # also write the tables into benchmarks/README.md (own section)

Query (the paper's stock query Q1, rising instead of falling prices -- our stock stream drifts upwards)::

    PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN n s RETURN COUNT(*) AS trends

over the SASE+ benchmark's stock ticker (:func:`benchmarks.common.stock_stream`, one symbol, one event per second,
price random walk up with p = 0.7), n events: one window holding all of them.  Evaluators:

- ``GRETA Fenwick``: :class:`engine.greta.GretaMatcher`, the single-range-predicate fast path, O(n log n);
- ``GRETA scan``: the same with ``fast=False``: the general path, every earlier vertex is a candidate, O(n^2);
- ``NFA enum``: :class:`engine.greta.TrendEnumerator`: the NFA^b runtime (output all) builds every trend, which is
  then aggregated -- the two-step approach of SASE/CET/Flink in the paper;
- ``imprecise enum``: :class:`engine.imprecise.evaluator.ImpreciseMatcher` with output all (every signature).

Only ``feed``/``flush`` are timed (CPU seconds of this process); events are built beforehand.  A configuration stops
at its time budget (``>`` marks it: the figure is a lower bound, over the events fed until then) or when the
enumerator holds more than ``--max-runs`` partial trends; an evaluator that stopped is not run on larger windows.
Memory is the tracemalloc peak of a second, separate run (3x the budget: tracemalloc slows Python down), in MB.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import platform
import re
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import clock, fmt_float, print_table, stock_stream
from engine.events import Event
from engine.plan.compiler import CompiledQuery, compile_query

QUERY = "PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN {n} s RETURN {ret}"
COUNT_ONLY = "COUNT(*) AS trends"
ALL_AGGS = "COUNT(*) AS trends, SUM(s.price) AS total, MIN(s.price) AS lo, MAX(s.price) AS hi, AVG(s.price) AS mean"
GROUPED = "PATTERN Stock+ s[] WHERE [symbol] AND s[i].price > s[i-1].price WITHIN {n} s RETURN COUNT(*) AS trends"
SIZES = (10, 20, 25, 30, 100, 1_000, 10_000, 100_000)
QUICK_SIZES = (10, 20, 100, 1_000)
EVALUATORS = ("GRETA Fenwick", "GRETA scan", "NFA enum", "imprecise enum")
README = Path(__file__).with_name("README.md")
MARK_START, MARK_END = "<!-- bench_greta:start -->", "<!-- bench_greta:end -->"
TABLES_START, TABLES_END = "<!-- bench_greta:tables -->", "<!-- bench_greta:tables:end -->"


def make_query(n: int, ret: str = COUNT_ONLY, template: str = QUERY) -> CompiledQuery:
    return compile_query(template.format(n=n, ret=ret), name="stock", tick=1.0)


def make_matcher(kind: str, cq: CompiledQuery) -> Any:
    from engine.greta import GretaMatcher, TrendEnumerator
    from engine.imprecise.evaluator import ImpreciseMatcher

    if kind == "GRETA Fenwick":
        return GretaMatcher(cq)
    if kind == "GRETA scan":
        return GretaMatcher(cq, fast=False)
    if kind == "NFA enum":
        return TrendEnumerator(cq)
    if kind == "imprecise enum":
        return ImpreciseMatcher(cq, 0)
    raise ValueError(kind)


def trend_count(kind: str, records: list[dict]) -> int:
    """COUNT(*) of the window: from the GRETA/enumerator record, or the number of per-match records."""
    if kind == "imprecise enum":
        return len(records)
    return sum(r["return"]["trends"] for r in records)


def run_one(
    kind: str, cq: CompiledQuery, events: Sequence[Event], budget: float, max_runs: int, memory: bool = False
) -> dict[str, Any]:
    """Feed ``events`` (then flush) within ``budget`` CPU seconds; seconds, events fed, trends, stopped, peak bytes."""
    m = make_matcher(kind, cq)
    if memory:
        tracemalloc.start()
    records: list[dict] = []
    stopped = ""
    fed = 0
    t0 = clock()
    try:
        for ev in events:
            records.extend(m.feed(ev))
            fed += 1
            if clock() - t0 > budget:
                stopped = "time"
                break
            if kind in ("NFA enum",) and fed % 16 == 0 and m.runs_alive() > max_runs:
                stopped = "runs"
                break
        if not stopped:
            records.extend(m.flush())
        seconds = clock() - t0
        peak = tracemalloc.get_traced_memory()[1] if memory else 0
    finally:
        if memory:
            tracemalloc.stop()
    return {
        "seconds": seconds,
        "fed": fed,
        "trends": None if stopped else trend_count(kind, records),
        "stopped": stopped,
        "peak": peak,
    }


def fmt_trends(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n:,}" if n < 10**9 else f"{float(n):.3g}" if n < 10**300 else f"~10^{len(str(n)) - 1}"


def fmt_secs(res: dict[str, Any] | None) -> str:
    if res is None:
        return "-"
    if res["stopped"]:
        return f"> {res['seconds']:.3g} ({res['fed']:,} ev)"
    return f"{res['seconds']:.3g}"


def fmt_mb(res: dict[str, Any] | None) -> str:
    if res is None:
        return "-"
    mb = res["peak"] / 1e6
    return (">" if res["stopped"] else "") + (f"{mb:.3g}" if mb >= 0.01 else f"{mb:.2f}")


def sweep(
    sizes: Sequence[int], budget: float, max_runs: int, seed: int, log: Callable[[str], None]
) -> tuple[list[list[str]], list[dict]]:
    """The main table: one row per events-per-window size."""
    rows: list[list[str]] = []
    raw: list[dict] = []
    gave_up: dict[str, int] = {}
    for n in sizes:
        events = list(itertools.islice(stock_stream(seed=seed, symbols=1, tick=1.0), n))
        cq = make_query(n)
        times: dict[str, dict | None] = {}
        mems: dict[str, dict | None] = {}
        for kind in EVALUATORS:
            if kind in gave_up:
                times[kind] = mems[kind] = None
                continue
            log(f"  n={n:,} {kind} ...")
            times[kind] = run_one(kind, cq, events, budget, max_runs)
            # tracemalloc slows Python code 2-3x: the memory run gets a proportionally larger budget.
            mems[kind] = (
                run_one(kind, cq, events, 3 * budget, max_runs, memory=True) if kind != "imprecise enum" else None
            )
            if times[kind]["stopped"]:
                gave_up[kind] = n
        counts = {times[k]["trends"] for k in EVALUATORS if times.get(k) and times[k]["trends"] is not None}
        if len(counts) > 1:
            raise AssertionError(f"evaluators disagree at n={n}: {counts}")
        trends = counts.pop() if counts else None
        fen, enum = times["GRETA Fenwick"], times["NFA enum"]
        if fen and enum and not fen["stopped"]:
            ratio = enum["seconds"] / max(fen["seconds"], 1e-6)
            speedup = (">" if enum["stopped"] else "") + f"{ratio:,.0f}x"
        else:
            speedup = "-"
        rows.append(
            [
                f"{n:,}",
                fmt_trends(trends),
                fmt_secs(fen),
                fmt_secs(times["GRETA scan"]),
                fmt_secs(enum),
                fmt_secs(times["imprecise enum"]),
                speedup,
                fmt_mb(mems["GRETA Fenwick"]),
                fmt_mb(mems["GRETA scan"]),
                fmt_mb(mems["NFA enum"]),
            ]
        )
        raw.append({"n": n, "trends": trends, "times": times, "mems": mems})
    return rows, raw


def aggregate_table(n: int, budget: float, seed: int, log: Callable[[str], None]) -> list[list[str]]:
    """GRETA Fenwick at one size: COUNT(*) alone, all five aggregates, and 10 groups ([symbol])."""
    rows = []
    configs = [
        ("COUNT(*)", make_query(n), 1),
        ("COUNT(*), SUM, MIN, MAX, AVG", make_query(n, ALL_AGGS), 1),
        ("COUNT(*) per [symbol], 10 symbols", make_query(n, template=GROUPED), 10),
    ]
    for label, cq, symbols in configs:
        events = list(itertools.islice(stock_stream(seed=seed, symbols=symbols, tick=1.0), n))
        log(f"  aggregates n={n:,} {label} ...")
        res = run_one("GRETA Fenwick", cq, events, budget, 0)
        mem = run_one("GRETA Fenwick", cq, events, budget, 0, memory=True)
        rate = res["fed"] / max(res["seconds"], 1e-9)
        rows.append([label, f"{n:,}", fmt_secs(res), f"{rate:,.0f}", fmt_mb(mem)])
    return rows


def header() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{datetime.date.today().isoformat()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load {load:.1f} at start"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_greta", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 ... 1,000 events per window, 1 s budget")
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], help="events per window, comma list")
    ap.add_argument("--budget", type=float, help="CPU seconds per configuration (default 20; --quick 1)")
    ap.add_argument("--max-runs", type=int, default=2_000_000, help="stop enumerating beyond this many partial trends")
    ap.add_argument("--agg-size", type=int, help="events per window of the aggregates table (default 100,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    ap.add_argument("--readme", action="store_true", help="write the tables into benchmarks/README.md")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    budget = args.budget if args.budget is not None else (1.0 if args.quick else 20.0)
    agg_size = args.agg_size or (10_000 if args.quick else 100_000)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    command = "python3 -m benchmarks.bench_greta" + (" --quick" if args.quick else "")
    print(f"\n{command}: {header()}; budget {fmt_float(budget)} s per configuration")
    rows, _raw = sweep(sizes, budget, args.max_runs, args.seed, log)
    columns = [
        "events/window",
        "trends",
        "GRETA Fenwick s",
        "GRETA scan s",
        "NFA enum s",
        "imprecise enum s",
        "NFA enum / Fenwick",
        "Fenwick MB",
        "scan MB",
        "NFA enum MB",
    ]
    title = "GRETA vs trend enumeration, COUNT(*) of rising-price trends (one window of n events)"
    print_table(title, columns, rows, plain=args.plain)
    agg_rows = aggregate_table(agg_size, budget * 3, args.seed, log)
    agg_columns = ["RETURN", "events/window", "seconds", "events/s", "peak MB"]
    agg_title = "GRETA Fenwick: the aggregate vector and groups"
    print_table(agg_title, agg_columns, agg_rows, plain=args.plain)
    if args.readme:
        write_readme(command, [(title, columns, rows), (agg_title, agg_columns, agg_rows)])
    return 0


README_SECTION = """## GRETA: trend aggregation vs enumeration (`bench_greta`)

| command | what | time |
|---|---|---|
| `python3 -m benchmarks.bench_greta` | 10 ... 100,000 events per window, 20 s CPU budget per configuration | ~5 min |
| `python3 -m benchmarks.bench_greta --quick` | 10 ... 1,000 events, 1 s budget | ~15 s |
| `python3 -m benchmarks.bench_greta --readme` | the full run, then the tables below are replaced | |

Query: the GRETA paper's stock query Q1 with rising instead of falling prices (our stock stream drifts upwards),
`PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN n s RETURN COUNT(*) AS trends`, over the SASE+ benchmark's
stock ticker (`benchmarks.common.stock_stream`: one symbol, one event per second, a price random walk going up with
p = 0.7): n events, one window holding all of them. Evaluators:

| column | evaluator |
|---|---|
| `GRETA Fenwick` | `engine.greta.GretaMatcher`: the single-range-predicate fast path, O(n log n) |
| `GRETA scan` | the same with `fast=False`: the general path, every earlier vertex is a candidate, O(n^2) |
| `NFA enum` | `engine.greta.TrendEnumerator`: two-step, the NFA^b runtime builds every trend, then aggregates |
| `imprecise enum` | `engine.imprecise.evaluator.ImpreciseMatcher` with output all: every signature |

Only `feed`/`flush` are timed, in CPU seconds of this process; events are built beforehand. A configuration stops at
its time budget (`>` marks it: the figure is a lower bound, `(k ev)` the events fed by then) or when the enumerator
holds more than `--max-runs` partial trends; an evaluator that stopped is not run on larger windows. Memory is the
tracemalloc peak of a second, separate run (3x the budget, as tracemalloc slows Python down), in MB. The second table
runs the fast path with the whole aggregate vector, and with 10 groups.
"""


def write_readme(command: str, tables: list[tuple[str, list[str], list[list[str]]]]) -> None:
    """Replace the measured tables of this benchmark's section of benchmarks/README.md (between its markers), or
    append the whole section; other sections are left alone."""
    import io

    buf = io.StringIO()
    buf.write(f"{TABLES_START}\nMeasured with `{command}` ({header()}):\n")
    for title, columns, rows in tables:
        print_table(title, columns, rows, plain=True, file=buf)
    buf.write(f"{TABLES_END}\n")
    tables_text = buf.getvalue()
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    inner = re.compile(re.escape(TABLES_START) + r".*?" + re.escape(TABLES_END) + r"\n?", re.S)
    if MARK_START in text and inner.search(text):
        text = inner.sub(lambda _m: tables_text, text)
    else:
        section = f"{MARK_START}\n{README_SECTION}\n{tables_text}\n{MARK_END}\n"
        text = text.rstrip("\n") + "\n\n" + section
    README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
