"""``hcep stream --pack FILE (--input DIR | --bootstrap HOST:PORT) --output DIR --checkpoint DIR``: the query pack
as a Spark Structured Streaming query (:mod:`app.spark.stream`).

Records go to ``OUTPUT/matches`` in the archive's layout, alert transitions to ``OUTPUT/alerts``, late and invalid
events to ``OUTPUT/dead_letters``; each micro-batch once, whatever restarts happen (the checkpoint).
``--available-now`` processes what is there, ends the input (every partial match is released, as at the end of
``hcep match``'s file) and exits; otherwise the query runs until SIGTERM or Ctrl-C (the first stops it after the
batch in progress, a second at once).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any

from app.commands import CommandError

DEFAULT_TOPICS = "hcep.events.hadoop,hcep.events.ganglia"
#: Seconds between micro-batches: each batch pays Spark's fixed costs (planning, a state store commit per partition,
#: the Python round trips), so batches back to back cost about twice the CPU (benchmarks/README.md, issue 28).
DEFAULT_TRIGGER = 10.0
#: The driver JVM's heap.  On a local master it is the executor too: the state server holds each bucket's meta and
#: pages (tens of MB each at 20,000 events/s) beside the shuffle and Arrow batches, and at Spark's 1g a stream that
#: fell behind grew its batches until the heap ran out (``OutOfMemoryError`` in ``stateConnectionListenerThread``,
#: issue 28, cut 14).
DEFAULT_DRIVER_MEMORY = "4g"
_MEMORY = re.compile(r"[1-9][0-9]*[kmgt]?", re.IGNORECASE)


def configure(parser: argparse.ArgumentParser) -> None:
    from app.commands.argtypes import non_negative_seconds

    parser.add_argument("--pack", required=True, metavar="FILE", help="a YAML query pack (e.g. queries/hadoop.yaml)")
    parser.add_argument("--query", action="append", metavar="NAME", help="run only this query (repeatable)")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", metavar="DIR", help="a directory of JSON-lines event files (new files are picked up)")
    src.add_argument("--bootstrap", metavar="HOST:PORT", help="read Kafka (the hcep-kafka Python source)")
    parser.add_argument(
        "--topics", default=DEFAULT_TOPICS, metavar="T1,T2", help=f"Kafka topics to read (default {DEFAULT_TOPICS})"
    )
    parser.add_argument("--output", required=True, metavar="DIR", help="records, alerts and dead letters go here")
    parser.add_argument("--checkpoint", required=True, metavar="DIR", help="Spark's checkpoint (offsets and state)")
    parser.add_argument(
        "--available-now",
        action="store_true",
        help="process what is there, end the input (flush every partial match) and exit",
    )
    parser.add_argument(
        "--master", metavar="URL", help="Spark master (default $HCEP_SPARK_MASTER or local[N]; e.g. local[2], yarn)"
    )
    parser.add_argument(
        "--buckets",
        type=int,
        metavar="N",
        help="state keys the groups are hashed into (default 2 x cores; fixed for the life of a checkpoint)",
    )
    parser.add_argument(
        "--max-delta",
        type=non_negative_seconds,
        metavar="S",
        help="widest accepted half-interval (default: the pack's settings.max_delta, else 7.5); the watermark waits "
        "this plus --allowed-lateness",
    )
    parser.add_argument(
        "--allowed-lateness", type=non_negative_seconds, default=2.0, metavar="S", help="on top of --max-delta (2)"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        metavar="N",
        help="the state operator's tasks (spark.sql.shuffle.partitions; default 2 x cores; fixed by the checkpoint)",
    )
    parser.add_argument("--max-files-per-trigger", type=int, metavar="N", help="files per micro-batch (--input)")
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=0,
        metavar="N",
        help="messages per batch (0, the default: all that wait); shared over partitions by count, not time, so a "
        "cap can make a lagging partition's events late",
    )
    parser.add_argument(
        "--trigger",
        type=float,
        metavar="S",
        help=f"at most one micro-batch every S seconds (default {DEFAULT_TRIGGER:g}, with --available-now 0: Spark's "
        "costs are paid per batch, and back-to-back batches, 0, cost about twice the CPU for a few seconds less lag)",
    )
    parser.add_argument("--alertmanager", metavar="URL", help="also deliver the alert transitions to Alertmanager")
    parser.add_argument(
        "--matches-topic",
        metavar="TOPIC",
        help="also publish each committed record to this Kafka topic (JSON, keyed by record id; at-least-once: a "
        "crash between a batch's commit and its publication publishes it again); needs --bootstrap",
    )
    parser.add_argument(
        "--cut",
        choices=("declared", "safe"),
        default="declared",
        help="declared: take each query's partitioning at its word, as hcep run --workers (default); safe: queries "
        "whose cut relies on the input run unpartitioned (exact on any input)",
    )
    parser.add_argument(
        "--keyless-types",
        metavar="T1,T2",
        help="the event types that may lack the partition keys (e.g. Metric,LoadStd,Balance,Imbalance for the "
        "Hadoop pack); the others must always carry them. Keyless events then reach a group only where its "
        "patterns can place them (much less work); a violating event is dead-lettered",
    )
    parser.add_argument("--explain", action="store_true", help="print how the stream is cut on stderr")
    parser.add_argument(
        "--full-matches",
        action="store_true",
        help="whole signatures: a growing run (Q4) lists its whole prefix in every record instead of the events "
        "since its previous record (quadratic; for tests and small inputs)",
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no per-batch progress lines")
    parser.add_argument(
        "--driver-memory",
        default=DEFAULT_DRIVER_MEMORY,
        metavar="SIZE",
        help=f"the driver JVM's heap, as Spark writes it (512m, 4g; default {DEFAULT_DRIVER_MEMORY}): on a local "
        "master the executor's too, holding the state store's values",
    )


def _plan(args: argparse.Namespace, cores: int) -> Any:
    """The pack as ``hcep run`` runs it (no overrides), cut by the batch planner's shared code."""
    from app.commands.batch import load_plans
    from app.spark.stream.plan import build_plan

    no_overrides = {"tick": None, "strategy": None, "output": None, "confidence": None}
    plans = load_plans(argparse.Namespace(pack=args.pack, query=args.query, **no_overrides))
    buckets = args.buckets or max(2 * cores, 2)
    if buckets < 1:
        raise CommandError("hcep stream: --buckets must be at least 1")
    keyless = None
    if args.keyless_types is not None:
        keyless = frozenset(t.strip() for t in args.keyless_types.split(",") if t.strip())
    return build_plan(
        plans,
        max_delta=args.max_delta,
        buckets=buckets,
        allowed_lateness=args.allowed_lateness,
        cut=args.cut,
        keyless_types=keyless,
        full_matches=getattr(args, "full_matches", False),
    )


