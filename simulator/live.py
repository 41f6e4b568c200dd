"""The simulator as a live cluster: a compressed scenario played out on the wall clock.

``hcep simulate --live`` first *plans*: it runs the ordinary discrete-event simulation (``run.simulate``) for a
scenario that starts a few seconds from now, into ``DIR/.plan/``.  Then it *plays* the plan in real time (speed 1):

- every line of the plan's Hadoop files -- MRAppMaster and reduce-task syslogs, and the job history files, which grow
  event by event as the AM's history writer flushes them -- is appended to the same path under ``DIR/hadoop/`` once
  the wall clock reaches the line's own timestamp (log4j time, or the history event's time);
- every Ganglia round (``load_one`` of every host, every ``sample_step`` seconds) is sent to a real gmond with
  ``ganglia_out.send_gmetric`` at its time, and appended to ``DIR/ganglia/samples.jsonl``.

gmond stamps a metric when it receives it, and the log lines carry the times they are written at, so both sources
share one clock -- the condition for the queries that join them (Q5, Q6).  That is why the scenario is compressed,
not the clock sped up.

The scenario (:func:`scenario_jobs`): a thinned SWIM job mix, plus a few ordinary medium-sized jobs at the start and
every ``showcase_every`` seconds (part of the scenario's world with or without faults: they give every fault kind a
target early).  The *showcase* is a fault list (:func:`showcase_faults`): one fault of each kind in the first seconds,
again every ``showcase_every`` seconds, each above its floor and sized so a viewer sees it within a few minutes.  The
simulator draws each target as it always does.  ``DIR/ground_truth.json`` (written before playing) names them all.
"""

from __future__ import annotations

import calendar
import json
import math
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from simulator import swim
from simulator.config import MB, SimConfig
from simulator.jobs import Job

PLAN = ".plan"
#: Seconds between planning and the scenario's first moment (planning a 20-node hour takes about a second).
LEAD = 4.0


#: The scenario's medium jobs, every round: (name, offset s, maps, reduces, input MiB per map, map output MiB per map).
MEDIUM_JOBS = (
    ("medium_maponly", 1.0, 8, 0, 80, 0),
    ("medium_small", 2.0, 12, 2, 50, 30),
    ("medium_wide", 3.0, 12, 4, 50, 400),
    ("medium_heavy", 4.0, 8, 5, 50, 600),
    ("medium_join", 5.0, 6, 3, 50, 120),
)


def showcase_faults(minutes: float, every: float = 600.0, seed: int = 1) -> list[dict[str, Any]]:
    """One fault of each kind in the first seconds (after the round's medium jobs arrive), again every ``every``
    seconds: the live demo's showcase.  Severities are above each floor (with a little spread from the seed), so each
    warrants a warning."""
    rng = random.Random(f"showcase/{seed}")
    out: list[dict[str, Any]] = []
    t = 0.0
    while t < minutes * 60.0:
        out += [
            {"kind": "runaway_reducer", "at": t + 6.0, "severity": round(rng.uniform(8.0, 12.0), 1)},
            {"kind": "reduce_data_skew", "at": t + 7.0, "severity": round(rng.uniform(9.0, 11.0), 1)},
            {"kind": "map_data_skew", "at": t + 1.5, "severity": round(rng.uniform(12.0, 13.0), 1)},
            {"kind": "held_output", "at": t + 9.0, "severity": round(rng.uniform(190.0, 220.0))},
            # the slow node from minute 4: the round's other faults are mostly over, none slowed by it
            {"kind": "slow_node", "at": t + 240.0, "severity": round(rng.uniform(3.0, 4.0), 1)},
            {"kind": "hung_fetch", "at": t + 11.0, "severity": round(rng.uniform(90.0, 120.0))},
        ]
        t += every if every > 0 else math.inf
    return out


