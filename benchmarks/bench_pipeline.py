"""End-to-end pipeline benchmark through a real Kafka broker: publish -> ``hcep run`` -> webhook.

    python -m benchmarks.bench_pipeline                    # starts its own broker (deploy/kafka) in a temp dir
    python -m benchmarks.bench_pipeline --bootstrap HOST:PORT --events 300000 --pack-size 1 50

For each row: a Hadoop + Ganglia stream is published to fresh topics (``publish`` rate; Hadoop keyed by job_id
over 4 partitions, Ganglia on 1), then the service consumes it from the start with a fresh group and store.
``--stream synthetic`` (default) is :func:`workload` (jobs one after another, Ganglia rounds every 15 s; its Ganglia
values make 55 % of the rounds Imbalance, which is hard on Q5); ``--stream simulated`` is the SWIM cluster
simulator's trace (:func:`simulated`), the stream the demo and the collectors produce.

- ``drain`` rate = events read / wall seconds from the first poll to the last poll that returned records: the rate
  at which the service works off a backlog (Kafka fetch, JSON decode, watermark merge, engine, match records and
  alerts, SQLite checkpoints, all on one thread, so what has been read has been fed except the watermark's hold).
- ``e2e`` rate = events / wall seconds from the first poll to the last event fed to the engine.  It adds the end of
  a finite stream: the last events wait for their partitions to go idle (``idle_timeout`` 1 s here) before the
  watermark lets them go, a fixed delay that is not throughput.
- ``ev/CPU-s`` divides by the CPU seconds of the service's process (all its threads) over the drain, which other jobs
  on a shared machine disturb less.

Alerts go to a webhook receiver in another process; ``latency`` is its receive time minus the time the engine emitted
the match, i.e. after the watermark released the match's last event (checkpoint commit + outbox + HTTP), p50/p99.

``--pack-size N`` puts N events into one Kafka message (JSON lines, :func:`app.publish.publish`), the rows compare 1
(one event per message, semantics section 1) with larger packs.  ``--queries`` picks the pack: ``hadoop`` (the six
queries of queries/hadoop.yaml, exact imprecise confidence for Q5/Q6) or ``light`` (Q3 only: the pipeline's own
ceiling).  Wall-clock figures: the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASE = 1_700_000_000.0

LIGHT_PACK = """\
pack: light
tick: 0.1
queries:
  - name: Q3
    strategy: skip_till_next_match
    alert: {severity: warning, webhook: ops}
    query: |
      PATTERN SEQ(ReducerStart a, DataPull+ b[], DataPull c)
      WHERE   [task_id] AND c.period > 2 * avg(b[].period)
      WITHIN  10 minutes
      RETURN  a.task_id AS task_id, c.period AS period
