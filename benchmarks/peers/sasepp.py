"""The Hadoop pack on the SASE++ Java engine and on ours, over one events file: events per second of each engine alone.

Run from the repository root (needs ``javac``/``java`` and the SASE++ sources as a git mirror)::

    python3 -m benchmarks.peers.sasepp [--events FILE] [--repeat N] [--mirror GIT_DIR]

What it does:

1. **Builds** the SASE++ engine (github.com/haopeng/sase-advanced, the authors' code) from the mirror at run time:
   ``git archive`` of ``src/`` and three of its ``lib/`` jars (jeval, commons-math3, commons-lang3) into
   ``~/.cache/hcep/sasepp``, then ``javac`` of ``edu.umass.cs.sase.UI.HadoopUsecasePreciseUI`` and what it uses,
   and of a driver of ours that makes the UI's calls and reports CPU time (``sasepp_build``).  Nothing of SASE++'s
   code is kept in this repository.
2. **Converts** our events (JSON lines, docs/semantics.md section 1) to its input (``HadoopEvent`` / ``GangliaEvent``
   lines: ``h,ms,Type,jobId,taskId,attempt,node,value,segments`` and ``g,ms,Type,node,value``): the authors' type
   names (``MapPeriod``, ``PullPeriod``, ``HadoopDataActivity``, ``balance``, ``balance-standarddeviation``...),
   job/task/host ids numbered, periods in ms (pulls in half-ms), ``DataIO`` sizes in KiB (its values are Java ints),
   ``LoadStd`` in thousandths, the job number also in the ``segments`` column (the engine cannot read ``jobId``:
   ``sasepp_queries``).  Raw ``Metric`` events are not converted: no query reads them.
3. **Runs** Q1-Q6 of ``queries/hadoop.yaml`` and ``Q4flat`` on both: the NFA files, the UI's flags and why each is
   written so are in ``benchmarks/peers/sasepp_queries.py`` (postponing for a Kleene state followed by another type,
   one partition for Q5/Q6, Q4's prefixes with a final singleton).  SASE++ is timed by the process's CPU seconds
   over ``runEngine`` (the main thread's beside it, and its own profiler's wall clock, ``Total Running Time``; the
   best of ``--repeat`` runs in one JVM, so the JIT has warmed up); ours by CPU seconds of feeding the decoded events
   (``StreamedMatch``, sorted, records built, growing runs as increments; the best of ``--repeat``), wall seconds
   beside it.  Rows compared on printed matches (``distinct``, ``first``) run SASE++ once more, untimed.

SASE++ evaluates timestamps as given; so, by default, do we: our side reads the same events without ``delta``
(precise) at a 1 ms tick, the resolution of SASE++'s timestamps, so that the match counts can be compared
(``--imprecise``: our events as collected, at the pack's tick, with exact confidences under possible-worlds
semantics for Q1, Q2, Q5, Q6: a different computation, whose counts need not agree).  The counts are compared as
``sasepp_queries.Row.compare`` says; figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.peers.sasepp_build import CACHE, MAIN, MIRROR, build
from benchmarks.peers.sasepp_queries import ROWS, Row

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_EVENTS = Path.home() / ".cache" / "hcep" / "bench" / "hadoop-200n-1h-s7.jsonl"

HADOOP_TYPES = {
    "JobStart": "JobStart",
    "JobEnd": "JobFinish",
    "Mapper": "MapPeriod",
    "Reducer": "ReducePeriod",
    "ReducerStart": "ReduceStart",
    "ReducerEnd": "ReduceFinish",
    "DataPull": "PullPeriod",
    "DataIO": "HadoopDataActivity",
}
#: Our ticks at which SASE++'s timestamps (ms) are read: no two events it orders are concurrent for us.
MS_TICK = 0.001
#: Event attributes our side drops to evaluate the events as SASE++ does (precise timestamps).
INTERVAL_KEYS = ("delta", "lo", "hi")


def _number(value: Any, table: dict[Any, int]) -> int:
    if not value:
        return 0
    if value not in table:
        table[value] = len(table) + 1
    return table[value]


def convert(events: list[dict[str, Any]], out: Path) -> list[str]:
    """Our events (time order, each with an ``id``) as SASE++ input lines in ``out``; the ``id`` of each line's event
    (SASE++ numbers events by line: a printed match's ``Id=n`` is ``ids[n]``)."""
    jobs: dict[Any, int] = {}
    tasks: dict[Any, int] = {}
    hosts: dict[Any, int] = {}
    t0 = events[0]["ts"] if events else 0.0
    lines, ids = [], []
    for e in events:
        t = e["type"]
        ms = int(round((e["ts"] - t0) * 1000))
        if t in HADOOP_TYPES:
            if t in ("Mapper", "Reducer", "DataPull"):  # ms; pulls in half-ms (Q3's value / 2: sasepp_queries)
                val = int(round(float(e.get("period") or 0) * (2000 if t == "DataPull" else 1000)))
            elif t == "DataIO":
                val = max(min(int(e.get("size") or 0) // 1024, 2**31 - 1), -(2**31))
            else:
                val = 0
            job, task, host = (
                _number(e.get("job_id"), jobs),
                _number(e.get("task_id"), tasks),
                _number(e.get("host"), hosts),
            )
            lines.append(f"h,{ms},{HADOOP_TYPES[t]},{job},{task},0,{host},{val},{job}\n")
        elif t == "LoadStd":
            lines.append(f"g,{ms},balance-standarddeviation,0,{int(round(float(e['val']) * 1000))},\n")
        elif t in ("Balance", "Imbalance"):
            lines.append(f"g,{ms},balance,0,{1 if t == 'Balance' else 0},\n")
        else:
            continue
        ids.append(str(e["id"]))
    out.write_text("".join(lines))
    return ids


class Sasepp(NamedTuple):
    """One SASE++ run: the best of its repeats by each clock, what it processed and found, its output file."""

    wall: float  #: its profiler's ``Total Running Time`` (wall clock of the engine over the stream), seconds
    cpu: float  #: process CPU seconds over ``runEngine`` (every JVM thread: engine, GC, JIT)
    thread: float  #: the main thread's CPU seconds over ``runEngine``
    events: int
    matches: int
    out: Path


def run_sasepp(
    cp: Path, nfa: Path, stream: Path, row: Row, repeat: int, budget: float, printed: bool = False
) -> Sasepp:
    """SASE++ over ``stream`` with ``row``'s flags, through ``sasepp_build``'s driver (the UI's calls, CPU timed);
    ``printed``: every match is printed (its events' ``Id``s), for :func:`signatures`.

    The run is stopped at an exception in the engine (an NFA it cannot run), or after ``budget`` seconds."""
    flags = ["1" if printed else "0", "1" if row.postpone else "0", "0", "1" if row.collapsed else "0", str(repeat)]
    args = ["java", "-Xmx4g", "-cp", str(cp), MAIN, str(nfa), str(stream), *flags]
    out_file, err_file = nfa.with_suffix(".out"), nfa.with_suffix(".err")
    with out_file.open("w") as out, err_file.open("w") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err)
        started = time.monotonic()
        while proc.poll() is None:
            time.sleep(0.2)
            failed = 'Exception in thread "main"' in err_file.read_text(errors="replace")
            if failed or time.monotonic() - started > budget:
                proc.kill()
                proc.wait()
                why = err_file.read_text(errors="replace").strip().splitlines()
                raise RuntimeError(f"SASE++ {'failed: ' + why[0] if failed and why else 'ran out of time'}")
    text = out_file.read_text(errors="replace")

    def best(label: str) -> float:
        found = [int(x) for x in re.findall(label + r": (\d+) nanoseconds", text)]
        if not found:
            raise RuntimeError(f"SASE++ gave no {label}: {err_file.read_text(errors='replace')[-300:]}")
        return min(found) / 1e9

    events = re.findall(r"Number Of Events Processed: (\d+)", text)
    matches = re.findall(r"Number Of Matches Found: (\d+)", text)
    return Sasepp(
        best("Total Running Time"),
        best("Engine Process CPU Time"),
        best("Engine Thread CPU Time"),
        int(events[-1]) if events else 0,
        int(matches[-1]) if matches else -1,
        out_file,
    )


def signatures(printed: str, ids: list[str]) -> list[frozenset[str]]:
    """The matches of a printed SASE++ run (one repeat) as sets of our event ids."""
    blocks = re.split(r"-+Here is the No\.\d+ match-+", printed)[1:]
    return [frozenset(ids[int(n)] for n in re.findall(r"^EventType=\S+\tId=(\d+)", b, re.M)) for b in blocks]


def _our_query(name: str, tick: float | None) -> tuple[Any, float]:
    """Our query ``name`` of the pack compiled at ``tick`` (None: the pack's), and that tick."""
    from engine.language.packs import load_pack
    from engine.plan.compiler import compile_spec

    pack = load_pack(str(ROOT / "queries" / "hadoop.yaml"))
    spec = next(q for q in pack.queries if q.name == name)
    tick = float(pack.tick) if tick is None else tick
    return compile_spec(spec, tick), tick


def our_records(name: str, path: Path, tick: float | None = MS_TICK, increments: bool = False) -> list[Any]:
    """Our records of query ``name`` over ``path`` (whole signatures unless ``increments``)."""
    from app.matching.read import read_events
    from engine.evaluate import StreamedMatch

    cq, tick = _our_query(name, tick)
    events: list[Any] = read_events(path, tick, 7.5)  # every type built: Events only
    return list(StreamedMatch([cq], events, increments=increments))


def run_ours(name: str, path: Path, repeat: int, tick: float | None = MS_TICK) -> tuple[float, float, int, Counts]:
    """(best CPU seconds of matching, best wall seconds, events, counts) of our engine: the query as the pack says,
    decoded events, growing runs as increments (as ``hcep match`` writes them)."""
    from app.matching.read import read_events
    from engine.evaluate import StreamedMatch

    cq, tick = _our_query(name, tick)
    events: list[Any] = read_events(path, tick, 7.5)  # every type built: Events only
    best, wall, counts = float("inf"), float("inf"), Counts()
    for _ in range(repeat):
        t0, w0 = time.process_time(), time.perf_counter()
        counts = Counts()
        for rec in StreamedMatch([cq], events, increments=True):
            counts.add(rec)
        best, wall = min(best, time.process_time() - t0), min(wall, time.perf_counter() - w0)
    return best, wall, len(events), counts


class Counts:
    """Our records counted the ways :class:`sasepp_queries.Row` compares them."""

    def __init__(self) -> None:
        self.records = self.extending = 0
        self.firsts: set[str] = set()

    def add(self, rec: dict[str, Any]) -> None:
        """Count one record."""
        self.records += 1
        self.extending += "extends" in rec
        first = next(iter(rec["match"].values()))
        self.firsts.add(first[0])

    def compared(self, compare: str) -> int:
        """The count ``compare`` reads: ``extends`` the extending records, ``first`` one per run, else all."""
        if compare == "extends":
            return self.extending
        return len(self.firsts) if compare == "first" else self.records


def prepare(events: list[dict[str, Any]], work: Path, imprecise: bool = False) -> tuple[Path, list[str], Path]:
    """Both inputs in ``work``: SASE++'s stream (and the id of each of its lines) and our JSON lines of the same
    events, in the same order (time order; an ``id`` given to each event that has none), precise unless
    ``imprecise``."""
    events = sorted(events, key=lambda e: e["ts"])
    for i, e in enumerate(events):
        e.setdefault("id", str(i))
    work.mkdir(parents=True, exist_ok=True)
    stream = work / "stream.txt"
    ids = convert(events, stream)
    kept = [e for e in events if e["type"] in HADOOP_TYPES or e["type"] in ("LoadStd", "Balance", "Imbalance")]
    if not imprecise:
        kept = [{k: v for k, v in e.items() if k not in INTERVAL_KEYS} for e in kept]
    ours = work / "events.jsonl"
    ours.write_text("".join(json.dumps(e) + "\n" for e in kept))
    return stream, ids, ours


def sasepp_compared(row: Row, printed: str, ids: list[str], by_id: dict[str, dict[str, Any]]) -> tuple[int, str]:
    """SASE++'s count as ``row.compare`` reads a printed run's matches, and a note: ``distinct``, the distinct
    ``task_id`` of their ``ReducerStart`` (Q5 and Q6 as our ``output: distinct`` counts them: SASE++ prints every
    combination of the surrounding events); ``first``, those within the NFA's window (SASE++ does not check it when a
    run proceeds)."""
    sigs = signatures(printed, ids)
    if row.compare == "distinct":
        starts = (by_id[i] for sig in sigs for i in sig)
        return len({e.get("task_id") for e in starts if e["type"] == "ReducerStart"}), f"{len(sigs):,} matches"
    window = int(re.findall(r"timeWindow = (\d+)", row.nfa)[0])
    spans = [round(max(by_id[i]["ts"] for i in s) * 1000) - round(min(by_id[i]["ts"] for i in s) * 1000) for s in sigs]
    within = sum(1 for span in spans if span <= window)
    return within, f"{len(sigs) - within} beyond the window"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.peers.sasepp", description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=Path, default=DEFAULT_EVENTS, help="JSON-lines events (bench_hotpath --pack's)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine and query: the best is kept")
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="git dir of github.com/haopeng/sase-advanced")
    ap.add_argument("--rows", help="these queries only (comma-separated)")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds a SASE++ run may take (all its repeats)")
    ap.add_argument("--imprecise", action="store_true", help="our events with their delta, at the pack's tick")
    ap.add_argument("--work", type=Path, default=CACHE / "run", help="directory of the converted inputs and outputs")
    args = ap.parse_args(argv)
    cp = build(args.mirror, CACHE)
    events = [json.loads(line) for line in args.events.read_text().splitlines() if line.strip()]
    stream, ids, ours_input = prepare(events, args.work, args.imprecise)
    by_id = {str(e["id"]): e for e in events}
    tick = None if args.imprecise else MS_TICK
    n = len(ids)
    mode = "imprecise, the pack's tick" if args.imprecise else "precise, 1 ms tick"
    print(f"SASE++ peer on {args.events} ({n:,} events converted, Metric left out; ours {mode}); best of {args.repeat}")
    print(
        "| query | SASE++ CPU s (main thread) | SASE++ wall s | SASE++ events/CPU s | SASE++ matches | ours CPU s"
        " | ours wall s | ours events/CPU s | ours records | compared: SASE++ / ours | ours / SASE++ CPU | wall |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    nan = float("nan")
    for name in args.rows.split(",") if args.rows else list(ROWS):
        row = ROWS[name]
        nfa = args.work / f"{name}.nfa"
        nfa.write_text(row.nfa)
        ocpu, owall, on, counts = run_ours(row.ours, ours_input, args.repeat, tick)
        ours_count = counts.compared(row.compare)
        try:
            j = run_sasepp(cp, nfa, stream, row, args.repeat, args.budget)
            jc, note = j.matches, ""
            if row.compare in ("distinct", "first"):  # a printed run, not timed
                printed = run_sasepp(cp, nfa, stream, row, 1, args.budget, printed=True).out
                jc, note = sasepp_compared(row, printed.read_text(errors="replace"), ids, by_id)
                note = f"; SASE++ {note}"
            compared = f"{jc:,} {'=' if jc == ours_count else '!='} {ours_count:,} ({row.compare}{note})"
        except RuntimeError as err:
            j, compared = Sasepp(nan, nan, nan, n, -1, nfa), "-"
            print(f"{name}: {err}", file=sys.stderr)
        jrate = j.events / j.cpu if j.cpu > 0 else nan
        orate = on / ocpu if ocpu > 0 else nan
        print(
            f"| {name} | {j.cpu:.3f} ({j.thread:.3f}) | {j.wall:.3f} | {jrate:,.0f} | {j.matches:,} | {ocpu:.3f}"
            f" | {owall:.3f} | {orate:,.0f} | {counts.records:,} | {compared} | {orate / jrate:.2f}x"
            f" | {j.wall / owall:.2f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
