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

from simulator import faults as faults_mod
from simulator import swim
from simulator.amlog_out import AmLogWriter
from simulator.background import host_speeds, splits
from simulator.config import SimConfig
from simulator.jhist_out import JhistWriter
from simulator.jobs import Attempt, Job
from simulator.layout import host_names, ms
from simulator.load import LoadRecorder
from simulator.maplog_out import MapLogWriter
from simulator.model import Cluster
from simulator.shuffle import Shuffle
from simulator.tasklog_out import ReduceLogWriter
from simulator.truth import build, write_jobs

_USERS = ("etl", "hive", "analytics", "ads", "search", "adhoc")
_QUEUES = {"etl": "etl", "adhoc": "adhoc"}


def make_jobs(cfg: SimConfig) -> list[Job]:
    """The window's SWIM jobs sized for the cluster (the same whatever faults are injected)."""
    jobs = []
    for i, tj in enumerate(swim.window(cfg.trace, cfg.hours, cfg.nodes, cfg.trace_offset_hours)):
        maps = min(cfg.max_maps, max(1, math.ceil(tj.input_bytes / cfg.split_bytes)))
        reduces = (
            0 if tj.shuffle_bytes <= 0 else min(cfg.max_reduces, max(1, math.ceil(tj.shuffle_bytes / cfg.reduce_bytes)))
        )
        jobs.append(new_job(cfg, i, tj, tj.submit, maps, reduces))
    return jobs


def new_job(cfg: SimConfig, i: int, tj: swim.TraceJob, submit: float, maps: int, reduces: int) -> Job:
    """Job number ``i`` (0-based, in submit order) of the run: trace job ``tj`` submitted ``submit`` seconds after
    the window start, with ``maps`` and ``reduces`` tasks."""
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
    )
    job.splits = splits(job.input_bytes, maps, rng, cfg.last_split_share)
    job.block = max(job.splits)
    job.record_bytes = rng.uniform(60.0, 400.0)
    # map output follows the input (a short split emits less), with a little spread
    job.map_out = [int(tj.shuffle_bytes * b / job.input_bytes * rng.uniform(0.9, 1.1)) for b in job.splits]
    job.set_weights([rng.uniform(0.85, 1.15) for _ in range(reduces)])
    job.map_ok = [None] * maps
    job.reduce_ok = [None] * reduces
    job.watch_fetches(faults_mod.GIB)
    return job


def simulate(
    cfg: SimConfig,
    out_dir: str,
    *,
    ganglia: str = "rrd",
    gmond: str | None = None,
    warn: Callable[[str], None] | None = None,
    jobs_factory: Callable[[SimConfig], list[Job]] = make_jobs,
) -> dict[str, Any]:
    """Simulate and write everything under ``out_dir``; returns a summary.

    ``jobs_factory`` makes the jobs (default: the SWIM window; the live mode's scenario is
    :func:`simulator.live.scenario_jobs`); ``cfg.faults`` the faults (None: the default mix)."""
    cfg.validate()
    warn = warn or (lambda msg: print(msg, file=sys.stderr))
    started = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    hosts = host_names(cfg.nodes)
    jobs = jobs_factory(cfg)
    specs = faults_mod.default_mix(cfg) if cfg.faults is None else list(cfg.faults)
    injector = faults_mod.Injector(cfg, specs)
    loads = LoadRecorder(cfg.nodes)
    jhist = JhistWriter(out_dir, hosts)
    amlog = AmLogWriter(out_dir, hosts)
    reduce_log = ReduceLogWriter(out_dir, hosts, cfg.log_format)
    map_log = MapLogWriter(out_dir, hosts)
    written = {"jhist": 0, "am": 0, "reduce": 0, "map": 0}

    def on_reducer(job: Job, att: Attempt, shuffle: Shuffle) -> None:
        reduce_log.write(job, att, shuffle)
        written["reduce"] += 1

    def on_job(job: Job) -> None:
        path = jhist.write(job)
        amlog.write(job, os.path.basename(path))
        written["map"] += map_log.write(job)
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

    cluster = Cluster(cfg, jobs, loads, on_reducer, on_job, on_progress, faults=injector, speeds=host_speeds(cfg))
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
    truth = build(jobs, hosts, injector, window_start=cfg.start, window_end=window_end)
    _write_json(os.path.join(out_dir, "ground_truth.json"), truth)
    _write_json(os.path.join(out_dir, "faults.json"), specs)
    write_jobs(os.path.join(out_dir, "jobs.jsonl"), jobs, hosts)
    return {
        "jobs": len(jobs),
        "files": written,
        "samples": len(samples),
        "faults": len(truth["faults"]),
        "actionable": sum(1 for f in truth["faults"] if f["actionable"]),
        "natural": len(truth["natural"]),
        "counts": {
            "map_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "m"),
            "reduce_attempts": sum(1 for j in jobs for a in j.attempts if a.kind == "r"),
            "pulls": sum(j.maps * j.reduces for j in jobs),
        },
        "seconds": round(time.perf_counter() - started, 2),
    }


def _write_json(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")


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
