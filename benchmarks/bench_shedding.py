"""pSPICE load shedding against random partial-match dropping (PM-BL) and event dropping (E-BL) at 120 / 150 / 200 %
overload, on a synthetic Hadoop-like trace; and the overhead of deciding.

Run from the repository root::

    python3 -m benchmarks.bench_shedding            # 30,000 events, 3 seeds
    python3 -m benchmarks.bench_shedding --quick    # 8,000 events, 1 seed

The trace (:func:`hadoop_trace`): jobs arrive about once a minute, each with 2-6 mappers (``Mapper`` + a ``DataIO`` of
+bytes) and 1-4 reducers (``ReducerStart``, a shuffle ``DataPull`` (+ ``DataIO`` of -bytes) every 5-40 s, a few
of them slow, ``ReducerEnd``); 70 % of the reducers run 1-8 minutes, 30 % 10-25 minutes (longer than the 10-minute
windows: their partial matches never complete).  Ganglia rounds every 60 s: ``LoadStd`` (a random walk of the load
std-dev) and ``Balance``/``Imbalance`` by a threshold of 1.0.  Tick 1 s.  The queries (:data:`QUERIES`):

- ``QK`` skip_till_any_match, output all: ``SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c)`` with
  ``b[i].val >= b[i-1].val`` -- every rising subset of the load rounds a reducer saw: the blow-up;
- ``Q3`` skip_till_next_match: a shuffle pull slower than twice the average of the reducer's earlier pulls;
- ``Q4`` skip_till_next_match: map output queued per job (trailing Kleene: a match per ``DataIO``);
- ``QN`` skip_till_next_match with a negation: reducers that ran without any ``Imbalance`` round.

Latency uses the deterministic cost model (:class:`~benchmarks.research.shedding_replay.CostModel`: 2 us + 1 us per
run stepped; a shedding pass 5 us + 0.1 us per run scanned) on a simulated arrival clock, so the figures are
reproducible; the overhead table is measured (``time.perf_counter``).  Capacity = events / total cost of the unshed
run; the first 15 % of the events arrive at 80 % of capacity (the paper builds its model below capacity), the rest at
the overload rate.
False negatives are matches of the unshed run missing under shedding (multiset of match signatures), weighted by the
query weights; false positives are records the unshed run does not have.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from benchmarks.common import print_table
from benchmarks.research.shedding_replay import CostModel, arrivals, replay
from engine.events import Event
from engine.plan.compiler import CompiledQuery, compile_query
from engine.runtime.matcher import Matcher
from engine.shedding import SheddingConfig, SheddingMatcher

TICK = 1.0
ROUND = 40.0  # seconds between Ganglia rounds
QUERIES: dict[str, tuple[str, str]] = {
    "QK": (
        "skip_till_any_match",
        """PATTERN SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c)
WHERE [task_id] AND b[i].val >= b[i-1].val WITHIN 10 minutes RETURN a.task_id AS task_id""",
    ),
    "Q3": (
        "skip_till_next_match",
        """PATTERN SEQ(ReducerStart a, DataPull+ b[], DataPull c)
WHERE [task_id] AND c.period > 2 * avg(b[].period) WITHIN 10 minutes
RETURN a.task_id AS task_id, c.period AS period""",
    ),
    "Q4": (
        "skip_till_next_match",
        """PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 30 minutes
RETURN a.job_id AS job_id, sum(b[].size) AS queued""",
    ),
    "QN": (
        "skip_till_next_match",
        """PATTERN SEQ(ReducerStart a, ~Imbalance x, ReducerEnd c) WHERE [task_id]
WITHIN 10 minutes RETURN a.task_id AS task_id""",
    ),
}
WEIGHTS = {"Q3": 2.0}
COST = CostModel(per_event=2e-6, per_run=1e-6, shed_base=5e-6, shed_per_run=1e-7)
LATENCY_BOUND_MS = 50.0
POLICIES = ("pspice", "random_runs", "random_events")
LABEL = {"pspice": "pSPICE", "random_runs": "PM-BL", "random_events": "E-BL", "same": "PM-BL, pSPICE's amounts"}


def compile_queries(names: Sequence[str] | None = None) -> list[CompiledQuery]:
    return [
        compile_query(text, name=name, strategy=strategy, tick=TICK)
        for name, (strategy, text) in QUERIES.items()
        if names is None or name in names
    ]


def make_matchers(names: Sequence[str] | None = None) -> list[Matcher]:
    """Fresh NFA^b matchers of the trace's queries (skip_till_any_match runs on the NFA^b runtime: it has runs)."""
    return [Matcher(cq) for cq in compile_queries(names)]


