"""The fault-free background against semantics section 9's bands, measured from the logs as an operator reads them.

``hcep simulate`` with an empty fault list, then ``hcep collect hadoop`` over its job history files, then these
statistics of the collected ``Mapper`` / ``Reducer`` events (one per finished task attempt; ``period`` = finish -
start): nothing here reads the simulator's insides, so a background made calmer shows here.

- phases (a job's maps, or its reduces) with at least 3 successful attempts;
- among phases of 3-10 successful attempts: the mean of slowest / median (section 9: between 3 and 12);
- the share of successful attempts longer than 1.5x their phase's median (section 9: 5-20%);
- killed attempts per 200 tasks (section 9: at least 1), and how many of them stand beside a successful attempt of their
  task (section 9: each).

    python -m benchmarks.bench_background                              # seeds 1-3 x fb2009, fb2010 x 20, 200 nodes
    python -m benchmarks.bench_background --seeds 4 --sizes 500 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

#: Section 9's bands.
RATIO_BAND = (3.0, 12.0)
SLOW_SHARE_BAND = (0.05, 0.20)
KILLED_PER_200_MIN = 1.0


def background_stats(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Section 9's statistics of the task-attempt events of one or more clusters."""
    ok: dict[tuple[str, str], list[float]] = defaultdict(list)
    tasks: set[tuple[str, str]] = set()
    succeeded_tasks: set[tuple[str, str]] = set()
    killed: list[tuple[str, str]] = []
    for e in events:
        if e.get("type") not in ("Mapper", "Reducer"):
            continue
        job, task = str(e.get("job_id")), str(e.get("task_id"))
        tasks.add((job, task))
        status = str(e.get("status", "SUCCEEDED")).upper()
        if status == "SUCCEEDED":
            ok[(job, str(e["type"]))].append(float(e["period"]))
            succeeded_tasks.add((job, task))
        elif status == "KILLED":
            killed.append((job, task))
    ratios, slow, counted = [], 0, 0
    for periods in ok.values():
        if len(periods) < 3:
            continue
        med = statistics.median(periods)
        if med <= 0:
            continue
        counted += len(periods)
        slow += sum(p > 1.5 * med for p in periods)
        if len(periods) <= 10:
            ratios.append(max(periods) / med)
    return {
        "phases": sum(len(p) >= 3 for p in ok.values()),
        "small_phases": len(ratios),
        "slowest_over_median": statistics.fmean(ratios) if ratios else None,
        "attempts": counted,
        "slow_share": slow / counted if counted else None,
        "tasks": len(tasks),
        "killed": len(killed),
        "killed_per_200_tasks": 200.0 * len(killed) / len(tasks) if tasks else None,
        "killed_beside_success": sum(k in succeeded_tasks for k in killed),
    }


def unmeasurable(stats: Mapping[str, Any]) -> list[str]:
    """The bands that this cluster's history cannot judge: no phase of 3-10 successful attempts (the mean over none
    is undefined), or no killed attempt among fewer than 200 tasks (a rate "per 200 tasks" needs 200 of them; a job
    of one map has no sibling for Hadoop's speculator to compare it with)."""
    out = []
    if not stats["small_phases"]:
        out.append("no phase of 3-10 attempts")
    if not stats["killed"] and stats["tasks"] < 200:
        out.append(f"no killed attempt in {stats['tasks']} (< 200) tasks")
    return out


def in_bands(stats: Mapping[str, Any]) -> list[str]:
    """What falls outside section 9's bands (empty when the background is in them; what :func:`unmeasurable` names
    is not judged here)."""
    out = []
    r, s, k = stats["slowest_over_median"], stats["slow_share"], stats["killed_per_200_tasks"]
    if r is not None and not RATIO_BAND[0] <= r <= RATIO_BAND[1]:
        out.append(f"mean slowest/median {r:.2f} outside {RATIO_BAND}")
    if s is not None and not SLOW_SHARE_BAND[0] <= s <= SLOW_SHARE_BAND[1]:
        out.append(f"share over 1.5x median {s:.1%} outside {SLOW_SHARE_BAND}")
    if (stats["killed"] or stats["tasks"] >= 200) and (k is None or k < KILLED_PER_200_MIN):
        out.append(f"killed attempts per 200 tasks {k} < {KILLED_PER_200_MIN}")
    if stats["killed_beside_success"] != stats["killed"]:
        out.append(f"{stats['killed'] - stats['killed_beside_success']} killed attempts without a successful sibling")
    return out


def verdict(stats: Mapping[str, Any]) -> str:
    """One cell: in bands, what is out, and what cannot be judged (said, never counted as in)."""
    out, na = in_bands(stats), unmeasurable(stats)
    parts = ["OUT: " + "; ".join(out)] if out else ["in bands" if not na else "in the bands it can judge"]
    if na:
        parts.append("not measurable: " + "; ".join(na))
    return "; ".join(parts)


def simulate_background(seed: int, trace: str, nodes: int, hours: float, workdir: str) -> list[dict[str, Any]]:
    """A fault-free simulated cluster's task-attempt events, through ``hcep simulate`` and ``hcep collect hadoop``."""
    from benchmarks.bench_detection import _hcep

    work = Path(workdir)
    faults = work / "no-faults.json"
    faults.write_text("[]\n")
    sim = work / "sim"
    _hcep(
        [
            "simulate",
            *("--nodes", str(nodes), "--hours", str(hours), "--seed", str(seed), "--trace", trace),
            *("--out", str(sim), "--ganglia", "none", "--no-progress", "--force", "--faults", str(faults)),
        ],
        "simulate",
    )
    out = work / "hadoop.jsonl"
    _hcep(["collect", "hadoop", str(sim / "hadoop"), "--out", str(out), "--no-progress"], "collect hadoop")
    keep = ("Mapper", "Reducer")
    return [e for e in map(json.loads, out.read_text().splitlines()) if e.get("type") in keep]


def _one(args: tuple[int, str, int, float]) -> dict[str, Any]:
    seed, trace, nodes, hours = args
    with tempfile.TemporaryDirectory(prefix="hcep-background-") as work:
        stats = background_stats(simulate_background(seed, trace, nodes, hours, work))
    return {"seed": seed, "trace": trace, "nodes": nodes, "hours": hours, **stats}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--traces", nargs="+", default=["fb2009", "fb2010"], choices=("fb2009", "fb2010"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 200])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    from benchmarks.common import print_table

    configs = [(s, t, n, args.hours) for t in args.traces for n in args.sizes for s in args.seeds]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(_one, configs))

    def f(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    body = [
        [
            r["trace"],
            str(r["nodes"]),
            str(r["seed"]),
            str(r["small_phases"]),
            f(r["slowest_over_median"], ".2f"),
            f(r["slow_share"], ".1%"),
            f(r["killed_per_200_tasks"], ".2f"),
            str(r["tasks"]),
            f"{r['killed_beside_success']}/{r['killed']}",
            verdict(r),
        ]
        for r in rows
    ]
    cols = [
        "mix",
        "nodes",
        "seed",
        "phases 3-10",
        "mean slowest/median",
        "> 1.5x median",
        "killed / 200 tasks",
        "tasks",
    ]
    cols += ["killed beside a success", "section 9 (3-12, 5-20%, >= 1)"]
    print_table("fault-free background, from the collected job history", cols, body, plain=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(not in_bands(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
