"""Peak memory against input size, with the default memory bounds and without them (issue 18).

Each configuration runs in a child process of its own (so that ``ru_maxrss`` is its peak resident set alone) under an
address-space limit (``--budget`` MB) and a CPU-time limit (``--timeout`` s): an unbounded blow-up ends as
``MemoryError`` or a timeout instead of taking the machine down.  The child generates its events lazily and feeds the
engine directly, counting records without holding them, so the figures are the engine's own state:

- ``trend``: ``SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) RETURN count(*)`` over one A and n rising B --
  GRETA cannot evaluate ``b[..i-1]``, so every trend is enumerated: 2**n NFA^b runs;
- ``flood``: ``SEQ(A a, B b) WHERE [k] WITHIN 1 day`` under skip_till_next_match over n A spread over n / 10 jobs
  and no B: one run per A, ten per key (so the total bound is the one that binds);
- ``signatures``: ``SEQ(A a, B+ b[], C c) WHERE [k]`` per match over possible worlds, one A, n B, one C: 2**n
  signatures closed by the C.

    python -m benchmarks.bench_memory [--quick] [--budget MB] [--timeout S]
    python -m benchmarks.bench_memory --pack-load [--nodes N] [--hours H]

``--pack-load`` checks that the default bounds never bind on the Hadoop pack's normal load: it simulates a cluster
(``hcep simulate``, as ``bench_hadoop_pack`` does), runs the pack without bounds and prints, per query, the most
partial matches seen at once (NFA^b runs per key and in total) or enumerated for one closing event and one event
(possible worlds), next to the default bounds.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

from engine import Event, compile_query
from engine.evaluate import PackRunner, make_matcher
from engine.runtime import limits as run_limits

QUERIES = {
    "trend": (
        "PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 1 hour RETURN count(*)",
        "skip_till_any_match",
    ),
    "flood": ("PATTERN SEQ(A a, B b) WHERE [k] WITHIN 1 day", "skip_till_next_match"),
    "signatures": ("PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 1 hour", "skip_till_any_match"),
}
SIZES = {
    "trend": [10, 15, 20, 25, 30, 60],
    "flood": [10_000, 100_000, 300_000, 1_000_000],
    "signatures": [10, 14, 18, 22, 40],
}
QUICK = {"trend": [10, 20, 25], "flood": [10_000, 300_000], "signatures": [10, 18]}


def events(scenario: str, n: int) -> Iterator[Event]:
    if scenario == "flood":
        for i in range(n):
            yield Event("A", i * 0.05, {"k": i % max(1, n // 10)}, id=f"a{i}", seq=i)
        return
    yield Event("A", 0.0, {"k": 1}, id="a", seq=0)
    for i in range(1, n + 1):
        yield Event("B", float(i), {"k": 1, "v": i}, id=f"b{i}", seq=i)
    if scenario == "signatures":
        yield Event("C", float(n + 1), {"k": 1}, id="c", seq=n + 1)


def child(scenario: str, n: int, bounded: bool) -> dict:
    """Feed one configuration; the peak resident set of this process and what came out."""
    query, strategy = QUERIES[scenario]
    cq = compile_query(query, strategy=strategy)
    limits = run_limits.Limits() if bounded else run_limits.Limits(None, None)
    runner = PackRunner.of([cq], 0, limits=limits)  # the driver every command feeds the engine through
    start = time.process_time()
    records = 0
    for ev in events(scenario, n):
        records += len(runner.feed(ev))
    records += len(runner.flush())
    return {
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": time.process_time() - start,
        "records": records,
        "dropped": sum(runner.limit_drops().values()),
    }


def measure(scenario: str, n: int, bounded: bool, budget_mb: int, timeout: float) -> str:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (budget_mb * 2**20, budget_mb * 2**20))
        resource.setrlimit(resource.RLIMIT_CPU, (int(timeout), int(timeout) + 1))

    cmd = [sys.executable, "-m", "benchmarks.bench_memory", "--child", scenario, str(n), str(int(bounded))]
    proc = subprocess.run(cmd, preexec_fn=limit, capture_output=True, text=True, timeout=timeout * 3 + 30)
    if proc.returncode != 0:
        if "MemoryError" in proc.stderr:
            return f"MemoryError (> {budget_mb} MB)"
        if proc.returncode < 0:
            return f"killed (> {timeout:g} s CPU)"
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"died under the {budget_mb} MB limit ({last[:60]})"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return f"{got['rss_mb']:.0f} MB, {got['seconds']:.1f} s, {got['records']:,} records, {got['dropped']:,} dropped"


def pack_load(nodes: int, hours: float, seed: int) -> None:
    """The largest partial-match counts of the Hadoop pack on a simulated cluster, without bounds."""
    import tempfile

    from benchmarks.bench_hadoop_pack import PACK, simulated_events, to_events
    from engine.language.packs import load_pack
    from engine.plan.compiler import compile_spec

    pack = load_pack(PACK)
    with tempfile.TemporaryDirectory(prefix="hcep-memory-") as tmp:
        objs, account = simulated_events(nodes, hours, seed, tmp, float(pack.settings.get("imbalance_threshold", 1.0)))
    events = to_events(objs, pack.tick)
    widest = max((e.thi - e.tlo for e in events), default=0)
    specs = [q for q in pack.queries if q.enabled]
    # Evaluators alone, not a runner: the peaks below are read from (and hooked into) each evaluator's internals.
    matchers = [
        run_limits.apply(make_matcher(compile_spec(q, pack.tick), widest), run_limits.Limits(None, None)) for q in specs
    ]
    peaks = {q.name: [0, 0] for q in specs}  # per key, total (or per closing, per step)
    for q, m in zip(specs, matchers, strict=True):
        if hasattr(m, "max_signatures_per_closing"):
            peak = peaks[q.name]
            close_event, close = m._close_event, m._close

            def timed_event(z, out, m=m, peak=peak, close_event=close_event):
                before = m.signatures
                close_event(z, out)
                peak[0] = max(peak[0], m.signatures - before)

            def timed_step(safe, m=m, peak=peak, close=close):
                before = m.signatures
                got = close(safe)
                peak[1] = max(peak[1], m.signatures - before)
                return got

            m._close_event, m._close = timed_event, timed_step
    for i, ev in enumerate(events):
        for q, m in zip(specs, matchers, strict=True):
            m.feed(ev)
            pools = getattr(m, "pools", None)
            if pools is not None:
                peak = peaks[q.name]
                if m.alive > peak[1] or i % 256 == 0:
                    peak[1] = max(peak[1], m.alive)
                    peak[0] = max(peak[0], max((len(p) for p in pools.values()), default=0))
    for m in matchers:
        m.flush()
    bounds = run_limits.Limits()
    print(
        f"Hadoop pack, simulated cluster: {nodes} nodes, {hours:g} h, seed {seed}: {len(events):,} events ({account})"
    )
    print(
        f"| query | evaluator | most per key (bound {bounds.runs_per_key:,}) | most in total (bound {bounds.runs:,}) |"
    )
    print("|---|---|---|---|")
    for q, m in zip(specs, matchers, strict=True):
        kind = "NFA^b runs" if hasattr(m, "pools") else "signatures per closing / per event"
        print(f"| {q.name} | {kind} | {peaks[q.name][0]:,} | {peaks[q.name][1]:,} |")
    from engine.evaluate import StreamedMatch

    again = StreamedMatch([compile_spec(q, pack.tick) for q in specs], events)  # the default bounds, work included
    records = sum(1 for _ in again)
    print(f"With the default bounds: {records:,} records, dropped: {again.dropped() or 'nothing'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, smaller sizes")
    parser.add_argument("--only", choices=sorted(SIZES), help="one scenario")
    parser.add_argument("--budget", type=int, default=1024, help="address-space limit of each child (MB)")
    parser.add_argument("--timeout", type=float, default=120.0, help="CPU-time limit of each child (s)")
    parser.add_argument("--pack-load", action="store_true", help="the Hadoop pack's peaks on a simulated cluster")
    parser.add_argument("--nodes", type=int, default=100, help="--pack-load: simulated nodes (100)")
    parser.add_argument("--hours", type=float, default=1.0, help="--pack-load: simulated hours (1)")
    parser.add_argument("--seed", type=int, default=7, help="--pack-load: simulation seed (7)")
    parser.add_argument("--child", nargs=3, metavar=("SCENARIO", "N", "BOUNDED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        scenario, n, bounded = args.child
        print(json.dumps(child(scenario, int(n), bounded == "1")))
        return 0
    if args.pack_load:
        pack_load(args.nodes, args.hours, args.seed)
        return 0
    sizes = QUICK if args.quick else SIZES
    bounds = run_limits.Limits()
    print(
        f"peak resident memory of a child process against input size; default bounds runs_per_key="
        f"{bounds.runs_per_key:,}, runs={bounds.runs:,}; each child limited to {args.budget} MB of address space "
        f"and {args.timeout:g} s of CPU"
    )
    print("| scenario | n | default bounds | no bounds |")
    print("|---|---|---|---|")
    for scenario, ns in sizes.items():
        if args.only and scenario != args.only:
            continue
        over = False
        for n in ns:
            with_bounds = measure(scenario, n, True, args.budget, args.timeout)
            without = (
                "(not run: smaller n already over)" if over else measure(scenario, n, False, args.budget, args.timeout)
            )
            over = over or "Error" in without or "killed" in without
            print(f"| {scenario} | {n:,} | {with_bounds} | {without} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
