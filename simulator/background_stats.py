"""The background statistics of semantics section 9, measured from the job history files alone (any Hadoop cluster's,
not only ours).

    python -m simulator.background_stats DIR [DIR ...]

reads every ``*.jhist`` under each DIR (JSON-encoded history files, as the simulator and Hadoop's default
``mapreduce.jobhistory.jhist.format=json`` write them), parses them itself (nothing of the simulator's model), and
prints, per DIR and against the bands of semantics section 9:

- over map and reduce phases with >= 3 successful attempts (durations finish - start of SUCCEEDED attempts):
  among phases of 3-10 such attempts, the mean of slowest / median (band [3, 12]);
- the share of those attempts that ran longer than 1.5x their phase's median (band [5%, 20%]);
- killed attempts per 200 tasks (>= 1), and how many of them stand beside a successful attempt of their task (all);
- the stragglers' input: the median, over attempts > 1.5x their map phase's median, of their HDFS_BYTES_READ over
  the phase's median (about 1: a natural straggler reads what its siblings read).
Exit status 0 when every band holds, 1 otherwise, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

BANDS = {"slowest_over_median": (3.0, 12.0), "over_1_5x": (0.05, 0.20), "killed_per_200_tasks": (1.0, None)}


@dataclass
class Job:
    starts: dict[str, int] = field(default_factory=dict)  #: attempt -> start ms
    ok: dict[str, tuple[str, str, int, int]] = field(default_factory=dict)  #: attempt -> (task, type, finish, bytes)
    killed: list[str] = field(default_factory=list)  #: task ids of killed attempts
    tasks: set[str] = field(default_factory=set)


def _files(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".jhist"):
                yield os.path.join(dirpath, name)


def _counter(counters: Any, name: str) -> int:
    for group in (counters or {}).get("groups", []):
        for c in group.get("counts", []):
            if c.get("name") == name:
                return int(c.get("value", 0))
    return 0


def read_jhist(path: str) -> Job:
    """The attempts of one JSON history file (``Avro-Json``, the schema, then one event per line)."""
    job = Job()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line.startswith('{"type"'):
                continue
            event = json.loads(line)
            if not isinstance(event.get("event"), dict):
                continue  # the schema line
            etype = event["type"]
            body = next(iter(event["event"].values()))
            if etype == "TASK_STARTED":
                job.tasks.add(body["taskid"])
            elif etype.endswith("_ATTEMPT_STARTED"):
                job.starts[body["attemptId"]] = int(body["startTime"])
            elif etype in ("MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED"):
                kind = "MAP" if etype.startswith("MAP") else "REDUCE"
                counters = body.get("counters")
                read = _counter(counters, "HDFS_BYTES_READ")
                job.ok[body["attemptId"]] = (body["taskid"], kind, int(body["finishTime"]), read)
            elif etype.endswith("_ATTEMPT_KILLED"):
                job.killed.append(body["taskid"])
    return job


@dataclass
class Stats:
    jobs: int = 0
    tasks: int = 0
    attempts_in_phases: int = 0
    over: int = 0
    small_phases: list[float] = field(default_factory=list)
    killed: int = 0
    killed_beside_success: int = 0
    straggler_input: list[float] = field(default_factory=list)

    def figures(self) -> dict[str, float | int | None]:
        return {
            "jobs": self.jobs,
            "tasks": self.tasks,
            "phases_3_10": len(self.small_phases),
            "slowest_over_median": statistics.fmean(self.small_phases) if self.small_phases else None,
            "attempts_in_phases": self.attempts_in_phases,
            "over_1_5x": self.over / self.attempts_in_phases if self.attempts_in_phases else None,
            "killed": self.killed,
            "killed_per_200_tasks": 200.0 * self.killed / self.tasks if self.tasks else None,
            "killed_beside_success": self.killed_beside_success,
            "straggler_input_over_median": statistics.median(self.straggler_input) if self.straggler_input else None,
        }


def measure(root: str) -> Stats:
    st = Stats()
    for path in _files(root):
        job = read_jhist(path)
        st.jobs += 1
        st.tasks += len(job.tasks)
        ok_tasks = {task for task, _, _, _ in job.ok.values()}
        st.killed += len(job.killed)
        st.killed_beside_success += sum(1 for t in job.killed if t in ok_tasks)
        phases: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for attempt, (_, kind, finish, read) in job.ok.items():
            if attempt in job.starts:
                phases[kind].append((finish - job.starts[attempt], read))
        for kind, rows in phases.items():
            if len(rows) < 3:
                continue
            durations = [d for d, _ in rows]
            median = statistics.median(durations)
            if median <= 0:
                continue
            st.attempts_in_phases += len(rows)
            slow = [(d, r) for d, r in rows if d > 1.5 * median]
            st.over += len(slow)
            if len(rows) <= 10:
                st.small_phases.append(max(durations) / median)
            if kind == "MAP":
                median_read = statistics.median(r for _, r in rows)
                if median_read > 0:
                    st.straggler_input.extend(r / median_read for _, r in slow)
    return st


def _verdict(name: str, value: float | int | None) -> str:
    band = BANDS.get(name)
    if band is None or value is None:
        return ""
    lo, hi = band
    ok = value >= lo and (hi is None or value <= hi)
    return f"  [{lo:g}, {'' if hi is None else f'{hi:g}'}] {'ok' if ok else 'OUT OF BAND'}"


def report(root: str, st: Stats) -> tuple[str, bool]:
    fig = st.figures()
    lines = [f"{root}: {fig['jobs']} jobs, {fig['tasks']} tasks"]
    ok = True
    for name in ("slowest_over_median", "over_1_5x", "killed_per_200_tasks"):
        value = fig[name]
        verdict = _verdict(name, value)
        ok = ok and "ok" in verdict
        shown = "n/a" if value is None else f"{value:.3f}"
        lines.append(f"  {name:<28} {shown}{verdict}")
    lines.append(f"  phases of 3-10 attempts        {fig['phases_3_10']}")
    lines.append(f"  attempts in phases of >= 3     {fig['attempts_in_phases']}")
    lines.append(f"  killed attempts                {fig['killed']} ({fig['killed_beside_success']} beside a success)")
    sio = fig["straggler_input_over_median"]
    lines.append(f"  straggler input / median       {'n/a' if sio is None else f'{sio:.2f}'}")
    ok = ok and fig["killed"] == fig["killed_beside_success"]
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator.background_stats", description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="a simulation's output (or any dir of .jhist files)")
    parser.add_argument("--json", action="store_true", help="one JSON object of figures per DIR instead")
    args = parser.parse_args(argv)
    all_ok = True
    for root in args.dirs:
        if not os.path.isdir(root):
            print(f"background_stats: {root}: not a directory", file=sys.stderr)
            return 2
        try:
            st = measure(root)
        except (OSError, ValueError, KeyError, StopIteration) as err:
            print(f"background_stats: {root}: unreadable history file ({type(err).__name__}: {err})", file=sys.stderr)
            return 2
        text, ok = report(root, st)
        all_ok = all_ok and ok
        print(json.dumps({"dir": root, **st.figures()}) if args.json else text)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
