"""``hcep stream``'s query: built from the parts, started, reported and stopped.

Why ``processAllAvailable`` for ``--available-now``: the end-of-input marker must come after everything that was
there, so the data is processed first, then the marker dropped into the control directory and processed too (it
releases and flushes every group, as the end of ``hcep match``'s input does); the query then stops.  Without it the
query runs until SIGTERM or Ctrl-C, which stop it between micro-batches (:func:`stop_between_batches`).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.spark.stream.keys import checkpoint_keys, key_column
from app.spark.stream.plan import StreamPlan, plan_state
from app.spark.stream.sink import StreamSink
from app.spark.stream.source import file_lines, kafka_lines, routed_events, write_end_marker
from app.spark.stream.state import OUT_SCHEMA, BucketProcessor

#: The state store that holds large state off the JVM heap (and that transformWithState requires).
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}

#: The JVMs' own options (set before they start: :func:`session_conf`).  C1 only: the JIT's second tier (C2)
#: compiled for 20 of the JVM's 45 CPU seconds in a one-minute run (issue 28, cut 3), for code that mostly waits on
#: the Python workers.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def session_conf() -> dict[str, str]:
    """What ``hcep stream`` adds to the SparkSession's settings for its JVMs (the driver, and executors on a
    cluster): as Spark's *default* Java options, which a user's ``extraJavaOptions`` (spark-defaults.conf,
    ``--conf``) follow and so override."""
    return {f"spark.{role}.defaultJavaOptions": JVM_OPTIONS for role in ("driver", "executor")}


@dataclass
class StreamOptions:
    output: str
    checkpoint: str
    input_dir: str | None = None
    bootstrap: str | None = None
    topics: list[str] = field(default_factory=lambda: ["hcep.events.hadoop", "hcep.events.ganglia"])
    available_now: bool = False
    max_files: int | None = None
    max_per_trigger: int = 0
    trigger_seconds: float = 0.0
    progress: bool = True
    max_width: int = 2**62
    partitions: int | None = None  # spark.sql.shuffle.partitions for a new checkpoint (a restart keeps its own)


class PlanMismatch(ValueError):
    """A checkpoint written by another plan (buckets, queries): its state would be misread."""


def check_plan(checkpoint: str, plan: StreamPlan) -> None:
    """Record the plan beside the checkpoint the first time; refuse another one later."""
    import json

    path = Path(checkpoint) / "hcep-plan.json"
    mine = json.loads(json.dumps(plan_state(plan), default=str))
    if path.exists():
        theirs = json.loads(path.read_text())
        if theirs != mine:
            raise PlanMismatch(
                f"checkpoint {checkpoint} was written by another plan (queries or --buckets differ): "
                "use a new --checkpoint (and --output) for a changed pack"
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(mine, indent=1))


def start(spark: Any, plan: StreamPlan, sink: StreamSink, opts: StreamOptions) -> Any:
    """Start the streaming query (see the module doc)."""
    for key, value in STATE_CONF.items():
        spark.conf.set(key, value)
    if opts.partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(opts.partitions))
    if opts.input_dir is not None:
        lines = file_lines(spark, opts.input_dir, opts.max_files)
    else:
        assert opts.bootstrap is not None
        lines = kafka_lines(spark, opts.bootstrap, opts.topics, max_per_trigger=opts.max_per_trigger)
    events = routed_events(spark, lines, opts.checkpoint, plan, opts.max_width)
    # The state keys that spread the buckets evenly over the operator's tasks (see .keys), fixed by the checkpoint.
    partitions = opts.partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
    keys = checkpoint_keys(opts.checkpoint, plan.buckets, partitions)
    events = events.withColumn("bucket", key_column(events["bucket"], keys))
    matched = events.groupBy("bucket").transformWithStateInPandas(
        statefulProcessor=BucketProcessor(plan, keys),
        outputStructType=OUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime",
    )
    writer = (
        matched.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(Path(opts.checkpoint) / "spark"))
        .queryName(f"hcep-stream-{uuid.uuid4().hex[:8]}")
    )
    if opts.trigger_seconds > 0:
        writer = writer.trigger(processingTime=f"{opts.trigger_seconds} seconds")
    return writer.start()


def progress_line(p: dict[str, Any]) -> str:
    """One concise line of a ``StreamingQueryProgress``: batch, input rows, rows/s, state rows, watermark."""
    state = sum(op.get("numRowsTotal", 0) for op in p.get("stateOperators", []))
    mem = sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))
    wm = (p.get("eventTime") or {}).get("watermark", "-")
    rate = p.get("processedRowsPerSecond") or 0.0
    ms = (p.get("durationMs") or {}).get("triggerExecution", 0)
    return (
        f"batch {p.get('batchId')}: {p.get('numInputRows', 0)} input rows, {rate:.0f} rows/s, {ms} ms, "
        f"state {state} rows ({mem / 1e6:.1f} MB), watermark {wm}"
    )


def progress_key(p: dict[str, Any]) -> tuple[int, bool]:
    """Where a progress stands in the query's order: its batch id, and whether a batch ran (``addBatch`` timed).  A
    trigger that found nothing reports an idle progress under the id of the batch still to come, so a batch id alone
    does not name one progress: keyed by it, batch 0's progress was lost behind an idle first trigger's."""
    return int(p.get("batchId", -1)), "addBatch" in (p.get("durationMs") or {})


class Reporter:
    """Prints each new batch's progress once (stderr), with the sink's running totals (Spark counts input rows:
    whole files or messages, not events); an idle trigger's once until a batch runs."""

    def __init__(self, enabled: bool, sink: StreamSink | None = None) -> None:
        self.enabled = enabled
        self.sink = sink
        self.seen: tuple[int, bool] = (-1, True)

    def __call__(self, query: Any) -> None:
        for p in query.recentProgress:
            data = json.loads(p.json) if hasattr(p, "json") else dict(p)
            key = progress_key(data)
            if key > self.seen:
                self.seen = key
                if self.sink is not None:  # every batch's progress, for tools and the benchmark
                    self.sink.progress_log.parent.mkdir(parents=True, exist_ok=True)
                    with self.sink.progress_log.open("a") as f:
                        f.write(json.dumps(data) + "\n")
                extra = ""
                if self.sink is not None:
                    t = self.sink.totals
                    extra = f"; so far {t.fed} fed to groups, {t.records} records, {t.alerts} alerts, {t.late} late"
                if self.enabled:
                    print(f"hcep stream: {progress_line(data)}{extra}", file=sys.stderr, flush=True)


