"""SASE++ Fig. 5 on precise timestamps: ``SEQ(A a, B+ b[], C c)`` under skip_till_any_match, four configurations.

Run from the repository root::

    python3 -m benchmarks.bench_sasepp            # full run, a few minutes
    python3 -m benchmarks.bench_sasepp --quick    # smoke run, seconds

Stream (digest-sasepp 8.2): ``A``/``B``/``C`` with probability 20/60/20 %, timestamp = event counter (tick 1 s),
attributes ``v`` and ``w`` uniform over 0..999 and ``u`` uniform over 0..999,999.

Theta sweep (Fig. 5(a,b,e,f)), W = 20::

    PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v < X AND <class conjunct> AND c.v < 100 WITHIN W s

``b[i].v < X`` sets the selectivity theta (= matches / events): X/1000 of the B events qualify.  ``c.v < 100`` keeps
one C in ten, so most runs never complete (the paper's non-viable runs).

Window sweep (Fig. 5(c,d)): with a fixed X, skip_till_any_match's output grows as 2^(qualifying B's per window), so
every all-mode configuration times out inside the first window once W passes ~200 and the sweep measures nothing.
The sweep therefore holds the expected number of qualifying B events per window at ``--window-k`` (default 4) and
keeps one C in a hundred::

    PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].u < X_W AND <class conjunct> AND c.v < 10 WITHIN W s
    X_W = 1,000,000 * k / (0.6 * W)

The class conjunct picks the consistency class of the Kleene predicates (digest-sasepp 6.3):

- ``TF``: none (``b[i].v < X`` alone is true-false consistent; the only class that allows collapsed output);
- ``T``: ``b[i].w > max(b[..i-1].w)`` (true-value consistent);
- ``F``: ``c.w < max(b[].w)`` (false-value consistent).

Configurations (digest-sasepp 8.1): ``SASE+`` = the NFA^b runtime (:class:`engine.runtime.matcher.Matcher`, runs
cloned per event); ``Postponing`` / ``On-the-fly`` = :class:`engine.imprecise.evaluator.ImpreciseMatcher` with
``early_filters`` off / on; ``Collapsed`` = On-the-fly with ``output="collapsed"`` (TF only).  An extra row,
``Collapsed NFA^b``, is the NFA^b runtime's own collapsed mode (one maximal set per run), which is not in the paper.

Every configuration is time-boxed on CPU time (``--budget``, checked every 100 events; a feed running past twice the
budget is interrupted: ``timeout``) and capped on runs alive (``--max-runs``); throughput is over the events it
processed.  Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.common import fmt_float, fmt_int, fmt_rate, print_table
from engine.events import Event
from engine.imprecise.evaluator import ImpreciseMatcher
from engine.language.ast import QueryError
from engine.plan.compiler import CompiledQuery, compile_query
from engine.runtime.matcher import Matcher

CLASSES: dict[str, str] = {
    "TF": "",
    "T": " AND b[i].w > max(b[..i-1].w)",
    "F": " AND c.w < max(b[].w)",
}
CONFIGS = ["SASE+", "Postponing", "On-the-fly", "Collapsed", "Collapsed NFA^b"]
SASEPP = ("Postponing", "On-the-fly", "Collapsed")  # the paper's SASE++ configurations (for best / SASE+)

# ---------------------------------------------------------------------------------------------------- shared runner


@dataclass
class Outcome:
    """What one configuration did over a stream prefix."""

    events: int
    cpu: float  # seconds of CPU time (this thread) inside feed/flush
    matches: int
    runs_mean: float
    runs_max: int
    signatures: int  # confidence (DP) evaluations of an ImpreciseMatcher; 0 for other matchers
    stopped: str  # "" ran to the end, "time" budget, "runs" runs cap, "timeout" interrupted inside a feed

    @property
    def rate(self) -> float:
        return self.events / self.cpu if self.cpu > 0 else 0.0


class _OverBudget(Exception):
    """Raised by the CPU-time alarm inside a feed that runs far past its configuration's budget."""


def _alarm(signum: int, frame: Any) -> None:
    raise _OverBudget


