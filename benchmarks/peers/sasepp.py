"""The Hadoop pack on the SASE++ Java engine and on ours, over one events file: events per second of each engine alone.

Run from the repository root (needs ``javac``/``java`` and the SASE++ sources as a git mirror)::

    python3 -m benchmarks.peers.sasepp [--events FILE] [--repeat N] [--mirror GIT_DIR]

What it does:

1. **Builds** the SASE++ engine (github.com/haopeng/sase-advanced, the authors' code) from the mirror at run time:
   ``git archive`` of ``src/`` and three of its ``lib/`` jars (jeval, commons-math3, commons-lang3) into
   ``~/.cache/hcep/sasepp``, then ``javac`` of ``edu.umass.cs.sase.UI.HadoopUsecasePreciseUI`` and what it uses.
   Nothing of that code is kept in this repository.
2. **Converts** our events (JSON lines, docs/semantics.md section 1) to its input (``HadoopEvent`` / ``GangliaEvent``
   lines: ``h,ms,Type,jobId,taskId,attempt,node,value,segments`` and ``g,ms,Type,node,value``): the authors' type
   names (``MapPeriod``, ``PullPeriod``, ``HadoopDataActivity``, ``balance``, ``balance-standarddeviation``...),
   job/task/host ids numbered, periods in ms, ``DataIO`` sizes in KiB (its values are Java ints), ``LoadStd`` in
   thousandths.  Raw ``Metric`` events are not converted: no query reads them.
3. **Runs** Q1-Q6 of ``queries/hadoop.yaml`` and ``Q4flat`` on both.  The NFA files follow the authors' own
   ``queries/hadoop/final/*.nfa`` with our pack's strategies, windows and predicates (Q1/Q2 collapsed output, Q3
   ``c.period > 2 * avg(b[].period)`` as theirs, Q4 a trailing Kleene under skip-till-next-match, Q5/Q6 with the
   ``task_id`` equality as a predicate: Ganglia events carry none).  ``Q4flat`` is Q4's record stream without a
   Kleene set: ``SEQ(JobStart a, DataIO b)`` per job, a record per ``DataIO`` (on ours: our Q4 with its increments
   against it, the same records count).  SASE++ is timed by its own profiler (``Total Running Time``: the engine's
   run over the loaded stream; the best of ``--repeat`` runs in one JVM, so the JIT has warmed up); ours by CPU
   seconds of feeding the decoded events (``StreamedMatch``, sorted, records built; the best of ``--repeat``).

The two engines do not compute the same thing for every query: on imprecise events (``delta``) ours evaluates
skip_till_any_match queries under possible-worlds semantics with exact confidences (Q1, Q2, Q5, Q6), SASE++'s
precise engine on timestamps.  The match counts are printed beside the rates.  Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/haopeng+sase-advanced/repo")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hcep" / "sasepp"
JARS = ("lib/jeval.jar", "lib/commons-math3-3.5.jar", "lib/commons-lang3-3.4.jar")
MAIN = "edu.umass.cs.sase.UI.HadoopUsecasePreciseUI"
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
DAY, TEN_MIN = 86_400_000, 600_000
#: name -> (NFA text, collapsed output)
QUERIES: dict[str, tuple[str, bool]] = {
    "Q1": (
        f"selectionStrategy = skip-till-any-match | timeWindow = {DAY} | partitionAttribute = jobId\n"
        "State=1 & type = normal & eventtype = JobStart | edgetype = begin\n"
        "State=2 & type = kleeneClosure & eventtype = MapPeriod | edgetype = begin | edgetype = take"
        " | edgetype = proceed\n"
        "State=3 & type = normal & eventtype = JobFinish | edgetype = begin\nend\n",
        True,
    ),
    "Q2": (
        f"selectionStrategy = skip-till-any-match | timeWindow = {DAY} | partitionAttribute = jobId\n"
        "State=1 & type = normal & eventtype = JobStart | edgetype = begin\n"
        "State=2 & type = kleeneClosure & eventtype = ReducePeriod | edgetype = begin | edgetype = take"
        " | edgetype = proceed\n"
        "State=3 & type = normal & eventtype = JobFinish | edgetype = begin\nend\n",
        True,
    ),
    "Q3": (
        f"selectionStrategy = skip-till-next-match | timeWindow = {TEN_MIN} | partitionAttribute = taskId\n"
        "State=1 & type = normal & eventtype = ReduceStart | edgetype = begin\n"
        "State=2 & type = kleeneClosure & eventtype = PullPeriod | edgetype = begin | edgetype = take"
        " | edgetype = proceed\n"
        "State=3 & type = normal & eventtype = PullPeriod | edgetype = begin & value / 2 > AVG($2.value)\nend\n",
        False,
    ),
    "Q4": (
        f"selectionStrategy = skip-till-next-match | timeWindow = {DAY} | partitionAttribute = jobId\n"
        "State=1 & type = normal & eventtype = JobStart | edgetype = begin\n"
        "State=2 & type = kleeneClosure & eventtype = HadoopDataActivity | edgetype = begin | edgetype = take"
        " | edgetype = proceed\nend\n",
        False,
    ),
    "Q4flat": (
        f"selectionStrategy = skip-till-any-match | timeWindow = {DAY} | partitionAttribute = jobId\n"
        "State=1 & type = normal & eventtype = JobStart | edgetype = begin\n"
        "State=2 & type = normal & eventtype = HadoopDataActivity | edgetype = begin\nend\n",
        False,
    ),
    "Q5": (
        f"selectionStrategy = skip-till-any-match | timeWindow = {TEN_MIN}\n"
        "State=1 & type = normal & eventtype = balance | edgetype = begin & value == 1\n"
        "State=2 & type = normal & eventtype = ReduceStart | edgetype = begin\n"
        "State=3 & type = kleeneClosure & eventtype = balance | edgetype = begin & value == 0"
        " | edgetype = take & value == 0 | edgetype = proceed & value == 0\n"
        "State=4 & type = normal & eventtype = ReduceFinish | edgetype = begin & taskId == $2.taskId\n"
        "State=5 & type = normal & eventtype = balance | edgetype = begin & value == 1\nend\n",
        False,
    ),
    "Q6": (
        f"selectionStrategy = skip-till-any-match | timeWindow = {TEN_MIN}\n"
        "State=1 & type = normal & eventtype = ReduceStart | edgetype = begin\n"
        "State=2 & type = kleeneClosure & eventtype = balance-standarddeviation | edgetype = begin"
        " | edgetype = take & value >= $previous.value | edgetype = proceed\n"
        "State=3 & type = normal & eventtype = ReduceFinish | edgetype = begin & taskId == $1.taskId\nend\n",
        False,
    ),
}
#: Our query each row runs (Q4flat: our Q4, whose increments are a record per DataIO as Q4flat's matches are).
OURS = {"Q4flat": "Q4"}


def build(mirror: Path, cache: Path) -> Path:
    """``javac`` the SASE++ engine from the mirror into ``cache/classes`` (once); the class path to run it."""
    classes = cache / "classes"
    cp = os.pathsep.join([str(classes), *(str(cache / j) for j in JARS)])
    if (classes / (MAIN.replace(".", "/") + ".class")).is_file():
        return Path(cp)
    git = ["git", "--git-dir", str(mirror)]
    cache.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run([*git, "archive", "HEAD", "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(cache)], input=archive, check=True)
    (cache / "lib").mkdir(exist_ok=True)
    for jar in JARS:
        (cache / jar).write_bytes(subprocess.run([*git, "show", f"HEAD:{jar}"], check=True, capture_output=True).stdout)
    main_src = cache / "src" / (MAIN.replace(".", "/") + ".java")
    cmd = [
        "javac",
        "-nowarn",
        "-encoding",
        "UTF-8",
        "-d",
        str(classes),
        "-cp",
        os.pathsep.join(str(cache / j) for j in JARS),
    ]
    subprocess.run([*cmd, "-sourcepath", str(cache / "src"), str(main_src)], check=True, capture_output=True)
    return Path(cp)


def _number(value: Any, table: dict[Any, int]) -> int:
    if not value:
        return 0
    if value not in table:
        table[value] = len(table) + 1
    return table[value]


def convert(events: list[dict[str, Any]], out: Path) -> int:
    """Our events (time order) as SASE++ input lines; returns how many were written."""
    jobs: dict[Any, int] = {}
    tasks: dict[Any, int] = {}
    hosts: dict[Any, int] = {}
    t0 = events[0]["ts"] if events else 0.0
    lines = []
    for e in events:
        t = e["type"]
        ms = int(round((e["ts"] - t0) * 1000))
        if t in HADOOP_TYPES:
            if t in ("Mapper", "Reducer", "DataPull"):
                val = int(round(float(e.get("period") or 0) * 1000))
            elif t == "DataIO":
                val = max(min(int(e.get("size") or 0) // 1024, 2**31 - 1), -(2**31))
            else:
                val = 0
            job, task, host = (
                _number(e.get("job_id"), jobs),
                _number(e.get("task_id"), tasks),
                _number(e.get("host"), hosts),
            )
            lines.append(f"h,{ms},{HADOOP_TYPES[t]},{job},{task},0,{host},{val},0\n")
        elif t == "LoadStd":
            lines.append(f"g,{ms},balance-standarddeviation,0,{int(round(float(e['val']) * 1000))},\n")
        elif t in ("Balance", "Imbalance"):
            lines.append(f"g,{ms},balance,0,{1 if t == 'Balance' else 0},\n")
    out.write_text("".join(lines))
    return len(lines)


def run_sasepp(
    cp: Path, nfa: Path, stream: Path, collapsed: bool, repeat: int, budget: float
) -> tuple[float, int, int]:
    """(best engine seconds, events processed, matches) of SASE++ over ``stream``.

    Its main starts a non-daemon profiling timer and leaves by ``System.exit`` at the end, so when it throws (an NFA
    it cannot run) the JVM would wait for ever: the run is stopped at the exception, or after ``budget`` seconds."""
    args = ["java", "-Xmx4g", "-cp", str(cp), MAIN, str(nfa), str(stream), "0", "0", "0", "1" if collapsed else "0"]
    out_file, err_file = nfa.with_suffix(".out"), nfa.with_suffix(".err")
    with out_file.open("w") as out, err_file.open("w") as err:
        proc = subprocess.Popen([*args, str(repeat)], stdout=out, stderr=err)
        started = time.monotonic()
        while proc.poll() is None:
            time.sleep(0.5)
            failed = 'Exception in thread "main"' in err_file.read_text(errors="replace")
            if failed or time.monotonic() - started > budget:
                proc.kill()
                proc.wait()
                why = err_file.read_text(errors="replace").strip().splitlines()
                raise RuntimeError(f"SASE++ {'failed: ' + why[0] if failed and why else 'ran out of time'}")
    text = out_file.read_text(errors="replace")
    times = [int(x) for x in re.findall(r"Total Running Time: (\d+) nanoseconds", text)]
    if not times:
        raise RuntimeError(f"SASE++ gave no timing: {err_file.read_text(errors='replace')[-300:]}")
    events = re.findall(r"Number Of Events Processed: (\d+)", text)
    matches = re.findall(r"Number Of Matches Found: (\d+)", text)
    return min(times) / 1e9, int(events[-1]) if events else 0, int(matches[-1]) if matches else -1


def run_ours(name: str, path: Path, repeat: int) -> tuple[float, int, int]:
    """(best CPU seconds of matching, events, records) of our engine: the query as the pack says, decoded events."""
    from app.matching.read import read_events
    from engine.evaluate import StreamedMatch
    from engine.language.packs import load_pack
    from engine.plan.compiler import compile_spec

    pack = load_pack(str(ROOT / "queries" / "hadoop.yaml"))
    spec = next(q for q in pack.queries if q.name == name)
    cq = compile_spec(spec, pack.tick)
    events = read_events(path, float(pack.tick), 7.5)
    best, records = float("inf"), 0
    for _ in range(repeat):
        t0 = time.process_time()
        records = sum(1 for _ in StreamedMatch([cq], events, increments=True))
        best = min(best, time.process_time() - t0)
    return best, len(events), records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.peers.sasepp", description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=Path, default=DEFAULT_EVENTS, help="JSON-lines events (bench_hotpath --pack's)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine and query: the best is kept")
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="git dir of github.com/haopeng/sase-advanced")
    ap.add_argument("--rows", help="these queries only (comma-separated)")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds a SASE++ run may take (all its repeats)")
    args = ap.parse_args(argv)
    cp = build(args.mirror, CACHE)
    events = [json.loads(line) for line in args.events.read_text().splitlines() if line.strip()]
    events.sort(key=lambda e: e["ts"])
    work = CACHE / "run"
    work.mkdir(parents=True, exist_ok=True)
    stream = work / "stream.txt"
    n = convert(events, stream)
    ours_input = work / "events.jsonl"  # the same events on our side (the converted types only)
    kept = [e for e in events if e["type"] in HADOOP_TYPES or e["type"] in ("LoadStd", "Balance", "Imbalance")]
    ours_input.write_text("".join(json.dumps(e) + "\n" for e in kept))
    print(f"SASE++ peer on {args.events} ({n:,} events converted, Metric left out); best of {args.repeat}")
    rows = args.rows.split(",") if args.rows else list(QUERIES)
    cols = ["query", "SASE++ s", "SASE++ events/s", "SASE++ matches", "ours CPU s", "ours events/s", "ours records"]
    print("| " + " | ".join([*cols, "ours / SASE++"]) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in rows:
        text, collapsed = QUERIES[name]
        nfa = work / f"{name}.nfa"
        nfa.write_text(text)
        try:
            js, jn, jm = run_sasepp(cp, nfa, stream, collapsed, args.repeat, args.budget)
        except RuntimeError as err:
            js, jn, jm = float("nan"), n, -1
            print(f"{name}: {err}", file=sys.stderr)
        os_, on, om = run_ours(OURS.get(name, name), ours_input, args.repeat)
        jrate = jn / js if js == js and js > 0 else float("nan")
        orate = on / os_ if os_ > 0 else float("nan")
        print(
            f"| {name} | {js:.3f} | {jrate:,.0f} | {jm:,} | {os_:.3f} | {orate:,.0f} | {om:,} | {orate / jrate:.2f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
