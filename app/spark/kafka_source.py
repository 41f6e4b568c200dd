"""Kafka into Spark without the spark-sql-kafka jar: a Spark 4 Python data source over kafka-python.

Why: the JVM Kafka source is a separate artifact that cannot be fetched here (and is often missing on clusters);
PySpark 4's data source API lets Python read Kafka directly, batch and streaming.

    from app.spark.kafka_source import register
    register(spark)
    stream = (spark.readStream.format("hcep-kafka").option("kafka.bootstrap.servers", "127.0.0.1:9092")
              .option("subscribe", "events").option("startingOffsets", "earliest").load())

Rows: ``key`` binary, ``value`` binary, ``topic``, ``partition``, ``offset``, ``timestamp`` (as Spark's own source).
Options (named as the JVM source's): ``kafka.bootstrap.servers`` (or ``bootstrap``), ``subscribe`` (topics, comma
separated), ``startingOffsets`` / ``endingOffsets`` (``earliest``, ``latest`` or JSON ``{"topic": {"0": 12}}``),
``maxOffsetsPerTrigger`` (streaming), ``maxRecordsPerPartition`` (splits a large range into several Spark tasks),
``pollTimeoutMs``, ``failOnDataLoss``.

Offsets are JSON ``{"topic": {"partition": next offset}}`` -- Spark checkpoints them, so a restarted query resumes
where it stopped; the stream reader's planning (:func:`cap_offsets`, :func:`plan_ranges`) is pure and tested
without a broker.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

NAME = "hcep-kafka"
SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """Records ``[start, end)`` of one topic partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


# ------------------------------------------------------------------------------------------------ pure planning


def parse_offsets(spec: str | None, default: str) -> str | Offsets:
    """``earliest`` / ``latest`` or the JSON offsets of an option."""
    spec = (spec or default).strip()
    if spec in ("earliest", "latest"):
        return spec
    try:
        data = json.loads(spec)
    except json.JSONDecodeError:
        example = '{"topic": {"0": 12}}'
        raise ValueError(f"offsets must be earliest, latest or JSON like {example}, got {spec!r}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"offsets JSON must map topics to {{partition: offset}}, got {spec!r}")
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in data.items()}


def resolve(spec: str | Offsets, earliest: Offsets, latest: Offsets) -> Offsets:
    """Concrete offsets for every known partition (explicit ones win; -2 = earliest, -1 = latest as in Kafka)."""
    if spec == "earliest":
        return _copy(earliest)
    if spec == "latest":
        return _copy(latest)
    assert isinstance(spec, dict)
    out = _copy(earliest)
    for topic, parts in spec.items():
        for p, off in parts.items():
            if off == -2:
                off = earliest.get(topic, {}).get(p, 0)
            elif off == -1:
                off = latest.get(topic, {}).get(p, 0)
            out.setdefault(topic, {})[p] = off
    return out