def drive(
    matcher: Any,
    events: Sequence[Event],
    budget: float,
    *,
    max_runs: int | None = None,
    sample_every: int = 100,
    flush: bool = True,
    on_records: Callable[[list[dict]], None] | None = None,
    hard_factor: float = 2.0,
    batched: bool = False,
) -> Outcome:
    """Feed ``events`` to ``matcher`` in chunks of ``sample_every`` (``batched``: one ``feed_many`` call per chunk,
    the same records as ``feed`` per event, so the figure is the engine's own loop), timing only feed/flush on the
    thread's CPU time (robust on a shared machine; the process clock turns coarse while a CPU-time itimer is armed);
    stop after ``budget`` CPU seconds or above ``max_runs`` runs alive.

    One ``feed`` can itself take unbounded time (an event closing exponentially many signatures), so a CPU-time
    alarm interrupts the configuration at ``hard_factor * budget + 0.2`` seconds: it then stops as ``timeout``, with
    the events and matches completed so far (the matcher is dropped)."""
    feed = matcher.feed
    feed_many = matcher.feed_many if batched else None
    clock = time.thread_time
    cpu = 0.0
    matches = 0
    samples: list[int] = []
    stopped = ""
    pos = 0
    n = len(events)
    use_alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if use_alarm:
        previous = signal.signal(signal.SIGVTALRM, _alarm)
        signal.setitimer(signal.ITIMER_VIRTUAL, hard_factor * budget + 0.2)
    start = clock()
    out: list[dict] = []
    try:
        while pos < n:
            chunk = events[pos : pos + sample_every]
            out = []
            extend = out.extend
            t0 = clock()
            if feed_many is not None:
                extend(feed_many(chunk))
                pos += len(chunk)
            else:
                for ev in chunk:
                    extend(feed(ev))
                    pos += 1
            cpu += clock() - t0
            matches += len(out)
            if on_records is not None:
                on_records(out)
            out = []
            alive = matcher.runs_alive()
            samples.append(alive)
            if max_runs is not None and alive > max_runs:
                stopped = "runs"
                break
            if cpu >= budget and pos < n:
                stopped = "time"
                break
        if flush and not stopped:
            t0 = clock()
            out = matcher.flush()
            cpu += clock() - t0
            matches += len(out)
            if on_records is not None:
                on_records(out)
    except _OverBudget:
        stopped = "timeout"
        cpu = clock() - start
        matches += len(out)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
            signal.signal(signal.SIGVTALRM, previous)
    return Outcome(
        pos,
        cpu,
        matches,
        sum(samples) / len(samples) if samples else 0.0,
        max(samples, default=0),
        getattr(matcher, "signatures", 0),
        stopped,
    )


def revision() -> str:
    """The git commit of the tree, with ``+engine changes`` when engine/ differs from it (the engine moves)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "engine"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return f"commit {head or '?'}" + (" + uncommitted engine changes" if dirty else "")


def header(name: str, argv: Sequence[str] | None) -> str:
    """The first line of a benchmark's output: command, date, revision, machine, load."""
    args = " ".join(argv if argv is not None else sys.argv[1:])
    return (
        f"python3 -m benchmarks.{name} {args}".rstrip() + f"  --  {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{revision()}, "
        f"Python {platform.python_version()} ({platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}); throughput = events / CPU seconds of feed + flush"
    )


def cell_rate(o: Outcome) -> str:
    return fmt_rate(o.rate) + ("*" if o.stopped else "")


# ---------------------------------------------------------------------------------------------------- workload


def abc_events(n: int, seed: int = 1, mix: tuple[float, float, float] = (0.2, 0.6, 0.2)) -> list[Event]:
    """``n`` precise A/B/C events, timestamp = counter (tick 1 s), ``v``, ``w`` uniform over 0..999, ``u`` over
    0..999,999."""
    rng = random.Random(seed)
    pa, pb, _ = mix
    out = []
    for i in range(n):
        u = rng.random()
        etype = "A" if u < pa else "B" if u < pa + pb else "C"
        attrs = {"v": rng.randrange(1000), "w": rng.randrange(1000), "u": rng.randrange(1_000_000)}
        out.append(Event(etype, float(i), attrs, seq=i, tick=1.0))
    return out


def query_text(cls: str, x: int, window: int, sweep: str = "X") -> str:
    """The Fig. 5 query: theta sweep (``b[i].v < X``, ``c.v < 100``) or window sweep (``b[i].u < X``, ``c.v < 10``)."""
    attr, c_cut = ("v", 100) if sweep == "X" else ("u", 10)
    return f"PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].{attr} < {x}{CLASSES[cls]} AND c.v < {c_cut} WITHIN {window} s"


def make(config: str, text: str) -> Any | None:
    """A fresh matcher for a configuration, or ``None`` when the query does not allow it (collapsed)."""
    try:
        cq: CompiledQuery = compile_query(
            text,
            name="fig5",
            strategy="skip_till_any_match",
            tick=1.0,
            output="collapsed" if config.startswith("Collapsed") else "all",
        )
    except QueryError:
        return None
    if config in ("SASE+", "Collapsed NFA^b"):
        return Matcher(cq)
    return ImpreciseMatcher(cq, 0, early_filters=config != "Postponing")


