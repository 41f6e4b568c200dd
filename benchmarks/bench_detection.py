"""Detection quality of the Hadoop pack's alerts against the simulator's ground truth (issue #15, README table).

For every seed x SWIM mix x cluster size: ``hcep simulate`` (its ``ground_truth.json`` lists every anomaly by the
README's definitions, planted or not, with the moment it became knowable from the logs), the real collectors
(``hcep collect hadoop`` on the logs, the Ganglia derivation on the samples), then exactly what ``hcep match
--alerts`` prints (:func:`app.commands.match.judge`).  Per anomaly kind (the rules' ``anomaly`` label), counting
warning-or-worse alerts once per alert group (a job, or a reducer):

- **precision**: alert groups that name a ground-truth anomaly of their kind / all alert groups of the kind;
- **recall**: ground-truth anomalies with a warning-or-worse alert / all ground-truth anomalies of the kind;
- **false warnings per 1000 node-hours**: wrong alert groups per 1000 simulated node-hours;
- **time to detect**: the alert's ``startsAt`` (the stream time it was decided) minus the anomaly's ``knowable_at``.

    python -m benchmarks.bench_detection                       # seeds 1-5 x fb2009, fb2010 x 20, 200, 500 nodes
    python -m benchmarks.bench_detection --seeds 6 7 8 --sizes 20 200 --jobs 2
    python -m benchmarks.bench_detection --quick               # one seed, 20 and 200 nodes (a smoke run)

Each configuration runs in a process of its own (``--jobs``, default the CPU count); ``--keep DIR`` keeps the
simulations, events and alerts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"
KINDS = ("skewed_mapper", "skewed_reducer", "slow_pull", "queued_output", "unbalancing_reducer")
WARNING_OR_WORSE = frozenset({"warning", "critical"})
#: Targets of issue #15 for warning-or-worse alerts.
TARGETS = {"precision": 0.9, "recall": 0.95, "false_per_1000_node_hours": 1.0, "detect_seconds": 120.0}


def anomaly_key(kind: str, obj: dict[str, Any]) -> tuple[str, ...]:
    """What one alert stands for, per kind: the job for skew and held output, the reducer for pulls and load."""
    if kind in ("slow_pull", "unbalancing_reducer"):
        return (str(obj.get("job_id", "")), str(obj.get("task_id", "")))
    return (str(obj.get("job_id", "")),)


@dataclass
class KindResult:
    truth: dict[tuple, float] = field(default_factory=dict)  # anomaly -> knowable_at
    planted: set[tuple] = field(default_factory=set)
    alerted: dict[tuple, float] = field(default_factory=dict)  # warning+ alert group -> first startsAt
    info: int = 0

    def merge(self, other: KindResult, tag: str) -> None:
        self.truth.update({(tag, *k): v for k, v in other.truth.items()})
        self.planted.update((tag, *k) for k in other.planted)
        self.alerted.update({(tag, *k): v for k, v in other.alerted.items()})
        self.info += other.info


def score(truth_file: Path, alerts: Iterable[dict[str, Any]]) -> dict[str, KindResult]:
    """Per kind: the ground truth, and the alert groups (warning or worse) with when they were first decided."""
    from contracts.alerts import parse_rfc3339

    truth = json.loads(truth_file.read_text())
    out = {kind: KindResult() for kind in KINDS}
    for kind in KINDS:
        for entry in truth["anomalies"].get(kind, []):
            key = anomaly_key(kind, entry)
            at = float(entry.get("knowable_at", entry.get("ts", 0.0)) or 0.0)
            res = out[kind]
            res.truth[key] = min(at, res.truth.get(key, at))
            if entry.get("planted"):
                res.planted.add(key)
    for alert in alerts:
        if "endsAt" in alert:
            continue  # a resolution
        labels = alert["labels"]
        kind = labels.get("anomaly")
        if kind not in out:
            continue
        key = anomaly_key(kind, labels)
        if labels.get("severity") not in WARNING_OR_WORSE:
            out[kind].info += 1
            continue
        starts = parse_rfc3339(alert["startsAt"]) or 0.0
        res = out[kind]
        res.alerted[key] = min(starts, res.alerted.get(key, starts))
    return out


# ------------------------------------------------------------------------------------------------- one configuration
def run_config(seed: int, trace: str, nodes: int, hours: float, workdir: str) -> dict[str, Any]:
    """Simulate, collect and judge one cluster; returns the per-kind results and an account of the run."""
    from app.cli import main as hcep
    from app.commands.match import judge
    from collectors.ganglia.derive import round_events, rounds_from_samples
    from engine.events import event_from_json
    from engine.language.packs import load_pack

    started = time.perf_counter()
    sim = Path(workdir) / "sim"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = hcep(
            [
                "simulate",
                "--nodes",
                str(nodes),
                "--hours",
                str(hours),
                "--seed",
                str(seed),
                "--trace",
                trace,
                "--out",
                str(sim),
                "--ganglia",
                "none",
                "--no-progress",
                "--force",
            ]
        )
        if rc != 0:
            raise RuntimeError(f"hcep simulate exited {rc}: {err.getvalue().strip()}")
        hadoop_file = Path(workdir) / "hadoop.jsonl"
        rc = hcep(["collect", "hadoop", str(sim / "hadoop"), "--out", str(hadoop_file), "--no-progress"])
        if rc != 0:
            raise RuntimeError(f"hcep collect hadoop exited {rc}: {err.getvalue().strip()}")
    pack = load_pack(PACK)
    threshold = float(pack.settings.get("imbalance_threshold", 1.0))
    objs = [json.loads(line) for line in hadoop_file.read_text().splitlines() if line.strip()]
    rows = []
    with open(sim / "ganglia" / "samples.jsonl", encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            rows.append((s["ts"], s["cluster"], s["host"], s["metric"], s["value"]))
    for rnd in rounds_from_samples(rows):
        objs.extend(round_events(rnd, threshold=threshold))
    objs.sort(key=lambda e: e["ts"])
    events = [event_from_json(o, i, pack.tick) for i, o in enumerate(objs)]
    simulated = time.perf_counter() - started
    alerts = [a.to_json() for a in judge(pack, events)]
    with open(Path(workdir) / "alerts.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(a) + "\n" for a in alerts)
    results = score(sim / "ground_truth.json", alerts)
    return {
        "seed": seed,
        "trace": trace,
        "nodes": nodes,
        "hours": hours,
        "events": len(events),
        "alerts": len(alerts),
        "results": results,
        "simulate_s": simulated,
        "judge_s": time.perf_counter() - started - simulated,
    }


def _worker(args: tuple[int, str, int, float, str | None]) -> dict[str, Any]:
    seed, trace, nodes, hours, keep = args
    if keep:
        workdir = os.path.join(keep, f"{trace}-n{nodes}-s{seed}")
        os.makedirs(workdir, exist_ok=True)
        return run_config(seed, trace, nodes, hours, workdir)
    with tempfile.TemporaryDirectory(prefix="hcep-detect-") as workdir:
        return run_config(seed, trace, nodes, hours, workdir)


# ------------------------------------------------------------------------------------------------- the table
def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node_hours = sum(r["nodes"] * r["hours"] for r in runs)
    rows = []
    for kind in KINDS:
        total = KindResult()
        for r in runs:
            total.merge(r["results"][kind], f"{r['trace']}/{r['nodes']}/{r['seed']}")
        tp = [k for k in total.alerted if k in total.truth]
        fp = [k for k in total.alerted if k not in total.truth]
        found = [k for k in total.truth if k in total.alerted]
        delays = sorted(total.alerted[k] - total.truth[k] for k in found)
        rows.append(
            {
                "kind": kind,
                "anomalies": len(total.truth),
                "planted": len(total.planted & set(total.truth)),
                "alerts": len(total.alerted),
                "tp": len(tp),
                "fp": len(fp),
                "precision": len(tp) / len(total.alerted) if total.alerted else None,
                "recall": len(found) / len(total.truth) if total.truth else None,
                "false_per_1000_node_hours": 1000.0 * len(fp) / node_hours if node_hours else 0.0,
                "detect_p50": statistics.median(delays) if delays else None,
                "detect_max": max(delays) if delays else None,
                "info": total.info,
                "missed": sorted(k for k in total.truth if k not in total.alerted)[:5],
                "false": sorted(fp)[:5],
            }
        )
    return rows


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0"


def print_table(rows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    from benchmarks.common import print_table as table

    node_hours = sum(r["nodes"] * r["hours"] for r in runs)
    configs = (
        ", ".join(sorted({f"{r['trace']}" for r in runs}))
        + f"; sizes {sorted({r['nodes'] for r in runs})}"
        + f"; seeds {sorted({r['seed'] for r in runs})}"
    )
    title = (
        f"detection quality of queries/hadoop.yaml (warning or worse), {len(runs)} clusters ({configs}), "
        f"{node_hours:,.0f} node-hours, {sum(r['events'] for r in runs):,} events"
    )
    cols = [
        "kind",
        "anomalies",
        "planted",
        "alert groups",
        "precision",
        "recall",
        "false / 1000 node-h",
        "detect p50 s",
        "detect max s",
        "info alerts",
    ]
    body = [
        [
            r["kind"],
            str(r["anomalies"]),
            str(r["planted"]),
            str(r["alerts"]),
            _fmt(r["precision"]),
            _fmt(r["recall"]),
            _fmt(r["false_per_1000_node_hours"]),
            _fmt(r["detect_p50"], 0),
            _fmt(r["detect_max"], 0),
            str(r["info"]),
        ]
        for r in rows
    ]
    table(title, cols, body, plain=True)
    for r in rows:
        if r["missed"] or r["false"]:
            print(f"  {r['kind']}: missed {r['missed']} false {r['false']}")
    ok = all(
        (r["precision"] is None or r["precision"] >= TARGETS["precision"])
        and (r["recall"] is None or r["recall"] >= TARGETS["recall"])
        and r["false_per_1000_node_hours"] <= TARGETS["false_per_1000_node_hours"]
        and (r["detect_max"] is None or r["detect_max"] <= TARGETS["detect_seconds"])
        for r in rows
    )
    print(
        f"targets (precision >= 0.9, recall >= 0.95, <= 1 false warning / 1000 node-hours, detection <= 120 s): "
        f"{'met' if ok else 'NOT met'}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--traces", nargs="+", default=["fb2009", "fb2010"], choices=("fb2009", "fb2010"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 500])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="configurations run at once")
    ap.add_argument("--keep", metavar="DIR", help="keep each configuration's files under DIR")
    ap.add_argument("--json", metavar="FILE", help="also write the per-kind rows and per-run accounts as JSON")
    ap.add_argument("--quick", action="store_true", help="seed 1, 20 and 200 nodes, both mixes")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.sizes = [1], [20, 200]
    configs = [(s, t, n, args.hours, args.keep) for s in args.seeds for t in args.traces for n in args.sizes]
    configs.sort(key=lambda c: -c[2])  # the big clusters first: the pool ends together
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(_worker, c): c for c in configs}
        for fut in as_completed(futures):
            seed, trace, nodes, _h, _k = futures[fut]
            run = fut.result()
            runs.append(run)
            print(
                f"  {trace} {nodes:>4} nodes seed {seed}: {run['events']:>9,} events, {run['alerts']:>4} alert "
                f"transitions ({run['simulate_s']:.0f} s simulate + collect, {run['judge_s']:.0f} s judge) "
                f"[{len(runs)}/{len(configs)}, {time.perf_counter() - started:.0f} s]",
                file=sys.stderr,
                flush=True,
            )
    rows = summarise(runs)
    print_table(rows, runs)
    if args.json:
        plain = [{k: v for k, v in r.items() if k != "results"} for r in runs]
        Path(args.json).write_text(json.dumps({"kinds": rows, "runs": plain}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
