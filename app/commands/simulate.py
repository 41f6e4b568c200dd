"""``hcep simulate``: a seeded Hadoop cluster running the SWIM job mix, written out as genuine Hadoop artifacts.

Writes DIR/hadoop/ (job history files, AM and reduce container syslogs), DIR/ganglia/samples.jsonl (per-host
``load_one`` every 15 s; also RRDs or gmetric packets with ``--ganglia``), DIR/ground_truth.json (planted anomalies)
and DIR/jobs.jsonl (every job and task attempt).  The same seed gives the same files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from app.cli import CommandError
from app.commands.argtypes import non_negative, positive, positive_int

_OURS = ("hadoop", "ganglia", "ground_truth.json", "jobs.jsonl")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=positive_int, default=20, metavar="N", help="cluster size (default 20)")
    parser.add_argument("--hours", type=positive, default=1.0, metavar="H", help="hours of job arrivals (default 1)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--start", type=float, default=1_700_000_000.0, metavar="EPOCH",
                        help="epoch seconds of the first moment simulated (default 1700000000)")
    parser.add_argument("--trace", choices=("fb2009", "fb2010"), default="fb2010", help="SWIM job mix (fb2010)")
    parser.add_argument("--ganglia", nargs="+", default=["rrd"], metavar="MODE",
                        help="rrd (default) | gmond HOST:PORT | none; ganglia/samples.jsonl is always written")
    parser.add_argument("--cluster", default="hadoop", help="Ganglia cluster name (default hadoop)")
    parser.add_argument("--anomalies-per-hour", type=non_negative, default=4.0, metavar="X",
                        help="planted anomalies of each kind per simulated hour (default 4; at least 1 unless 0)")
    parser.add_argument("--log-format", choices=("hadoop2", "hadoop3"), default="hadoop2",
                        help="reduce-log INFO lines of Hadoop 2.x (default) or 3.x (fewer fetcher lines)")
    parser.add_argument("--force", action="store_true", help="replace an earlier simulation's output in DIR")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show a progress bar"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")


def _ganglia_mode(values: list[str]) -> tuple[str, str | None]:
    mode = values[0]
    if mode in ("rrd", "none") and len(values) == 1:
        return mode, None
    if mode == "gmond" and len(values) == 2 and ":" in values[1]:
        return mode, values[1]
    raise CommandError("--ganglia takes rrd, none, or gmond HOST:PORT")


def run(args: argparse.Namespace) -> int:
    from collectors.simulate import SimConfig, simulate

    mode, gmond = _ganglia_mode(args.ganglia)
    existing = [name for name in _OURS if os.path.exists(os.path.join(args.out, name))]
    if existing and not args.force:
        raise CommandError(f"{args.out} already holds a simulation ({existing[0]}); use --force to replace it")
    for name in existing:
        path = os.path.join(args.out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    cfg = SimConfig(
        nodes=args.nodes, hours=args.hours, seed=args.seed, start=args.start, trace=args.trace, cluster=args.cluster,
        anomalies_per_hour=args.anomalies_per_hour, log_format=args.log_format, progress=show,
    )
    try:
        summary = simulate(cfg, args.out, ganglia=mode, gmond=gmond)
    except ValueError as err:
        raise CommandError(f"simulate: {err}") from None
    files = summary["files"]
    planted = sum(summary["planted"].values())
    print(
        f"simulate: {summary['jobs']} jobs ({summary['counts']['map_attempts']} map and "
        f"{summary['counts']['reduce_attempts']} reduce attempts, {summary['counts']['pulls']} shuffle pulls) on "
        f"{args.nodes} nodes; {files['jhist']} history files, {files['am'] + files['reduce']} syslogs, "
        f"{summary['samples']} load samples, {planted} anomalies planted -> {args.out} ({summary['seconds']} s)",
        file=sys.stderr,
    )
    return 0
