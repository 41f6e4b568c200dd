"""``hcep stream`` as users run it: events land as files at a fixed rate for a while, the query keeps up or not.

    python -m benchmarks.bench_stream_sustained                                  # 2,000 .. 20,000 ev/s, 10 min each
    python -m benchmarks.bench_stream_sustained --rates 5000 --minutes 2 --master 'local[1]' 'local[2]'
    python -m benchmarks.bench_stream_sustained --cluster --master spark://127.0.0.1:7077   # cluster-start.sh's
    python -m benchmarks.bench_stream_sustained --rates 4000 --operators floor --no-run   # Spark's share
    python -m benchmarks.bench_stream_sustained --rates 20000 --source files kafka    # files, then Kafka

The stream: :func:`benchmarks.bench_pipeline.workload`'s jobs (JobStart, reducers with shuffle pulls, JobEnd; about
20 events per event-time second) as K concurrent copies (job and task ids made distinct), K = rate / 20, with its
Ganglia rounds once (cluster-wide: keyless).  Event time runs with the wall clock: each second's events land as one
JSON-lines file (written aside, renamed in) one second after they happened, as a collector that flushes every
second.  So a higher rate is a larger cluster (more jobs at once), not a faster clock: the state is a real one.
With ``--source kafka`` each second's events are published instead, as the collectors publish them (two fresh topics:
Hadoop's keyed by job over 4 partitions, Ganglia's on one, 50 events a message), and ``hcep stream --bootstrap``
reads them through its ``hcep-kafka`` Python source; a second has landed once the broker acknowledged it, and the
batch that read it is the first whose end offsets in Spark's offset log reach its own.  The broker (started here
unless ``--bootstrap``) and the lander are not in the stream's CPU.

Per rate (its own ``hcep stream`` process, its own JVM):

- ``lag`` = a file's landing -> the sink's commit of the micro-batch that read it (Spark's file source log names the
  batch); ``bounded``: after landing stops the query catches up within ``--drain`` s, and the lag over the last
  third of the run is at most 1.5x that over the middle third + 5 s (it does not grow).
- ``ev/CPU-s`` = events / CPU seconds of the whole process tree (the driver's Python, the JVM, the Python workers;
  /proc, sampled every half second; on ``--cluster`` also the executors the workers launched).  ``startup cpu s``:
  the tree's CPU when the first file lands (the JVM, the session; paid once by a stream that runs for hours);
  ``ev/CPU-s after startup`` divides by the CPU after it.
- ``batch p50/p99`` = micro-batch durations (Spark's ``triggerExecution``); ``first batch`` = the end of the first
  batch that read files, after the line ``hcep stream`` prints once its SparkSession is up; ``first batch own s`` =
  that batch's own duration.  The two differ by when it started: with ``--trigger S``, a first trigger that finds
  no file yet (the first lands a second after the session is up) leaves the events to the next one, S later.
- ``capacity ev/s`` = events / the batches' summed durations: what the query does while it works (a bounded run
  idles between batches), the figure to compare masters by.
- ``state rows`` / ``state MB`` = the state operator's rows and RocksDB memory at the largest (Spark's progress).
- ``hcep match`` / ``hcep run`` beside it: CPU seconds for the same events (all that landed, or the stream's first
  ``--reference-events``: a prefix is cheaper but flatters them, as the state a stream holds grows for minutes):
  ``hcep match`` over one file (a child process, its rusage), and ``hcep run`` draining them from a Kafka broker
  (:func:`benchmarks.bench_pipeline.one_row`; ``--bootstrap``, or one started here, or ``--no-run``).
- ``--operators hcep floor`` runs each rate a second time as ``<master> floor``: the same query with its
  operator swapped for one that reads its rows and keeps nothing (:mod:`benchmarks.stream_floor`): what Spark,
  PySpark and the router cost, which no cut to the operator can give back.
- ``--buckets N`` / ``--partitions N`` are ``hcep stream``'s (default: its own, 2 x the cores each): how the
  operator's work is cut into tasks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from app.commands.stream import DEFAULT_TRIGGER

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "queries" / "hadoop.yaml"
KEYLESS = "Metric,LoadStd,Balance,Imbalance"
SESSION_UP = "hcep stream: SparkSession up"
#: ``--operators floor``'s stand-in for ``app.cli``: ``hcep stream`` with an operator that keeps nothing.
FLOOR = "benchmarks.stream_floor"


# ------------------------------------------------------------------------------------------------ the events


class Trace:
    """K copies of the workload's jobs plus its Ganglia rounds, cut into event-time seconds (JSON lines)."""

    def __init__(self, rate: float, seconds: int, seed: int = 1) -> None:
        from benchmarks.bench_pipeline import workload
        from engine.events import decoder_for

        hadoop, ganglia = workload(int(21 * (seconds + 30)), seed)
        self.base = min(e["ts"] for e in hadoop)
        # A file is a second of the events' points (mid2, in half ticks of 0.1 s): events of one tick never straddle
        # two files, where their order would follow the files' names' hash rather than the input's (README).
        decode = decoder_for(0.1).event
        mid2 = {id(e): (lambda ev: ev.tlo + ev.thi)(decode(dict(e))) for e in hadoop + ganglia}
        first = min(mid2.values())
        span = max(e["ts"] for e in hadoop) - self.base
        density = len(hadoop) / span  # events per event-time second of one copy
        self.copies = max(1, round(rate / density))
        self.seconds = seconds
        # (the line, its Kafka key as app.publish.event_key gives it, copied K times): @C@ is the copy's number
        self.slots: list[list[tuple[str, str | None, bool]]] = [[] for _ in range(seconds + 1)]
        for i, e in enumerate(hadoop):
            s = (mid2[id(e)] - first) // 20
            if s <= seconds:
                tmpl = dict(e, id=f"@C@-{i}", job_id=f"{e['job_id']}-@C@")
                if "task_id" in tmpl:
                    tmpl["task_id"] = f"{e['task_id']}-@C@"
                if e["type"] == "Mapper":  # the pack's SlowHost reads Mapper by host: one host per copy
                    tmpl["host"] = "node-@C@"
                self.slots[s].append((json.dumps(tmpl), tmpl["job_id"], True))
        for i, e in enumerate(ganglia):
            s = (mid2[id(e)] - first) // 20
            if 0 <= s <= seconds:
                self.slots[s].append((json.dumps(dict(e, id=f"g-{i}")), e.get("host"), False))

    def second(self, s: int) -> list[str]:
        """The lines of event-time second ``s`` (copies of one event next to each other, in event order)."""
        return [line for line, _, _ in self.keyed_second(s)]

    def keyed_second(self, s: int) -> list[tuple[str, str | None, bool]]:
        """:meth:`second`'s lines with their Kafka keys (the job, else the host) and whether they are Hadoop's."""
        out: list[tuple[str, str | None, bool]] = []
        for tmpl, key, copied in self.slots[s]:
            if copied:
                for c in range(self.copies):
                    n = str(c)
                    out.append((tmpl.replace("@C@", n), None if key is None else key.replace("@C@", n), True))
            else:
                out.append((tmpl, key, False))
        return out