def hadoop_trace(n_events: int = 20_000, seed: int = 1, long_share: float = 0.3) -> list[Event]:
    """The synthetic trace of the module docstring, cut to ``n_events`` events in time order."""
    rng = random.Random(seed)
    raw: list[tuple[float, int, str, dict[str, Any]]] = []
    order = 0

    def emit(t: float, etype: str, **attrs: Any) -> None:
        nonlocal order
        raw.append((round(t, 1), order, etype, attrs))
        order += 1

    # enough simulated time for n_events (about 2.3 events/s)
    horizon = n_events / 2.0
    t = 0.0
    job = 0
    while t < horizon:
        t += rng.expovariate(1 / 60.0)
        job += 1
        jid = f"job_{job:05d}"
        emit(t, "JobStart", job_id=jid)
        end = t
        for mi in range(rng.randint(2, 6)):
            tm = t + rng.uniform(10, 120)
            emit(tm, "Mapper", job_id=jid, task_id=f"{jid}_m{mi}", period=round(tm - t, 1))
            emit(tm, "DataIO", job_id=jid, task_id=f"{jid}_m{mi}", size=rng.randint(1, 100) * 1000)
            end = max(end, tm)
        for ri in range(rng.randint(1, 4)):
            tid = f"{jid}_r{ri}"
            ts = t + rng.uniform(30, 150)
            dur = rng.uniform(600, 1500) if rng.random() < long_share else rng.uniform(60, 480)
            emit(ts, "ReducerStart", job_id=jid, task_id=tid)
            tp = ts + rng.uniform(5, 40)
            while tp < ts + dur:
                period = rng.uniform(0.5, 3.0) * (4.0 if rng.random() < 0.08 else 1.0)
                emit(tp, "DataPull", job_id=jid, task_id=tid, period=round(period, 2))
                emit(tp, "DataIO", job_id=jid, task_id=tid, size=-rng.randint(1, 100) * 1000)
                tp += rng.uniform(5, 40)
            emit(ts + dur, "ReducerEnd", job_id=jid, task_id=tid)
            end = max(end, ts + dur)
        emit(end + 5, "JobEnd", job_id=jid)
    val = 1.0
    for r in range(int(horizon / ROUND) + 60):
        val = max(0.01, 1.0 + 0.7 * (val - 1.0) + rng.gauss(0.0, 0.4))  # mean-reverting load spread
        tr = r * ROUND + 0.5
        emit(tr, "LoadStd", val=round(val, 2))
        emit(tr, "Imbalance" if val > 1.4 else "Balance", val=round(val, 2), threshold=1.4)
    raw.sort(key=lambda x: (x[0], x[1]))
    return [Event(etype, ts, attrs, seq=i, tick=TICK) for i, (ts, _, etype, attrs) in enumerate(raw[:n_events])]


# ---------------------------------------------------------------------------------------------------- measuring


def record_key(r: dict) -> tuple:
    """A match's identity: query and signature (the ids bound to each variable)."""
    return (r["query"], tuple((v, tuple(ids)) for v, ids in r["match"].items()))


def ground_truth(events: Sequence[Event]) -> tuple[Counter, list[float]]:
    """The unshed run: its matches (a multiset of keys) and each event's service time under :data:`COST`."""
    ms = make_matchers()
    truth: Counter = Counter()
    costs: list[float] = []
    for ev in events:
        costs.append(COST.processing(sum(m.pending_work(ev) for m in ms)))
        for m in ms:
            for r in m.feed(ev):
                truth[record_key(r)] += 1
    return truth, costs


def unshed_latency(costs: Sequence[float], times: Sequence[float]) -> float:
    """Largest latency without shedding: the same queue with the unshed service times."""
    free, worst = float("-inf"), 0.0
    for c, a in zip(costs, times, strict=True):
        free = max(a, free) + c
        worst = max(worst, free - a)
    return worst