def _copy(offsets: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {t: dict(parts) for t, parts in offsets.items()}


def cap_offsets(start: Offsets, latest: Offsets, max_rows: int | None) -> Offsets:
    """The end of the next micro-batch: ``latest``, or at most ``max_rows`` records shared over the partitions in
    proportion to what each has waiting (floors, then the remainder one by one in partition order)."""
    end = _copy(latest)
    if max_rows is None:
        return end
    waiting = {
        (t, p): max(off - start.get(t, {}).get(p, 0), 0) for t, parts in latest.items() for p, off in parts.items()
    }
    total = sum(waiting.values())
    if total <= max_rows:
        return end
    share = {k: n * max_rows // total for k, n in waiting.items()}
    left = max_rows - sum(share.values())
    for k in sorted(waiting, key=lambda k: (k[0], int(k[1]))):
        if left <= 0:
            break
        if share[k] < waiting[k]:
            share[k] += 1
            left -= 1
    for (t, p), n in share.items():
        end[t][p] = start.get(t, {}).get(p, 0) + n
    return end


def plan_ranges(start: Offsets, end: Offsets, max_records: int | None = None) -> list[KafkaRange]:
    """One range per topic partition with records between ``start`` and ``end`` (a partition new since ``start``
    is read from 0, i.e. its earliest record), split into pieces of at most ``max_records``."""
    ranges: list[KafkaRange] = []
    for topic in sorted(end):
        for p in sorted(end[topic], key=int):
            lo, hi = start.get(topic, {}).get(p, 0), end[topic][p]
            step = max_records or max(hi - lo, 1)
            for a in range(lo, hi, step):
                ranges.append(KafkaRange(topic, int(p), a, min(a + step, hi)))
    return ranges


# ------------------------------------------------------------------------------------------------ the broker


#: The consumers' settings beside kafka-python's defaults, as ``hcep run``'s (:mod:`app.kafka_io`): a range in few
#: fetches (the defaults fetch 1 MB a partition and hand out 500 records a poll), and no CRC check of what the broker
#: checked when it was written: kafka-python checks in pure Python without the optional ``crc32c`` module (8 MB/s
#: here), which at 20,000 events/s cost the readers a core (issue 28, cut 21).  Topic metadata is refreshed every
#: 5 s (the driver's consumer lives as long as the query: new partitions show up).
CONSUMER_CONFIG: dict[str, Any] = {
    "enable_auto_commit": False,
    "group_id": None,
    "auto_offset_reset": "earliest",
    "check_crcs": False,
    "max_poll_records": 20000,
    "fetch_max_bytes": 64 * 1024 * 1024,
    "max_partition_fetch_bytes": 16 * 1024 * 1024,
    "fetch_max_wait_ms": 100,
    "metadata_max_age_ms": 5000,
}


def _consumer(bootstrap: str, **config: Any) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(bootstrap_servers=bootstrap.split(","), **{**CONSUMER_CONFIG, **config})


#: How readers get a consumer; tests replace it with a fake (planning runs on the driver, in the test's process).
consumer_factory: Callable[..., Any] = _consumer


def broker_offsets(consumer: Any, topics: Sequence[str]) -> tuple[Offsets, Offsets]:
    """(earliest, latest) offsets of every partition of ``topics``."""
    from kafka import TopicPartition

    parts: list[Any] = []
    for topic in topics:
        found = consumer.partitions_for_topic(topic)
        if not found:
            raise ValueError(f"Kafka topic {topic!r} does not exist (or has no partitions)")
        parts.extend(TopicPartition(topic, p) for p in sorted(found))
    earliest: Offsets = {}
    latest: Offsets = {}
    for tp, off in consumer.beginning_offsets(parts).items():
        earliest.setdefault(tp.topic, {})[str(tp.partition)] = int(off)
    for tp, off in consumer.end_offsets(parts).items():
        latest.setdefault(tp.topic, {})[str(tp.partition)] = int(off)
    return earliest, latest


def read_range(rng: KafkaRange, bootstrap: str, poll_ms: int = 1000, fail_on_data_loss: bool = True) -> Iterator[tuple]:
    """The records of one range, in offset order (records deleted by retention or compaction are skipped; a range
    that cannot be completed within a few polls raises, unless ``fail_on_data_loss`` is off)."""
    from kafka import TopicPartition

    if rng.end <= rng.start:
        return
    consumer = consumer_factory(bootstrap)
    try:
        tp = TopicPartition(rng.topic, rng.partition)
        consumer.assign([tp])
        consumer.seek(tp, rng.start)
        idle = 0
        while True:
            batch = consumer.poll(timeout_ms=poll_ms).get(tp, [])
            if not batch:
                if consumer.position(tp) >= rng.end:
                    return
                idle += 1
                if idle >= 10:
                    if fail_on_data_loss:
                        raise RuntimeError(
                            f"Kafka {rng.topic}/{rng.partition}: offsets {rng.start}..{rng.end} not "
                            f"readable (at {consumer.position(tp)})"
                        )
                    return
                continue
            idle = 0
            for rec in batch:
                if rec.offset >= rng.end:
                    return
                if rec.offset >= rng.start:
                    ts = datetime.fromtimestamp(rec.timestamp / 1000.0, UTC) if rec.timestamp is not None else None
                    yield (rec.key, rec.value, rec.topic, rec.partition, rec.offset, ts)
            if batch[-1].offset >= rng.end - 1:
                return
    finally:
        consumer.close()


# ------------------------------------------------------------------------------------------------ Spark API


class _Options:
    """The data source's options, validated once."""

    def __init__(self, options: Mapping[str, str]) -> None:
        opts = {k.lower(): v for k, v in options.items()}
        self.bootstrap = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap") or ""
        if not self.bootstrap:
            raise ValueError("hcep-kafka needs option kafka.bootstrap.servers (e.g. 127.0.0.1:9092)")
        self.topics = [t.strip() for t in opts.get("subscribe", "").split(",") if t.strip()]
        if not self.topics:
            raise ValueError("hcep-kafka needs option subscribe (one or more topics, comma separated)")
        self.starting = opts.get("startingoffsets")
        self.ending = opts.get("endingoffsets")
        self.max_per_trigger = _positive(opts.get("maxoffsetspertrigger"))
        self.max_records = _positive(opts.get("maxrecordsperpartition"))
        self.poll_ms = _positive(opts.get("polltimeoutms")) or 1000
        self.fail_on_data_loss = opts.get("failondataloss", "true").lower() != "false"

    def offsets(self) -> tuple[Offsets, Offsets]:
        """The broker's offsets through a consumer made for the call."""
        consumer = consumer_factory(self.bootstrap)
        try:
            return broker_offsets(consumer, self.topics)
        finally:
            consumer.close()


def _positive(text: str | None) -> int | None:
    if text is None:
        return None
    value = int(text)
    if value <= 0:
        raise ValueError(f"expected a positive integer, got {text!r}")
    return value


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("hcep-kafka")``: the records between startingOffsets (earliest) and endingOffsets
    (latest), fixed when the query is planned."""

    def __init__(self, options: _Options) -> None:
        self.options = options
        earliest, latest = options.offsets()
        self.start = resolve(parse_offsets(options.starting, "earliest"), earliest, latest)
        self.end = resolve(parse_offsets(options.ending, "latest"), earliest, latest)

    def partitions(self) -> Sequence[InputPartition]:
        return plan_ranges(self.start, self.end, self.options.max_records) or [KafkaRange("", 0, 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, KafkaRange)
        if not partition.topic:
            return iter(())
        return read_range(partition, self.options.bootstrap, self.options.poll_ms, self.options.fail_on_data_loss)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("hcep-kafka")``: micro-batches of new records, with admission control
    (``maxOffsetsPerTrigger``) and ``trigger(availableNow=True)`` (what is there when the query starts, in
    micro-batches)."""

    def __init__(self, options: _Options) -> None:
        self.options = options
        self.target: Offsets | None = None
        self.latest: Offsets | None = None  # what the last latestOffset call found on the broker
        self._consumer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_consumer": None}  # a socket is not sent to the readers

    def _offsets(self) -> tuple[Offsets, Offsets]:
        """The broker's (earliest, latest) offsets through one consumer kept for the query's life: one made a call
        cost two metadata round trips (0.1 s here) on the driver twice a micro-batch.  A failed call drops it."""
        if self._consumer is None:
            self._consumer = consumer_factory(self.options.bootstrap)
        try:
            return broker_offsets(self._consumer, self.options.topics)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._offsets()[1]

    def initialOffset(self) -> dict:
        earliest, latest = self._offsets()
        return resolve(parse_offsets(self.options.starting, "latest"), earliest, latest)

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        n = self.options.max_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        if self.target is not None:  # trigger(availableNow): what was there when the query started
            latest = self.target
        else:
            latest = self.latest = self._offsets()[1]
        return cap_offsets(start, latest, getattr(limit, "max_rows", None))

    def reportLatestOffset(self) -> dict | None:
        """The broker's end offsets as the last :meth:`latestOffset` saw them (Spark asks right after it)."""
        return self.latest if self.latest is not None else self._offsets()[1]

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return plan_ranges(start, end, self.options.max_records)

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, KafkaRange)
        return read_range(partition, self.options.bootstrap, self.options.poll_ms, self.options.fail_on_data_loss)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets (no consumer group is used)."""


class KafkaDataSource(DataSource):
    """The ``hcep-kafka`` data source (see the module doc)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaBatchReader(_Options(self.options))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(_Options(self.options))


def register(spark: Any) -> None:
    """Make ``format("hcep-kafka")`` available in this session."""
    spark.dataSource.register(KafkaDataSource)


# ------------------------------------------------------------------------------------------------ Kafka -> archive


def _archive_rows(kind: str, batch: str, tick: float) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """mapInPandas body: Kafka messages -> archive rows (invalid messages are dropped)."""

    def convert(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from app.spark.archive import EVENT_SCHEMA, MATCH_SCHEMA, event_row, is_match_record, match_row
        from engine.events import loads_json

        schema = EVENT_SCHEMA if kind == "events" else MATCH_SCHEMA
        for pdf in frames:
            rows = []
            for value, topic, partition, offset, seq in zip(
                pdf["value"], pdf["topic"], pdf["partition"], pdf["offset"], pdf["seq"], strict=True
            ):
                try:
                    obj = loads_json(value)
                    if kind == "events":
                        if isinstance(obj, dict) and "id" not in obj:
                            obj = {**obj, "id": f"{topic}-{partition}@{offset}"}
                        row = event_row(obj, int(seq), tick)
                    elif is_match_record(obj):
                        row = match_row(obj, int(seq))
                    else:
                        continue
                except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
                    continue  # OverflowError: a 400-digit "start"; RecursionError: JSON nested too deeply
                row["batch"] = batch
                rows.append(row)
            yield pd.DataFrame(rows, columns=schema.names)

    return convert


def archive_stream(
    spark: Any,
    bootstrap: str,
    topic: str,
    root: str,
    *,
    kind: str = "events",
    checkpoint: str | None = None,
    follow: bool = False,
    tick: float = 0.1,
    max_per_trigger: int = 100_000,
) -> Any:
    """Archive a topic of events (or match records) into ``root`` through Spark Structured Streaming: each
    micro-batch becomes new Parquet files in the archive layout, offsets are checkpointed (``checkpoint``, default
    ``root/_checkpoints/<kind>-<topic>``), so a rerun continues where the last one stopped.  Without ``follow`` it
    stops once what the topic held at the start is archived.  Returns the finished (or running) query."""
    from pathlib import Path

    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from app.spark.archive import EVENT_SCHEMA, MATCH_SCHEMA, new_batch_id, spark_ddl

    register(spark)
    schema = EVENT_SCHEMA if kind == "events" else MATCH_SCHEMA
    partitions = ["date", "type"] if kind == "events" else ["date", "query"]
    target = str(Path(root) / kind)
    checkpoint = checkpoint or str(Path(root) / "_checkpoints" / f"{kind}-{topic}")
    run = new_batch_id()

    def write(frame: Any, epoch: int) -> None:
        order = Window.orderBy("timestamp", "partition", "offset")
        rows = frame.select(
            F.col("value").cast("string").alias("value"),
            "topic",
            "partition",
            "offset",
            (F.row_number().over(order) - 1).alias("seq"),
        )
        archived = rows.mapInPandas(_archive_rows(kind, f"{run}-{epoch:09d}", tick), spark_ddl(schema))
        archived.write.mode("append").partitionBy(*partitions).parquet(target)

    stream = (
        spark.readStream.format(NAME)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_per_trigger))
        .load()
    )
    writer = stream.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
    writer = writer.trigger(processingTime="5 seconds") if follow else writer.trigger(availableNow=True)
    query = writer.start()
    if not follow:
        query.awaitTermination()
    return query
