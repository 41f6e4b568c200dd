"""Wall-clock delay from a fault's onset to its alert in Alertmanager, in the live demo with every real part.

Runs ``hcep demo --no-dashboard --no-spark`` on free loopback ports in a temp dir (its own Kafka broker, gmond and
gmetad, Prometheus Alertmanager, the live simulator with the showcase fault list, both collectors publishing to
Kafka, ``hcep run`` delivering to Alertmanager), then polls Alertmanager's ``GET /api/v2/alerts`` and notes, per
injected fault, the wall-clock moment the first warning that detects it (section 9's score:
:func:`benchmarks.detection_score.detects` -- it names the fault's entity and starts between the onset and the
end plus ten minutes) is there.

The onsets come from the simulator (``ground_truth.json``), in stream time.  The live simulator plays its plan at
speed 1 on the epoch clock (``simulator/live.py``: each log line is written, and each Ganglia round sent, when the
wall clock reaches its own timestamp), so a stream time *is* the wall-clock moment the cause began; the
wall-clock delay is then (when the poller first saw the alert in Alertmanager) - onset, to within the poll
interval, and it includes everything between: the player, the collectors' polling, Kafka, the engine's watermark and
windows, ``hcep run``'s delivery.  The stream delay (the alert's ``startsAt`` - onset) is printed beside it.

    python -m benchmarks.bench_live_delay                      # the first showcase round (one fault of each kind)
    python -m benchmarks.bench_live_delay --minutes 25 --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.detection_score import Window, detects, warnings_of, windows_of

ROOT = Path(__file__).resolve().parents[1]
#: Section 9's delay targets from the onset (stream time), seconds; data skew: before its job ends (not a number).
TARGETS = {"hung_fetch": 90.0, "runaway_reducer": 120.0, "held_output": 240.0, "slow_node": 600.0}
#: The showcase repeats every this many seconds (``hcep demo``'s, simulator.live.showcase_faults).
SHOWCASE_EVERY = 600.0


@dataclass
class Delay:
    """One injected fault and when its first detecting warning reached Alertmanager."""

    kind: str
    entity: str
    severity: float | None
    actionable: bool
    onset: float  #: epoch seconds (stream time = wall clock in the live mode)
    end: float
    alertname: str | None = None
    starts: float | None = None  #: the alert's startsAt (stream time)
    seen: float | None = None  #: wall clock when the poller first saw it in Alertmanager

    @property
    def stream_delay(self) -> float | None:
        return None if self.starts is None else self.starts - self.onset

    @property
    def wall_delay(self) -> float | None:
        return None if self.seen is None else self.seen - self.onset


def free_ports(n: int) -> list[int]:
    """Ports free on 127.0.0.1 for TCP and UDP (gmond uses its number for both)."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = int(tcp.getsockname()[1])
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                    udp.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def alertmanager_alerts(base: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Every alert Alertmanager holds (active, silenced, inhibited, unprocessed); [] when it does not answer."""
    url = f"{base}/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - our own daemon, on loopback
            data = json.loads(resp.read().decode("utf-8"))
    except (OSError, ValueError):
        return []
    return [a for a in data if isinstance(a, dict)] if isinstance(data, list) else []


def watched(truth: dict[str, Any], rounds: int) -> list[tuple[Window, Delay]]:
    """The injected faults with a target in the first ``rounds`` showcase rounds, in onset order."""
    start = float(truth["window"]["start"])
    out = []
    for w in windows_of(truth)[0]:
        if w.onset < start + rounds * SHOWCASE_EVERY:
            d = Delay(w.kind, w.entity[1], w.severity, w.actionable, w.onset, w.end)
            out.append((w, d))
    return sorted(out, key=lambda p: p[1].onset)


def observe(
    base: str,
    faults: list[tuple[Window, Delay]],
    deadline: float,
    *,
    poll: float = 1.0,
    clock: Callable[[], float] = time.time,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Poll Alertmanager until every fault has its alert or the wall clock passes ``deadline`` (epoch s)."""
    while clock() < deadline and alive():
        alerts = alertmanager_alerts(base)
        now = clock()
        for w, d in faults:
            if d.seen is not None:
                continue
            for warning in warnings_of(alerts):
                if detects(warning, w):
                    d.seen, d.starts = now, warning.starts
                    d.alertname = dict(warning.labels).get("alertname")
                    break
        if all(d.seen is not None for _, d in faults):
            return
        time.sleep(poll)


def _demo_cmd(root: Path, ports: list[int], minutes: float, nodes: int, seed: int, duration: float) -> list[str]:
    kafka, zk, gmond, gmetad, interactive, metrics, dashboard, alertmanager = ports
    return [
        sys.executable,
        "-m",
        "app.cli",
        "demo",
        "--no-dashboard",
        "--no-spark",
        *("--dir", str(root / "run"), "--kafka-dir", str(root / "kafka")),
        *("--kafka-port", str(kafka), "--zk-port", str(zk), "--gmond-port", str(gmond)),
        *("--gmetad-port", str(gmetad), "--gmetad-interactive-port", str(interactive)),
        *("--metrics-port", str(metrics), "--dashboard-port", str(dashboard)),
        *("--alertmanager-port", str(alertmanager)),
        *("--nodes", str(nodes), "--seed", str(seed), "--minutes", f"{minutes:g}", "--duration", f"{duration:g}"),
    ]


def run_live(
    work: Path,
    *,
    minutes: float = 15.0,
    nodes: int = 20,
    seed: int = 1,
    rounds: int = 1,
    wait: float = 900.0,
    start_timeout: float = 300.0,
    poll: float = 1.0,
    kinds: frozenset[str] | None = None,
    say: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run the live demo under ``work``, watch Alertmanager until every watched fault (of ``kinds``; None: all) has
    its alert or ``wait`` seconds after the simulated cluster's start, stop the demo (SIGINT) and return the
    delays."""
    ports = free_ports(8)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    out = work / "demo.out"
    cmd = _demo_cmd(work, ports, minutes, nodes, seed, start_timeout + wait + 120.0)
    base = f"http://127.0.0.1:{ports[7]}"
    began = time.monotonic()
    with open(out, "wb") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        info = work / "run" / "demo.json"
        limit = time.monotonic() + start_timeout
        while not info.exists():
            if proc.poll() is not None:
                tail = out.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"hcep demo exited ({proc.returncode}) while starting:\n{tail}")
            if time.monotonic() > limit:
                raise RuntimeError(f"hcep demo not up after {start_timeout:.0f} s")
            time.sleep(1.0)
        up = time.monotonic() - began
        truth = json.loads((work / "run" / "cluster" / "ground_truth.json").read_text())
        start = float(truth["window"]["start"])
        faults = [p for p in watched(truth, rounds) if kinds is None or p[1].kind in kinds]
        say(f"demo up after {up:.0f} s; watching {len(faults)} faults in Alertmanager {base}")
        observe(base, faults, start + wait, poll=poll, alive=lambda: proc.poll() is None)
        died = proc.poll()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(180)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if died is not None:
        raise RuntimeError(f"hcep demo exited ({died}) while watched:\n{out.read_text(errors='replace')[-3000:]}")
    return {
        "nodes": nodes,
        "seed": seed,
        "minutes": minutes,
        "start": start,
        "demo_up_s": up,
        "poll_s": poll,
        "faults": [{**asdict(d), "stream_delay": d.stream_delay, "wall_delay": d.wall_delay} for _, d in faults],
    }


def table(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The report's columns and rows."""

    def s(x: float | None) -> str:
        return "-" if x is None else f"{x:.0f}"

    cols = ["kind", "entity", "severity", "actionable", "onset (s from start)", "alert", "startsAt - onset (s)"]
    cols += ["in Alertmanager - onset, wall clock (s)", "target (stream)"]
    rows = []
    for f in result["faults"]:
        target = TARGETS.get(f["kind"])
        rows.append(
            [
                f["kind"],
                f["entity"],
                "-" if f["severity"] is None else f"{f['severity']:g}",
                "yes" if f["actionable"] else "no",
                f"{f['onset'] - result['start']:.0f}",
                f["alertname"] or "none seen",
                s(f["stream_delay"]),
                s(f["wall_delay"]),
                f"<= {target:.0f} s" if target else "before its job ends",
            ]
        )
    return cols, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0, help="the live scenario's length (hcep demo --minutes)")
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="showcase rounds to watch (one every 10 minutes)")
    ap.add_argument(
        "--wait", type=float, default=900.0, help="give up on an alert this many seconds after the cluster's start"
    )
    ap.add_argument("--poll", type=float, default=1.0, help="seconds between Alertmanager polls")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    from benchmarks.common import print_table

    with tempfile.TemporaryDirectory(prefix="hcep-live-delay-") as work:
        result = run_live(
            Path(work),
            minutes=args.minutes,
            nodes=args.nodes,
            seed=args.seed,
            rounds=args.rounds,
            wait=args.wait,
            poll=args.poll,
        )
    cols, rows = table(result)
    print_table(
        f"live demo ({args.nodes} nodes, seed {args.seed}): fault onset to its alert in Alertmanager",
        cols,
        rows,
        plain=True,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if all(f["seen"] is not None for f in result["faults"] if f["actionable"]) else 1


if __name__ == "__main__":
    sys.exit(main())