def scenario_jobs(showcase_every: float = 600.0, keep: float = 0.25) -> Callable[[SimConfig], list[Job]]:
    """A ``jobs_factory`` for ``run.simulate``: the SWIM window thinned to ``keep`` of its jobs, plus the medium jobs
    at the start and every ``showcase_every`` seconds."""
    from simulator.run import new_job

    def make(cfg: SimConfig) -> list[Job]:
        span = cfg.hours * 3600.0
        pick = random.Random(f"live/{cfg.seed}")
        entries: list[tuple[float, swim.TraceJob, int, int]] = []
        for tj in swim.window(cfg.trace, cfg.hours, cfg.nodes, cfg.trace_offset_hours):
            if pick.random() >= keep:
                continue
            maps = min(cfg.max_maps, max(1, math.ceil(tj.input_bytes / cfg.split_bytes)))
            reduces = (
                0
                if tj.shuffle_bytes <= 0
                else min(cfg.max_reduces, max(1, math.ceil(tj.shuffle_bytes / cfg.reduce_bytes)))
            )
            entries.append((tj.submit, tj, maps, reduces))
        rounds = 0
        t = 0.0
        while t < span:
            rounds += 1
            for name, offset, maps, reduces, split_mb, out_mb in MEDIUM_JOBS:
                tj = swim.TraceJob(
                    f"{name}.{rounds}",
                    t + offset,
                    maps * split_mb * MB,
                    maps * out_mb * MB,
                    maps * out_mb * MB // 2,
                )
                entries.append((t + offset, tj, maps, reduces))
            t += showcase_every if showcase_every > 0 else math.inf
        entries.sort(key=lambda e: e[0])
        return [new_job(cfg, i, tj, submit, maps, reduces) for i, (submit, tj, maps, reduces) in enumerate(entries)]

    return make


def live_config(
    nodes: int = 20,
    minutes: float = 60.0,
    seed: int = 1,
    start: float | None = None,
    sample_step: float = 5.0,
    trace_offset_hours: float = 9.0,
    **extra: Any,
) -> SimConfig:
    """The live scenario's settings: ``start`` (default: a few seconds from now, on the sample grid)."""
    if start is None:
        start = math.ceil((time.time() + LEAD) / sample_step) * sample_step
    return SimConfig(
        nodes=nodes,
        hours=minutes / 60.0,
        seed=seed,
        start=start,
        sample_step=sample_step,
        trace_offset_hours=trace_offset_hours,
        **extra,
    )


def plan(cfg: SimConfig, out_dir: str, *, showcase_every: float = 600.0, keep: float = 0.25) -> dict[str, Any]:
    """Simulate the scenario into ``out_dir/.plan``; copy its ground truth, fault list and job list to ``out_dir``.
    ``cfg.faults`` None means the showcase (:func:`showcase_faults`)."""
    if cfg.faults is None:
        cfg.faults = showcase_faults(cfg.hours * 60.0, showcase_every, cfg.seed)
    from simulator.run import simulate

    plan_dir = os.path.join(out_dir, PLAN)
    if os.path.exists(plan_dir):
        shutil.rmtree(plan_dir)
    summary = simulate(cfg, plan_dir, ganglia="none", jobs_factory=scenario_jobs(showcase_every, keep))
    for name in ("hadoop", "ganglia"):  # where the logs and samples will appear (empty until the clock gets there)
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
    for name in ("jobs.jsonl", "faults.json", "ground_truth.json"):  # the truth last: when it is there, all are
        tmp = os.path.join(out_dir, name + ".tmp")
        shutil.copyfile(os.path.join(plan_dir, name), tmp)
        os.replace(tmp, os.path.join(out_dir, name))
    return summary


# ------------------------------------------------------------------------------------------------- timed lines
_STAMP_CACHE: dict[str, float] = {}


