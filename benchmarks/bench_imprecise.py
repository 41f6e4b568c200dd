"""Imprecise timestamps: SASE++ Fig. 6 (DP thresholds vs window) and the imprecise-timestamp paper's Fig. 4(a)-(d).

Run from the repository root::

    python3 -m benchmarks.bench_imprecise            # full run, a few minutes
    python3 -m benchmarks.bench_imprecise --quick    # smoke run, seconds

Part 1, SASE++ Fig. 6(a) (digest-sasepp 8.4): every event has an uncertainty interval of ``--size`` points (default
10: ``[t-5, t+4]`` around the counter ``t``); ``SEQ(A a, B+ b[], C c)`` with TF-consistent predicates under
skip_till_any_match, throughput against W for On-the-fly (threshold 0), DP 0.7 / 0.9 / 0.99 / 0.999 (Algorithm 1
pruning with that confidence threshold), Collapsed and Postponing.  Claim to check: the paper's engine fails beyond
W = 3000 without DP; ours has to run W = 100,000.

- *Sparse* stream (the W sweep): types A / B / C / D = 1 / 3 / 1 / 95 %, D being other traffic the query does not
  name, ``v`` uniform over 0..999, and ``a.v < 5 AND b[i].v < 2 AND c.v < 5``: per 100,000 ticks about 5 qualifying
  A, 6 qualifying B and 5 qualifying C, so that a C at W = 100,000 closes about 5 x (e^6 - 1) / 6 = 330 signatures
  (all subsets of the B's between an A and the C) -- finite, and the same query for every W.
- *Dense* stream (where thresholds matter): A / B / C = 20 / 60 / 20 %, ``b[i].v < X AND c.v < 100`` over small
  windows, so a match's events overlap and large Kleene sets have low confidence.

Part 2, imprecise-timestamp paper Fig. 4(a) (digest-imprecise 7.1): one event type ``E``, ``v`` = 1, 2, ..., 1000 then
wrapping, true time ``t`` = index, interval ``[t - delta, t + delta]``; ``SEQ(E e1, E e2, E e3) WHERE e1.v % m1 = 0 AND
e2.v % m2 = 0 AND e3.v % m3 = 0 WITHIN 100``, delta from 1 to 50.  Point-based = ``tests/point_based.py`` (every event
expanded into its points, an S3 NFA over points, Eq. 1 per signature), time-boxed; event-based = the engine's
:class:`~engine.imprecise.evaluator.ImpreciseMatcher`.

Part 3, Fig. 4(b)-(d) (digest-imprecise 5.4 and 7.2): the paper's three run-based event-based orders --
``sorting`` (query order over a re-sorted stream), ``any-state`` (arrival order, runs start anywhere) and
``selectivity`` (runs start only at the rarest component, the others wait in evicted buffers) -- of
:class:`~benchmarks.research.imprecise_orders.OrderedImpreciseMatcher`, its ``auto``
choice (:func:`benchmarks.research.imprecise_orders.choose_order`), and the engine's closing-event evaluator, on the
same wrap stream.
Components are told apart by residues of ``v * 7`` so that every event fills at most one component (the case
sorting assumes, digest I7): 4(b) against delta (l = 3, each component 1/20 of the events), 4(c) against the pattern
length l, 4(d) with skewed component rates ``s1:s2:s3`` out of 600 residues (the same 120 = 20 % in all).  All
orders output the same records (``tests/engine/test_imprecise_orders.py``), so ``matches`` agree wherever a run
finished.

Throughput is events / CPU seconds of feed + flush; every configuration is time-boxed.  Never asserts.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.bench_sasepp import Outcome, cell_rate, drive, header
from benchmarks.common import fmt_int, fmt_rate, print_table
from benchmarks.research.imprecise_orders import OrderedImpreciseMatcher
from engine.events import Event
from engine.imprecise.evaluator import ImpreciseMatcher
from engine.plan.compiler import compile_query
from oracles.point_based import PointBasedMatcher

THRESHOLDS = (0.7, 0.9, 0.99, 0.999)
FIG6_CONFIGS = ["Postponing", "On-the-fly", *(f"DP {t:g}" for t in THRESHOLDS), "Collapsed"]

# ---------------------------------------------------------------------------------------------------- streams


def interval_events(n: int, mix: dict[str, float], size: int, seed: int = 1) -> list[Event]:
    """``n`` events, type drawn from ``mix``, ``v`` uniform over 0..999, true time = index, interval of ``size``
    points ``[t - size//2, t - size//2 + size - 1]`` (tick 1 s)."""
    rng = random.Random(seed)
    types = list(mix)
    cum = []
    acc = 0.0
    for t in types:
        acc += mix[t]
        cum.append(acc)
    half = size // 2
    out = []
    for i in range(n):
        u = rng.random() * acc
        etype = next(t for t, c in zip(types, cum, strict=True) if u < c)
        lo = float(i - half)
        out.append(Event(etype, float(i), {"v": rng.randrange(1000)}, seq=i, lo=lo, hi=lo + size - 1, tick=1.0))
    return out


def wrap_events(n: int, delta: int) -> list[Event]:
    """digest-imprecise 7.1: one type, values 1..1000 wrapping, t = index, interval [t - delta, t + delta]."""
    return [
        Event("E", float(i), {"v": i % 1000 + 1}, seq=i, lo=float(i - delta), hi=float(i + delta), tick=1.0)
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------------- Fig. 6


def fig6_matcher(config: str, text: str, umax: int) -> ImpreciseMatcher:
    threshold = float(config.split()[1]) if config.startswith("DP") else 0.0
    output = "collapsed" if config == "Collapsed" else "all"
    cq = compile_query(text, name="fig6", strategy="skip_till_any_match", output=output, confidence=threshold, tick=1.0)
    return ImpreciseMatcher(cq, umax, early_filters=config != "Postponing")


def fig6_table(
    args: argparse.Namespace, title: str, events: list[Event], queries: list[tuple[str, str]], budget: float
) -> None:
    """One row per (query point, configuration) and a pivot of events/s."""
    rows: list[list[str]] = []
    pivot: list[list[str]] = []
    umax = args.size - 1
    for label, text in queries:
        results: dict[str, Outcome] = {}
        for config in args.fig6_configs:
            gc.collect()
            o = drive(fig6_matcher(config, text, umax), events, budget, sample_every=args.chunk)
            results[config] = o
            rows.append(
                [
                    label,
                    config,
                    fmt_int(o.events),
                    fmt_rate(o.rate),
                    fmt_int(o.matches),
                    f"{o.matches / o.events:.3g}" if o.events else "-",
                    fmt_int(o.runs_max),
                    fmt_int(o.signatures),
                    o.stopped or "-",
                ]
            )
        pivot.append([label] + [cell_rate(results[c]) for c in args.fig6_configs])
    print_table(
        title,
        ["point", "config", "events", "events/s", "matches", "theta", "buffered max", "DP evals", "stopped"],
        rows,
        plain=args.plain,
    )
    print_table(
        f"{title}: events/s (* = stopped on the budget)", ["point"] + list(args.fig6_configs), pivot, plain=args.plain
    )


def fig6(args: argparse.Namespace) -> None:
    sparse = interval_events(args.sparse_events, {"A": 0.01, "B": 0.03, "C": 0.01, "D": 0.95}, args.size, args.seed)
    gc.freeze()
    fig6_table(
        args,
        f"SASE++ Fig. 6(a), sparse stream: interval {args.size} points, A/B/C/D = 1/3/1/95 %, "
        f"SEQ(A a, B+ b[], C c) WHERE a.v < 5 AND b[i].v < 2 AND c.v < 5, {args.sparse_events:,} events, "
        f"budget {args.budget:g} CPU s",
        sparse,
        [
            (f"W={w:,}", f"PATTERN SEQ(A a, B+ b[], C c) WHERE a.v < 5 AND b[i].v < 2 AND c.v < 5 WITHIN {w} s")
            for w in args.windows
        ],
        args.budget,
    )
    gc.unfreeze()
    del sparse
    dense = interval_events(args.dense_events, {"A": 0.2, "B": 0.6, "C": 0.2}, args.size, args.seed)
    gc.freeze()
    fig6_table(
        args,
        f"SASE++ Fig. 6, dense stream: interval {args.size} points, A/B/C = 20/60/20 %, "
        f"SEQ(A a, B+ b[], C c) WHERE b[i].v < X AND c.v < 100, {args.dense_events:,} events, "
        f"budget {args.dense_budget:g} CPU s",
        dense,
        [
            (f"W={w} X={x}", f"PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v < {x} AND c.v < 100 WITHIN {w} s")
            for w, x in args.dense
        ],
        args.dense_budget,
    )
    gc.unfreeze()


# ---------------------------------------------------------------------------------------------------- Fig. 4(a)


def fig4a(args: argparse.Namespace) -> None:
    m1, m2, m3 = args.moduli
    text = (
        f"PATTERN SEQ(E e1, E e2, E e3) WHERE e1.v % {m1} = 0 AND e2.v % {m2} = 0 AND e3.v % {m3} = 0 "
        f"WITHIN {args.fig4_window} s"
    )
    rows: list[list[str]] = []
    for delta in args.deltas:
        events = wrap_events(args.fig4_events, delta)
        gc.freeze()
        cq = compile_query(text, name="fig4a", strategy="skip_till_any_match", tick=1.0)
        matchers: list[tuple[str, Any]] = [
            ("event-based", ImpreciseMatcher(cq, 2 * delta)),
            ("point-based", PointBasedMatcher(text, tick=1.0, max_uncertainty=2 * delta, name="fig4a")),
        ]
        for label, m in matchers:
            gc.collect()
            o = drive(m, events, args.fig4_budget, max_runs=args.max_runs, sample_every=args.chunk)
            runs = f"{m.max_runs:,} runs" if isinstance(m, PointBasedMatcher) else f"{o.runs_max:,} buffered"
            extra = f"{m.points:,} points" if isinstance(m, PointBasedMatcher) else f"{m.signatures:,} DP evals"
            rows.append(
                [
                    str(delta),
                    label,
                    fmt_int(o.events),
                    fmt_rate(o.rate),
                    fmt_int(o.matches),
                    runs,
                    extra,
                    o.stopped or "-",
                ]
            )
            del m
        gc.unfreeze()
    print_table(
        f"Imprecise-timestamp paper Fig. 4(a): {text}; v = 1..1000 wrapping, t = index, interval "
        f"[t-delta, t+delta], up to {args.fig4_events:,} events, budget {args.fig4_budget:g} CPU s",
        ["delta", "framework", "events", "events/s", "matches", "runs / state (max)", "work", "stopped"],
        rows,
        plain=args.plain,
    )


# ---------------------------------------------------------------------------------------------------- Fig. 4(c)/(d)

FIG4_ORDERS = ("closing (engine)", "sorting", "any-state", "selectivity", "auto")


def fig4_matcher(config: str, cq: Any, umax: int) -> Any:
    if config == "closing (engine)":
        return ImpreciseMatcher(cq, umax)
    return OrderedImpreciseMatcher(cq, umax, order=config)


def fig4_orders_table(
    args: argparse.Namespace,
    title: str,
    points: list[tuple[str, str]],
    events: list[Event],
    umax: int,
    streams: dict[str, tuple[list[Event], int]] | None = None,
) -> None:
    """One row per (point, order) and a pivot of events/s; ``streams`` gives a point its own events and U_max."""
    rows: list[list[str]] = []
    pivot: list[list[str]] = []
    for label, text in points:
        if streams and label in streams:
            events, umax = streams[label]
        cq = compile_query(text, name="fig4", strategy="skip_till_any_match", tick=1.0)
        results: dict[str, Outcome] = {}
        for config in FIG4_ORDERS:
            gc.collect()
            m = fig4_matcher(config, cq, umax)
            o = drive(m, events, args.fig4cd_budget, max_runs=args.max_runs, sample_every=args.chunk)
            results[config] = o
            chosen = ""
            if isinstance(m, OrderedImpreciseMatcher):
                chosen = f" -> {m.order}" if config == "auto" else ""
                if m.order == "selectivity" and m.pivot is not None:
                    chosen += f" (pivot {m.comps[m.pivot].var})"
            rows.append(
                [
                    label,
                    config + chosen,
                    fmt_int(o.events),
                    fmt_rate(o.rate),
                    fmt_int(o.matches),
                    fmt_int(o.runs_max),
                    fmt_int(getattr(m, "eps", 0) or o.events),
                    fmt_int(o.signatures),
                    o.stopped or "-",
                ]
            )
            del m
        pivot.append([label] + [cell_rate(results[c]) for c in FIG4_ORDERS])
    print_table(
        title,
        [
            "point",
            "order",
            "events",
            "events/s",
            "matches",
            "runs / buffered (max)",
            "roles offered",
            "DP evals",
            "stopped",
        ],
        rows,
        plain=args.plain,
    )
    print_table(f"{title}: events/s (* = stopped on the budget)", ["point", *FIG4_ORDERS], pivot, plain=args.plain)


def fig4cd(args: argparse.Namespace) -> None:
    """Fig. 4(c) (pattern length) and 4(d) (skewed component rates): the paper's three run-based orders and the
    engine's closing-event evaluator on the wrap stream.  Components are told apart by residues of a scrambled value,
    ``(v * 7) % M``, so that every event fills at most one component (the case sorting assumes, digest I7)."""
    delta, w, mod = args.fig4cd_delta, args.fig4_window, args.fig4cd_modulus
    events = wrap_events(args.fig4cd_events, delta)
    gc.freeze()
    try:
        if args.only in (None, "fig4cd", "fig4b"):
            text = (
                f"PATTERN SEQ(E e1, E e2, E e3) WHERE e1.v * 7 % {mod} = 0 AND e2.v * 7 % {mod} = 1 AND "
                f"e3.v * 7 % {mod} = 2 WITHIN {w} s"
            )
            streams = {f"delta={d}": (wrap_events(args.fig4cd_events, d), 2 * d) for d in args.deltas_b}
            fig4_orders_table(
                args,
                f"Imprecise-timestamp paper Fig. 4(b): {text.removeprefix('PATTERN ')} against delta, up to "
                f"{args.fig4cd_events:,} events, budget {args.fig4cd_budget:g} CPU s",
                [(label, text) for label in streams],
                events,
                2 * delta,
                streams,
            )
            del streams
        if args.only in (None, "fig4cd", "fig4c"):
            points = []
            for length in args.lengths:
                preds = " AND ".join(f"e{j}.v * 7 % {mod} = {j - 1}" for j in range(1, length + 1))
                comps = ", ".join(f"E e{j}" for j in range(1, length + 1))
                points.append((f"l={length}", f"PATTERN SEQ({comps}) WHERE {preds} WITHIN {w} s"))
            fig4_orders_table(
                args,
                f"Imprecise-timestamp paper Fig. 4(c): SEQ(E e1, ..., E el) WHERE ej.v * 7 % {mod} = j - 1 WITHIN {w} "
                f"(each component 1/{mod} of the events), delta {delta}, up to {args.fig4cd_events:,} events, budget "
                f"{args.fig4cd_budget:g} CPU s",
                points,
                events,
                2 * delta,
            )
        if args.only in (None, "fig4cd", "fig4d"):
            points = []
            dm = args.fig4d_modulus
            for skew in args.skews:
                s1, s2, s3 = skew
                starts = (0, s1, s1 + s2)
                preds = " AND ".join(
                    f"e{j + 1}.v * 7 % {dm} >= {a} AND e{j + 1}.v * 7 % {dm} < {a + n}"
                    for j, (a, n) in enumerate(zip(starts, skew, strict=True))
                )
                points.append((f"{s1}:{s2}:{s3}", f"PATTERN SEQ(E e1, E e2, E e3) WHERE {preds} WITHIN {w} s"))
            fig4_orders_table(
                args,
                f"Imprecise-timestamp paper Fig. 4(d): SEQ(E e1, E e2, E e3), component rates s1:s2:s3 out of "
                f"{args.fig4d_modulus} residues of v * 7 (the same {sum(args.skews[0])} in all), WITHIN {w}, delta "
                f"{delta}, up to {args.fig4cd_events:,} events, budget {args.fig4cd_budget:g} CPU s",
                points,
                events,
                2 * delta,
            )
    finally:
        gc.unfreeze()


# ---------------------------------------------------------------------------------------------------- main


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_imprecise", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny streams, few configurations")
    ap.add_argument(
        "--only",
        choices=("fig6", "fig4a", "fig4cd", "fig4b", "fig4c", "fig4d"),
        help="run one part only (fig4cd: 4(b), 4(c) and 4(d))",
    )
    ap.add_argument("--budget", type=float, help="CPU seconds per configuration (default 20, quick 0.05)")
    ap.add_argument("--size", type=int, default=10, help="interval size in points for Fig. 6 (default 10)")
    ap.add_argument("--windows", help="W of the sparse Fig. 6 sweep (default 1000,10000,100000)")
    ap.add_argument("--sparse-events", type=int, help="events of the sparse stream (default 150000)")
    ap.add_argument("--dense", help="W:X pairs of the dense Fig. 6 table (default 50:100,100:50,100:100)")
    ap.add_argument("--dense-events", type=int, help="events of the dense stream (default 10000)")
    ap.add_argument("--dense-budget", type=float, help="CPU seconds per dense configuration (default 3)")
    ap.add_argument("--deltas", help="half-interval sizes of Fig. 4(a) (default 1,2,5,10,20,50)")
    ap.add_argument("--moduli", help="m1,m2,m3 of Fig. 4(a) (default 10,10,10)")
    ap.add_argument("--fig4-window", type=int, default=100, help="W of Fig. 4(a) (default 100)")
    ap.add_argument("--fig4-events", type=int, help="events per delta in Fig. 4(a) (default 20000)")
    ap.add_argument("--fig4-budget", type=float, help="CPU seconds per Fig. 4(a) configuration (default 8)")
    ap.add_argument("--deltas-b", help="half-interval sizes of Fig. 4(b) (default 1,5,20,50)")
    ap.add_argument("--lengths", help="pattern lengths of Fig. 4(c) (default 2,3,4,5,6)")
    ap.add_argument(
        "--skews",
        help="s1:s2:s3 component rates of Fig. 4(d), out of --fig4d-modulus residues "
        "(default 40:40:40,80:30:10,100:15:5,110:9:1,116:3:1)",
    )
    ap.add_argument("--fig4cd-modulus", type=int, default=20, help="M of Fig. 4(c): each component 1/M (default 20)")
    ap.add_argument("--fig4d-modulus", type=int, default=600, help="residues of Fig. 4(d) (default 600)")
    ap.add_argument("--fig4cd-delta", type=int, default=5, help="half interval of Fig. 4(c)/(d) (default 5)")
    ap.add_argument("--fig4cd-events", type=int, help="events per Fig. 4(c)/(d) point (default 20000)")
    ap.add_argument("--fig4cd-budget", type=float, help="CPU seconds per Fig. 4(c)/(d) configuration (default 5)")
    ap.add_argument("--max-runs", type=int, default=300_000, help="stop the point-based matcher above this many runs")
    ap.add_argument("--chunk", type=int, default=100, help="events between budget checks / samples")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    args = ap.parse_args(argv)
    q = args.quick
    args.budget = args.budget if args.budget is not None else (0.05 if q else 20.0)
    args.windows = _ints(args.windows or ("1000" if q else "1000,10000,100000"))
    args.sparse_events = args.sparse_events or (2_000 if q else 150_000)
    pairs = args.dense or ("50:100" if q else "50:100,100:50,100:100")
    args.dense = [tuple(int(v) for v in p.split(":")) for p in pairs.split(",") if p.strip()]
    args.dense_events = args.dense_events or (500 if q else 10_000)
    args.dense_budget = args.dense_budget if args.dense_budget is not None else (0.05 if q else 3.0)
    args.deltas = _ints(args.deltas or ("1,3" if q else "1,2,5,10,20,50"))
    args.moduli = _ints(args.moduli or "10,10,10")
    if len(args.moduli) != 3:
        ap.error("--moduli takes three integers")
    args.fig4_events = args.fig4_events or (300 if q else 20_000)
    args.fig4_budget = args.fig4_budget if args.fig4_budget is not None else (0.05 if q else 8.0)
    args.fig6_configs = ["On-the-fly", "DP 0.9", "Collapsed"] if q else FIG6_CONFIGS
    args.lengths = _ints(args.lengths or ("2,3" if q else "2,3,4,5,6"))
    args.deltas_b = _ints(args.deltas_b or ("1,5" if q else "1,5,20,50"))
    pairs = args.skews or ("40:40:40,116:3:1" if q else "40:40:40,80:30:10,100:15:5,110:9:1,116:3:1")
    args.skews = [tuple(int(v) for v in p.split(":")) for p in pairs.split(",") if p.strip()]
    if any(len(sk) != 3 or min(sk) < 1 for sk in args.skews):
        ap.error("--skews takes s1:s2:s3 triples of positive integers")
    args.fig4cd_events = args.fig4cd_events or (300 if q else 20_000)
    args.fig4cd_budget = args.fig4cd_budget if args.fig4cd_budget is not None else (0.05 if q else 5.0)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run both parts; print the tables; return the exit status."""
    args = parse_args(argv)
    started = time.perf_counter()
    print(header("bench_imprecise", argv))
    try:
        if args.only in (None, "fig6"):
            fig6(args)
        if args.only in (None, "fig4a"):
            fig4a(args)
        if args.only in (None, "fig4cd", "fig4b", "fig4c", "fig4d"):
            fig4cd(args)
    finally:
        gc.unfreeze()
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
