"""Hadoop collector throughput (lines/s, events/s per parser) and simulator speed.

    python -m benchmarks.bench_collectors [--nodes 200] [--hours 0.5] [--sim-nodes 1000] [--sim-hours 1] [--no-sim]

A corpus is simulated first (``--nodes``/``--hours``, fb2010 mix); every file of each kind is then parsed and timed:
JSON and binary job history (the binary copies are re-encoded from the JSON ones with fastavro), MRAppMaster syslogs
and reduce-task syslogs, then the whole ``collect`` path (discovery, parsing, de-duplication, sorting).  Times are CPU
seconds of this process (other jobs on a shared machine disturb them less than wall time); the simulation of
``--sim-nodes`` nodes for ``--sim-hours`` hours reports both CPU and wall time, and the size of what it wrote.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from collectors.hadoop.collect import Summary, collect, discover, parse_source, sorted_events
from collectors.hadoop.common import ParseStats, zone
from collectors.hadoop.deadletter import DeadLetterSink
from simulator import SimConfig, simulate

clock = time.process_time


def _binary_copies(sources: list, out_dir: Path) -> list:
    import fastavro

    from collectors.hadoop.collect import Source

    out = []
    for src in sources:
        lines = Path(src.path).read_text().split("\n")
        schema = fastavro.parse_schema(json.loads(lines[1]))
        buf = io.BytesIO()
        buf.write(b"Avro-Binary\n" + lines[1].encode() + b"\n")
        body = "\n".join(line for line in lines[2:] if line) + "\n"
        for record in fastavro.json_reader(io.StringIO(body), schema):
            fastavro.schemaless_writer(buf, schema, record)
        path = out_dir / Path(src.path).name
        path.write_bytes(buf.getvalue())
        out.append(Source(str(path), "jhist", path.stat().st_size))
    return out


def _measure(name: str, sources: list) -> dict:
    stats = ParseStats()
    sink = DeadLetterSink()
    tz = zone("UTC")
    t0 = clock()
    for src in sources:
        for _ in parse_source(src, tz=tz, delta=0.5, deadletter=sink, stats=stats):
            pass
    cpu = clock() - t0
    size = sum(s.size for s in sources)
    return _row(name, len(sources), stats.lines, stats.events, size, cpu, stats.dead)


def _row(name: str, files: int, lines: int, events: int, size: int, cpu: float, dead: int) -> dict:
    return {
        "parser": name,
        "files": files,
        "lines": lines,
        "events": events,
        "MB": size / 1e6,
        "cpu_s": cpu,
        "lines_per_s": lines / cpu,
        "events_per_s": events / cpu,
        "MB_per_s": size / 1e6 / cpu,
        "dead": dead,
    }


def bench_parsers(corpus: Path) -> list[dict]:
    sources = discover([str(corpus / "hadoop")])
    by_kind = {k: [s for s in sources if s.kind == k] for k in ("jhist", "am", "reduce")}
    rows = [_measure("jhist (Avro-Json)", by_kind["jhist"])]
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(_measure("jhist (Avro-Binary)", _binary_copies(by_kind["jhist"], Path(tmp))))
    rows.append(_measure("MRAppMaster syslog", by_kind["am"]))
    rows.append(_measure("reduce task syslog", by_kind["reduce"]))
    summary = Summary()
    t0 = clock()
    n = sum(1 for _ in sorted_events(collect([str(corpus / "hadoop")], summary=summary)))
    cpu = clock() - t0
    size = sum(s.size for s in sources)
    rows.append(
        _row("collect (all, dedupe, sort)", summary.files, summary.stats.lines, n, size, cpu, summary.stats.dead)
    )
    return rows


def bench_simulation(nodes: int, hours: float, log_format: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix="hcep-sim-"))
    try:
        t0, w0 = clock(), time.perf_counter()
        summary = simulate(SimConfig(nodes=nodes, hours=hours, seed=1, log_format=log_format), str(out), ganglia="none")
        cpu, wall = clock() - t0, time.perf_counter() - w0
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        files = sum(1 for p in out.rglob("*") if p.is_file())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {
        "nodes": nodes,
        "hours": hours,
        "log_format": log_format,
        "cpu_s": round(cpu, 1),
        "wall_s": round(wall, 1),
        "jobs": summary["jobs"],
        **summary["counts"],
        "files": files,
        "GB": round(size / 1e9, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--hours", type=float, default=0.5)
    parser.add_argument("--sim-nodes", type=int, default=1000)
    parser.add_argument("--sim-hours", type=float, default=1.0)
    parser.add_argument("--no-sim", action="store_true", help="skip the large simulation timing")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    corpus = Path(tempfile.mkdtemp(prefix="hcep-corpus-"))
    try:
        simulate(SimConfig(nodes=args.nodes, hours=args.hours, seed=2), str(corpus), ganglia="none")
        rows = bench_parsers(corpus)
    finally:
        shutil.rmtree(corpus, ignore_errors=True)
    print(f"corpus: {args.nodes} nodes x {args.hours} h (fb2010)   [CPU seconds of this process; pid {os.getpid()}]")
    head = ("parser", "files", "lines", "events", "MB", "lines/s", "events/s", "MB/s")
    print(f"{head[0]:30} {head[1]:>6} {head[2]:>10} {head[3]:>9} {head[4]:>8} {head[5]:>10} {head[6]:>10} {head[7]:>6}")
    for r in rows:
        print(
            f"{r['parser']:30} {r['files']:>6} {r['lines']:>10} {r['events']:>9} {r['MB']:>8.1f} "
            f"{r['lines_per_s']:>10,.0f} {r['events_per_s']:>10,.0f} {r['MB_per_s']:>6.1f}"
        )
    sims = []
    if not args.no_sim:
        for fmt in ("hadoop2", "hadoop3"):
            sim = bench_simulation(args.sim_nodes, args.sim_hours, fmt)
            sims.append(sim)
            print(
                f"simulate {sim['nodes']} nodes x {sim['hours']} h ({fmt}): {sim['cpu_s']} s CPU, {sim['wall_s']} s "
                f"wall; {sim['jobs']} jobs, {sim['map_attempts']} map / {sim['reduce_attempts']} reduce attempts, "
                f"{sim['pulls']} pulls; {sim['files']} files, {sim['GB']} GB"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"parsers": rows, "simulation": sims}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
