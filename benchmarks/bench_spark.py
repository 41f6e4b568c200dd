"""Batch matching on Spark: events/s of ``hcep batch`` (the Hadoop pack) over a generated trace, on local[1] and
local[2], and how it scales.

    python3 -m benchmarks.bench_spark                  # 10,000,000 events, local[1] and local[2] (long: see README)
    python3 -m benchmarks.bench_spark --quick          # 40,000 events
    python3 -m benchmarks.bench_spark --events 1000000 --masters local[2]

The trace (``app.spark.tracegen``: jobs of 8 maps and 2 reduces, shuffle pulls, DataIO, Ganglia rounds every 15 s)
is generated once into ``--data`` as JSON-lines part files (in parallel, not timed) and reused.  Each master runs in
its own process (its own JVM: a Spark master cannot change inside one), which times:

- ``batch s``: from the input files to the merged records counted -- parse, statistics, the cut into partition
  groups, the engine in the executors, the cross-group merge (the JVM start is reported apart);
- ``events/s`` = events / batch s;
- ``CPU s``: CPU time of the whole Spark process tree (driver JVM, Python workers) during the batch, and
  ``events/CPU s``: what one core does -- the figure that other jobs on a shared machine disturb least (``load``
  is the 1-minute load average at the end).

``--reference N`` also times the single-process engine (``match_events``, what ``hcep match`` runs) over the first N
events, for comparison.  Every figure is printed, none asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import fmt_int, fmt_rate, print_table

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"


def _config(events: int, seed: int) -> Any:
    from app.spark.tracegen import TraceConfig

    base = TraceConfig(seed=seed)
    return TraceConfig(jobs=base.jobs_for(events), seed=seed)


def _write_part(args: tuple[Any, int, int, str]) -> int:
    from app.spark.tracegen import chunk

    cfg, part, parts, path = args
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for event in chunk(cfg, part, parts):
            out.write(json.dumps(event, separators=(",", ":")))
            out.write("\n")
            n += 1
    return n


def generate(events: int, seed: int, data: Path, procs: int) -> tuple[Path, int]:
    """The trace's part files under ``data`` (reused when already there): (directory, number of events)."""
    cfg = _config(events, seed)
    directory = data / f"trace-{cfg.jobs}jobs-seed{seed}"
    done = directory / "_DONE"
    if done.exists():
        return directory, int(done.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    parts = max(1, min(64, events // 200_000 or 1))
    jobs = [(cfg, i, parts, str(directory / f"part-{i:05d}.jsonl")) for i in range(parts)]
    started = time.monotonic()
    with ProcessPoolExecutor(max_workers=procs) as pool:
        total = sum(pool.map(_write_part, jobs))
    done.write_text(str(total))
    print(
        f"generated {fmt_int(total)} events in {parts} files ({time.monotonic() - started:.0f} s) -> {directory}",
        file=sys.stderr,
    )
    return directory, total


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds used by a process and all its descendants, the reaped ones included (Linux /proc): the JVM and
    the Python workers of a Spark session are children of the process that started it.  0 where /proc is missing."""
    root = os.getpid() if root is None else root
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
    total = 0.0
    for pid, cpu in times.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            total += cpu
    return total


def run_one(
    master: str, inputs: list[str], pack: str, memory: str, progress: bool, spark: Any = None
) -> dict[str, Any]:
    """One batch run; ``spark`` reuses a session (tests), else one is built for ``master``."""
    from app.matching.packs import load_pack
    from app.spark.batch import plans_from_pack, run_batch
    from app.spark.progress import spark_progress
    from app.spark.session import build_session

    started = time.monotonic()
    own = spark is None
    if own:
        spark = build_session(master, driver_memory=memory)
    ready = time.monotonic()
    plans = plans_from_pack(load_pack(pack))
    cpu0 = tree_cpu()
    with spark_progress(spark, f"bench {master}", progress):
        result = run_batch(spark, inputs, plans)
        records = result.records().count()
    seconds = time.monotonic() - ready
    cpu = tree_cpu() - cpu0
    result.release()
    if own:
        spark.stop()
    return {
        "master": master,
        "events": result.stats.events,
        "records": records,
        "jvm_s": ready - started,
        "batch_s": seconds,
        "cpu_s": cpu,
        "load": os.getloadavg()[0],
        "families": [f.describe([p.name for p in plans]) for f in result.families],
    }


def reference(inputs: list[str], pack: str, limit: int) -> dict[str, Any]:
    """The single-process engine over the first ``limit`` events of the inputs (CPU time, as the other benchmarks)."""
    from app.matching.packs import load_pack
    from app.spark.batch import compile_plan, plans_from_pack
    from engine import event_from_json, match_events

    p = load_pack(pack)
    compiled = [compile_plan(x) for x in plans_from_pack(p)]
    events = []
    for path in inputs:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if len(events) >= limit:
                    break
                events.append(event_from_json(json.loads(line), seq=len(events), tick=p.tick))
    started = time.process_time()
    records = match_events(compiled, events)
    return {"events": len(events), "records": len(records), "cpu_s": time.process_time() - started}


def _worker(args: argparse.Namespace) -> int:
    result = run_one(args.worker, args.inputs, args.pack, args.driver_memory, args.progress)
    print(json.dumps(result))
    return 0


def _spawn(master: str, directory: Path, args: argparse.Namespace) -> dict[str, Any]:
    files = sorted(str(p) for p in directory.glob("part-*.jsonl"))
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_spark",
        "--worker",
        master,
        "--pack",
        args.pack,
        "--driver-memory",
        args.driver_memory,
        *(["--progress"] if args.progress else []),
        "--inputs",
        *files,
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_spark", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events in the trace (10,000,000)")
    parser.add_argument("--quick", action="store_true", help="40,000 events")
    parser.add_argument("--masters", default="local[1],local[2]", help="comma-separated Spark masters")
    parser.add_argument("--pack", default=str(PACK), help="query pack (the Hadoop pack)")
    parser.add_argument(
        "--data",
        default=os.environ.get("HCEP_BENCH_DATA", "/tmp/hcep-bench-spark"),
        help="where the generated trace is kept",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--driver-memory", default="3g", help="driver (= local executor) memory")
    parser.add_argument(
        "--reference",
        type=int,
        default=0,
        metavar="N",
        help="also time the single-process engine over the first N events",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="one run in this process with the active (or a new) session: for tests",
    )
    parser.add_argument("--progress", action="store_true", help="Spark progress bars on stderr")
    parser.add_argument("--plain", action="store_true", help="Markdown tables even if rich is installed")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    events = 40_000 if args.quick else args.events
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]
    load = os.getloadavg()[0]
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    print(
        f"bench_spark on Python {platform.python_version()} ({platform.machine()}, {os.cpu_count()} CPUs, load "
        f"average {load:.1f}), {stamp}"
    )
    directory, total = generate(events, args.seed, Path(args.data), procs=os.cpu_count() or 2)
    files = sorted(str(p) for p in directory.glob("part-*.jsonl"))
    print(f"trace: {fmt_int(total)} events, pack {Path(args.pack).name}")
    rows: list[dict[str, Any]] = []
    if args.in_process:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        master = active.sparkContext.master if active else masters[0]
        rows.append(run_one(master, files, args.pack, args.driver_memory, args.progress, spark=active))
    else:
        for master in masters:
            rows.append(_spawn(master, directory, args))
    base = next((r["batch_s"] for r in rows if r["master"] == "local[1]"), None)
    table = [
        [
            r["master"],
            fmt_int(r["events"]),
            fmt_int(r["records"]),
            f"{r['jvm_s']:.1f}",
            f"{r['batch_s']:.1f}",
            fmt_rate(r["events"] / r["batch_s"]),
            f"{base / r['batch_s']:.2f}x" if base else "-",
            f"{r['cpu_s']:.0f}" if r["cpu_s"] else "-",
            fmt_rate(r["events"] / r["cpu_s"]) if r["cpu_s"] else "-",
            f"{r['load']:.1f}",
        ]
        for r in rows
    ]
    print_table(
        f"hcep batch, Hadoop pack, {fmt_int(total)} events",
        [
            "master",
            "events",
            "records",
            "JVM start s",
            "batch s",
            "events/s",
            "speed-up",
            "CPU s",
            "events/CPU s",
            "load",
        ],
        table,
        plain=args.plain,
    )
    print(f"cut: {'; '.join(rows[0]['families'])}")
    if args.reference:
        ref = reference(files, args.pack, args.reference)
        print(
            f"single-process engine (match_events) over the first {fmt_int(ref['events'])} events: "
            f"{fmt_int(ref['records'])} records, {ref['cpu_s']:.1f} CPU s, "
            f"{fmt_rate(ref['events'] / ref['cpu_s'])} events/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