# ------------------------------------------------------------------------------------------------ CPU of a tree


def _proc_children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return kids


def _cpu_of(pid: int) -> float | None:
    """utime + stime + the reaped children's (a Python daemon's finished workers), seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class TreeCPU:
    """CPU seconds of process trees, sampled: each process's last reading is kept after it exits (its last half
    second is lost, unless its parent reaped it: then the parent's children times carry it)."""

    def __init__(self, roots: list[int], exclude_roots: bool = False) -> None:
        self.roots = roots
        self.exclude_roots = exclude_roots
        self.seen: dict[int, float] = {}
        self.kind: dict[int, str] = {}
        self.base: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> TreeCPU:
        if self.exclude_roots:  # a worker daemon's own CPU before the run is not the run's
            self.base = {r: _cpu_of(r) or 0.0 for r in self.roots}
        self._thread.start()
        return self

    def sample(self) -> None:
        kids = _proc_children()
        todo = list(self.roots)
        while todo:
            pid = todo.pop()
            cpu = _cpu_of(pid)
            if cpu is not None:
                self.seen[pid] = max(cpu, self.seen.get(pid, 0.0))
                if self.kind.get(pid, "other") == "other":  # spark-class is bash until it execs the JVM
                    self.kind[pid] = _kind(pid)
            todo.extend(kids.get(pid, []))

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def total(self) -> float:
        """CPU seconds so far (sampled now), sampling on."""
        self.sample()
        return sum(self.by_kind().values())

    def stop(self) -> float:
        self.sample()
        self._stop.set()
        self._thread.join()
        return sum(self.by_kind().values())

    def by_kind(self) -> dict[str, float]:
        """CPU seconds per kind of process: the JVM, the Python workers (pyspark.daemon and its forks), the driver's
        Python (the sink: collect, alert rules, Parquet), other."""
        out: dict[str, float] = {}
        for p, v in self.seen.items():
            k = self.kind.get(p, "other")
            out[k] = out.get(k, 0.0) + v - self.base.get(p, 0.0)
        return out


