"""``hcep stream``'s stateful operator without Spark, minute by minute of event time: what grows as a stream runs.

    python -m benchmarks.bench_stream_operator                        # 250 ev/s for 25 minutes of event time
    python -m benchmarks.bench_stream_operator --rate 500 --seconds 600 --profile-from 480

The events are :class:`benchmarks.bench_stream_sustained.Trace`'s (the sustained benchmark's jobs as concurrent
copies, its Ganglia rounds once), cut into micro-batches of ``--trigger`` seconds of event time, routed as the
stream routes them (``app.spark.stream.source.route``, the Ganglia types declared keyless as the benchmark's
``hcep stream`` does) and handed to the buckets (``app.spark.stream.state.Bucket``) under Spark's watermark rule,
with an in-memory state store: the operator's own Python, without the JVM, Arrow and the state store's round trips.
Each bucket's meta is read and written every batch as a Python worker that did not write it would (a worker that
did keeps it parsed); each call runs as ``BucketProcessor``'s do (``state.operator_call``): the automatic collector
paused (``--collector on`` to compare), the objects frozen at its end, and every ``FULL_GC_EVERY``-th call a full
collection (``--full-gc-every N`` to compare).  ``--workers N``: each call runs on one of N simulated Python workers
at random, each with its own caches (the groups it keeps restored, pages, segments), as Spark hands a bucket's task
to whichever worker is free: a group the other worker wrote is restored from the store.

Per minute of event time: events, feeds (events handed to a group's evaluators: own and keyless), feeds per event,
the operator's CPU seconds, the buckets' meta (KB, compressed), groups alive.  A rate and a length the sustained
benchmark cannot afford in wall time (its event time is the wall clock) run here in minutes: the state that a
10-minute Spark run has only begun to build is built here in full.  ``--profile-from S``: cProfile from event second
S to the end, the top functions printed.
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"
KEYLESS = frozenset({"Metric", "LoadStd", "Balance", "Imbalance"})


def _plan(pack: Path, buckets: int) -> Any:
    from app.commands.batch import load_plans
    from app.spark.stream.plan import build_plan

    loader = argparse.Namespace(pack=str(pack), query=None, tick=None, strategy=None, output=None, confidence=None)
    return build_plan(load_plans(loader), max_delta=7.5, buckets=buckets, keyless_types=KEYLESS)


def run(
    rate: float,
    seconds: int,
    trigger: int,
    buckets: int,
    pack: Path,
    profile_from: int | None,
    full_gc_every: int | None = None,
    collector: str = "paused",
    workers: int = 1,
) -> int:
    import random
    from collections import OrderedDict

    import lz4.block

    from app.spark.stream import state
    from app.spark.stream.source import route
    from app.spark.stream.state import Bucket, MemoryStore, compiled_for, decode_meta, encode_meta, operator_call
    from benchmarks.bench_stream_sustained import Trace

    if full_gc_every is not None:
        state.FULL_GC_EVERY = full_gc_every

    trace = Trace(rate, seconds)
    plan = _plan(pack, buckets)
    compiled = compiled_for(plan)
    metas: dict[int, bytes] = {}
    stores = {b: MemoryStore() for b in range(plan.buckets)}
    max_wt = -math.inf
    cpu_total = 0.0
    profiler: cProfile.Profile | None = None
    print(f"# {trace.copies} copies of the workload's jobs, {plan.buckets} buckets, batches of {trigger} s")
    print("| event minute | events | feeds | feeds/event | operator cpu s | meta KB | groups |")
    print("|---|---|---|---|---|---|---|")
    minute = {"events": 0, "feeds": 0, "cpu": 0.0}
    # Each simulated Python worker's caches (the groups it keeps restored, pages, segments, key maps); a call runs on
    # one of them at random, as Spark hands a bucket's task to whichever worker is free.
    caches = ("_LIVE", "_PAGES", "_SEGS", "_SEGMAP")
    kept = [{name: getattr(state, name) for name in caches}]  # the first is this process's own
    for _ in range(workers - 1):
        kept.append({name: OrderedDict() if name in ("_LIVE", "_PAGES") else {} for name in caches})
    pick = random.Random(0)
    for s0 in range(0, seconds, trigger):
        if profile_from is not None and profiler is None and s0 >= profile_from:
            profiler = cProfile.Profile()
            profiler.enable()
        lines = [line for s in range(s0, min(s0 + trigger, seconds)) for line in trace.second(s)]
        wm_ms = 0 if max_wt == -math.inf else int((max_wt - plan.bound) * 1000)
        by_bucket: dict[int, list[tuple]] = {}
        for i, text in enumerate(lines):
            for row in route(plan, f"second-{s0}", i, text, f"second-{s0}:{i}", 2**62):
                by_bucket.setdefault(row[0], []).append(row[1:-1])
                if row[3] not in ("marker", "bad"):
                    max_wt = max(max_wt, row[-1])
        t0 = time.process_time()
        feeds = groups = meta_bytes = 0
        for b in range(plan.buckets):
            rows = by_bucket.get(b, [])
            if not rows and b not in metas:
                continue
            if workers > 1:
                for name, cache in kept[pick.randrange(workers)].items():
                    setattr(state, name, cache)
            # As BucketProcessor: every FULL_GC_EVERY-th call collects the worker's heap, and the call's objects are
            # frozen at its end; the automatic collector paused during it (``--collector on``: not paused).
            with operator_call(pause_collector=collector == "paused"):
                meta = decode_meta(lz4.block.decompress(metas[b])) if b in metas else None
                bucket = Bucket(plan, compiled, meta, stores[b], b)
                out = bucket.handle(rows, wm_ms)
                metas[b] = lz4.block.compress(encode_meta(bucket.meta()))  # as BucketProcessor
            meta_bytes += len(metas[b])
            for r in out:
                if r[0] == "clock":
                    feeds += r[-6]
                    groups += r[-5]
        spent = time.process_time() - t0
        minute["cpu"] += spent
        cpu_total += spent
        minute["events"] += len(lines)
        minute["feeds"] += feeds
        if (s0 + trigger) % 60 == 0 or s0 + trigger >= seconds:
            n = max(minute["events"], 1)
            print(
                f"| {math.ceil((s0 + trigger) / 60)} | {minute['events']:,} | {minute['feeds']:,} | "
                f"{minute['feeds'] / n:.2f} | {minute['cpu']:.1f} | {meta_bytes // 1024:,} | {groups:,} |",
                flush=True,
            )
            minute = {"events": 0, "feeds": 0, "cpu": 0.0}
    for name, cache in kept[0].items():
        setattr(state, name, cache)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\noperator cpu {cpu_total:.1f} s in all; peak RSS {peak_mb:,.0f} MB (the trace's own included)")
    if profiler is not None:
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(20)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=250.0, help="events/s (250)")
    parser.add_argument("--seconds", type=int, default=1500, help="seconds of event time (1500)")
    parser.add_argument("--trigger", type=int, default=10, help="seconds of event time per micro-batch (10)")
    parser.add_argument("--buckets", type=int, default=4, help="buckets (4: hcep stream's on local[2])")
    parser.add_argument("--pack", type=Path, default=PACK, help="the query pack (queries/hadoop.yaml)")
    parser.add_argument("--profile-from", type=int, default=None, help="profile from this event second on")
    parser.add_argument(
        "--full-gc-every", type=int, default=None, help="calls between full collections (the operator's FULL_GC_EVERY)"
    )
    parser.add_argument(
        "--collector",
        choices=("paused", "on"),
        default="paused",
        help="the automatic collector within a call: paused, as the operator runs (default), or on",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Python workers, each with its own caches; each call runs on one at random, as in Spark (1)",
    )
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.seconds <= 0 or args.trigger <= 0 or args.buckets <= 0 or args.workers <= 0:
        parser.error("--rate, --seconds, --trigger, --buckets and --workers must be positive")
    return run(
        args.rate,
        args.seconds,
        args.trigger,
        args.buckets,
        args.pack,
        args.profile_from,
        args.full_gc_every,
        args.collector,
        args.workers,
    )


if __name__ == "__main__":
    raise SystemExit(main())