"""


def workload(n: int, seed: int = 1) -> tuple[list[dict], list[dict]]:
    """About ``n`` events: jobs (JobStart, reducers with shuffle pulls, JobEnd) one after another, Ganglia rounds."""
    rng = random.Random(seed)
    hadoop: list[dict] = []
    t = BASE
    j = 0
    while len(hadoop) < n * 0.97:
        job = f"job_{j:06d}"
        t += 0.05
        hadoop.append({"type": "JobStart", "ts": round(t, 2), "delta": 0.5, "job_id": job})
        for r in range(3):
            task = f"{job}_r_{r}"
            t += 0.05
            hadoop.append({"type": "ReducerStart", "ts": round(t, 2), "delta": 0.5, "job_id": job, "task_id": task})
            for p in range(8):
                t += 0.05
                period = rng.uniform(5, 9) if p == 7 and rng.random() < 0.3 else rng.uniform(1, 2)
                hadoop.append(
                    {
                        "type": "DataPull",
                        "ts": round(t, 2),
                        "delta": 0.5,
                        "job_id": job,
                        "task_id": task,
                        "period": round(period, 2),
                        "bytes": 1000,
                    }
                )
            t += 0.05
            hadoop.append({"type": "ReducerEnd", "ts": round(t, 2), "delta": 0.5, "job_id": job, "task_id": task})
            hadoop.append({"type": "Mapper", "ts": round(t, 2), "delta": 0.5, "job_id": job, "period": 3.0})
        t += 0.05
        hadoop.append({"type": "JobEnd", "ts": round(t, 2), "delta": 0.5, "job_id": job})
        j += 1
    ganglia: list[dict] = []
    g = BASE
    while g < t + 1300:  # past the last job by two 10-minute windows: every distinct record gets released
        val = round(rng.uniform(0.2, 2.0), 3)
        ganglia.append({"type": "LoadStd", "ts": round(g, 2), "delta": 7.5, "val": val, "cluster": "c"})
        ganglia.append(
            {"type": "Imbalance" if val > 1 else "Balance", "ts": round(g, 2), "delta": 7.5, "val": val, "cluster": "c"}
        )
        g += 15.0
    return hadoop, ganglia


GANGLIA_TYPES = frozenset({"Metric", "LoadStd", "Balance", "Imbalance"})


def simulated(nodes: int, hours: float, workdir: str, seed: int = 1) -> tuple[list[dict], list[dict]]:
    """The simulated cluster's trace (:func:`benchmarks.bench_hadoop_pack.simulated_events`, the pack's imbalance
    threshold) split by source, each in time order as its collector publishes it."""
    from benchmarks.bench_hadoop_pack import simulated_events
    from engine.language.packs import load_pack

    threshold = float(load_pack(str(ROOT / "queries" / "hadoop.yaml")).settings.get("imbalance_threshold", 1.0))
    events, _account = simulated_events(nodes, hours, seed, workdir, threshold)
    events.sort(key=lambda e: e["ts"])
    return [e for e in events if e["type"] not in GANGLIA_TYPES], [e for e in events if e["type"] in GANGLIA_TYPES]


_RECEIVER = r"""
import http.server, json, sys, time
from contracts.alerts import transition_id
out = open(sys.argv[1], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        now = time.time()
        out.write("".join(f"{transition_id(a)} {now}\n" for a in body["alerts"]))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class _Receiver:
    """A webhook receiver in a process of its own (in the service's process it would compete for the GIL)."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-c", _RECEIVER, log], stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}/"

    def received(self) -> dict[str, float]:
        out: dict[str, float] = {}
        with open(self.log) as f:
            for line in f:
                alert_id, at = line.split()
                out.setdefault(alert_id, float(at))
        return out

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(run_dir: str) -> tuple[str, list[str]]:
    port, zk = _free_port(), _free_port()
    args = ["--run-dir", run_dir, "--port", str(port), "--zk-port", str(zk)]
    subprocess.run(["bash", str(ROOT / "deploy/kafka/start.sh"), *args], check=True, capture_output=True, timeout=300)
    return f"127.0.0.1:{port}", args


_PUBLISHER = r"""
import json, sys, time
from app.kafka_io import Producer
from app.publish import event_key
bootstrap, prefix, path, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
items = [json.loads(line) for line in open(path)]
producer = Producer(bootstrap, linger_ms=5)
step = max(1, int(rate / 20))
t0 = time.time()
for i in range(0, len(items), step):
    for source, event in items[i:i + step]:
        producer.send(f"{prefix}.{source}", json.dumps(event).encode(), event_key(event))
    producer.flush()
    time.sleep(max(0.0, t0 + (i + step) / rate - time.time()))
producer.close()
"""


def _run_service(
    bootstrap: str, prefix: str, pack_file: str, data_dir: str, url: str, part: str = ""
) -> tuple[Any, dict]:
    from app.alerts import parse_webhooks
    from app.stream import Service, ServiceConfig
    from engine.language.packs import load_pack

    cfg = ServiceConfig(
        pack=pack_file,
        bootstrap=bootstrap,
        group=f"{prefix}{part}",
        instance=f"bench{part}",
        shared_topics=[f"{prefix}.hadoop{part}"],
        broadcast_topics=[f"{prefix}.ganglia"],
        matches_topic=None,
        data_dir=data_dir,
        metrics_port=None,
        idle_timeout=1.0,
        webhooks=parse_webhooks({"ops": url}),
        exit_when_idle=2.0,
        drain_timeout=30.0,
    )
    marks: dict[str, float] = {}

    class Timed(Service):
        def _ingest(self, records: list[Any]) -> int:
            if records and "first" not in marks:
                marks["first"] = time.perf_counter()
                marks["first_cpu"] = time.process_time()
            got = super()._ingest(records)
            if records:  # the last call with records ends the drain of the backlog
                marks["drained"] = time.perf_counter()
                marks["drained_cpu"] = time.process_time()
            return got

        def _release(self, now: float) -> None:  # per loop turn, not per event: the clocks cost a syscall each
            fed = self.epoch.seq
            super()._release(now)
            if self.epoch.seq != fed:
                marks["last"] = time.perf_counter()
                marks["last_cpu"] = time.process_time()

    service = Timed(cfg, load_pack(pack_file))
    service.run()
    return service, marks


def _latencies(data_dir: str, receiver: _Receiver) -> tuple[int, int, list[float]]:
    from app.store import Store, store_path

    store = Store(store_path(data_dir))
    created = dict(store.db.execute("SELECT id, created_at FROM alerts").fetchall())
    store.close()
    received = receiver.received()
    return len(created), len(received), sorted(received[i] - created[i] for i in received if i in created)


def live_row(
    bootstrap: str, hadoop: list[dict], ganglia: list[dict], pack_file: str, rate: float, workdir: str
) -> dict[str, Any]:
    """Events published at ``rate``/s by another process while the service runs: alert latency in steady state."""
    from app.kafka_io import ensure_topics

    prefix = f"bench-live-{os.getpid()}-{random.randrange(10**9)}"
    ensure_topics(bootstrap, {f"{prefix}.hadoop": 4, f"{prefix}.ganglia": 1})
    data_dir = os.path.join(workdir, prefix)
    os.makedirs(data_dir, exist_ok=True)
    stream = os.path.join(data_dir, "stream.jsonl")
    merged = sorted([("hadoop", e) for e in hadoop] + [("ganglia", e) for e in ganglia], key=lambda x: x[1]["ts"])
    with open(stream, "w") as f:
        f.writelines(json.dumps(item) + "\n" for item in merged)
    receiver = _Receiver(os.path.join(data_dir, "received.txt"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pub = subprocess.Popen([sys.executable, "-c", _PUBLISHER, bootstrap, prefix, stream, str(rate)], env=env)
    try:
        service, marks = _run_service(bootstrap, prefix, pack_file, data_dir, receiver.url)
    finally:
        pub.wait(timeout=600)
        n_alerts, n_received, lat = _latencies(data_dir, receiver)
        receiver.close()
    return {
        "events": len(merged),
        "rate ev/s": rate,
        "alerts": n_alerts,
        "delivered": n_received,
        "p50 ms": 1000 * statistics.median(lat) if lat else float("nan"),
        "p99 ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan"),
        "max ms": 1000 * lat[-1] if lat else float("nan"),
    }


def _child(argv: list[str]) -> int:
    """One service of a ``--processes N`` row, in a process of its own: prints its marks as JSON."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    bootstrap, prefix, pack_file, data_dir, url, part = argv
    service, marks = _run_service(bootstrap, prefix, pack_file, data_dir, url, part)
    marks["read"] = service.metrics.get("hcep_events_total")
    marks["fed"] = service.metrics.get("hcep_engine_events_total")
    print(json.dumps(marks), flush=True)
    return 0


def multi_row(
    bootstrap: str,
    hadoop: list[dict],
    ganglia: list[dict],
    pack_file: str,
    pack_size: int,
    processes: int,
    workdir: str,
) -> dict[str, Any]:
    """``processes`` services side by side, as a consumer group that has settled: the jobs are split over
    ``processes`` Hadoop topics of 4 / N partitions each (equal numbers of events, :func:`_balanced_shares`), one
    service (its own group) per topic, all reading the Ganglia topic in full.  (One group over one topic would
    measure the rebalances of its members joining one after the other instead.)  drain = all events / (last read of
    any - first poll of any), e2e the same to the last feed of any."""
    from app.kafka_io import ensure_topics
    from app.publish import publish

    prefix = f"bench-{os.getpid()}-{random.randrange(10**9)}"
    parts = max(1, 4 // processes)
    ensure_topics(bootstrap, {**{f"{prefix}.hadoop{k}": parts for k in range(processes)}, f"{prefix}.ganglia": 1})
    share = _balanced_shares(hadoop, processes)
    t0 = time.perf_counter()
    for k in range(processes):
        publish(
            [e for e in hadoop if share[e["job_id"]] == k],
            bootstrap,
            "hadoop",
            topic=f"{prefix}.hadoop{k}",
            pack=pack_size,
        )
    publish(ganglia, bootstrap, "ganglia", topic=f"{prefix}.ganglia", pack=pack_size)
    publish_s = time.perf_counter() - t0
    n = len(hadoop) + len(ganglia)
    receiver = _Receiver(os.path.join(workdir, f"{prefix}-received.txt"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = []
    try:
        for k in range(processes):
            data_dir = os.path.join(workdir, f"{prefix}-{k}")
            os.makedirs(data_dir, exist_ok=True)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "benchmarks.bench_pipeline",
                        "--child",
                        bootstrap,
                        prefix,
                        pack_file,
                        data_dir,
                        receiver.url,
                        str(k),
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        marks = [json.loads(p.communicate(timeout=3600)[0].strip().splitlines()[-1]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        receiver.close()
    e2e_s = max(m["last"] for m in marks) - min(m["first"] for m in marks)
    drain_s = max(m["drained"] for m in marks) - min(m["first"] for m in marks)
    cpu_s = sum(m["drained_cpu"] - m["first_cpu"] for m in marks)
    read = sum(m["read"] for m in marks) - (processes - 1) * len(ganglia)  # each reads the Ganglia events
    return {
        "events": n,
        "pack": pack_size,
        "procs": processes,
        "publish ev/s": n / publish_s,
        "drain ev/s": _rate(read, drain_s),
        "e2e ev/s": _rate(read, e2e_s),
        "ev/CPU-s": _rate(read, cpu_s),
        "fed": int(sum(m["fed"] for m in marks)),
        "alerts": "",
        "delivered": len(receiver.received()),
        "p50 ms": float("nan"),
        "p99 ms": float("nan"),
    }


def _balanced_shares(hadoop: list[dict], processes: int) -> dict[str, int]:
    """Job -> service, the largest jobs first each to the service with the fewest events so far: the services get
    equal work, whatever the job sizes (the simulator's are heavy-tailed), so the row measures capacity."""
    sizes: dict[str, int] = {}
    for e in hadoop:
        sizes[e["job_id"]] = sizes.get(e["job_id"], 0) + 1
    load = [0] * processes
    share: dict[str, int] = {}
    for job in sorted(sizes, key=lambda j: (-sizes[j], j)):
        k = load.index(min(load))
        share[job] = k
        load[k] += sizes[job]
    return share


def one_row(
    bootstrap: str, hadoop: list[dict], ganglia: list[dict], pack_file: str, pack_size: int, workdir: str
) -> dict[str, Any]:
    from app.kafka_io import ensure_topics
    from app.publish import publish

    prefix = f"bench-{os.getpid()}-{random.randrange(10**9)}"
    ensure_topics(bootstrap, {f"{prefix}.hadoop": 4, f"{prefix}.ganglia": 1})
    t0 = time.perf_counter()
    publish(hadoop, bootstrap, "hadoop", topic=f"{prefix}.hadoop", pack=pack_size)
    publish(ganglia, bootstrap, "ganglia", topic=f"{prefix}.ganglia", pack=pack_size)
    publish_s = time.perf_counter() - t0
    n = len(hadoop) + len(ganglia)

    data_dir = os.path.join(workdir, prefix)
    os.makedirs(data_dir, exist_ok=True)
    receiver = _Receiver(os.path.join(data_dir, "received.txt"))
    try:
        service, marks = _run_service(bootstrap, prefix, pack_file, data_dir, receiver.url)
    finally:
        n_alerts, n_received, lat = _latencies(data_dir, receiver)
        receiver.close()
    read = service.metrics.get("hcep_events_total")
    return {
        "events": n,
        "pack": pack_size,
        "procs": 1,
        "publish ev/s": n / publish_s,
        "drain ev/s": _rate(read, marks.get("drained", 0) - marks.get("first", 0)),
        "e2e ev/s": _rate(read, marks.get("last", 0) - marks.get("first", 0)),
        "ev/CPU-s": _rate(read, marks.get("drained_cpu", 0) - marks.get("first_cpu", 0)),
        "fed": int(service.metrics.get("hcep_engine_events_total")),
        "alerts": n_alerts,
        "delivered": n_received,
        "p50 ms": 1000 * statistics.median(lat) if lat else float("nan"),
        "p99 ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this broker (default: start one with deploy/kafka in a temp dir)")
    parser.add_argument(
        "--stream",
        choices=("synthetic", "simulated"),
        default="synthetic",
        help="synthetic: this module's workload(); simulated: the SWIM cluster simulator's trace "
        "(hcep simulate + hcep collect hadoop + the Ganglia derivation), as in bench_hadoop_pack",
    )
    parser.add_argument("--events", type=int, default=200_000, help="size of the synthetic stream")
    parser.add_argument("--nodes", type=int, default=500, help="simulated cluster size (--stream simulated)")
    parser.add_argument("--hours", type=float, default=1.0, help="simulated hours (--stream simulated)")
    parser.add_argument("--pack-size", type=int, nargs="+", default=[1, 50])
    parser.add_argument("--queries", choices=("hadoop", "light"), default="hadoop")
    parser.add_argument(
        "--live-rate",
        type=float,
        default=2000.0,
        help="events/s of the live phase (alert latency in steady state; 0: skip it)",
    )
    parser.add_argument("--live-events", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="20,000 events, a 5,000-event live phase")
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        default=[1],
        help="rows with N services side by side (see multi_row), e.g. --processes 1 2",
    )
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    n = 20_000 if args.quick else args.events
    work = tempfile.mkdtemp(prefix="hcep-bench-")
    broker_args: list[str] | None = None
    try:
        bootstrap = args.bootstrap
        if not bootstrap:
            bootstrap, broker_args = start_broker(os.path.join(work, "kafka"))
        pack_file = str(ROOT / "queries" / "hadoop.yaml")
        if args.queries == "light":
            pack_file = os.path.join(work, "light.yaml")
            Path(pack_file).write_text(LIGHT_PACK)
        hadoop, ganglia = workload(n) if args.stream == "synthetic" else simulated(args.nodes, args.hours, work)
        print(
            f"pipeline benchmark ({args.stream} stream): {len(hadoop) + len(ganglia)} events ({len(hadoop)} Hadoop,"
            f" {len(ganglia)} Ganglia), pack {args.queries}, broker {bootstrap}, {os.cpu_count()} cores",
            flush=True,
        )
        cols = [
            "events",
            "pack",
            "procs",
            "publish ev/s",
            "drain ev/s",
            "e2e ev/s",
            "ev/CPU-s",
            "fed",
            "alerts",
            "delivered",
            "p50 ms",
            "p99 ms",
        ]
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for size in args.pack_size:
            for procs in args.processes:
                if procs <= 1:
                    row = one_row(bootstrap, hadoop, ganglia, pack_file, size, work)
                else:
                    row = multi_row(bootstrap, hadoop, ganglia, pack_file, size, procs, work)
                print("| " + " | ".join(_fmt(row[c]) for c in cols) + " |", flush=True)
        if args.live_rate > 0:
            lh, lg = workload(5_000 if args.quick else args.live_events, seed=2)
            print(
                f"\nlive: {len(lh) + len(lg)} events published at {args.live_rate:,.0f}/s by another process "
                "while the service runs (one event per message); latency = webhook receipt - engine emission"
            )
            cols = ["events", "rate ev/s", "alerts", "delivered", "p50 ms", "p99 ms", "max ms"]
            print("| " + " | ".join(cols) + " |")
            print("|" + "---|" * len(cols))
            row = live_row(bootstrap, lh, lg, pack_file, args.live_rate, work)
            print("| " + " | ".join(_fmt(row[c]) for c in cols) + " |", flush=True)
    finally:
        if broker_args is not None:
            subprocess.run(["bash", str(ROOT / "deploy/kafka/stop.sh"), *broker_args], capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _rate(events: float, seconds: float) -> float:
    return events / seconds if seconds > 0 else float("nan")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


if __name__ == "__main__":
    sys.exit(main())