def _kind(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "other"
    if b"java" in cmd.split(b"\0", 1)[0]:
        return "jvm"
    if b"pyspark.daemon" in cmd or b"pyspark/daemon" in cmd or b"pyspark.worker" in cmd:
        return "python workers"
    if b"app.cli" in cmd or FLOOR.encode() in cmd:
        return "driver python"
    return "other"


# ------------------------------------------------------------------------------------------------ landing


class FileLander:
    """Each second's events as one JSON-lines file, written aside and renamed into ``hcep stream --input``."""

    source = "files"

    def __init__(self, work: Path) -> None:
        self.in_dir, self.stage = work / "in", work / "stage"
        for d in (self.in_dir, self.stage):
            d.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        return ["--input", str(self.in_dir)]

    def prepare(self, trace: Trace, s: int) -> tuple[str, Any, int]:
        """Second ``s`` made ready to land: its name, what :meth:`land` takes, its events."""
        lines = trace.second(s)
        name = f"s-{s:06d}.jsonl"
        (self.stage / name).write_text("\n".join(lines) + "\n")
        return name, name, len(lines)

    def land(self, name: str, ready: Any) -> None:
        os.replace(self.stage / ready, self.in_dir / name)

    def batches(self, ck: Path) -> dict[str, int]:
        """Landing name -> the micro-batch that read it."""
        return _file_batches(ck)

    def close(self) -> None:
        pass


#: Events a Kafka message holds (JSON lines), as the collectors publish by default (``app.publish``'s ``pack``).
KAFKA_PACK = 50


class KafkaLander:
    """Each second's events published as the collectors publish them (:mod:`app.publish`): to two fresh topics,
    Hadoop's keyed by job over 4 partitions and Ganglia's on one, :data:`KAFKA_PACK` events of a partition a message,
    landed once the broker acknowledged them all.  The end offsets after each second are kept, so that the batch
    that read it is found in Spark's offset log (:meth:`batches`)."""

    source = "kafka"

    def __init__(self, work: Path, bootstrap: str) -> None:
        from app.kafka_io import Producer, ensure_topics

        prefix = f"sustained-{os.getpid()}-{work.name}"
        self.bootstrap = bootstrap
        self.topics = {True: f"{prefix}.hadoop", False: f"{prefix}.ganglia"}
        ensure_topics(bootstrap, {self.topics[True]: 4, self.topics[False]: 1})
        self.producer = Producer(bootstrap, linger_ms=5, client_id="hcep-sustained")
        self.parts = {t: self.producer.partitions(t) for t in self.topics.values()}
        self.sent = {t: {str(p): 0 for p in parts} for t, parts in self.parts.items()}  # messages = next offsets
        self.ends: dict[str, dict[str, dict[str, int]]] = {}  # landing name -> the offsets after it
        self.read: dict[int, dict[str, dict[str, int]]] = {}  # batch -> the end offsets it read to
        self._part: dict[str, int] = {}

    def argv(self) -> list[str]:
        return ["--bootstrap", self.bootstrap, "--topics", ",".join(self.topics.values())]

    def prepare(self, trace: Trace, s: int) -> tuple[str, Any, int]:
        by_part: dict[tuple[str, int], list[str]] = {}
        rows = trace.keyed_second(s)
        for line, key, hadoop in rows:
            topic = self.topics[hadoop]
            parts = self.parts[topic]
            if key is None:
                part = parts[0]
            else:
                part = self._part.get(key, -1)
                if part < 0:
                    part = self._part[key] = self.producer.partition_for(key.encode(), parts)
            by_part.setdefault((topic, part), []).append(line)
        messages = [
            (topic, part, "\n".join(lines[i : i + KAFKA_PACK]).encode())
            for (topic, part), lines in by_part.items()
            for i in range(0, len(lines), KAFKA_PACK)
        ]
        return f"s-{s:06d}", messages, len(rows)

    def land(self, name: str, ready: Any) -> None:
        for topic, part, value in ready:
            self.producer.send(topic, value, partition=part)
            self.sent[topic][str(part)] += 1
        self.producer.flush()
        self.ends[name] = {t: dict(parts) for t, parts in self.sent.items()}

    def batches(self, ck: Path) -> dict[str, int]:
        """Landing name -> the first micro-batch whose end offsets (Spark's offset log, ``offsets/N``) reach its own.
        The log is read as the run goes: Spark keeps only its last 100 batches' files."""
        base = ck / "spark" / "offsets"
        if base.is_dir():
            for path in base.iterdir():
                if not path.name.isdigit() or int(path.name) in self.read:
                    continue
                got = _kafka_offsets(path, set(self.topics.values()))
                if got is not None:
                    self.read[int(path.name)] = got
        return kafka_batches(self.read, self.ends)

    def close(self) -> None:
        self.producer.close()


def _kafka_offsets(path: Path, topics: set[str]) -> dict[str, dict[str, int]] | None:
    """The ``hcep-kafka`` source's end offsets in a batch's offset log file (a JSON line of ``{topic: {partition:
    offset}}`` after the version and the batch's metadata); None while the file is not whole."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        try:
            got = json.loads(line)
        except ValueError:
            continue
        if isinstance(got, dict) and topics <= set(got):
            return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in got.items()}
    return None


def kafka_batches(
    read: dict[int, dict[str, dict[str, int]]], ends: dict[str, dict[str, dict[str, int]]]
) -> dict[str, int]:
    """Landing name -> the first batch of ``read`` (batch -> the end offsets it read to) whose offsets reach the
    landing's ``ends`` on every partition; landings not read yet are left out.  Both are in order: one pass."""
    out: dict[str, int] = {}
    order = sorted(read.items())
    i = 0
    for name, want in ends.items():
        while i < len(order) and not _reaches(order[i][1], want):
            i += 1
        if i == len(order):
            break
        out[name] = order[i][0]
    return out


def _reaches(read: dict[str, dict[str, int]], ends: dict[str, dict[str, int]]) -> bool:
    return all(read.get(t, {}).get(p, 0) >= o for t, parts in ends.items() for p, o in parts.items())


# ------------------------------------------------------------------------------------------------ one rate


@dataclass
class Landed:
    name: str
    at: float  # wall clock (time.time)
    events: int


@dataclass
class Run:
    master: str
    rate: float
    work: Path
    landed: list[Landed] = field(default_factory=list)
    session_up: float = math.nan
    started: float = math.nan
    stopped_landing: float = math.nan
    cpu_s: float = math.nan
    cpu_kinds: dict[str, float] = field(default_factory=dict)
    startup_cpu_s: float = math.nan  # the tree's CPU when the first file landed (JVM, session, nothing to do yet)
    exit_code: int | None = None
    lander: Any = None  # FileLander or KafkaLander (None: files, as FileLander)


def _file_batches(ck: Path) -> dict[str, int]:
    """File name -> the batch that read it, from Spark's file source log (``sources/0``: batch files and compacts)."""
    out: dict[str, int] = {}
    base = ck / "spark" / "sources" / "0"
    if not base.is_dir():
        return out
    for path in base.iterdir():
        if path.name.startswith("."):
            continue
        for line in path.read_text(errors="replace").splitlines()[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            out[os.path.basename(entry["path"])] = int(entry["batchId"])
    return out


def _commit_times(out: Path) -> dict[int, float]:
    base = out / "_stream" / "commits"
    return {int(p.stem): p.stat().st_mtime for p in base.glob("*.json")} if base.is_dir() else {}


def _session_up(log: Path) -> float | None:
    try:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(SESSION_UP):
                return float(line.rsplit("at ", 1)[1].split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None


def run_rate(
    master: str,
    rate: float,
    minutes: float,
    work: Path,
    drain: float,
    cluster_pids: list[int] | None = None,
    max_lag: float = 60.0,
    pack: Path = PACK,
    trigger: float = DEFAULT_TRIGGER,
    floor: bool = False,
    buckets: int | None = None,
    partitions: int | None = None,
    driver_memory: str | None = None,
    bootstrap: str | None = None,
) -> dict[str, Any]:
    """One ``hcep stream`` run at ``rate``: events land as files, or on Kafka at ``bootstrap`` when given."""
    seconds = max(int(minutes * 60), 10)
    trace = Trace(rate, seconds)
    name = f"{master} floor" if floor else master
    work.mkdir(parents=True, exist_ok=True)
    lander: FileLander | KafkaLander = FileLander(work) if bootstrap is None else KafkaLander(work, bootstrap)
    run = Run(name if bootstrap is None else f"{name} kafka", rate, work, lander=lander)
    out, ck = work / "out", work / "ck"
    argv = [sys.executable, "-m", FLOOR if floor else "app.cli", "stream", "--pack", str(pack), *lander.argv()]
    argv += ["--output", str(out), "--checkpoint", str(ck), "--master", master, "--keyless-types", KEYLESS]
    argv += ["--trigger", str(trigger)]  # micro-batches at most this often (0: back to back)
    if buckets is not None:
        argv += ["--buckets", str(buckets)]
    if partitions is not None:
        argv += ["--partitions", str(partitions)]
    if driver_memory is not None:
        argv += ["--driver-memory", driver_memory]
    log_path = work / "stream.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    with log_path.open("w") as log:
        run.started = time.time()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
        cpu = TreeCPU([proc.pid]).start()
        workers = TreeCPU(cluster_pids, exclude_roots=True).start() if cluster_pids else None
        try:
            # Land a second's events a second, as event time passes; the first when the session is up.
            while _session_up(log_path) is None and proc.poll() is None and time.time() - run.started < 300:
                time.sleep(0.2)
            t0 = time.time()
            run.startup_cpu_s = cpu.total() + (workers.total() if workers else 0.0)
            for s in range(seconds):
                landing, ready, n = lander.prepare(trace, s)
                wait = t0 + s + 1 - time.time()
                if wait > 0:
                    time.sleep(wait)
                lander.land(landing, ready)
                run.landed.append(Landed(landing, time.time(), n))
                if s % 10 == 9:
                    lander.batches(ck)  # Kafka's: read the offset log while Spark keeps it
                if proc.poll() is not None:
                    break
            run.stopped_landing = time.time()
            # Drain: wait until the last second's batch is committed (or give up).
            last = run.landed[-1].name if run.landed else None
            deadline = time.time() + drain
            while last and time.time() < deadline and proc.poll() is None:
                batch = lander.batches(ck).get(last)
                if batch is not None and batch in _commit_times(out):
                    break
                time.sleep(1.0)
            drained_at = time.time()
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                run.exit_code = proc.wait(180)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                run.exit_code = proc.wait(30)
            run.cpu_s = cpu.stop() + (workers.stop() if workers else 0.0)
            run.cpu_kinds = cpu.by_kind()
            for k, v in (workers.by_kind() if workers else {}).items():
                run.cpu_kinds[k] = run.cpu_kinds.get(k, 0.0) + v
            lander.batches(ck)
            lander.close()
    run.session_up = _session_up(log_path) or math.nan
    return summarize(run, trace, drained_at, max_lag)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summarize(run: Run, trace: Trace, drained_at: float, max_lag: float) -> dict[str, Any]:
    from app.spark.stream.sink import STREAM_DIR, totals

    out, ck = run.work / "out", run.work / "ck"
    batches = run.lander.batches(ck) if run.lander is not None else _file_batches(ck)
    commits = _commit_times(out)
    lags = []
    undone = 0
    for f in run.landed:
        b = batches.get(f.name)
        if b is None or b not in commits:
            undone += 1
            continue
        lags.append((f.at, commits[b] - f.at))
    n = len(run.landed)
    thirds = [[lag for at, lag in lags[i * n // 3 : (i + 1) * n // 3]] for i in range(3)]
    middle, last = _pct(thirds[1], 0.9), _pct(thirds[2], 0.9)
    p99 = _pct([lag for _, lag in lags], 0.99)
    bounded = undone == 0 and (not thirds[2] or last <= 1.5 * middle + 5.0) and p99 <= max_lag
    progress_path = out / STREAM_DIR / "progress.jsonl"
    progress = (
        [json.loads(x) for x in progress_path.read_text().splitlines() if x.strip()] if progress_path.exists() else []
    )
    durations = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress if p.get("numInputRows", 0)]
    state_rows = max((sum(o.get("numRowsTotal", 0) for o in p.get("stateOperators", [])) for p in progress), default=0)
    state_mb = max(
        (sum(o.get("memoryUsedBytes", 0) for o in p.get("stateOperators", [])) / 1e6 for p in progress), default=0.0
    )
    first_end = first_own = math.nan
    for p in progress:
        if p.get("numInputRows", 0):
            first_own = p["durationMs"].get("triggerExecution", 0) / 1000
            first_end = _ts(p["timestamp"]) + first_own
            break
    events = sum(f.events for f in run.landed)
    processed = sum(f.events for f in run.landed if batches.get(f.name) in commits)
    t = totals(str(out))
    span = run.stopped_landing - (run.landed[0].at - 1.0) if run.landed else math.nan
    return {
        "master": run.master,
        "rate": run.rate,
        "copies": trace.copies,
        "events": events,
        "landed ev/s": events / span if span == span and span > 0 else math.nan,
        "bounded": "yes" if bounded else "no",
        "lag p50 s": _pct([lag for _, lag in lags], 0.5),
        "lag p99 s": _pct([lag for _, lag in lags], 0.99),
        "lag growth": f"{middle:.1f}->{last:.1f}",
        "undone": undone,
        "batches": len(durations),
        "batch p50 s": _pct(durations, 0.5),
        "batch p99 s": _pct(durations, 0.99),
        "first batch s": first_end - run.session_up,
        "first batch own s": first_own,
        "cpu s": run.cpu_s,
        "ev/CPU-s": processed / run.cpu_s if run.cpu_s else math.nan,
        "startup cpu s": run.startup_cpu_s,
        # what a long-running stream pays per event once its start is behind it
        "ev/CPU-s after startup": processed / (run.cpu_s - run.startup_cpu_s)
        if run.cpu_s > run.startup_cpu_s
        else math.nan,
        "capacity ev/s": processed / sum(durations) if durations else math.nan,
        "state rows": state_rows,
        "state MB": state_mb,
        "records": t["records"],
        "python s": t["busy_ms"] / 1000,
        "state s": t["state_ms"] / 1000,
        "exit": run.exit_code,
        "cpu by process": ", ".join(f"{k} {v:.0f} s" for k, v in sorted(run.cpu_kinds.items(), key=lambda x: -x[1])),
        "invalid": t["invalid"],
        "late": t["late"],
        "drain s": drained_at - run.stopped_landing,
        "_trace": trace,
    }


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# ------------------------------------------------------------------------------------------------ references


def _child_cpu(argv: list[str]) -> tuple[float, str]:
    """A child process's CPU seconds (its rusage: it and every process it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed: {done.stderr[-1500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


class _Decoded:
    """Lines of JSON as events, each decoded when iterated: what ``publish`` sends, with their count."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (json.loads(x) for x in self.lines)


def reference_rows(
    trace: Trace, limit: int, work: Path, bootstrap: str | None, no_run: bool, pack: Path = PACK
) -> list[dict[str, Any]]:
    """``hcep match`` and ``hcep run`` over the stream's first ``limit`` events (0: all of them)."""
    lines: list[str] = []
    for s in range(trace.seconds):
        lines.extend(trace.second(s))
        if limit and len(lines) >= limit:
            break
    path = work / "reference.jsonl"
    path.write_text("\n".join(lines) + "\n")
    n = len(lines)
    cpu, stdout = _child_cpu([sys.executable, "-m", "app.cli", "match", str(path), "--pack", str(pack)])
    rows = [{"engine": "hcep match", "events": n, "cpu s": cpu, "ev/CPU-s": n / cpu, "records": stdout.count("\n")}]
    if no_run:
        return rows
    # Decoded as they are published: a 10-minute run's 11.7 million events as dicts did not fit in 24 GB.
    hadoop = _Decoded([x for x in lines if '"job_id":' in x])
    ganglia = _Decoded([x for x in lines if '"job_id":' not in x])
    del lines
    stop: list[str] | None = None
    if bootstrap is None:
        from benchmarks.bench_pipeline import start_broker

        bootstrap, stop = start_broker(str(work / "kafka"))
    try:
        from benchmarks.bench_pipeline import one_row

        row = one_row(bootstrap, hadoop, ganglia, str(pack), 50, str(work))
    finally:
        if stop is not None:
            subprocess.run(["bash", str(ROOT / "deploy/kafka/stop.sh"), *stop], capture_output=True)
    rows.append(
        {"engine": "hcep run", "events": n, "cpu s": n / row["ev/CPU-s"], "ev/CPU-s": row["ev/CPU-s"], "records": "-"}
    )
    return rows


# ------------------------------------------------------------------------------------------------ report


COLUMNS = [
    "master",
    "rate",
    "landed ev/s",
    "bounded",
    "lag p50 s",
    "lag p99 s",
    "lag growth",
    "batches",
    "batch p50 s",
    "batch p99 s",
    "first batch s",
    "first batch own s",
    "capacity ev/s",
    "cpu s",
    "ev/CPU-s",
    "startup cpu s",
    "ev/CPU-s after startup",
    "state rows",
    "state MB",
    "records",
]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_fmt(r.get(c, "-")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _cluster_workers(run_dir: str) -> list[int]:
    return [int(p.read_text().strip()) for p in sorted(Path(run_dir).glob("worker-*.pid"))]


@contextmanager
def _broker(args: argparse.Namespace, work: Path) -> Iterator[str | None]:
    """``--bootstrap``, or a broker started here when a run needs one (``--source kafka``, the ``hcep run`` row),
    stopped at the end; None when none is needed."""
    if args.bootstrap or (args.no_run and "kafka" not in args.source):
        yield args.bootstrap
        return
    from benchmarks.bench_pipeline import start_broker

    bootstrap, stop = start_broker(str(work / "kafka"))
    try:
        yield bootstrap
    finally:
        subprocess.run(["bash", str(ROOT / "deploy/kafka/stop.sh"), *stop], capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[2000, 5000, 10000, 20000], help="events/s")
    parser.add_argument("--minutes", type=float, default=10.0, help="landing time per rate (10)")
    parser.add_argument("--master", nargs="+", default=["local[2]"], help="Spark masters, one run each per rate")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds to catch up after landing stops (120)")
    parser.add_argument("--max-lag", type=float, default=60.0, help="bounded: p99 lag at most this (60 s)")
    parser.add_argument("--pack", type=Path, default=PACK, help="the query pack (queries/hadoop.yaml)")
    parser.add_argument(
        "--trigger",
        type=float,
        default=DEFAULT_TRIGGER,
        help=f"hcep stream --trigger S ({DEFAULT_TRIGGER:g}, its default; 0: batches back to back)",
    )
    parser.add_argument(
        "--cluster",
        metavar="RUN_DIR",
        nargs="?",
        const=str(ROOT / ".run" / "spark-cluster"),
        help="a spark:// master is deploy/spark/cluster-start.sh's with this run dir: count its executors' CPU",
    )
    parser.add_argument("--buckets", type=int, help="hcep stream --buckets N (default: its own, 2 x cores)")
    parser.add_argument("--partitions", type=int, help="hcep stream --partitions N (default: its own, 2 x cores)")
    parser.add_argument("--driver-memory", help="hcep stream --driver-memory SIZE (default: its own)")
    parser.add_argument(
        "--reference-events",
        type=int,
        default=0,
        help="events for hcep match / hcep run: the stream's first N (default 0: every event that landed)",
    )
    parser.add_argument(
        "--source",
        nargs="+",
        choices=["files", "kafka"],
        default=["files"],
        help="how events land: files in --input, and/or kafka (hcep stream --bootstrap); a run each",
    )
    parser.add_argument("--bootstrap", help="Kafka broker for --source kafka and the hcep run row (default: start one)")
    parser.add_argument("--no-run", action="store_true", help="no hcep run row (no broker)")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs' directories here")
    parser.add_argument(
        "--operators",
        nargs="+",
        choices=["hcep", "floor"],
        default=["hcep"],
        help="hcep stream's operator, and/or floor: one that keeps nothing (benchmarks.stream_floor); a run each",
    )
    args = parser.parse_args(argv)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hcep-sustained-") as tmp, _broker(args, Path(tmp)) as bootstrap:
        base = Path(args.keep or tmp)
        for master in args.master:
            for rate in args.rates:
                # No glob characters in the path: Spark's file source reads --input as a pattern (local[2]).
                safe = "".join(c if c.isalnum() else "_" for c in master)
                work = base / f"{safe}-{int(rate)}"
                pids = _cluster_workers(args.cluster) if args.cluster and master.startswith("spark://") else None
                for floor, kafka in ((op == "floor", src == "kafka") for op in args.operators for src in args.source):
                    row = run_rate(
                        master,
                        rate,
                        args.minutes,
                        work.with_name(work.name + ("-floor" if floor else "") + ("-kafka" if kafka else "")),
                        args.drain,
                        pids,
                        args.max_lag,
                        args.pack,
                        args.trigger,
                        floor,
                        args.buckets,
                        args.partitions,
                        args.driver_memory,
                        bootstrap if kafka else None,
                    )
                    rows.append(row)
                    print(table([row], COLUMNS), flush=True)
                    print(f"  CPU: {row['cpu by process']}; invalid {row['invalid']}, late {row['late']}", flush=True)
        trace = rows[-1]["_trace"]
        refs = reference_rows(trace, args.reference_events, base, bootstrap, args.no_run, args.pack)
    load = os.getloadavg()
    print(f"\n### hcep stream at sustained rates ({args.minutes:g} min each; load {load[0]:.1f} {load[1]:.1f})\n")
    print(table(rows, COLUMNS))
    for r in rows:
        print(f"{r['master']} {r['rate']:,.0f}/s CPU: {r['cpu by process']}; invalid {r['invalid']}, late {r['late']}")
    print("\n" + table(refs, ["engine", "events", "cpu s", "ev/CPU-s", "records"]))
    by_master: dict[str, float] = {}
    for r in rows:
        if r["bounded"] == "yes":
            by_master[r["master"]] = max(by_master.get(r["master"], 0.0), r["landed ev/s"])
    for m, best in by_master.items():
        print(f"{m}: highest bounded rate {best:,.0f} ev/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
