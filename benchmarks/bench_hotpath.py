"""The target workload: skip_till_next_match over a partitioned stream, one core, events/s against 300,000.

Run from the repository root::

    python3 -m benchmarks.bench_hotpath              # 1,000,000 events per row
    python3 -m benchmarks.bench_hotpath --quick      # 20,000 events
    python3 -m benchmarks.bench_hotpath --profile    # also run pyinstrument and print the top of the profile

Query::

    PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > b[i-1].v WITHIN 100 s

``--pack`` (issue 20): the Hadoop pack end to end from a JSON-lines file, as ``hcep match`` runs it::

    python3 -m benchmarks.bench_hotpath --pack                 # Q1-Q6 and the whole pack, median of 3 runs each
    python3 -m benchmarks.bench_hotpath --pack --profile       # and cProfile's top functions of the whole pack

Input: ``hcep simulate --nodes 200 --hours 1 --seed 7`` with both collectors (job history and task logs through
``hcep collect hadoop``; Ganglia samples through the Ganglia collector's derivation, raw ``Metric`` events included),
written once as JSON lines to ``~/.cache/hcep/bench/`` (``--events-file`` to use another file).  Per row, in a fresh
process: CPU seconds (``time.process_time``) of reading the file and matching it exactly as ``hcep match --pack ...
--query Q`` does (records built, not written), and of bare ``json.loads`` of the same lines (the standard library,
binary line iteration) in the same process; the ratio of the two medians; peak RSS of the process.

Stream: A / B / C with probabilities 20 / 60 / 20 %, ``k`` uniform over 100 partitions, ``v`` uniform over 0..999.
The main row spaces events 1/partitions s apart (tick = the spacing), so a 100 s window holds about 100 events of each
partition (10,000 overall); the second row spaces them 1 s apart, so the window holds 100 events overall (about one
per partition).  Only ``Matcher.feed`` is timed, in CPU seconds of this process: events are built beforehand, in
chunks.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import abc_stream, clock, fmt_float, fmt_int, fmt_rate, print_table
from engine.plan.compiler import CompiledQuery, compile_query
from engine.runtime.matcher import Matcher

TARGET = 300_000
QUERY = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > b[i-1].v WITHIN {window} s"
CHUNK = 50_000


def make_query(window: float, tick: float) -> CompiledQuery:
    """The hot-path query, compiled for skip_till_next_match."""
    return compile_query(
        QUERY.format(window=f"{window:g}"), name="hotpath", strategy="skip_till_next_match", output="all", tick=tick
    )


def measure(events: int, partitions: int, window: float, dt: float, seed: int) -> dict[str, float]:
    """Feed ``events`` events to one matcher; return events, matcher seconds, matches and runs alive (mean, max)."""
    m = Matcher(make_query(window, dt))
    feed = m.feed
    source = abc_stream(seed=seed, partitions=partitions, v_range=1000, dt=dt, tick=dt)
    nxt = source.__next__
    done = 0
    elapsed = 0.0
    matches = 0
    runs: list[int] = []
    while done < events:
        chunk = [nxt() for _ in range(min(CHUNK, events - done))]
        t0 = clock()
        for ev in chunk:
            matches += len(feed(ev))
        elapsed += clock() - t0
        done += len(chunk)
        runs.append(m.runs_alive())
    return {
        "events": done,
        "seconds": elapsed,
        "matches": matches,
        "runs_mean": sum(runs) / len(runs),
        "runs_max": max(runs),
    }


def profile(events: int, partitions: int, window: float, dt: float, seed: int, top: int) -> None:
    """Run the main workload under pyinstrument and print the hottest functions and the top of the call tree."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("\npyinstrument is not installed: pip install pyinstrument")
        return
    source = abc_stream(seed=seed, partitions=partitions, v_range=1000, dt=dt, tick=dt)
    evs = [next(source) for _ in range(events)]
    m = Matcher(make_query(window, dt))
    feed = m.feed
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for ev in evs:
        feed(ev)
    profiler.stop()
    print(f"\nProfile: {events:,} events of the main row (pyinstrument, matcher only)\n")
    session = profiler.last_session
    total = session.duration if session is not None else 0.0
    print(f"Hottest functions by self time (top {top}; total {total:.2f} s):\n")
    print("```")
    for name, where, secs in hottest(profiler, top):
        print(f"{secs:8.3f} s {100 * secs / total if total else 0:5.1f}%  {name}  {where}")
    print("```\n")
    print("Call tree:\n")
    print("```")
    tree = profiler.output_text(unicode=False, color=False, show_all=False)
    print("\n".join(_tree_lines(tree)[: top * 2]))
    print("```")


