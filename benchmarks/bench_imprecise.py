"""Imprecise timestamps: SASE++ Fig. 6 (DP thresholds vs window) and the imprecise-timestamp paper's Fig. 4(a).

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
:class:`~engine.imprecise.evaluator.ImpreciseMatcher`, and "event-based, pruned" the same with its buffers pruned every
1,024 events (:class:`PrunedImpreciseMatcher`: on this one-type stream every event closes a signature, and the
engine then never prunes).  The engine has one event-based evaluator (buffers by type,
enumerates from the closing event), so there is one event-based curve, not the paper's sorting / any-state /
selectivity-order variants.

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
from engine.events import Event
from engine.imprecise.evaluator import ImpreciseMatcher
from engine.plan.compiler import compile_query
from tests.point_based import PointBasedMatcher

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


class PrunedImpreciseMatcher(ImpreciseMatcher):
    """The engine's evaluator plus a buffer pruning every 1,024 events, whatever ``feed`` did.

    A workaround for what looks like an engine bug (see benchmarks/README.md): ``ImpreciseMatcher.feed`` prunes its
    buffers only on a feed that closes nothing, so on a stream where every event closes a signature (one event type,
    as in Fig. 4(a)) the buffers keep the whole stream and every closing event scans all of it."""

    def feed(self, ev: Event) -> list[dict]:
        out = super().feed(ev)
        if self.fed % 1024 == 0:
            self._prune(self.safe)
        return out


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
            ("event-based, pruned", PrunedImpreciseMatcher(cq, 2 * delta)),
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


# ---------------------------------------------------------------------------------------------------- main


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_imprecise", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny streams, few configurations")
    ap.add_argument("--only", choices=("fig6", "fig4a"), help="run one part only")
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
    finally:
        gc.unfreeze()
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