def _log4j_time(line: str) -> float | None:
    """Epoch seconds of a ``yyyy-MM-dd HH:mm:ss,SSS`` log4j line (UTC, as the simulator writes), else None."""
    if len(line) < 23 or line[4] != "-" or line[10] != " " or line[19] != ",":
        return None
    head = line[:19]
    base = _STAMP_CACHE.get(head)
    if base is None:
        try:
            base = float(calendar.timegm(time.strptime(head, "%Y-%m-%d %H:%M:%S")))
        except ValueError:
            return None
        _STAMP_CACHE[head] = base
    millis = line[20:23]
    return base + int(millis) / 1000.0 if millis.isdigit() else None


def _jhist_time(line: str) -> float | None:
    """The time of a history event line: its latest ``...Time`` field (a finish, start or launch time)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("event"), dict):
        return None
    times = [
        v
        for record in event["event"].values()
        if isinstance(record, dict)
        for k, v in record.items()
        if k.endswith("Time") and isinstance(v, int)
    ]
    return max(times) / 1000.0 if times else None


def timed_lines(path: str) -> list[tuple[float, str]]:
    """``(time, text)`` chunks of a planned file, in file order with non-decreasing times: one per timed line, lines
    without a time of their own (headers, blank separators, continuations) going with the next or previous one."""
    kind = "jhist" if path.endswith(".jhist") else "log"
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    out: list[tuple[float, str]] = []
    pending = ""  # untimed text waiting for the next timed line
    last = -math.inf
    for line in lines:
        t = _jhist_time(line) if kind == "jhist" else _log4j_time(line)
        if t is None:
            if kind == "log" and out:  # a continuation line of the record before it
                out[-1] = (out[-1][0], out[-1][1] + line)
            else:
                pending += line
            continue
        last = max(last, t)
        out.append((last, pending + line))
        pending = ""
    if pending:
        out.append((last if out else 0.0, pending))
    return out


def timeline(plan_dir: str) -> list[tuple[float, str, str]]:
    """Every chunk of every planned Hadoop file as ``(time, relative path, text)``, in release order."""
    root = os.path.join(plan_dir, "hadoop")
    items: list[tuple[float, int, str, str]] = []
    seq = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, plan_dir)
            for t, text in timed_lines(path):
                items.append((t, seq, rel, text))
                seq += 1
    items.sort()
    return [(t, rel, text) for t, _, rel, text in items]


def sample_rounds(plan_dir: str) -> list[tuple[float, list[tuple[float, str, str, float]]]]:
    """The planned Ganglia samples grouped by time: ``[(ts, [(ts, host, metric, value), ...]), ...]``."""
    rounds: dict[float, list[tuple[float, str, str, float]]] = {}
    with open(os.path.join(plan_dir, "ganglia", "samples.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                s = json.loads(line)
                rounds.setdefault(float(s["ts"]), []).append((float(s["ts"]), s["host"], s["metric"], s["value"]))
    return sorted(rounds.items())


# ------------------------------------------------------------------------------------------------------ playing
@dataclass
class PlayStats:
    lines: int = 0
    files: int = 0
    rounds: int = 0
    skipped_rounds: int = 0
    errors: list[str] = field(default_factory=list)


class Player:
    """Plays a plan into ``out_dir`` on the wall clock until it is done or :meth:`stop` is called."""

    def __init__(
        self,
        plan_dir: str,
        out_dir: str,
        *,
        gmond: str | None = None,
        cluster: str = "hadoop",
        clock: Callable[[], float] = time.time,
        tick: float = 0.1,
        send: Callable[..., None] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.plan_dir = plan_dir
        self.out_dir = out_dir
        self.gmond = gmond
        self.cluster = cluster
        self.clock = clock
        self.tick = tick
        self._send = send
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.stats = PlayStats()
        self._stop = threading.Event()
        self.lines = timeline(plan_dir)
        self.rounds = sample_rounds(plan_dir)

    @property
    def end(self) -> float:
        last_line = self.lines[-1][0] if self.lines else -math.inf
        last_round = self.rounds[-1][0] if self.rounds else -math.inf
        return max(last_line, last_round)

    def stop(self) -> None:
        self._stop.set()

    def _wait_until(self, t: float) -> bool:
        """Sleep until the wall clock reaches ``t``; False when stopped first."""
        while not self._stop.is_set():
            left = t - self.clock()
            if left <= 0:
                return True
            self._stop.wait(min(left, 0.5))
        return False

    # -- Hadoop files ------------------------------------------------------------------------------------------
    def _play_files(self) -> None:
        seen: set[str] = set()
        i, n = 0, len(self.lines)
        while i < n and not self._stop.is_set():
            now = self.clock()
            batch: dict[str, list[str]] = {}
            while i < n and self.lines[i][0] <= now:
                _, rel, text = self.lines[i]
                batch.setdefault(rel, []).append(text)
                i += 1
            for rel, texts in batch.items():
                path = os.path.join(self.out_dir, rel)
                if rel not in seen:
                    seen.add(rel)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    self.stats.files += 1
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write("".join(texts))
                self.stats.lines += len(texts)
            if i < n:
                self._stop.wait(max(0.0, min(self.tick, self.lines[i][0] - self.clock())))

    # -- Ganglia -----------------------------------------------------------------------------------------------
    def _play_ganglia(self) -> None:
        samples_path = os.path.join(self.out_dir, "ganglia", "samples.jsonl")
        os.makedirs(os.path.dirname(samples_path), exist_ok=True)
        send = self._send
        if send is None and self.gmond:
            from simulator.ganglia_out import send_gmetric

            send = send_gmetric
        step = self.rounds[1][0] - self.rounds[0][0] if len(self.rounds) > 1 else 15.0
        with open(samples_path, "a", encoding="utf-8") as out:
            for ts, samples in self.rounds:
                if not self._wait_until(ts):
                    return
                if self.clock() - ts > 2 * step:  # far behind (a stalled machine): a stale round would mislead
                    self.stats.skipped_rounds += 1
                    continue
                if send is not None:
                    send(self.gmond, samples)
                for s_ts, host, metric, value in samples:
                    out.write(
                        json.dumps(
                            {"ts": s_ts, "cluster": self.cluster, "host": host, "metric": metric, "value": value}
                        )
                        + "\n"
                    )
                out.flush()
                self.stats.rounds += 1

    def run(self) -> PlayStats:
        """Play everything (Ganglia on a thread of its own, so a slow gmetric never delays the log lines)."""
        failure: list[BaseException] = []

        def ganglia() -> None:
            try:
                self._play_ganglia()
            except BaseException as err:  # noqa: BLE001 - reported by run(), which stops the files too
                failure.append(err)
                self._stop.set()

        thread = threading.Thread(target=ganglia, name="ganglia", daemon=True)
        thread.start()
        try:
            self._play_files()
            while thread.is_alive() and not self._stop.is_set():
                thread.join(0.5)
        finally:
            self._stop.set()
            thread.join(10)
        if failure:
            err = failure[0]
            raise RuntimeError(f"Ganglia output failed: {type(err).__name__}: {err}") from err
        return self.stats


def first_faults(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The first targeted fault of each kind (the first showcase round's), in onset order."""
    first: dict[str, dict[str, Any]] = {}
    for f in truth.get("faults") or []:
        if f.get("entity") and f["kind"] not in first:
            first[f["kind"]] = f
    return sorted(first.values(), key=lambda f: f["onset"])


def entity_name(f: dict[str, Any]) -> str:
    return next(iter((f.get("entity") or {}).values()), "?")


def describe(truth: dict[str, Any], start: float) -> Iterator[str]:
    """One line per fault of the first showcase round: what it is, where, and when its cause acts (from start)."""
    for f in first_faults(truth):
        yield (
            f"{f['kind']} (severity {f['severity']:g}) on {entity_name(f)}: from +{f['onset'] - start:.0f}s to "
            f"+{f['end'] - start:.0f}s"
        )
