"""Simulated Ganglia output: write samples as gmetad would (RRD files) or publish them through a real gmond (gmetric).

Samples are ``(ts, host, metric, value)``.  :func:`write_rrd` lets the RRD reader and the ``--rrd`` collector be fed
without daemons; :func:`send_gmetric` drives a real gmond (and the gmetad polling it) with fake hosts, the way a
cluster's nodes would report.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

#: gmetad's defaults: a 15 s step, a GAUGE data source named ``sum`` with an 8-step heartbeat, and its AVERAGE archives.
STEP = 15
DS_NAME = "sum"
GMETAD_RRAS = ("RRA:AVERAGE:0.5:1:5856", "RRA:AVERAGE:0.5:4:20160", "RRA:AVERAGE:0.5:40:52704")

Sample = tuple[float, str, str, float]


def _check_name(kind: str, name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"bad {kind} name {name!r} for an RRD path")


def write_rrd(rootdir: str, cluster: str, samples: Iterable[Sample]) -> None:
    """Create or extend ``<rootdir>/<cluster>/<host>/<metric>.rrd`` (gmetad's layout, step 15 s) from samples.

    Per file, samples are written in time order; a repeated time keeps the last value; times not after an existing
    file's last update are skipped (RRD files only grow forward).  Values at multiples of 15 s read back exactly; others
    are averaged into the 15 s rows as rrdtool does.  NaN and infinities are written as unknown.
    """
    import rrdtool

    _check_name("cluster", cluster)
    series: dict[tuple[str, str], dict[float, float]] = defaultdict(dict)
    for ts, host, metric, value in samples:
        _check_name("host", host)
        _check_name("metric", metric)
        series[(host, metric)][float(ts)] = float(value)
    for (host, metric), points in series.items():
        path = Path(rootdir) / cluster / host / f"{metric}.rrd"
        times = sorted(points)
        if path.exists():
            last = float(rrdtool.info(str(path))["last_update"])
            times = [t for t in times if t > last]
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            start = math.floor(times[0]) - STEP  # so the first sample's whole row is known
            rrdtool.create(
                str(path), "--start", str(start), "--step", str(STEP),
                f"DS:{DS_NAME}:GAUGE:{8 * STEP}:U:U", *GMETAD_RRAS,
            )  # fmt: skip
        updates = [f"{_stamp(t)}:{_value(points[t])}" for t in times]
        for i in range(0, len(updates), 512):
            rrdtool.update(str(path), *updates[i : i + 512])


def _stamp(ts: float) -> str:
    return str(int(ts)) if ts.is_integer() else f"{ts:.6f}"


def _value(v: float) -> str:
    return repr(v) if math.isfinite(v) else "U"


def spoof_ip(host: str) -> str:
    """A stable loopback-range address for a fake host (gmond shows it as the host's IP; nothing connects to it)."""
    h = zlib.crc32(host.encode("utf-8"))
    return f"127.{64 + (h >> 16) % 64}.{(h >> 8) & 0xFF}.{1 + (h & 0xFF) % 254}"


def send_gmetric(
    host_port: str, samples: Iterable[Sample], *, speed: float = 0.0, gmetric: str = "gmetric", heartbeat: bool = True
) -> None:
    """Publish samples through the gmond listening for metrics (UDP) at ``host_port`` with ``gmetric --spoof``.

    gmond stamps a metric when it receives it, so ``ts`` only orders the samples; with ``speed`` > 0 the gaps between
    distinct times are replayed, divided by ``speed`` (1 = real time).  Each fake host also gets a spoofed heartbeat,
    so Ganglia counts it as up.  Raises FileNotFoundError without ``gmetric``, CalledProcessError when it fails.
    """
    exe = shutil.which(gmetric)
    if exe is None:
        raise FileNotFoundError(f"{gmetric} not found: run 'bash deploy/ganglia/install.sh'")
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {host_port!r}")
    ordered = sorted(samples, key=lambda s: s[0])
    with tempfile.TemporaryDirectory(prefix="hcep-gmetric-") as tmp:
        conf = os.path.join(tmp, "gmetric.conf")
        with open(conf, "w", encoding="utf-8") as out:
            out.write(f"udp_send_channel {{\n  host = {host}\n  port = {port}\n}}\n")
        seen: set[str] = set()
        previous: float | None = None
        for ts, fake, metric, value in ordered:
            if speed > 0 and previous is not None and ts > previous:
                time.sleep((ts - previous) / speed)
            previous = ts
            spoof = f"{spoof_ip(fake)}:{fake}"
            if heartbeat and fake not in seen:
                seen.add(fake)
                subprocess.run([exe, "-c", conf, "-S", spoof, "-H"], check=True, capture_output=True)
            cmd = [exe, "-c", conf, "-n", metric, "-v", repr(float(value)), "-t", "float", "-u", " ", "-x", "60"]
            subprocess.run([*cmd, "-d", "0", "-S", spoof], check=True, capture_output=True)
