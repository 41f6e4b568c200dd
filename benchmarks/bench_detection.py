"""Detection judged against causes (semantics section 9): the Hadoop pack's alerts and Dr. Elephant's, side by side.

For every seed x SWIM mix x cluster size: ``hcep simulate`` with its default fault mix (or ``--faults FILE``), whose
``ground_truth.json`` lists only what it injected (and the few ``natural`` entries section 9 allows); the real
collectors (``hcep collect hadoop`` on the logs, the Ganglia derivation on the samples); exactly the alerts ``hcep match
--alerts`` prints (:func:`app.matching.judge.judge`); and Dr. Elephant's MapReduce heuristics (our port,
``benchmarks/peers/drelephant``) over the same job history files, MODERATE or worse counted as a warning at the job's
finish.  Both are scored by :mod:`benchmarks.detection_score`, which is section 9's arithmetic and nothing else: no
rule's threshold is read here.

    python -m benchmarks.bench_detection                        # seeds 2-6 x fb2009, fb2010 x 20, 200, 500 nodes
    python -m benchmarks.bench_detection --seeds 7 8 --sizes 200 --jobs 2
    python -m benchmarks.bench_detection --quick                # seed 2, 20 and 200 nodes (a smoke run)
    python -m benchmarks.bench_detection --plot benchmarks/figures/detection_recall.png

The rules were tuned on seed 1 only; the default seeds are ones they were never tuned on.  Each configuration runs
in a process of its own (``--jobs``); ``--keep DIR`` keeps the simulations, events and alerts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from benchmarks.detection_score import KINDS, Score, merge, quantile, score

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"
#: The seed the rules were tuned on: reported apart, never in the default table.
TUNED_SEED = 1
#: Issue #24's targets on untuned seeds.
TARGETS = {"recall": 0.95, "precision": 0.9, "false_per_1000_node_hours": 1.0}
#: Delay targets from the fault's onset, stream time (checked on the p90 of the detected faults).
DELAY_TARGETS = {"hung_fetch": 90.0, "runaway_reducer": 120.0, "held_output": 240.0, "slow_node": 600.0}
#: Data skew: alerted before its job ends for at least this share of the detected actionable faults.
BEFORE_JOB_END = 0.8
#: Dr. Elephant's heuristics that stand for a fault kind (the others flag jobs but name no kind of section 9).
DR_ELEPHANT_KINDS = {"Mapper Skew": "map_data_skew", "Reducer Skew": "reduce_data_skew"}
_DR_SEVERITY = {"MODERATE": "warning", "SEVERE": "critical", "CRITICAL": "critical"}


# ------------------------------------------------------------------------------------------------- one configuration
def _hcep(argv: list[str], what: str) -> None:
    from app.cli import main as hcep

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = hcep(argv)
    if rc != 0:
        raise RuntimeError(f"hcep {what} exited {rc}: {err.getvalue().strip()[-2000:]}")


def ganglia_objects(sim: Path, threshold: float) -> list[dict[str, Any]]:
    """The Ganglia events (``Metric``, ``LoadStd``, ``Balance``/``Imbalance``) of a simulation's samples, derived as
    the Ganglia collector derives a poll's rounds (the simulation ran with ``--ganglia none``)."""
    from collectors.ganglia.derive import round_events, rounds_from_samples

    rows = []
    with open(sim / "ganglia" / "samples.jsonl", encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            rows.append((s["ts"], s["cluster"], s["host"], s["metric"], s["value"]))
    return [e for rnd in rounds_from_samples(rows) for e in round_events(rnd, threshold=threshold)]


def collect_events(sim: Path, workdir: Path, pack: Any) -> list[Any]:
    """The events an operator's collectors make of the simulated cluster's logs and Ganglia samples."""
    from engine.events import event_from_json

    hadoop_file = workdir / "hadoop.jsonl"
    _hcep(["collect", "hadoop", str(sim / "hadoop"), "--out", str(hadoop_file), "--no-progress"], "collect hadoop")
    objs = [json.loads(line) for line in hadoop_file.read_text().splitlines() if line.strip()]
    objs.extend(ganglia_objects(sim, float(pack.settings.get("imbalance_threshold", 1.0))))
    objs.sort(key=lambda e: e["ts"])
    return [event_from_json(o, i, pack.tick) for i, o in enumerate(objs)]


def dr_elephant_alerts(hadoop_dir: Path) -> list[dict[str, Any]] | None:
    """Dr. Elephant's verdicts as alerts: one per (job, heuristic) at MODERATE or worse, at the job's finish."""
    try:
        from benchmarks.peers.drelephant.history import analyze_history
    except ImportError:
        return None
    out = []
    for v in analyze_history(str(hadoop_dir)):
        severity = _DR_SEVERITY.get(str(v["severity"]).upper())
        if severity is None:
            continue
        labels = {"alertname": f"DrElephant {v['heuristic']}", "severity": severity, "job_id": v["job_id"]}
        kind = DR_ELEPHANT_KINDS.get(str(v["heuristic"]))
        if kind:
            labels["kind"] = kind
        out.append({"labels": labels, "startsAt": float(v["finished"])})
    return out


def pack_kinds(pack_file: Path) -> dict[str, str]:
    """alertname -> the fault kind its rule declares (its ``kind`` label), read from the pack's YAML."""
    import yaml

    doc = yaml.safe_load(pack_file.read_text())
    return {
        str(r["name"]): str(r["labels"]["kind"])
        for r in doc.get("alerts", [])
        if isinstance(r.get("labels"), dict) and "kind" in r["labels"]
    }


def run_config(
    seed: int, trace: str, nodes: int, hours: float, workdir: str, faults: str | None = None
) -> dict[str, Any]:
    """Simulate, collect, judge and score one cluster."""
    from app.matching.judge import judge
    from engine.language.packs import load_pack

    started = time.perf_counter()
    work = Path(workdir)
    sim = work / "sim"
    argv = ["simulate", "--nodes", str(nodes), "--hours", str(hours), "--seed", str(seed), "--trace", trace]
    argv += ["--out", str(sim), "--ganglia", "none", "--no-progress", "--force"]
    if faults:
        argv += ["--faults", faults]
    _hcep(argv, "simulate")
    pack = load_pack(PACK)
    events = collect_events(sim, work, pack)
    simulated = time.perf_counter() - started
    alerts = [a.to_json() for a in judge(pack, events)]
    with open(work / "alerts.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(a) + "\n" for a in alerts)
    truth = json.loads((sim / "ground_truth.json").read_text())
    ours = score(truth, alerts, pack_kinds(PACK))
    dr_alerts = dr_elephant_alerts(sim / "hadoop")
    dr = score(truth, dr_alerts) if dr_alerts is not None else None
    job_end = {e.attrs.get("job_id"): e.t * pack.tick for e in events if e.type == "JobEnd"}
    return {
        "seed": seed,
        "trace": trace,
        "nodes": nodes,
        "hours": hours,
        "events": len(events),
        "alerts": len(alerts),
        "ours": ours,
        "dr": dr,
        "before_job_end": _before_job_end(truth, alerts, job_end),
        "simulate_s": simulated,
        "judge_s": time.perf_counter() - started - simulated,
    }


def _before_job_end(truth: dict[str, Any], alerts: list[dict[str, Any]], job_end: dict[Any, float]) -> dict[str, list]:
    """Per data-skew kind, for each detected actionable fault: was its first detecting warning before its job ended?"""
    from benchmarks.detection_score import detects, warnings_of, windows_of

    warnings = warnings_of(alerts)
    out: dict[str, list[bool]] = {"map_data_skew": [], "reduce_data_skew": []}
    for f in windows_of(truth)[0]:
        if f.kind not in out or not f.actionable:
            continue
        hits = [w.starts for w in warnings if detects(w, f)]
        if hits and f.entity[1] in job_end:
            out[f.kind].append(min(hits) < job_end[f.entity[1]])
    return out


def _worker(args: tuple[int, str, int, float, str | None, str | None]) -> dict[str, Any]:
    seed, trace, nodes, hours, keep, faults = args
    if keep:
        workdir = os.path.join(keep, f"{trace}-n{nodes}-s{seed}")
        os.makedirs(workdir, exist_ok=True)
        return run_config(seed, trace, nodes, hours, workdir, faults)
    with tempfile.TemporaryDirectory(prefix="hcep-detect-") as workdir:
        return run_config(seed, trace, nodes, hours, workdir, faults)


# ------------------------------------------------------------------------------------------------- the table
def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def rows_of(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per kind: ours and Dr. Elephant's figures and the targets' verdicts."""
    node_hours = sum(r["nodes"] * r["hours"] for r in runs)
    ours = merge([r["ours"] for r in runs])
    drs = [r["dr"] for r in runs if r["dr"] is not None]
    dr: Score | None = merge(drs) if drs else None
    rows = []
    for kind in KINDS:
        k = ours.kinds[kind]
        before = [b for r in runs for b in r["before_job_end"].get(kind, [])]
        d = dr.kinds[kind] if dr is not None else None
        dr_covers = d is not None and kind in DR_ELEPHANT_KINDS.values()
        p90 = quantile(k.delays, 0.9)
        misses = []
        if k.recall is not None and k.recall < TARGETS["recall"]:
            misses.append(f"recall {k.recall:.2f} < {TARGETS['recall']}")
        if k.precision is not None and k.precision < TARGETS["precision"]:
            misses.append(f"precision {k.precision:.2f} < {TARGETS['precision']}")
        if kind in DELAY_TARGETS and p90 is not None and p90 > DELAY_TARGETS[kind]:
            misses.append(f"delay p90 {p90:.0f} s > {DELAY_TARGETS[kind]:.0f} s")
        if before and sum(before) / len(before) < BEFORE_JOB_END:
            misses.append(f"before job end {sum(before) / len(before):.2f} < {BEFORE_JOB_END}")
        if dr_covers and d is not None and d.f1 is not None and (k.f1 or 0.0) <= d.f1:
            misses.append(f"F1 {k.f1 or 0:.2f} <= Dr. Elephant's {d.f1:.2f}")
        rows.append(
            {
                "kind": kind,
                "faults": k.faults,
                "actionable": k.actionable,
                "detected": k.detected,
                "recall": k.recall,
                "warnings": k.warnings,
                "precision": k.precision,
                "f1": k.f1,
                "false_per_1000_node_hours": 1000.0 * k.false_warnings / node_hours if node_hours else 0.0,
                "delay_p50": quantile(k.delays, 0.5),
                "delay_p90": p90,
                "before_job_end": (sum(before) / len(before)) if before else None,
                "dr_recall": d.recall if d is not None else None,
                "dr_precision": d.precision if dr_covers and d is not None else None,
                "dr_f1": d.f1 if dr_covers and d is not None else None,
                "missed": k.missed[:5],
                "targets_missed": misses,
            }
        )
    return rows


def overall_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    node_hours = sum(r["nodes"] * r["hours"] for r in runs)
    ours = merge([r["ours"] for r in runs])
    drs = [r["dr"] for r in runs if r["dr"] is not None]
    dr = merge(drs) if drs else None

    def block(s: Score) -> dict[str, Any]:
        return {
            "warnings": s.warnings,
            "detect": s.true_warnings,
            "touch_only": s.touch_only,
            "false": s.false_warnings,
            "precision": s.precision,
            "false_per_1000_node_hours": 1000.0 * s.false_warnings / node_hours if node_hours else 0.0,
            "false_examples": s.false_examples,
        }

    return {"node_hours": node_hours, "ours": block(ours), "dr": block(dr) if dr is not None else None}


def print_report(runs: list[dict[str, Any]], out: Any = None) -> bool:
    """The README table; returns whether every target was met."""
    from benchmarks.common import print_table as table

    rows = rows_of(runs)
    overall = overall_of(runs)
    configs = (
        ", ".join(sorted({r["trace"] for r in runs}))
        + f"; sizes {sorted({r['nodes'] for r in runs})}; seeds {sorted({r['seed'] for r in runs})}"
    )
    tuned = TUNED_SEED in {r["seed"] for r in runs}
    title = (
        f"Section 9 detection, {len(runs)} clusters ({configs}{'; INCLUDES the tuning seed 1' if tuned else ''}), "
        f"{overall['node_hours']:,.0f} node-hours, {sum(r['events'] for r in runs):,} events"
    )
    cols = ["kind", "faults", "actionable", "recall", "precision", "F1", "false/1000 nh", "delay p50 s", "delay p90 s"]
    cols += ["before job end", "Dr.E recall", "Dr.E precision", "Dr.E F1"]
    body = [
        [
            r["kind"],
            str(r["faults"]),
            str(r["actionable"]),
            _fmt(r["recall"]),
            _fmt(r["precision"]),
            _fmt(r["f1"]),
            _fmt(r["false_per_1000_node_hours"]),
            _fmt(r["delay_p50"], 0),
            _fmt(r["delay_p90"], 0),
            _fmt(r["before_job_end"]),
            _fmt(r["dr_recall"]),
            _fmt(r["dr_precision"]),
            _fmt(r["dr_f1"]),
        ]
        for r in rows
    ]
    with contextlib.redirect_stdout(out if out is not None else sys.stdout):
        table(title, cols, body, plain=True)
        o, d = overall["ours"], overall["dr"]
        print(
            f"overall, ours: {o['warnings']} warnings, {o['detect']} detect, {o['touch_only']} only touch, "
            f"{o['false']} false; precision {_fmt(o['precision'])}, "
            f"{_fmt(o['false_per_1000_node_hours'])} false warnings / 1000 node-hours"
        )
        if d is not None:
            print(
                f"overall, Dr. Elephant: {d['warnings']} warnings, {d['detect']} detect, {d['touch_only']} only "
                f"touch, {d['false']} false; precision {_fmt(d['precision'])}, "
                f"{_fmt(d['false_per_1000_node_hours'])} false warnings / 1000 node-hours"
            )
        else:
            print("Dr. Elephant: not available (benchmarks/peers/drelephant is missing)")
        for ex in o["false_examples"]:
            print(f"  a false warning: {ex}")
        misses = [f"{r['kind']}: {m}" for r in rows for m in r["targets_missed"]]
        if o["precision"] is not None and o["precision"] < TARGETS["precision"]:
            misses.append(f"overall precision {o['precision']:.2f} < {TARGETS['precision']}")
        if o["false_per_1000_node_hours"] > TARGETS["false_per_1000_node_hours"]:
            misses.append(f"false warnings {o['false_per_1000_node_hours']:.2f} / 1000 node-hours > 1")
        for r in rows:
            if r["missed"]:
                print(f"  {r['kind']}: missed {r['missed']}")
        print("targets: " + ("met" if not misses else "NOT met: " + "; ".join(misses)))
    return not misses


def plot(runs: list[dict[str, Any]], path: str) -> None:
    """Recall against severity per kind (ours, and Dr. Elephant where it names the entity), to see where it stops."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = merge([r["ours"] for r in runs])
    drs = [r["dr"] for r in runs if r["dr"] is not None]
    dr = merge(drs) if drs else None
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), constrained_layout=True)
    for ax, kind in zip(axes.flat, KINDS, strict=True):
        for label, s, style in (("hcep", ours, "o-"), ("Dr. Elephant", dr, "s--")):
            if s is None or (label != "hcep" and kind not in DR_ELEPHANT_KINDS.values()):
                continue
            pts = sorted(s.kinds[kind].by_severity)
            if not pts:
                continue
            xs, ys = _binned(pts)
            ax.plot(xs, ys, style, label=label)
        ax.set_title(kind)
        ax.set_xlabel("severity (semantics section 9's meaning for the kind)")
        ax.set_ylabel("share of faults detected")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    n = sum(r["nodes"] * r["hours"] for r in runs)
    fig.suptitle(f"detection against injected severity, {len(runs)} clusters, {n:,.0f} node-hours (all faults)")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _binned(pts: list[tuple[float, bool]], bins: int = 6) -> tuple[list[float], list[float]]:
    """Equal-count bins of (severity, detected): the bin's mean severity and share detected."""
    size = max(1, len(pts) // bins)
    xs, ys = [], []
    for i in range(0, len(pts), size):
        chunk = pts[i : i + size]
        xs.append(sum(s for s, _ in chunk) / len(chunk))
        ys.append(sum(d for _, d in chunk) / len(chunk))
    return xs, ys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4, 5, 6])
    ap.add_argument("--traces", nargs="+", default=["fb2009", "fb2010"], choices=("fb2009", "fb2010"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 500])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument(
        "--faults", metavar="FILE", help="a fault list (semantics section 9) instead of the simulator's default mix"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="configurations run at once")
    ap.add_argument("--keep", metavar="DIR", help="keep each configuration's files under DIR")
    ap.add_argument("--json", metavar="FILE", help="also write the per-kind rows and per-run accounts as JSON")
    ap.add_argument("--plot", metavar="PNG", help="write the recall-against-severity plot")
    ap.add_argument("--quick", action="store_true", help="seed 2, 20 and 200 nodes, both mixes")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.sizes = [2], [20, 200]
    configs = [
        (s, t, n, args.hours, args.keep, args.faults) for s in args.seeds for t in args.traces for n in args.sizes
    ]
    configs.sort(key=lambda c: -c[2])  # the big clusters first: the pool ends together
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(_worker, c): c for c in configs}
        for fut in as_completed(futures):
            seed, trace, nodes, *_ = futures[fut]
            run = fut.result()
            runs.append(run)
            print(
                f"  {trace} {nodes:>4} nodes seed {seed}: {run['events']:>9,} events, {run['alerts']:>4} alert "
                f"transitions ({run['simulate_s']:.0f} s simulate + collect, {run['judge_s']:.0f} s judge) "
                f"[{len(runs)}/{len(configs)}, {time.perf_counter() - started:.0f} s]",
                file=sys.stderr,
                flush=True,
            )
    print_report(runs)
    if args.plot:
        plot(runs, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        doc = {"kinds": rows_of(runs), "overall": overall_of(runs)}
        doc["runs"] = [{k: v for k, v in r.items() if k not in ("ours", "dr")} for r in runs]
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
