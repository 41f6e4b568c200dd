"""``hcep stream`` (Spark Structured Streaming) against ``hcep run`` on the same events, side by side.

    python -m benchmarks.bench_stream                          # 20,000 events; local[1], local[2]; hcep run
    python -m benchmarks.bench_stream --events 50000 --masters 'local[1]' 'local[2]' --bootstrap HOST:PORT
    python -m benchmarks.bench_stream --no-run                 # the Spark rows only (no Kafka broker)

The input is :func:`benchmarks.bench_pipeline.workload` (jobs one after another, Ganglia rounds every 15 s, the
whole Hadoop pack), as JSON-lines files for ``hcep stream --available-now`` (each master its own process, its own
JVM) and through a Kafka broker for ``hcep run`` (:func:`benchmarks.bench_pipeline.one_row`, 50 events a message).

- ``ev/s`` (stream) = events / the micro-batches' processing time (Spark's ``triggerExecution``, summed);
  ``steady ev/s`` leaves out the first batch that reads files (the Python workers, RocksDB and the first plans start
  there): what a running query sustains, ``--files-per-batch`` files a micro-batch; ``wall`` adds the JVM's and the
  query's start.
- ``batch p50/p99`` = micro-batch durations: a file that lands waits for the running batch to end, then one batch;
  its records come out once the watermark (largest delta + 2 s of event time) has passed its events.
- ``python`` = the stateful operator's own time summed over its calls (all workers), ``state`` its share spent in
  snapshots, restores and state store calls; ``spark`` = processing time x cores - python: the JVM side (file
  source, Arrow serialisation to and from the Python workers, the shuffle, RocksDB commits, the sink's collect).
- ``--keyless-types`` (default the Ganglia types, as ``hcep run``'s broadcast topic) is passed to ``hcep stream``.
- ``hcep run``: ``drain`` ev/s (the backlog worked off by one process) and the p50/p99 latency of its alerts
  (engine -> webhook), from :mod:`benchmarks.bench_pipeline`.
Wall-clock figures: the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"


def write_input(events: list[dict[str, Any]], directory: Path, files: int) -> None:
    """The events in time order over ``files`` JSON-lines files (cut between different times)."""
    directory.mkdir(parents=True, exist_ok=True)
    size = max(len(events) // files, 1)
    part = 0
    cur: list[dict[str, Any]] = []
    for i, e in enumerate(events):
        if len(cur) >= size and e["ts"] != events[i - 1]["ts"]:
            (directory / f"part-{part:04d}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in cur))
            part += 1
            cur = []
        cur.append(e)
    (directory / f"part-{part:04d}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in cur))


def stream_row(
    master: str, in_dir: Path, work: Path, events: int, keyless: str = "", per_batch: int = 0
) -> dict[str, Any]:
    """One ``hcep stream --available-now`` run; ``master`` ``current``: in this process (its active session)."""
    out, ck = work / f"out-{master}", work / f"ck-{master}"
    argv = ["stream", "--pack", str(PACK), "--input", str(in_dir), "--output", str(out), "--checkpoint", str(ck)]
    argv += ["--available-now", "--no-progress"] + (["--keyless-types", keyless] if keyless else [])
    if per_batch:
        argv += ["--max-files-per-trigger", str(per_batch)]
    t0 = time.perf_counter()
    if master == "current":
        from app.cli import main

        code = main(argv)
        cores = 2
    else:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *argv, "--master", master], env=env, capture_output=True, text=True
        )
        code = done.returncode
        if code != 0:
            raise RuntimeError(f"hcep stream --master {master} failed: {done.stderr[-2000:]}")
        from app.spark.session import local_cores

        cores = local_cores(master)
    wall = time.perf_counter() - t0
    assert code == 0
    from app.spark.stream.sink import STREAM_DIR, totals

    t = totals(str(out))
    progress = [json.loads(x) for x in (out / STREAM_DIR / "progress.jsonl").read_text().splitlines() if x.strip()]
    durations = sorted(p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress)
    processing = sum(durations)
    # Steady state: the batches that read files, but the first (Python workers, RocksDB, first plans start there).
    files = sum(p.get("numInputRows", 0) for p in progress)
    steady = [p for p in progress if p.get("numInputRows", 0)][1:]
    steady_events = events * sum(p["numInputRows"] for p in steady) / files if files else 0
    steady_s = sum(p["durationMs"].get("triggerExecution", 0) / 1000 for p in steady)
    state_rows = max(
        (sum(op.get("numRowsTotal", 0) for op in p.get("stateOperators", [])) for p in progress), default=0
    )
    python_s = t["busy_ms"] / 1000
    return {
        "engine": "hcep stream",
        "master": master,
        "events": events,
        "wall s": wall,
        "processing s": processing,
        "ev/s": events / processing if processing else float("nan"),
        "steady ev/s": steady_events / steady_s if steady_s else float("nan"),
        "batches": len(durations),
        "batch p50 ms": 1000 * statistics.median(durations) if durations else float("nan"),
        "batch p99 ms": 1000 * durations[min(len(durations) - 1, int(0.99 * len(durations)))] if durations else 0,
        "python s": python_s,
        "state s": t["state_ms"] / 1000,
        "spark s": max(processing * cores - python_s, 0.0),
        "state rows": state_rows,
        "records": t["records"],
        "fed": t["fed"],
    }


def run_row(bootstrap: str, hadoop: list[dict[str, Any]], ganglia: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    from benchmarks.bench_pipeline import one_row

    row = one_row(bootstrap, hadoop, ganglia, str(PACK), 50, str(work))
    n = row["events"]
    return {
        "engine": "hcep run",
        "master": "1 process",
        "events": n,
        "wall s": float("nan"),
        "processing s": n / row["drain ev/s"] if row["drain ev/s"] else float("nan"),
        "ev/s": row["drain ev/s"],
        "steady ev/s": row["drain ev/s"],
        "batches": float("nan"),
        "batch p50 ms": row["p50 ms"],
        "batch p99 ms": row["p99 ms"],
        "python s": float("nan"),
        "state s": float("nan"),
        "spark s": float("nan"),
        "state rows": float("nan"),
        "records": float("nan"),
        "fed": row["fed"],
    }


COLUMNS = [
    "engine",
    "master",
    "events",
    "wall s",
    "processing s",
    "ev/s",
    "steady ev/s",
    "batches",
    "batch p50 ms",
    "batch p99 ms",
    "python s",
    "state s",
    "spark s",
    "state rows",
    "records",
]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000, help="size of the synthetic stream (20,000)")
    parser.add_argument("--files", type=int, default=20, help="input files for hcep stream (20)")
    parser.add_argument(
        "--files-per-batch", type=int, default=2, help="files per micro-batch (--max-files-per-trigger; 0: all at once)"
    )
    parser.add_argument(
        "--masters",
        nargs="+",
        default=["local[1]", "local[2]"],
        help="Spark masters, one process each ('current': this process's active session)",
    )
    parser.add_argument(
        "--keyless-types",
        default="Metric,LoadStd,Balance,Imbalance",
        help="hcep stream's --keyless-types (default: the Ganglia types, hcep run's broadcast topic; '' : undeclared)",
    )
    parser.add_argument("--bootstrap", help="Kafka broker for the hcep run row (default: start one in a temp dir)")
    parser.add_argument("--no-run", action="store_true", help="no hcep run row (no broker needed)")
    args = parser.parse_args(argv)

    from benchmarks.bench_pipeline import workload

    hadoop, ganglia = workload(args.events)
    events = sorted(hadoop + ganglia, key=lambda e: e["ts"])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hcep-bench-stream-") as tmp:
        work = Path(tmp)
        write_input(events, work / "in", args.files)
        for master in args.masters:
            rows.append(stream_row(master, work / "in", work, len(events), args.keyless_types, args.files_per_batch))
        if not args.no_run:
            stop: list[str] | None = None
            bootstrap = args.bootstrap
            if bootstrap is None:
                from benchmarks.bench_pipeline import start_broker

                bootstrap, stop = start_broker(str(work / "kafka"))
            try:
                rows.append(run_row(bootstrap, hadoop, ganglia, work))
            finally:
                if stop is not None:
                    subprocess.run(["bash", str(ROOT / "deploy/kafka/stop.sh"), *stop], capture_output=True)
    print(f"\n### hcep stream vs hcep run ({len(events):,} events, the Hadoop pack)\n")
    print(table(rows))
    spark_rows = [r for r in rows if r["engine"] == "hcep stream"]
    if len(spark_rows) >= 2 and spark_rows[0]["ev/s"] == spark_rows[0]["ev/s"]:
        ratio = spark_rows[-1]["ev/s"] / spark_rows[0]["ev/s"]
        steady = spark_rows[-1]["steady ev/s"] / spark_rows[0]["steady ev/s"]
        print(
            f"\nscaling {spark_rows[-1]['master']} / {spark_rows[0]['master']}: {ratio:.2f}x overall, "
            f"{steady:.2f}x in steady state"
        )
    for r in spark_rows:
        share = r["state s"] / r["python s"] if r["python s"] else float("nan")
        print(
            f"{r['master']}: python operator {r['python s']:.1f} s (state {share:.0%} of it), "
            f"JVM side about {r['spark s']:.1f} core-s of {r['processing s']:.1f} s processing"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