def hottest(profiler: Any, top: int) -> list[tuple[str, str, float]]:
    """Self time per function (summed over call sites), largest first: ``(name, file:line, seconds)``."""
    session = profiler.last_session
    root = session.root_frame() if session is not None else None
    acc: dict[tuple[str, str], float] = {}
    stack = [root] if root is not None else []
    while stack:
        frame = stack.pop()
        children = frame.children
        stack.extend(children)
        if frame.is_synthetic:
            continue
        own = frame.time - sum(c.time for c in children if not c.is_synthetic)
        name = f"{frame.class_name}.{frame.function}" if frame.class_name else frame.function
        key = (name, f"{frame.file_path_short}:{frame.line_no}")
        acc[key] = acc.get(key, 0.0) + own
    ranked = sorted(acc.items(), key=lambda kv: -kv[1])[:top]
    return [(name, where, secs) for (name, where), secs in ranked]


def _tree_lines(text: str) -> list[str]:
    """The call-tree lines of a pyinstrument text report (its banner dropped)."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    return [ln for ln in lines if re.match(r"^[\s|`-]*\d+\.\d+ ", ln)]


# ---------------------------------------------------------------------------------------------- the pack end to end

PACK_FILE = Path(__file__).resolve().parents[1] / "queries" / "hadoop.yaml"
#: "pack-Q4": the pack without Q4, whose 99,963 records list a billion Kleene ids between them (output-bound).
PACK_ROWS = ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "pack", "pack-Q4")
#: Issue 20's targets: each query at most this many times the bare decode; the pack at this many events/s per core.
RATIO_TARGET = 1.5
PACK_TARGET = 1_000_000


def pack_input(args: argparse.Namespace) -> Path:
    """The JSON-lines input: ``--events-file``, else the cached simulator trace (made on first use)."""
    if args.events_file:
        return Path(args.events_file)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hcep" / "bench"
    path = cache / f"hadoop-{args.nodes}n-{args.hours:g}h-s{args.sim_seed}.jsonl"
    if path.exists():
        return path
    import json
    import shutil
    import tempfile

    from benchmarks.bench_hadoop_pack import simulated_events

    cache.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hcep-hotpath-")
    try:
        print(f"making the input: hcep simulate --nodes {args.nodes} --hours {args.hours:g} --seed {args.sim_seed} ...")
        objs, account = simulated_events(args.nodes, args.hours, args.sim_seed, work, 1.0, True)
        print(account)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for obj in objs:
            f.write(json.dumps(obj) + "\n")
    tmp.replace(path)
    return path


def bare_decode(path: Path) -> float:
    """CPU seconds of the standard library's ``json.loads`` over every line of ``path``: the yardstick."""
    import json

    loads = json.loads
    t0 = time.process_time()
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                loads(line)
    return time.process_time() - t0


def match_file(
    path: Path, row: str, pack_file: Path | None = None, full: bool = False, write: bool = False
) -> tuple[float, int, int]:
    """What ``hcep match FILE --pack queries/hadoop.yaml [--query Q]`` does but writing: read, match, every record
    built (``write``: and turned into its JSON line, as the command writes it, to nowhere).  Growing runs are written
    as increments (semantics section 5), as ``hcep match`` writes them; ``full``: whole signatures
    (``--full-matches``).  Returns (CPU seconds, events, records)."""
    import json

    from app.matching import read as cmd
    from app.matching.packs import DEFAULT_MAX_DELTA
    from engine.evaluate import StreamedMatch
    from engine.language.packs import load_pack
    from engine.plan.compiler import compile_spec

    t0 = time.process_time()
    pack = load_pack(pack_file or PACK_FILE)
    if row == "pack" or row.startswith("pack-"):  # the whole pack, or without the queries named after "-"
        left_out = set(row.split("-")[1:])
        specs = [q for q in pack.queries if q.enabled and q.name not in left_out]
    else:
        specs = [q for q in pack.queries if q.enabled and q.name == row]
    cqs = [compile_spec(q, pack.tick) for q in specs]
    built = getattr(cmd, "built_types", None)
    if built is not None:  # issue 20's reader: only the types the queries read built
        events = cmd.read_events(path, float(pack.tick), DEFAULT_MAX_DELTA, built(cqs))
    else:  # pragma: no cover - the reader before issue 20 (the "before" figures)
        events = cmd.read_events(path, float(pack.tick), DEFAULT_MAX_DELTA)
    frozen = getattr(cmd, "frozen", None)
    records = 0
    with frozen() if frozen is not None else contextlib.nullcontext():
        matched = StreamedMatch(cqs, events, increments=not full)
        if write:  # as hcep match writes them (its writer where the tree has one), to nowhere
            try:
                from app.matching.write import write_records
            except ImportError:  # pragma: no cover - a tree before issue 25's writer
                dumps = json.dumps
                for record in matched:
                    records += 1
                    dumps(record)
            else:
                records = write_records(matched, _nowhere)
        else:
            for _ in matched:
                records += 1
    return time.process_time() - t0, len(events), records


