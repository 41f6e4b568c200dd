"""Ganglia collector throughput: gmond XML documents parsed per second, and the whole poll round (parse + derive).

    python -m benchmarks.bench_ganglia [--hosts 100] [--metrics 30] [--seconds 3]

The document is a synthetic gmond dump in the daemon's own shape (DTD, CLUSTER > HOST > METRIC with EXTRA_DATA),
so the figure is what one collector process can keep up with: gmond is polled every 15 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

#: Metric names of a stock gmond (the first 30 of them are used by default).
GMOND_METRICS = (
    *("load_one", "load_five", "load_fifteen", "cpu_user", "cpu_system", "cpu_idle", "cpu_nice", "cpu_wio"),
    *("cpu_aidle", "cpu_intr", "cpu_sintr", "cpu_steal", "proc_run", "proc_total", "mem_free", "mem_shared"),
    *("mem_buffers", "mem_cached", "mem_total", "swap_free", "swap_total", "bytes_in", "bytes_out", "pkts_in"),
    *("pkts_out", "disk_free", "disk_total", "part_max_used", "cpu_num", "cpu_speed", "boottime", "mtu"),
)

_DTD = """<!DOCTYPE GANGLIA_XML [
   <!ELEMENT GANGLIA_XML (GRID|CLUSTER|HOST)*>
      <!ATTLIST GANGLIA_XML VERSION CDATA #REQUIRED>
      <!ATTLIST GANGLIA_XML SOURCE CDATA #REQUIRED>
   <!ELEMENT CLUSTER (HOST | HOSTS | METRICS)*>
      <!ATTLIST CLUSTER NAME CDATA #REQUIRED>
      <!ATTLIST CLUSTER LOCALTIME CDATA #REQUIRED>
   <!ELEMENT HOST (METRIC)*>
      <!ATTLIST HOST NAME CDATA #REQUIRED>
      <!ATTLIST HOST IP CDATA #REQUIRED>
      <!ATTLIST HOST REPORTED CDATA #REQUIRED>
   <!ELEMENT METRIC (EXTRA_DATA*)>
      <!ATTLIST METRIC NAME CDATA #REQUIRED>
      <!ATTLIST METRIC VAL CDATA #REQUIRED>
      <!ATTLIST METRIC TYPE (string | int8 | uint8 | int16 | uint16 | int32 | uint32 | float | double) #REQUIRED>
   <!ELEMENT EXTRA_DATA (EXTRA_ELEMENT*)>
   <!ELEMENT EXTRA_ELEMENT EMPTY>
      <!ATTLIST EXTRA_ELEMENT NAME CDATA #REQUIRED>
      <!ATTLIST EXTRA_ELEMENT VAL CDATA #REQUIRED>
]>
"""


def gmond_document(
    hosts: int = 100, metrics: int = 30, *, cluster: str = "hcep", localtime: int = 1_700_000_000, seed: int = 1
) -> bytes:
    """A gmond dump of ``hosts`` hosts x ``metrics`` metrics (float values; ``load_one`` first)."""
    rng = random.Random(seed)
    k = len(GMOND_METRICS)
    names = [GMOND_METRICS[i % k] + ("" if i < k else f"_{i}") for i in range(metrics)]
    parts = [
        '<?xml version="1.0" encoding="ISO-8859-1" standalone="yes"?>\n',
        _DTD,
        '<GANGLIA_XML VERSION="3.7.2" SOURCE="gmond">\n',
        f'<CLUSTER NAME="{cluster}" LOCALTIME="{localtime}" OWNER="hcep" LATLONG="unspecified" URL="unspecified">\n',
    ]
    for h in range(hosts):
        tn = rng.randint(0, 14)
        parts.append(
            f'<HOST NAME="node-{h:04d}" IP="10.1.{h // 250}.{h % 250 + 1}" TAGS="" REPORTED="{localtime - tn}" '
            f'TN="{tn}" TMAX="20" DMAX="0" LOCATION="unspecified" GMOND_STARTED="{localtime - 86400}">\n'
        )
        for name in names:
            parts.append(
                f'<METRIC NAME="{name}" VAL="{rng.uniform(0, 8):.2f}" TYPE="float" UNITS=" " TN="{rng.randint(0, 14)}" '
                f'TMAX="70" DMAX="0" SLOPE="both">\n<EXTRA_DATA>\n<EXTRA_ELEMENT NAME="GROUP" VAL="load"/>\n'
                f'<EXTRA_ELEMENT NAME="DESC" VAL="{name} description"/>\n<EXTRA_ELEMENT NAME="TITLE" VAL="{name}"/>\n'
                "</EXTRA_DATA>\n</METRIC>\n"
            )
        parts.append("</HOST>\n")
    parts.append("</CLUSTER>\n</GANGLIA_XML>\n")
    return "".join(parts).encode("iso-8859-1")


def _timings(fn: Callable[[], object], seconds: float) -> list[float]:
    """Seconds per call of ``fn``, for about ``seconds`` (after one warm-up call; at least 5 calls)."""
    fn()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < 5 or time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    from collectors.ganglia.derive import round_events, rounds_from_document
    from collectors.ganglia.xml import XmlParser, parse_document

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--metrics", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = ap.parse_args(argv)

    doc = gmond_document(args.hosts, args.metrics)
    parsed = parse_document(doc)
    assert parsed.host_count() == args.hosts and parsed.metric_count() == args.hosts * args.metrics
    parser = XmlParser()

    def full_round() -> None:
        d = parser.parse(doc)
        assert d is not None
        for rnd in rounds_from_document(d, up_only=False):
            round_events(rnd)

    print(f"gmond document: {args.hosts} hosts x {args.metrics} metrics, {len(doc) / 1e6:.2f} MB")
    print("  (median and best of the runs: the best is the figure least disturbed by other load on the machine)")
    for label, fn in (("parse_document", lambda: parse_document(doc)), ("parse + derive events", full_round)):
        times = _timings(fn, args.seconds)
        median, best = statistics.median(times), min(times)
        per_metric = 1e6 * median / (args.hosts * args.metrics)
        print(
            f"  {label:<22} {1 / median:7.1f} documents/s median, {1 / best:7.1f} best"
            f"  ({len(times)} runs, {per_metric:.1f} us per metric)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
