"""Run a simulation end to end: SWIM window -> jobs -> cluster model -> Hadoop artifacts, Ganglia samples, truth.

Output under ``out_dir``: ``hadoop/`` (job history files and container syslogs, see ``layout.py``),
``ganglia/samples.jsonl`` (always) plus RRDs or gmetric packets through ``ganglia_out`` when asked and available,
``ground_truth.json`` and ``jobs.jsonl``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from simulator import anomalies, swim
from simulator.amlog_out import AmLogWriter
from simulator.config import SimConfig
from simulator.definitions import QueuedOutput
from simulator.detect import rounds_of
from simulator.jhist_out import JhistWriter
from simulator.jobs import Attempt, Job
from simulator.layout import host_names, ms
from simulator.load import LoadRecorder
from simulator.model import Cluster
from simulator.shuffle import Shuffle
from simulator.tasklog_out import ReduceLogWriter
from simulator.truth import build, write_jobs

_USERS = ("etl", "hive", "analytics", "ads", "search", "adhoc")
_QUEUES = {"etl": "etl", "adhoc": "adhoc"}


def make_jobs(cfg: SimConfig) -> tuple[list[Job], dict[str, int]]:
    """The window's SWIM jobs sized for the cluster, with their planted anomalies."""
    window = swim.window(cfg.trace, cfg.hours, cfg.nodes, cfg.trace_offset_hours)
    sizes = []
    for tj in window:
        maps = min(cfg.max_maps, max(1, math.ceil(tj.input_bytes / cfg.split_bytes)))
        reduces = (
            0 if tj.shuffle_bytes <= 0 else min(cfg.max_reduces, max(1, math.ceil(tj.shuffle_bytes / cfg.reduce_bytes)))
        )
        sizes.append((tj.submit, maps, reduces, tj.shuffle_bytes if reduces else 0))
    plants, wanted = anomalies.choose(sizes, cfg, random.Random(f"plants/{cfg.seed}"))
    jobs = [
        new_job(cfg, i, tj, submit, maps, reduces, plants.get(i, {}))
        for i, (tj, (submit, maps, reduces, _)) in enumerate(zip(window, sizes, strict=True))
    ]
    return jobs, wanted


def new_job(
    cfg: SimConfig, i: int, tj: swim.TraceJob, submit: float, maps: int, reduces: int, plant: dict[str, Any]
) -> Job:
    """Job number ``i`` (0-based, in submit order) of the run: trace job ``tj`` submitted ``submit`` seconds after
    the window start, with ``maps`` and ``reduces`` tasks and a planted anomaly (``plant``, may be empty)."""
    rng = random.Random(f"job/{cfg.seed}/{i}")
    user = rng.choice(_USERS)
    job = Job(
        idx=i,
        seq=i + 1,
        name=f"swim_{tj.name}",
        user=user,
        queue=_QUEUES.get(user, "default"),
        submit=cfg.start + submit,
        maps=maps,
        reduces=reduces,
        input_bytes=max(tj.input_bytes, 1),
        shuffle_bytes=tj.shuffle_bytes,
        output_bytes=tj.output_bytes,
        rng=rng,
        cts=ms(cfg.start) - 3_600_000,
        plant=dict(plant),
    )
    per_map = tj.shuffle_bytes / maps
    job.map_out = [int(per_map * rng.uniform(0.9, 1.1)) for _ in range(maps)]
    job.set_weights([rng.uniform(0.85, 1.15) for _ in range(reduces)])
    if job.plant.get("kind") == "queued_output":
        job.hold_until = math.inf  # no reducer before the last map has finished (then + the planted delay)
    job.map_ok = [None] * maps
    job.reduce_ok = [None] * reduces
    job.watch_fetches(QueuedOutput.MIN_BYTES)
    return job