def _nowhere(text: str) -> None:
    """A write that keeps nothing."""


def pack_worker(
    path: Path, row: str, repeat: int, pack_file: Path | None = None, full: bool = False, write: bool = False
) -> dict[str, Any]:
    """One row, in this (fresh) process: ``repeat`` interleaved runs of the bare decode and of ``match_file``."""
    import gc
    import resource

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    bare: list[float] = []
    e2e: list[float] = []
    events = records = 0
    for _ in range(repeat):
        gc.collect()
        bare.append(bare_decode(path))
        gc.collect()
        cpu, events, records = match_file(path, row, pack_file, full, write)
        e2e.append(cpu)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"row": row, "bare": bare, "e2e": e2e, "events": events, "records": records, "rss0": rss0, "peak": peak}


def run_pack_rows(args: argparse.Namespace) -> None:
    """Each row in its own process (a clean peak RSS), then the table."""
    import json
    import statistics
    import subprocess

    path = pack_input(args)
    with open(path, "rb") as f:
        lines = sum(1 for line in f if line.strip())
    rows_wanted = args.rows.split(",") if args.rows else list(PACK_ROWS)
    print(f"input: {path} ({lines:,} events, {path.stat().st_size / 2**20:.0f} MiB); median of {args.repeat} runs")
    mode = "whole signatures (--full-matches)" if args.full_matches else "growing runs as increments"
    print(f"pack: {args.pack_file or PACK_FILE}; {mode}; records {'written as JSON' if args.write else 'built'}")
    table: list[list[str]] = []
    for row in rows_wanted:
        cmd = [sys.executable, "-m", "benchmarks.bench_hotpath", "--pack-worker", row]
        cmd += ["--events-file", str(path.resolve())]
        cmd += ["--repeat", str(args.repeat)]
        if args.pack_file:
            cmd += ["--pack-file", str(Path(args.pack_file).resolve())]
        cmd += ["--full-matches"] if args.full_matches else []
        cmd += ["--write"] if args.write else []
        load = os.getloadavg()[0]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=PACK_FILE.parents[1])
        r = json.loads(done.stdout.strip().splitlines()[-1])
        bare, e2e = statistics.median(r["bare"]), statistics.median(r["e2e"])
        rate = lines / e2e if e2e else 0.0
        target = f"{100 * rate / PACK_TARGET:.0f}% of 1M/s" if row.startswith("pack") else f"<= {RATIO_TARGET:g}x"
        table.append(
            [
                row,
                fmt_int(r["events"]),
                fmt_int(r["records"]),
                fmt_float(e2e, 2),
                "/".join(f"{x:.2f}" for x in sorted(r["e2e"])),
                fmt_rate(rate),
                fmt_float(bare, 2),
                fmt_rate(lines / bare if bare else 0.0),
                f"{e2e / bare:.2f}x" if bare else "-",
                target,
                f"{r['peak'] / 1024:.0f}",
                f"{load:.1f}",
            ]
        )
    print_table(
        f"Hadoop pack end to end from JSON lines (hcep match, records built not written), {lines:,} lines",
        [
            "row",
            "events",
            "records",
            "CPU s (median)",
            "CPU s (runs)",
            "events/s",
            "json.loads CPU s",
            "json.loads lines/s",
            "ratio",
            "target",
            "peak RSS MiB",
            "load",
        ],
        table,
        plain=args.plain,
    )
    if args.profile:
        pack_profile(path, args.top, _pack_file(args), args.full_matches, args.write)