def _publisher(bootstrap: str, topic: str, plan: Any) -> tuple[Any, Any]:
    """Records to ``topic`` after each commit, keyed by their id (a consumer de-duplicates a repeated batch)."""
    import json

    from app.kafka_io import Producer
    from contracts.records import record_id

    producer = Producer(bootstrap)
    outputs = {p.name: p.output for p in plan.plans}

    def publish(records: list[dict[str, Any]]) -> None:
        for record in records:
            key = record_id(record, outputs.get(record["query"], "all")).encode()
            producer.send(topic, json.dumps(record).encode(), key)
        producer.flush()

    return publish, producer


#: ``spark.locality.wait`` on a cluster (see :func:`session_conf`).
LOCALITY_WAIT = "1s"


def session_conf(master: str) -> dict[str, str]:
    """Settings ``hcep stream`` adds to the session for a cluster master: the executors' Python workers run this
    Python (its packages: the engine, pandas, pyarrow); a master on loopback (``deploy/spark/cluster-start.sh``)
    gets a driver on loopback too, so nothing listens beyond it."""
    from app.spark.session import LOOPBACK, is_local
    from app.spark.stream.job import session_conf as jvm_conf

    if is_local(master):
        return jvm_conf()
    conf = {
        **jvm_conf(),
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # A bucket's task prefers the executor holding its state store, and Spark waits up to 3 s (the default) for
        # it: with tasks shorter than that, the buckets an executor happened to take in the first batch stayed
        # there (3 of 4 on one of two executors, the other idle half of each batch).  After 1 s an idle executor
        # takes the task (its state loads from the checkpoint once), and the placement evens out.
        "spark.locality.wait": LOCALITY_WAIT,
    }
    host = master.split("://", 1)[-1].rsplit(":", 1)[0]
    if host in (LOOPBACK, "localhost"):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        conf.update({"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK})
    return conf


#: How long the end of a run waits for Alertmanager to take the last transitions.
DRAIN_SECONDS = 10.0


def trigger_seconds(args: argparse.Namespace) -> float:
    """``--trigger``, else :data:`DEFAULT_TRIGGER` for a stream that runs on, and 0 (batches back to back) for
    ``--available-now``, which should finish what is there without waiting between batches."""
    if args.trigger is None:
        return 0.0 if args.available_now else DEFAULT_TRIGGER
    if not args.trigger >= 0:  # NaN too
        raise CommandError(f"hcep stream: --trigger must be 0 (batches back to back) or more seconds: {args.trigger}")
    return float(args.trigger)


def run(args: argparse.Namespace) -> int:
    if args.input is not None and not os.path.isdir(args.input):
        raise CommandError(f"hcep stream: no such directory: {args.input}")
    trigger = trigger_seconds(args)
    if not _MEMORY.fullmatch(args.driver_memory or ""):
        raise CommandError(f"hcep stream: --driver-memory takes a size such as 512m or 4g: {args.driver_memory!r}")
    try:
        from app.spark.session import local_cores, spark_session
        from app.spark.stream.job import PlanMismatch, StreamOptions
        from app.spark.stream.job import run as run_job
        from app.spark.stream.plan import describe
        from app.spark.stream.sink import StreamSink, totals
    except ImportError as err:
        raise CommandError(f"hcep stream needs PySpark, pandas and pyarrow ({err})") from None
    from app.matching.packs import drops_line, load_pack, max_delta_of
    from app.spark.session import default_master
    from engine.events import max_width_ticks

    pack = load_pack(args.pack)
    args.max_delta = max_delta_of(args, pack)
    master = args.master or default_master()
    plan = _plan(args, local_cores(master))
    if args.explain:
        for line in describe(plan):
            print(f"hcep stream: {line}", file=sys.stderr)
    deliver = None
    sender = None
    if args.alertmanager:
        from app.alerts.alertmanager import AlertmanagerSender

        try:
            sender = AlertmanagerSender(args.alertmanager)
        except ValueError as err:  # the client's own check of the URL
            raise CommandError(f"hcep stream: --alertmanager: {err}") from None
        sender.start()
        deliver = sender.submit
    publish, producer = None, None
    if args.matches_topic:
        if not args.bootstrap:
            raise CommandError("hcep stream: --matches-topic needs --bootstrap (the broker to publish to)")
        publish, producer = _publisher(args.bootstrap, args.matches_topic, plan)
    sink = StreamSink(args.output, pack, plan.tick, deliver=deliver, publish=publish)
    opts = StreamOptions(
        output=args.output,
        checkpoint=args.checkpoint,
        input_dir=args.input,
        bootstrap=args.bootstrap,
        topics=[t.strip() for t in args.topics.split(",") if t.strip()],
        available_now=args.available_now,
        max_files=args.max_files_per_trigger,
        max_per_trigger=args.max_offsets_per_trigger,
        trigger_seconds=trigger,
        progress=args.progress,
        max_width=max_width_ticks(args.max_delta, plan.tick),
        partitions=args.partitions,
    )
    started = time.monotonic()
    try:
        with spark_session(
            master, app_name="hcep-stream", driver_memory=args.driver_memory, conf=session_conf(master)
        ) as spark:
            print(f"hcep stream: SparkSession up at {time.time():.3f} ({master})", file=sys.stderr, flush=True)
            try:
                run_job(spark, plan, sink, opts)
            except PlanMismatch as err:
                raise CommandError(f"hcep stream: {err}") from None
    finally:
        if sender is not None:
            # The last micro-batch's transitions were only just submitted: deliver them before the thread goes.
            left = sender.finish(DRAIN_SECONDS)
            if left:
                print(
                    f"hcep stream: {left} alert transition(s) not delivered to Alertmanager in "
                    f"{DRAIN_SECONDS:.0f} s ({sender.last_error or 'no answer'}); they are in {args.output}/alerts",
                    file=sys.stderr,
                )
        if producer is not None:
            producer.close()
    t = totals(args.output)
    seconds = time.monotonic() - started
    print(
        f"hcep stream: {t['fed']} events fed to groups, {t['records']} records, {t['alerts']} alert transitions, "
        f"{t['late']} late, {t['invalid']} invalid, {t['batches']} batches, {seconds:.1f} s",
        file=sys.stderr,
    )
    dropped = drops_line("stream", t.get("dropped") or {})
    if dropped:
        print(dropped, file=sys.stderr)
    return 0
