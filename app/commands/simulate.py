"""``hcep simulate``: a seeded Hadoop cluster running the SWIM job mix, written out as genuine Hadoop artifacts.

Writes DIR/hadoop/ (job history files, AM, map and reduce container syslogs), DIR/ganglia/samples.jsonl (per-host
``load_one`` every 15 s; also RRDs or gmetric packets with ``--ganglia``), DIR/ground_truth.json (semantics section 9:
the faults injected, and the few natural entries), DIR/faults.json (the fault list used) and DIR/jobs.jsonl (every job
and task attempt).  The same seed gives the same files; the same seed with and without faults, the same jobs and
background.

``--live`` runs the cluster in real time instead (``simulator/live.py``): a compressed scenario starting
now -- a thinned SWIM job mix plus a few medium jobs, with the showcase fault list (one fault of each kind in the
first seconds, again every ``--showcase-every`` seconds) -- whose log lines are appended to DIR/hadoop/ as the wall
clock reaches their times and
whose Ganglia rounds go to gmond (``--ganglia gmond HOST:PORT``) as they fall due.  It runs for ``--minutes`` or until
Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from app.commands import CommandError
from app.commands.argtypes import non_negative, positive, positive_int

_OURS = ("hadoop", "ganglia", "ground_truth.json", "faults.json", "jobs.jsonl", ".plan")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=positive_int, default=20, metavar="N", help="cluster size (default 20)")
    parser.add_argument("--hours", type=positive, default=1.0, metavar="H", help="hours of job arrivals (default 1)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--start",
        type=float,
        default=1_700_000_000.0,
        metavar="EPOCH",
        help="epoch seconds of the first moment simulated (default 1700000000)",
    )
    parser.add_argument("--trace", choices=("fb2009", "fb2010"), default="fb2010", help="SWIM job mix (fb2010)")
    parser.add_argument(
        "--ganglia",
        nargs="+",
        default=None,
        metavar="MODE",
        help="rrd (default; not with --live) | gmond HOST:PORT | none; ganglia/samples.jsonl is always written",
    )
    parser.add_argument("--cluster", default="hadoop", help="Ganglia cluster name (default hadoop)")
    faults = parser.add_mutually_exclusive_group()
    faults.add_argument(
        "--faults",
        metavar="FILE",
        help='inject exactly these faults: a JSON list of {"kind", "at" (s from start), "severity"}; kinds: '
        "map_data_skew, reduce_data_skew, slow_node, hung_fetch, held_output, runaway_reducer. Without it: the "
        "default mix, 3 faults of each kind per simulated hour (at least 1), at uniform times after the first 5 "
        "minutes, severities drawn across and below each kind's floor (skews 2-12x, slow_node 1.3-5x, hung_fetch "
        "15-600 s, held_output 60-900 s, runaway_reducer 1-12); --live: the showcase (one of each kind at the start "
        "and every --showcase-every s)",
    )
    faults.add_argument("--no-faults", action="store_true", help="the background alone (no fault injected)")
    parser.add_argument(
        "--log-format",
        choices=("hadoop2", "hadoop3"),
        default="hadoop2",
        help="reduce-log INFO lines of Hadoop 2.x (default) or 3.x (fewer fetcher lines)",
    )
    parser.add_argument("--force", action="store_true", help="replace an earlier simulation's output in DIR")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show a progress bar"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    live = parser.add_argument_group("live cluster (--live)")
    live.add_argument(
        "--live",
        action="store_true",
        help="play a compressed scenario on the wall clock (logs appended as time passes, Ganglia "
        "rounds sent to gmond), starting now; --hours and --start do not apply",
    )
    live.add_argument("--minutes", type=positive, default=60.0, metavar="M", help="length of the live scenario (60)")
    live.add_argument(
        "--showcase-every",
        type=non_negative,
        default=600.0,
        metavar="S",
        help="inject the showcase (one fault of each kind) at the start and every S seconds "
        "(default 600; 0: only at the start)",
    )
    live.add_argument("--step", type=positive, default=5.0, metavar="S", help="seconds between Ganglia rounds (5)")
    live.add_argument(
        "--keep",
        type=positive,
        default=0.25,
        metavar="F",
        help="fraction of the SWIM jobs kept as background load (default 0.25)",
    )


def _ganglia_mode(values: list[str]) -> tuple[str, str | None]:
    mode = values[0]
    if mode in ("rrd", "none") and len(values) == 1:
        return mode, None
    if mode == "gmond" and len(values) == 2 and ":" in values[1]:
        return mode, values[1]
    raise CommandError("--ganglia takes rrd, none, or gmond HOST:PORT")


def _faults(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The fault list of --faults / --no-faults (None: the default mix, or the showcase with --live)."""
    from simulator.faults import FaultError, parse

    if args.no_faults:
        return []
    if not args.faults:
        return None
    try:
        with open(args.faults, encoding="utf-8") as handle:
            return parse(handle.read(), args.faults)
    except OSError as err:
        raise CommandError(f"--faults {args.faults}: {err.strerror}") from None
    except FaultError as err:
        raise CommandError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    from simulator import SimConfig, simulate

    faults = _faults(args)

    mode, gmond = _ganglia_mode(args.ganglia or ["none" if args.live else "rrd"])
    if args.live and mode == "rrd":
        raise CommandError("--live sends Ganglia rounds to gmond: use --ganglia gmond HOST:PORT or --ganglia none")
    existing = [name for name in _OURS if os.path.exists(os.path.join(args.out, name))]
    if existing and not args.force:
        raise CommandError(f"{args.out} already holds a simulation ({existing[0]}); use --force to replace it")
    for name in existing:
        path = os.path.join(args.out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    if args.live:
        return _live(args, mode, gmond, faults)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    cfg = SimConfig(
        nodes=args.nodes,
        hours=args.hours,
        seed=args.seed,
        start=args.start,
        trace=args.trace,
        cluster=args.cluster,
        faults=faults,
        log_format=args.log_format,
        progress=show,
    )
    try:
        summary = simulate(cfg, args.out, ganglia=mode, gmond=gmond)
    except ValueError as err:
        raise CommandError(f"simulate: {err}") from None
    files = summary["files"]
    print(
        f"simulate: {summary['jobs']} jobs ({summary['counts']['map_attempts']} map and "
        f"{summary['counts']['reduce_attempts']} reduce attempts, {summary['counts']['pulls']} shuffle pulls) on "
        f"{args.nodes} nodes; {files['jhist']} history files, {files['am'] + files['reduce'] + files['map']} syslogs, "
        f"{summary['samples']} load samples, {summary['faults']} faults injected ({summary['actionable']} "
        f"actionable), {summary['natural']} natural entries -> {args.out} ({summary['seconds']} s)",
        file=sys.stderr,
    )
    return 0


def _live(args: argparse.Namespace, mode: str, gmond: str | None, faults: list[dict[str, Any]] | None) -> int:
    import json
    import signal
    import threading
    import time

    from simulator import live

    if args.keep > 1:
        raise CommandError("--keep is a fraction of the SWIM jobs, at most 1")
    cfg = live.live_config(
        nodes=args.nodes,
        minutes=args.minutes,
        seed=args.seed,
        sample_step=args.step,
        trace=args.trace,
        cluster=args.cluster,
        log_format=args.log_format,
        faults=faults,
    )
    try:
        summary = live.plan(cfg, args.out, showcase_every=args.showcase_every, keep=args.keep)
    except ValueError as err:
        raise CommandError(f"simulate: {err}") from None
    with open(os.path.join(args.out, "ground_truth.json"), encoding="utf-8") as handle:
        truth = json.load(handle)
    player = live.Player(
        os.path.join(args.out, live.PLAN), args.out, gmond=gmond if mode == "gmond" else None, cluster=args.cluster
    )
    say = _say
    when = time.strftime("%H:%M:%S", time.gmtime(cfg.start))
    say(
        f"simulate --live: {summary['jobs']} jobs on {args.nodes} nodes planned in {summary['seconds']} s; playing "
        f"from {when} UTC for {args.minutes:g} min into {args.out} (Ganglia: {gmond if mode == 'gmond' else 'none'})"
    )
    for line in live.describe(truth, cfg.start):
        say(f"  fault {line}")

    def stop(_signum: int, _frame: object) -> None:
        player.stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    done = threading.Event()

    def report() -> None:  # one progress line a minute, for the log
        while not done.wait(60.0):
            st = player.stats
            say(
                f"simulate --live: +{time.time() - cfg.start:.0f}s: {st.lines} log lines in {st.files} files, "
                f"{st.rounds} Ganglia rounds"
            )

    threading.Thread(target=report, daemon=True).start()
    try:
        stats = player.run()
    except RuntimeError as err:
        say(f"simulate --live: {err}")
        return 1
    finally:
        done.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    finished = "finished" if time.time() >= player.end else "stopped"
    say(
        f"simulate --live: {finished} after {max(0.0, time.time() - cfg.start):.0f} s: {stats.lines} log lines in "
        f"{stats.files} files, {stats.rounds} Ganglia rounds ({stats.skipped_rounds} skipped, late)"
    )
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