def run_grid(
    args: argparse.Namespace,
    events: list[Event],
    classes: list[str],
    points: list[tuple[int, int]],
    axis: str,
    title: str,
) -> None:
    """Every class x (X, W) point x configuration: a detail table and a pivot of events/s with best/SASE+."""
    rows: list[list[str]] = []
    pivot: list[list[str]] = []
    for cls in classes:
        for x, w in points:
            text = query_text(cls, x, w, axis)
            results: dict[str, Outcome] = {}
            for config in args.configs:
                m = make(config, text)
                if m is None:
                    continue
                gc.collect()
                o = drive(m, events, args.budget, max_runs=args.max_runs)
                results[config] = o
                theta = o.matches / o.events if o.events else 0.0
                rows.append(
                    [
                        cls,
                        str(x),
                        str(w),
                        config,
                        fmt_int(o.events),
                        fmt_rate(o.rate),
                        fmt_int(o.matches),
                        f"{theta:.3g}",
                        fmt_float(o.runs_mean, 1),
                        fmt_int(o.runs_max),
                        fmt_int(o.signatures) if isinstance(m, ImpreciseMatcher) else "-",
                        o.stopped or "-",
                    ]
                )
                del m
            ref = results.get("On-the-fly") or next(iter(results.values()))
            theta = ref.matches / ref.events if ref.events else 0.0
            base = results.get("SASE+")
            best = max((results[c] for c in SASEPP if c in results), key=lambda o: o.rate, default=None)
            ratio = f"{best.rate / base.rate:.3g}" if base and best and base.rate > 0 else "-"
            pivot.append(
                [cls, str(x) if axis == "X" else str(w), f"{theta:.3g}"]
                + [cell_rate(results[c]) if c in results else "n/a" for c in args.configs]
                + [ratio]
            )
    print_table(
        title,
        [
            "class",
            "X",
            "W",
            "config",
            "events",
            "events/s",
            "matches",
            "theta",
            "runs mean",
            "runs max",
            "DP evals",
            "stopped",
        ],
        rows,
        plain=args.plain,
    )
    print_table(
        f"{title}: events/s by configuration (* = stopped on the budget or the runs cap; theta from "
        "On-the-fly; best / SASE+ over Postponing, On-the-fly, Collapsed)",
        ["class", axis, "theta"] + list(args.configs) + ["best / SASE+"],
        pivot,
        plain=args.plain,
    )


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_sasepp", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny streams, few configurations")
    ap.add_argument("--budget", type=float, help="CPU seconds per configuration (default 3, quick 0.05)")
    ap.add_argument("--max-runs", type=int, default=300_000, help="stop a configuration above this many runs alive")
    ap.add_argument("--events", type=int, help="stream length (default 20000, quick 600)")
    ap.add_argument("--classes", help="comma-separated subset of TF,T,F (default all)")
    ap.add_argument("--theta-window", type=int, help="W of the theta sweep (default 20)")
    ap.add_argument("--xs", help="X values of the theta sweep (default 50,100,200,350,500,700)")
    ap.add_argument("--windows", help="W values of the window sweep (default 25,100,400,1600)")
    ap.add_argument("--window-k", type=float, help="qualifying B events per window in the window sweep (default 4)")
    ap.add_argument("--only", choices=("theta", "window"), help="run one sweep only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    args = ap.parse_args(argv)
    q = args.quick
    args.budget = args.budget if args.budget is not None else (0.05 if q else 3.0)
    args.events = args.events or (600 if q else 20_000)
    args.classes = args.classes.split(",") if args.classes else (["TF"] if q else list(CLASSES))
    args.theta_window = args.theta_window or 20
    args.xs = _ints(args.xs or ("100,500" if q else "50,100,200,350,500,700"))
    args.windows = _ints(args.windows or ("25,100" if q else "25,100,400,1600"))
    args.window_k = args.window_k or 4.0
    args.configs = CONFIGS
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweeps; print the tables; return the exit status."""
    args = parse_args(argv)
    started = time.perf_counter()
    print(header("bench_sasepp", argv))
    events = abc_events(args.events, args.seed)
    gc.freeze()  # the stream is long-lived: keep it out of the collector's way
    try:
        if args.only in (None, "theta"):
            run_grid(
                args,
                events,
                args.classes,
                [(x, args.theta_window) for x in args.xs],
                "X",
                f"Fig. 5(a,b,e,f) theta sweep: W = {args.theta_window}, {args.events:,} events, "
                f"budget {args.budget:g} CPU s",
            )
        if args.only in (None, "window"):
            run_grid(
                args,
                events,
                [c for c in args.classes if c != "F"] or args.classes,
                [(max(1, round(1e6 * args.window_k / (0.6 * w))), w) for w in args.windows],
                "W",
                f"Fig. 5(c,d) window sweep: {args.window_k:g} qualifying B per window (b[i].u < X), "
                f"c.v < 10, {args.events:,} events, "
                f"budget {args.budget:g} CPU s",
            )
    finally:
        gc.unfreeze()
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