def pack_profile(path: Path, top: int, pack_file: Path | None = None, full: bool = False, write: bool = False) -> None:
    """cProfile over the whole pack end to end: the top functions by own time."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    cpu, n, _ = match_file(path, "pack", pack_file, full, write)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    body = text[text.find("   ncalls") :] if "   ncalls" in text else text
    print(f"\nProfile: the whole pack end to end (cProfile: {cpu:.2f} CPU s profiled), top {top} by own time\n")
    print("```")
    print(body.rstrip())
    print("```")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_hotpath", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20,000 events, profile over 10,000")
    ap.add_argument("--events", type=int, help="events per row (default 1,000,000)")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--window", type=float, default=100.0, help="WITHIN, seconds (default 100)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="run pyinstrument over the main row and print the top")
    ap.add_argument("--profile-events", type=int, help="events in the profiled run (default 300,000)")
    ap.add_argument("--top", type=int, default=25, help="lines of the profile to print")
    ap.add_argument(
        "--repeat", type=int, help="measure each row N times: the fastest (--pack: the median; default 1, --pack 3)"
    )
    ap.add_argument("--main-only", action="store_true", help="skip the 100-events-overall row")
    ap.add_argument("--plain", action="store_true", help="plain Markdown tables even if rich is installed")
    ap.add_argument("--pack", action="store_true", help="the Hadoop pack end to end from JSON lines (issue 20)")
    ap.add_argument("--rows", help="--pack: these rows only (comma-separated: Q1..Q7, pack, pack-Q4)")
    ap.add_argument("--events-file", help="--pack: read this JSON-lines file instead of the simulator trace")
    ap.add_argument("--nodes", type=int, default=200, help="--pack: simulated nodes (200)")
    ap.add_argument("--hours", type=float, default=1.0, help="--pack: simulated hours (1)")
    ap.add_argument("--sim-seed", type=int, default=7, help="--pack: simulator seed (7)")
    ap.add_argument("--pack-file", help="--pack: this pack instead of queries/hadoop.yaml (e.g. an older one)")
    ap.add_argument("--full-matches", action="store_true", help="--pack: growing runs as whole signatures (quadratic)")
    ap.add_argument("--write", action="store_true", help="--pack: also turn each record into its JSON line")
    ap.add_argument("--pack-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.events = args.events or (20_000 if args.quick else 1_000_000)
    if not args.pack:
        args.repeat = args.repeat or 1
    args.profile_events = args.profile_events or (10_000 if args.quick else 300_000)
    return args


def _pack_file(args: argparse.Namespace) -> Path | None:
    return Path(args.pack_file).resolve() if args.pack_file else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the hot-path benchmark; print the table (and the profile); return the exit status."""
    args = parse_args(argv)
    if args.pack_worker:
        import json

        r = pack_worker(
            Path(args.events_file).resolve(),
            args.pack_worker,
            args.repeat,
            _pack_file(args),
            args.full_matches,
            args.write,
        )
        print(json.dumps(r))
        return 0
    if args.pack:
        print(
            f"bench_hotpath --pack on Python {platform.python_version()} ({platform.machine()}, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}), {time.strftime('%Y-%m-%d %H:%M')}"
        )
        args.repeat = args.repeat or 3
        run_pack_rows(args)
        return 0
    print(
        f"bench_hotpath {'--quick ' if args.quick else ''}on Python {platform.python_version()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}), "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    print(f"query: {QUERY.format(window=f'{args.window:g}')}  (skip_till_next_match)")
    variants = [("~100 events per partition", 1.0 / args.partitions)]
    if not args.main_only:
        variants.append(("100 events overall", 1.0))
    rows: list[list[str]] = []
    main_rate = 0.0
    for label, dt in variants:
        runs = [measure(args.events, args.partitions, args.window, dt, args.seed) for _ in range(args.repeat)]
        r = min(runs, key=lambda x: x["seconds"])  # best of --repeat: the least disturbed run
        rate = r["events"] / r["seconds"] if r["seconds"] > 0 else 0.0
        main_rate = main_rate or rate
        rows.append(
            [
                label,
                f"{dt:g}",
                fmt_int(r["events"]),
                fmt_float(r["seconds"], 2),
                fmt_rate(rate),
                f"{100 * rate / TARGET:.0f}%",
                fmt_int(r["matches"]),
                fmt_float(r["runs_mean"], 1),
                fmt_int(r["runs_max"]),
            ]
        )
    print_table(
        f"Hot path: skip_till_next_match, {args.partitions} partitions, WITHIN {args.window:g} s, "
        f"target {TARGET:,} events/s" + (f", best of {args.repeat}" if args.repeat > 1 else ""),
        ["window holds", "s/event", "events", "CPU s", "events/s", "of target", "matches", "runs mean", "runs max"],
        rows,
        plain=args.plain,
    )
    print(
        f"\nhot-path figure: {fmt_rate(main_rate)} events/s on one core "
        f"({100 * main_rate / TARGET:.0f}% of the {TARGET:,} events/s target)"
    )
    if args.profile:
        profile(args.profile_events, args.partitions, args.window, 1.0 / args.partitions, args.seed, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
