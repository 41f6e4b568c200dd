"""``hcep demo``: the live demo -- Kafka, Ganglia, a simulated Hadoop cluster writing its logs as time passes, the
collectors, the streaming service and the dashboard, started and supervised together (:mod:`app.demo.live`); Ctrl-C
stops everything.  ``hcep demo --replay`` is the offline summary of the pack over a recorded trace
(:mod:`app.demo.replay`).

Only the standard library is imported here: ``hcep --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.commands import CommandError
from app.commands.argtypes import number, positive

_port = number(at_least=1, integer=True, what=" (a TCP port)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Start the whole system on this machine (loopback only) -- a Kafka broker, gmond and gmetad, a simulated "
        "Hadoop cluster running live, the collectors, the streaming service with the Hadoop pack and the dashboard "
        "-- print the dashboard's URL and what to look for, and supervise it all until Ctrl-C.  With --replay: run "
        "a query pack over a recorded trace and print a readable summary per query."
    )
    parser.add_argument(
        "--replay",
        action="store_true",
        help="instead of the live system: run the pack over a recorded trace (--events) and print a "
        "summary of what each query found",
    )
    parser.add_argument("--pack", metavar="FILE", help="query pack (default: the installed queries/hadoop.yaml)")
    parser.add_argument(
        "--events",
        metavar="FILE",
        help="with --replay: events, JSON lines (default: the installed queries/samples/hadoop_sample.jsonl)",
    )
    live = parser.add_argument_group("the live demo")
    live.add_argument(
        "--dir",
        metavar="DIR",
        help="the demo's files: simulated cluster, events, store, logs "
        "(default .run/demo in the repository; emptied at start)",
    )
    live.add_argument(
        "--duration",
        type=positive,
        metavar="S",
        help="stop after S seconds once everything is up (default: run until Ctrl-C)",
    )
    live.add_argument("--no-dashboard", dest="dashboard", action="store_false", help="do not start the dashboard")
    live.add_argument(
        "--nodes",
        type=number(at_least=2, integer=True),
        default=20,
        metavar="N",
        help="nodes of the simulated cluster (default 20)",
    )
    live.add_argument("--seed", type=int, default=1, metavar="S", help="random seed of the simulated cluster (1)")
    live.add_argument(
        "--minutes",
        type=positive,
        default=60.0,
        metavar="M",
        help="length of the simulated scenario (default 60; the anomalies come in its first two "
        "minutes and again every 10)",
    )
    live.add_argument(
        "--kafka-dir",
        metavar="DIR",
        help="the broker's run dir (default .run/kafka, that of "
        "deploy/kafka/start.sh, so a broker started by hand is reused)",
    )
    for name, default, what in (
        ("kafka-port", 9092, "Kafka broker"),
        ("zk-port", 2181, "ZooKeeper"),
        ("gmond-port", 8649, "gmond (TCP+UDP)"),
        ("gmetad-port", 8651, "gmetad XML"),
        ("gmetad-interactive-port", 8652, "gmetad interactive"),
        ("metrics-port", 9464, "hcep run's Prometheus metrics"),
        ("dashboard-port", 8501, "the dashboard"),
        ("alertmanager-port", 9093, "Alertmanager's API"),
        ("spark-metrics-port", 9465, "the Spark pack's hcep run"),
    ):
        live.add_argument(
            f"--{name}", type=_port, default=default, metavar="N", help=f"{what} port (default {default})"
        )
    live.add_argument(
        "--spark",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run a small PySpark application (a spilling and a skewed stage) with the Spark pack's "
        "own hcep run and hcep collect spark (default on; --no-spark: the Hadoop side only)",
    )
    live.add_argument("--refresh", type=positive, default=5.0, metavar="S", help="dashboard auto-refresh (5 s)")
    live.add_argument(
        "--start-timeout",
        type=positive,
        default=180.0,
        metavar="S",
        help="give up on a part that is not up after S seconds (180)",
    )


def run(args: argparse.Namespace) -> int:
    if args.replay:
        from app.demo.replay import run as replay

        return replay(args)
    if args.events:
        raise CommandError("hcep demo: --events needs --replay (the live demo makes its own events)")
    from app.demo.live import ROOT, Demo, Options
    from app.matching.packs import data_path

    pack = Path(args.pack) if args.pack else data_path("hadoop.yaml")
    if not pack.is_file():
        raise CommandError(f"hcep demo: --pack {pack}: no such file")
    opts = Options(
        dir=Path(args.dir) if args.dir else ROOT / ".run" / "demo",
        pack=pack.resolve(),
        nodes=args.nodes,
        seed=args.seed,
        minutes=args.minutes,
        duration=args.duration,
        dashboard=args.dashboard,
        kafka_dir=Path(args.kafka_dir).resolve() if args.kafka_dir else ROOT / ".run" / "kafka",
        kafka_port=args.kafka_port,
        zk_port=args.zk_port,
        gmond_port=args.gmond_port,
        gmetad_port=args.gmetad_port,
        gmetad_interactive_port=args.gmetad_interactive_port,
        metrics_port=args.metrics_port,
        dashboard_port=args.dashboard_port,
        alertmanager_port=args.alertmanager_port,
        refresh=args.refresh,
        start_timeout=args.start_timeout,
        spark=args.spark,
        spark_pack=data_path("spark.yaml").resolve(),
        spark_metrics_port=args.spark_metrics_port,
    )
    ports = (
        [
            opts.kafka_port,
            opts.zk_port,
            opts.gmond_port,
            opts.gmetad_port,
            opts.gmetad_interactive_port,
            opts.metrics_port,
            opts.alertmanager_port,
        ]
        + ([opts.dashboard_port] if opts.dashboard else [])
        + ([opts.spark_metrics_port] if opts.spark else [])
    )
    if len(set(ports)) != len(ports):
        raise CommandError("hcep demo: every port must differ")
    return Demo(opts).run()