class StopSignals:
    """SIGTERM and Ctrl-C while the query runs: the first asks for a stop after the batch in progress, a second
    for a stop at once.  (PySpark's own Ctrl-C handler cancels every job, which is the abrupt stop.)"""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.now = threading.Event()

    def _handle(self, signum: int, frame: Any) -> None:
        (self.now if self.requested.is_set() else self.requested).set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach the main thread only (in-process callers stop the query themselves)
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _until_signal(call: Callable[[], Any], signals: StopSignals) -> bool:
    """Run a blocking query call in a thread, so that the main thread keeps taking signals: True when it returned,
    False when a stop was asked for first (its error, if any, is raised)."""
    box: dict[str, BaseException] = {}

    def target() -> None:
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            box["error"] = err

    thread = threading.Thread(target=target, name="hcep-stream-wait", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.25)
        if signals.requested.is_set():
            return False
    if "error" in box:
        raise box["error"]
    return True


def stop_between_batches(query: Any, sink: StreamSink, signals: StopSignals) -> None:
    """Stop the query with no batch in the sink (:meth:`StreamSink.close_gate` says why), unless a second signal
    asks for it at once; the batch then in progress runs again at the next start."""
    waited = False
    while not sink.close_gate(0.25):
        if not query.isActive:
            break
        if signals.now.is_set():
            print("hcep stream: stopping now; the batch in progress runs again at the next start", file=sys.stderr)
            break
        if not waited:
            print("hcep stream: stopping after the batch in progress (signal again to stop now)", file=sys.stderr)
        waited = True
    query.stop()


def run(spark: Any, plan: StreamPlan, sink: StreamSink, opts: StreamOptions) -> None:
    """Run the query to its end: ``--available-now`` (data, then the end marker) or a stop signal (see
    :class:`StopSignals`)."""
    check_plan(opts.checkpoint, plan)
    query = start(spark, plan, sink, opts)
    report = Reporter(opts.progress, sink)
    signals = StopSignals()
    with signals.installed():
        try:
            if opts.available_now:
                if not _until_signal(query.processAllAvailable, signals):
                    return
                report(query)
                write_end_marker(opts.checkpoint, f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:6]}")
                before = report.seen
                if not _until_signal(query.processAllAvailable, signals):
                    return
                for _ in range(20):  # the last batch's progress is posted just after its commit
                    report(query)
                    if report.seen > before:
                        break
                    time.sleep(0.25)
                return
            while query.isActive and not signals.requested.is_set():
                query.awaitTermination(1.0)
                report(query)
            if not signals.requested.is_set() and query.exception() is not None:
                raise RuntimeError(str(query.exception()))
        finally:
            stop_between_batches(query, sink, signals)
            report(query)
