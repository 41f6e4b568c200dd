"""The whole Hadoop pack (queries/hadoop.yaml, docs/semantics.md section 7) over a simulated cluster trace: events/s
per query and for the pack.

Run from the repository root::

    python3 -m benchmarks.bench_hadoop_pack                       # 1,000 nodes x 1 hour, simulator trace
    python3 -m benchmarks.bench_hadoop_pack --source synthetic --scale 0.05
    python3 -m benchmarks.bench_hadoop_pack --quick               # 20 nodes, 3 minutes of arrivals

Sources of the trace (``--source``):

- ``simulate`` (the default when it works): ``hcep simulate --nodes N --hours H --seed S --out DIR`` (the SWIM job mix
  on a modelled YARN cluster, written as genuine job history files and task logs), ``hcep collect hadoop DIR/hadoop``
  to turn them into events, and the Ganglia ``load_one`` samples (``DIR/ganglia/samples.jsonl``) turned into
  ``Metric``, ``LoadStd`` and ``Balance``/``Imbalance`` events by the Ganglia collector's own derivation
  (``collectors.ganglia.derive``) with the pack's ``imbalance_threshold``.
- ``synthetic``: a generator written here with the event vocabulary of docs/semantics.md section 7 at about 13.6
  events/s/node (the SASE++ case study's rate): jobs of 50-400 maps and 16-48 reducers, every reducer pulling every map
  output (``DataPull`` + ``DataIO`` -size), ``delta`` 0.5 s; ``LoadStd`` and ``Balance``/``Imbalance`` every 15 s with
  ``delta`` 7.5 s.

Every query is compiled as the pack says and run by the evaluator the engine picks for it
(:func:`engine.runtime.matcher.make_matcher`: the exact imprecise evaluator for skip_till_any_match, the NFA^b runtime
on interval midpoints for the others), each over the whole stream (sorted as ``match_events`` sorts it), through the
matcher's ``feed_many`` per 1,000 events (``--per-event``: ``feed`` per event, as before ``feed_many`` existed); the
first pack row is the sum of the six (each evaluator class measured alone, so ``make_matcher``).  The second pack row
runs the six in one pass through :class:`engine.evaluate.PackRunner`, the driver of every command, under the pack's
memory bounds (its feeder gives each event to the queries that name its type, the others only see their clock move;
the same records in the same order).  Throughput = events / CPU seconds of feed + flush; ``--repeat N``
reports the fastest of N runs of each row.  Target: 300,000 events/s for the pack on one core.  Never asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

from benchmarks.bench_sasepp import Outcome, drive, header
from benchmarks.common import fmt_int, fmt_rate, print_table
from engine.evaluate import PackRunner, make_matcher
from engine.events import Event, event_from_json
from engine.language.packs import Pack, load_pack
from engine.limits import from_settings
from engine.plan.compiler import compile_spec
from engine.runtime.matcher import sort_events

PACK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "queries", "hadoop.yaml")
TARGET = 300_000
START = 1_700_000_000.0

# ---------------------------------------------------------------------------------------------------- simulator trace


def simulated_events(
    nodes: int, hours: float, seed: int, workdir: str, threshold: float, metrics: bool = True
) -> tuple[list[dict], str]:
    """Run ``hcep simulate`` and ``hcep collect hadoop`` in-process; derive the Ganglia events from the samples.
    Returns the event objects (JSON dicts) and a one-line account of what was produced."""
    from app.cli import main as hcep
    from collectors.ganglia.derive import round_events, rounds_from_samples

    out = os.path.join(workdir, "sim")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = hcep(
            [
                "simulate",
                "--nodes",
                str(nodes),
                "--hours",
                str(hours),
                "--seed",
                str(seed),
                "--out",
                out,
                "--ganglia",
                "none",
                "--no-progress",
                "--force",
            ]
        )
        if rc != 0:
            raise RuntimeError(f"hcep simulate exited {rc}: {err.getvalue().strip()}")
        hadoop_file = os.path.join(workdir, "hadoop.jsonl")
        rc = hcep(["collect", "hadoop", os.path.join(out, "hadoop"), "--out", hadoop_file, "--no-progress"])
        if rc != 0:
            raise RuntimeError(f"hcep collect hadoop exited {rc}: {err.getvalue().strip()}")
    with open(hadoop_file, encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    rows = []
    with open(os.path.join(out, "ganglia", "samples.jsonl"), encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            rows.append((s["ts"], s["cluster"], s["host"], s["metric"], s["value"]))
    for rnd in rounds_from_samples(rows):
        events.extend(round_events(rnd, threshold=threshold, raw=metrics))
    account = " ".join(line.strip() for line in err.getvalue().splitlines() if line.strip())
    return events, account


# ---------------------------------------------------------------------------------------------------- synthetic trace


def synthetic_events(nodes: int, hours: float, seed: int, threshold: float) -> Iterator[dict]:
    """Events of docs/semantics.md section 7 for ``nodes`` nodes over ``hours`` of job arrivals, about 13.6
    events/s/node (unsorted).

    A job (arrival rate ``nodes / 1000`` per second) has M ~ U(50, 400) maps finishing uniformly over its map phase
    (60-300 s) and R ~ U(16, 48) reducers, each starting during the map phase and pulling every map output once it
    exists (``DataPull`` with the fetch period, 2 % of them slow; ``DataIO`` -size), then ending a few seconds after
    its last pull; each map writes its output (``DataIO`` +size).  Ganglia: ``LoadStd`` (a random walk of the load
    std-dev) and ``Balance``/``Imbalance`` every 15 s."""
    rng = random.Random(seed)
    span = hours * 3600.0
    hosts = [f"node{i:04d}" for i in range(nodes)]
    rate = nodes / 1000.0
    t = START
    n_job = 0
    end_all = START + span
    while True:
        t += rng.expovariate(rate)
        if t >= end_all:
            break
        n_job += 1
        job = f"job_{n_job:06d}"
        maps, reduces = rng.randint(50, 400), rng.randint(16, 48)
        map_phase = rng.uniform(60, 300)
        yield {
            "type": "JobStart",
            "ts": t,
            "id": f"{job}/start",
            "delta": 0.5,
            "job_id": job,
            "maps": maps,
            "reduces": reduces,
            "user": "u",
            "queue": "default",
        }
        map_done = []
        for m in range(maps):
            done = t + rng.uniform(3, map_phase)
            period = rng.uniform(2, 30)
            task = f"{job}_m_{m:05d}"
            size = rng.randint(1 << 20, 64 << 20)
            map_done.append((done, task, size))
            host = rng.choice(hosts)
            yield {
                "type": "Mapper",
                "ts": done,
                "id": f"{task}/mapper",
                "delta": 0.5,
                "job_id": job,
                "task_id": task,
                "attempt_id": f"{task}_0",
                "host": host,
                "period": period,
                "status": "SUCCEEDED",
            }
            yield {
                "type": "DataIO",
                "ts": done + 0.01,
                "id": f"{task}/write",
                "delta": 0.5,
                "job_id": job,
                "task_id": task,
                "size": size,
            }
        last_end = t
        for r in range(reduces):
            task = f"{job}_r_{r:05d}"
            host = rng.choice(hosts)
            start = t + rng.uniform(0.2, 0.6) * map_phase
            yield {
                "type": "ReducerStart",
                "ts": start,
                "id": f"{task}/start",
                "delta": 0.5,
                "job_id": job,
                "task_id": task,
                "host": host,
            }
            last = start
            for done, mtask, size in map_done:
                period = rng.uniform(0.05, 1.0) * (rng.uniform(4, 8) if rng.random() < 0.02 else 1.0)
                fetched = max(done, start) + period + rng.uniform(0, 5)
                last = max(last, fetched)
                yield {
                    "type": "DataPull",
                    "ts": fetched,
                    "id": f"{task}/pull/{mtask}",
                    "delta": 0.5,
                    "job_id": job,
                    "task_id": task,
                    "map_task": mtask,
                    "host": host,
                    "period": period,
                    "bytes": size,
                }
                yield {
                    "type": "DataIO",
                    "ts": fetched + 0.01,
                    "id": f"{task}/fetch/{mtask}",
                    "delta": 0.5,
                    "job_id": job,
                    "task_id": task,
                    "size": -size,
                }
            end = last + rng.uniform(1, 10)
            last_end = max(last_end, end)
            yield {
                "type": "ReducerEnd",
                "ts": end,
                "id": f"{task}/end",
                "delta": 0.5,
                "job_id": job,
                "task_id": task,
                "host": host,
            }
            yield {
                "type": "Reducer",
                "ts": end,
                "id": f"{task}/reducer",
                "delta": 0.5,
                "job_id": job,
                "task_id": task,
                "attempt_id": f"{task}_0",
                "host": host,
                "period": end - start,
                "status": "SUCCEEDED",
            }
        yield {
            "type": "JobEnd",
            "ts": last_end + 1.0,
            "id": f"{job}/end",
            "delta": 0.5,
            "job_id": job,
            "status": "SUCCEEDED",
            "maps": maps,
            "reduces": reduces,
        }
    val = 0.5
    ts = START
    while ts < end_all + 600:
        val = max(0.0, val + rng.gauss(0, 0.15))
        kind = "Imbalance" if val > threshold else "Balance"
        yield {
            "type": "LoadStd",
            "ts": ts,
            "id": f"ganglia/LoadStd@{ts:.0f}",
            "delta": 7.5,
            "val": val,
            "mean": 1.0,
            "hosts": nodes,
            "cluster": "hadoop",
        }
        yield {
            "type": kind,
            "ts": ts,
            "id": f"ganglia/{kind}@{ts:.0f}",
            "delta": 7.5,
            "val": val,
            "threshold": threshold,
            "cluster": "hadoop",
        }
        ts += 15.0


# ---------------------------------------------------------------------------------------------------- benchmark


def to_events(objs: Sequence[dict], tick: float) -> list[Event]:
    """JSON dicts -> events (docs/semantics.md section 1), in the time order the evaluators need."""
    return sort_events(event_from_json(obj, i, tick=tick) for i, obj in enumerate(objs))


class Driven:
    """A :class:`engine.evaluate.PackRunner` as :func:`benchmarks.bench_sasepp.drive` drives an evaluator: its
    records without their specs, its live partial matches summed over the queries."""

    def __init__(self, runner: PackRunner) -> None:
        self.runner = runner

    def feed(self, ev: Event) -> list[dict[str, Any]]:
        return [r for _, r in self.runner.feed(ev)]

    def feed_many(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        return [r for _, r in self.runner.feed_many(events)]

    def flush(self) -> list[dict[str, Any]]:
        return [r for _, r in self.runner.flush()]

    def runs_alive(self) -> int:
        return sum(self.runner.runs_alive().values())


def run_pack(
    pack: Pack,
    events: list[Event],
    budget: float,
    only: Sequence[str] | None,
    profile: str | None,
    plain: bool,
    title: str,
    per_event: bool = False,
    repeat: int = 1,
) -> None:
    """Each query over the whole stream; a table per query and the pack total."""
    widest = max((e.thi - e.tlo for e in events), default=0)
    rows: list[list[str]] = []
    cqs: list = []
    total_cpu = 0.0
    complete = True
    counts: dict[str, int] = {}
    for e in events:
        counts[e.type] = counts.get(e.type, 0) + 1
    for spec in pack.queries:
        if not spec.enabled or (only and spec.name not in only):
            continue
        cq = compile_spec(spec, pack.tick)
        relevant = sum(counts.get(t, 0) for t in cq.relevant_types)
        cqs.append(cq)
        best: Outcome | None = None
        for _ in range(max(1, repeat)):  # the fastest of ``repeat`` runs: the least disturbed by other load
            gc.collect()
            m = make_matcher(cq, widest)
            if per_event or not hasattr(m, "feed_many"):
                o: Outcome = drive(m, events, budget, sample_every=1000, hard_factor=1.5)
            else:
                o = drive(m, events, budget, sample_every=1000, hard_factor=1.5, batched=True)
            if best is None or o.cpu < best.cpu:
                best = o
        o = best
        total_cpu += o.cpu
        complete = complete and not o.stopped
        rows.append(
            [
                spec.name,
                f"{spec.strategy.replace('skip_till_', '').replace('_match', '')}/{spec.output}",
                type(m).__name__,
                fmt_int(o.events),
                fmt_int(relevant),
                f"{o.cpu:.2f}",
                fmt_rate(o.rate),
                f"{o.rate / TARGET:.2f}",
                fmt_int(o.matches),
                fmt_int(o.runs_max),
                o.stopped or "-",
            ]
        )
        del m
    n = len(events)
    rows.append(
        [
            "pack",
            "all six, time summed",
            "",
            fmt_int(n),
            "",
            f"{total_cpu:.2f}",
            fmt_rate(n / total_cpu if total_cpu else 0.0) + ("" if complete else "*"),
            f"{(n / total_cpu if total_cpu else 0.0) / TARGET:.2f}",
            "",
            "",
            "-" if complete else "partial",
        ]
    )
    if not per_event and cqs:
        best = None
        for _ in range(max(1, repeat)):
            gc.collect()
            runner = Driven(PackRunner.of(cqs, widest, limits=from_settings(pack.settings)))
            o = drive(runner, events, budget * len(cqs), sample_every=1000, hard_factor=1.5, batched=True)
            if best is None or o.cpu < best.cpu:
                best = o
        o = best
        rows.append(
            [
                "pack",
                "one pass (PackRunner)",
                "",
                fmt_int(o.events),
                "",
                f"{o.cpu:.2f}",
                fmt_rate(o.rate) + ("" if not o.stopped else "*"),
                f"{o.rate / TARGET:.2f}",
                fmt_int(o.matches),
                fmt_int(o.runs_max),
                o.stopped or "-",
            ]
        )
    print_table(
        title,
        [
            "query",
            "strategy/output",
            "evaluator",
            "events",
            "relevant",
            "CPU s",
            "events/s",
            "of 300k",
            "matches",
            "runs/buffer max",
            "stopped",
        ],
        rows,
        plain=plain,
    )
    mix = ", ".join(f"{t} {c:,}" for t, c in sorted(counts.items(), key=lambda kv: -kv[1]))
    print(f"\nstream: {n:,} events ({mix}); widest interval {widest} ticks")
    if profile:
        spec = pack.get(profile)
        cq = compile_spec(spec, pack.tick)
        from pyinstrument import Profiler

        m = make_matcher(cq, widest)
        prof = Profiler(interval=0.001)
        prof.start()
        if per_event or not hasattr(m, "feed_many"):
            drive(m, events, budget, sample_every=1000, hard_factor=1.5)
        else:
            drive(m, events, budget, sample_every=1000, hard_factor=1.5, batched=True)
        prof.stop()
        print(f"\npyinstrument, {profile}:\n")
        print(prof.output_text(unicode=False, color=False, show_all=False))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_hadoop_pack", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 nodes, 0.05 hours")
    ap.add_argument(
        "--source",
        choices=("auto", "simulate", "synthetic"),
        default="auto",
        help="auto: the simulator when it works, else the synthetic generator",
    )
    ap.add_argument("--nodes", type=int, help="cluster size (default 1000, quick 20)")
    ap.add_argument("--hours", type=float, help="hours of job arrivals (default 1, quick 0.05)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the hours (0.05: 3 minutes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, help="CPU seconds per query (default 300, quick 5)")
    ap.add_argument("--query", action="append", help="run only this query (repeatable)")
    ap.add_argument("--no-metrics", action="store_true", help="simulate: leave out the raw Ganglia Metric events")
    ap.add_argument("--workdir", help="where the simulator writes (default: a temporary directory, removed)")
    ap.add_argument("--keep", help="also write the collected events to this JSONL file")
    ap.add_argument("--events", help="read the events from this JSONL file instead (e.g. an earlier --keep)")
    ap.add_argument("--profile", metavar="QUERY", help="run QUERY again under pyinstrument and print the call tree")
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    ap.add_argument("--repeat", type=int, default=1, help="report the fastest of N runs of each row (default 1)")
    ap.add_argument(
        "--per-event",
        action="store_true",
        help="call feed once per event (the figures before feed_many) instead of feed_many per chunk",
    )
    args = ap.parse_args(argv)
    q = args.quick
    args.nodes = args.nodes or (20 if q else 1000)
    args.hours = (args.hours or (0.05 if q else 1.0)) * args.scale
    args.budget = args.budget if args.budget is not None else (5.0 if q else 300.0)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Build the trace, run the pack, print the tables; return the exit status."""
    args = parse_args(argv)
    started = time.perf_counter()
    print(header("bench_hadoop_pack", argv))
    pack = load_pack(PACK)
    threshold = float(pack.settings.get("imbalance_threshold", 1.0))
    account = ""
    if args.events:
        with open(args.events, encoding="utf-8") as f:
            objs = [json.loads(line) for line in f if line.strip()]
        source = f"events from {args.events}"
    else:
        source = args.source
        objs = []
        if source in ("auto", "simulate"):
            workdir = args.workdir or tempfile.mkdtemp(prefix="hcep-bench-")
            try:
                t0 = time.perf_counter()
                objs, account = simulated_events(
                    args.nodes, args.hours, args.seed, workdir, threshold, not args.no_metrics
                )
                source = f"hcep simulate + collect ({time.perf_counter() - t0:.0f} s wall)"
            except Exception as exc:  # noqa: BLE001 - any failure of the other engineer's simulator: fall back
                if source == "simulate":
                    raise
                print(f"simulator unavailable ({type(exc).__name__}: {exc}); using the synthetic generator")
                source = "synthetic"
            finally:
                if not args.workdir:
                    shutil.rmtree(workdir, ignore_errors=True)
        if source == "synthetic":
            objs = list(synthetic_events(args.nodes, args.hours, args.seed, threshold))
            source = "synthetic generator (13.6 events/s/node)"
    if args.keep:
        with open(args.keep, "w", encoding="utf-8") as f:
            for obj in objs:
                f.write(json.dumps(obj) + "\n")
    events = to_events(objs, pack.tick)
    del objs
    if account:
        print(account)
    span = (events[-1].ts - events[0].ts) if events else 0.0
    rate = len(events) / span / args.nodes if span > 0 else 0.0
    gc.collect()
    gc.freeze()
    try:
        run_pack(
            pack,
            events,
            args.budget,
            args.query,
            args.profile,
            args.plain,
            f"Hadoop pack over {source}: {args.nodes:,} nodes x {args.hours:g} h of arrivals, "
            f"{len(events):,} events over {span / 3600:.2f} h ({rate:.2f} events/s/node), tick {pack.tick} s, "
            f"budget {args.budget:g} CPU s per query, "
            f"{'feed per event' if args.per_event else 'feed_many per 1,000 events'}",
            args.per_event,
            args.repeat,
        )
    finally:
        gc.unfreeze()
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