def false_negatives(truth: Counter, records: Sequence[dict]) -> dict[str, Any]:
    """FN (weighted and per query) and FP of a shed run against the unshed one."""
    got = Counter(record_key(r) for r in records)
    missing, extra = truth - got, got - truth
    per_truth: Counter = Counter()
    per_fn: Counter = Counter()
    for (q, _), c in truth.items():
        per_truth[q] += c
    for (q, _), c in missing.items():
        per_fn[q] += c
    w = {q: WEIGHTS.get(q, 1.0) for q in QUERIES}
    total = sum(w[q] * per_truth[q] for q in QUERIES)
    return {
        "fn": 100.0 * sum(w[q] * per_fn[q] for q in QUERIES) / total if total else 0.0,
        "per_query": {q: 100.0 * per_fn[q] / per_truth[q] if per_truth[q] else 0.0 for q in QUERIES},
        "fp": sum(extra.values()),
    }


def run_policy(
    events: Sequence[Event],
    times: Sequence[float],
    policy: str,
    bound_ms: float,
    seed: int,
    schedule: dict[int, list[tuple[str, int]]] | None = None,
) -> tuple[Any, SheddingMatcher]:
    cfg = SheddingConfig(enabled=True, latency_bound_ms=bound_ms, weights=WEIGHTS, policy=policy, seed=seed)
    sm = SheddingMatcher(make_matchers(), cfg, cost_model=COST, schedule=schedule, record_schedule=True)
    return replay(sm, events, times), sm


def experiment(n_events: int, seed: int, overloads: Sequence[float], bound_ms: float) -> list[dict[str, Any]]:
    """Every policy at every overload on one trace; one result dict per (overload, policy)."""
    events = hadoop_trace(n_events, seed)
    truth, costs = ground_truth(events)
    cap = len(events) / sum(costs)
    warm = len(events) * 15 // 100
    rows: list[dict[str, Any]] = []
    for x in overloads:
        times = arrivals(len(events), x * cap, warmup=warm, warmup_rate=0.8 * cap)
        base = {"overload": x, "seed": seed, "capacity": cap, "unshed_max": unshed_latency(costs, times)}
        schedule: dict[int, list[tuple[str, int]]] = {}
        for policy in (*POLICIES, "same"):
            if policy == "same":
                res, sm = run_policy(events, times, "random_runs", bound_ms, seed, schedule)
            else:
                res, sm = run_policy(events, times, policy, bound_ms, seed)
            if policy == "pspice":
                for i, scope, n in sm.schedule_log or ():
                    schedule.setdefault(i, []).append((scope, n))
            m = sm.metrics()
            rows.append(
                {
                    **base,
                    "policy": policy,
                    **false_negatives(truth, res.records),
                    "max": res.max_latency(),
                    "p99": res.percentile(0.99),
                    "shed_runs": m["shed_runs"],
                    "shed_events": m["shed_events"],
                    "shed_calls": m["shed_calls"],
                    "processing": m["processing_seconds"],
                    "shedding": m["shedding_seconds"],
                    "overhead": m["overhead_seconds"],
                    "rebuilds": sum(m["model_rebuilds"].values()),
                }
            )
    return rows