def simulate(
    cfg: SimConfig,
    out_dir: str,
    *,
    ganglia: str = "rrd",
    gmond: str | None = None,
    warn: Callable[[str], None] | None = None,
    jobs_factory: Callable[[SimConfig], tuple[list[Job], dict[str, int]]] = make_jobs,
) -> dict[str, Any]:
    """Simulate and write everything under ``out_dir``; returns a summary (also the ground truth's header).

    ``jobs_factory`` makes the jobs and their planted anomalies (default: the SWIM window with random plants; the
    live mode's scenario is :func:`simulator.live.scenario_jobs`)."""
    cfg.validate()
    warn = warn or (lambda msg: print(msg, file=sys.stderr))
    started = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    hosts = host_names(cfg.nodes)
    jobs, wanted = jobs_factory(cfg)
    loads = LoadRecorder(cfg.nodes)
    jhist = JhistWriter(out_dir, hosts)
    amlog = AmLogWriter(out_dir, hosts)
    reduce_log = ReduceLogWriter(out_dir, hosts, cfg.log_format)
    written = {"jhist": 0, "am": 0, "reduce": 0}

    def on_reducer(job: Job, att: Attempt, shuffle: Shuffle) -> None:
        reduce_log.write(job, att, shuffle)
        written["reduce"] += 1

    def on_job(job: Job) -> None:
        path = jhist.write(job)
        amlog.write(job, os.path.basename(path))
        written["jhist"] += 1
        written["am"] += 1

    bar = None
    on_progress = None
    if cfg.progress:
        from tqdm import tqdm

        total = int(cfg.hours * 3600)
        bar = tqdm(total=total, unit="sim-s", desc="simulate", file=sys.stderr, leave=False)

        def on_progress(t: float) -> None:
            bar.n = min(total, int(t - cfg.start))
            bar.refresh()

    cluster = Cluster(cfg, jobs, loads, on_reducer, on_job, on_progress)
    try:
        cluster.run()
    finally:
        if bar is not None:
            bar.close()
    sim_end = max((j.end for j in jobs), default=cfg.start + cfg.hours * 3600)
    window_end = max(cfg.start + cfg.hours * 3600, sim_end + 300.0)
    sample_start = math.floor(cfg.start / cfg.sample_step) * cfg.sample_step
    samples = list(loads.samples(hosts, sample_start, window_end, cfg.sample_step, cfg.seed))
    _write_samples(os.path.join(out_dir, "ganglia", "samples.jsonl"), samples, cfg.cluster)
    _ganglia(ganglia, gmond, out_dir, cfg.cluster, samples, warn)
    truth = build(cfg, jobs, hosts, cluster.records, rounds_of(samples, hosts), wanted, window_end)
    truth["files"] = written
    with open(os.path.join(out_dir, "ground_truth.json"), "w", encoding="utf-8") as handle:
        json.dump(truth, handle, indent=1)
        handle.write("\n")
    write_jobs(os.path.join(out_dir, "jobs.jsonl"), jobs, hosts)
    planted = truth["planted_per_kind"]
    listed = {k: len(v) for k, v in truth["anomalies"].items()}
    return {
        "jobs": len(jobs),
        "files": written,
        "samples": len(samples),
        "planted": planted,
        "anomalies": listed,
        "counts": truth["counts"],
        "seconds": round(time.perf_counter() - started, 2),
    }


def _write_samples(path: str, samples: list[tuple[float, str, str, float]], cluster: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for ts, host, metric, value in samples:
            handle.write(
                f'{{"ts": {ts!r}, "cluster": "{cluster}", "host": "{host}", "metric": "{metric}", '
                f'"value": {value!r}}}\n'
            )


def _ganglia(
    mode: str, gmond: str | None, out_dir: str, cluster: str, samples: list[Any], warn: Callable[..., Any]
) -> None:
    if mode == "none":
        return
    try:
        from simulator import ganglia_out
    except ImportError as err:
        warn(f"simulate: Ganglia writer not available ({err}); wrote ganglia/samples.jsonl only")
        return
    try:
        if mode == "rrd":
            ganglia_out.write_rrd(os.path.join(out_dir, "ganglia", "rrds"), cluster, samples)
        elif mode == "gmond" and gmond:
            ganglia_out.send_gmetric(gmond, samples)
    except Exception as err:  # noqa: BLE001 - rrdtool missing, gmond unreachable...: the samples file still exists
        warn(f"simulate: Ganglia {mode} output skipped ({type(err).__name__}: {err}); see ganglia/samples.jsonl")