# ---------------------------------------------------------------------------------------------------- reporting


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _std(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    mu = _mean(xs)
    return (sum((x - mu) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def _group(rows: Sequence[dict[str, Any]]) -> dict[tuple[float, str], list[dict[str, Any]]]:
    out: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["overload"], r["policy"]), []).append(r)
    return out


def report(rows: Sequence[dict[str, Any]], bound_ms: float, n_events: int, seeds: int, plain: bool) -> None:
    groups = _group(rows)
    overloads = sorted({r["overload"] for r in rows})
    bound = bound_ms / 1000.0
    table = []
    for x in overloads:
        for policy in (*POLICIES, "same"):
            g = groups[(x, policy)]
            fn = [r["fn"] for r in g]
            table.append(
                [
                    f"{100 * x:.0f}%",
                    LABEL[policy],
                    f"{_mean(fn):.1f}" + (f" ± {_std(fn):.1f}" if len(fn) > 1 else ""),
                    *(f"{_mean([r['per_query'][q] for r in g]):.1f}" for q in QUERIES),
                    f"{sum(r['fp'] for r in g):,}",
                    f"{_mean([r['shed_runs'] for r in g]):,.0f}",
                    f"{_mean([r['shed_events'] for r in g]):,.0f}",
                    f"{max(r['max'] for r in g) / bound:.2f}",
                    f"{max(r['p99'] for r in g) / bound:.2f}",
                    f"{max(r['unshed_max'] for r in g) / bound:.1f}",
                ]
            )
    print_table(
        f"False negatives (% of the unshed run's matches; weighted: Q3 x2), {n_events:,} events, {seeds} seed(s), "
        f"LB = {bound_ms:g} ms",
        [
            "overload",
            "policy",
            "FN % (weighted)",
            *(f"FN % {q}" for q in QUERIES),
            "FP",
            "runs shed",
            "events shed",
            "max lat / LB",
            "p99 / LB",
            "unshed max / LB",
        ],
        table,
        plain=plain,
    )

    cmp_rows = []
    for x in overloads:
        ps = _mean([r["fn"] for r in groups[(x, "pspice")]])
        for other in ("random_runs", "same", "random_events"):
            o = _mean([r["fn"] for r in groups[(x, other)]])
            lo = min(ps, o)
            rel = "-" if lo <= 0 else f"{100 * (o - ps) / lo:+.0f}%"
            fewer = "-" if o <= 0 else f"{100 * (o - ps) / o:.0f}%"
            cmp_rows.append([f"{100 * x:.0f}%", LABEL[other], f"{ps:.1f}", f"{o:.1f}", fewer, rel])
    print_table(
        "pSPICE against the baselines (mean FN %): 'fewer' = 1 - pSPICE / baseline; 'paper-style' = difference over "
        "the smaller value (how the paper states '70% fewer'; negative: the baseline lost fewer)",
        ["overload", "baseline", "pSPICE FN %", "baseline FN %", "fewer FN", "paper-style"],
        cmp_rows,
        plain=plain,
    )

    over_rows = []
    for policy in (*POLICIES, "same"):
        g = [r for x in overloads for r in groups[(x, policy)]]
        proc = sum(r["processing"] for r in g)
        shed = sum(r["shedding"] for r in g)
        over = sum(r["overhead"] for r in g)
        over_rows.append(
            [
                LABEL[policy],
                f"{proc:.2f}",
                f"{over:.3f}",
                f"{shed:.3f}",
                f"{100 * over / proc:.1f}%" if proc else "-",
                f"{100 * shed / proc:.1f}%" if proc else "-",
                f"{_mean([r['shed_calls'] for r in g]):,.0f}",
                f"{_mean([r['rebuilds'] for r in g]):.1f}",
            ]
        )
    print_table(
        "Overhead, measured (time.perf_counter, all overloads and seeds): processing = the matchers' feed; deciding = "
        "detector, latency fits, transition observation, model rebuilds; shedding = victim selection and removal",
        [
            "policy",
            "processing s",
            "deciding s",
            "shedding s",
            "deciding / processing",
            "shedding / processing",
            "shed passes / run",
            "table rebuilds / run",
        ],
        over_rows,
        plain=plain,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_shedding", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="8,000 events, 1 seed, LB 20 ms")
    ap.add_argument("--events", type=int, help="events per trace (default 30,000; quick 8,000)")
    ap.add_argument("--seeds", type=int, help="traces (seeds 1..N; default 3, quick 1)")
    ap.add_argument("--overloads", default="1.2,1.5,2.0", help="input rates as multiples of capacity")
    ap.add_argument("--bound-ms", type=float, help="latency bound (default 50 ms; quick 20 ms)")
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    args = ap.parse_args(argv)
    args.events = args.events or (8_000 if args.quick else 30_000)
    args.seeds = args.seeds or (1 if args.quick else 3)
    args.bound_ms = args.bound_ms or (20.0 if args.quick else 50.0)
    args.overloads = [float(x) for x in args.overloads.split(",")]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"bench_shedding {'--quick ' if args.quick else ''}on Python {platform.python_version()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}), "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    print(
        f"cost model: {COST.per_event * 1e6:g} us + {COST.per_run * 1e6:g} us per run stepped; shedding pass "
        f"{COST.shed_base * 1e6:g} us + {COST.shed_per_run * 1e6:g} us per run scanned"
    )
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for seed in range(1, args.seeds + 1):
        rows += experiment(args.events, seed, args.overloads, args.bound_ms)
    report(rows, args.bound_ms, args.events, args.seeds, args.plain)
    print(f"\ntotal wall time {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
