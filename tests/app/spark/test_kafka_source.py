"""The hcep-kafka Spark data source: offset planning against a fake consumer (no broker), then a real broker (the
pipeline tests' fixture, deploy/kafka/start.sh) read in batch, in micro-batches, and archived then matched."""

from __future__ import annotations

import json
from collections import namedtuple
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
kafka = pytest.importorskip("kafka")

from pyspark.sql.streaming.datasource import ReadAllAvailable  # noqa: E402

from app.spark import kafka_source as ks  # noqa: E402
from tests.app.spark.conftest import PACK, SAMPLE  # noqa: E402
from tests.app.spark.helpers import assert_same_records, run_cli  # noqa: E402

Record = namedtuple("Record", "topic partition offset key value timestamp")


class FakeConsumer:
    """kafka-python's consumer surface used by the source, over in-memory partitions (offsets may have gaps, as
    after compaction)."""

    def __init__(self, logs: dict[tuple[str, int], list[int]], batch: int = 3) -> None:
        self.logs = logs
        self.batch = batch
        self.pos: dict = {}
        self.closed = False

    def partitions_for_topic(self, topic):
        return {p for t, p in self.logs if t == topic} or None

    def beginning_offsets(self, tps):
        return {tp: (self.logs[(tp.topic, tp.partition)] or [0])[0] for tp in tps}

    def end_offsets(self, tps):
        return {tp: (self.logs[(tp.topic, tp.partition)] or [-1])[-1] + 1 for tp in tps}

    def assign(self, tps):
        self.assigned = tps

    def seek(self, tp, offset):
        self.pos[tp] = offset

    def position(self, tp):
        return self.pos[tp]

    def poll(self, timeout_ms=0):
        out = {}
        for tp in self.assigned:
            offs = [o for o in self.logs[(tp.topic, tp.partition)] if o >= self.pos[tp]][: self.batch]
            if offs:
                out[tp] = [
                    Record(tp.topic, tp.partition, o, None, f"v{o}".encode(), 1_700_000_000_000 + o) for o in offs
                ]
                self.pos[tp] = offs[-1] + 1
        return out

    def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeConsumer:
    consumer = FakeConsumer({("ev", 0): list(range(0, 10)), ("ev", 1): [4, 5, 7, 8, 20], ("other", 0): []})
    monkeypatch.setattr(ks, "consumer_factory", lambda bootstrap, **_: consumer)
    return consumer


def test_offsets_options() -> None:
    assert ks.parse_offsets(None, "latest") == "latest"
    assert ks.parse_offsets('{"ev": {"0": 3, "1": -2}}', "earliest") == {"ev": {"0": 3, "1": -2}}
    with pytest.raises(ValueError, match="earliest, latest or JSON"):
        ks.parse_offsets("yesterday", "latest")
    earliest, latest = {"ev": {"0": 0, "1": 4}}, {"ev": {"0": 10, "1": 21}}
    assert ks.resolve({"ev": {"0": 3, "1": -2}}, earliest, latest) == {"ev": {"0": 3, "1": 4}}
    assert ks.resolve({"ev": {"0": -1}}, earliest, latest) == {"ev": {"0": 10, "1": 4}}  # unnamed: earliest


def test_cap_and_plan() -> None:
    start, latest = {"ev": {"0": 0, "1": 4}}, {"ev": {"0": 10, "1": 21}, "new": {"0": 3}}
    assert ks.cap_offsets(start, latest, None) == latest
    capped = ks.cap_offsets(start, latest, 10)  # 10, 17 and 3 waiting: shares 3, 5, 1, then +1 in partition order
    assert capped == {"ev": {"0": 4, "1": 9}, "new": {"0": 1}}
    assert sum(capped[t][p] - start.get(t, {}).get(p, 0) for t in capped for p in capped[t]) == 10
    assert ks.cap_offsets(start, latest, 1000) == latest
    ranges = ks.plan_ranges(start, capped, max_records=3)
    assert [(r.topic, r.partition, r.start, r.end) for r in ranges] == [
        ("ev", 0, 0, 3),
        ("ev", 0, 3, 4),
        ("ev", 1, 4, 7),
        ("ev", 1, 7, 9),
        ("new", 0, 0, 1),
    ]
    assert ks.plan_ranges(latest, latest) == []


def test_readers_against_a_fake_consumer(fake: FakeConsumer) -> None:
    batch = ks.KafkaBatchReader(ks._Options({"kafka.bootstrap.servers": "x:1", "subscribe": "ev"}))
    parts = batch.partitions()
    rows = [row for p in parts for row in batch.read(p)]
    assert [(r[2], r[3], r[4]) for r in rows] == [("ev", 0, o) for o in range(10)] + [
        ("ev", 1, o) for o in (4, 5, 7, 8, 20)
    ]
    assert rows[0][1] == b"v0" and rows[0][5].timestamp() == pytest.approx(1_700_000_000.0)
    assert fake.closed

    stream = ks.KafkaStreamReader(
        ks._Options({"bootstrap": "x:1", "subscribe": "ev", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "6"})
    )
    start = stream.initialOffset()
    assert start == {"ev": {"0": 0, "1": 4}}
    limit = stream.getDefaultReadLimit()
    assert limit.max_rows == 6
    end = stream.latestOffset(start, limit)
    assert end == {"ev": {"0": 3, "1": 7}}  # 10 and 17 waiting: shares 2 + 3, the remainder to partition 0
    first = [row[4] for p in stream.partitions(start, end) for row in stream.read(p)]
    assert first == [0, 1, 2, 4, 5]
    second = stream.latestOffset(end, limit)
    assert second == {"ev": {"0": 5, "1": 11}}  # 7 and 14 waiting: 2 + 4
    assert [row[4] for p in stream.partitions(end, second) for row in stream.read(p)] == [3, 4, 7, 8]
    stream.prepareForTriggerAvailableNow()
    fake.logs[("ev", 0)].append(10)  # arrives after the availableNow target: not read
    assert stream.latestOffset(end, ReadAllAvailable()) == {"ev": {"0": 10, "1": 21}}


def test_the_driver_keeps_one_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream reader asks the broker's offsets through one consumer for the query's life (one made a call cost
    two metadata round trips on the driver twice a batch), answers ``reportLatestOffset`` from the last
    ``latestOffset``, sends no socket to the readers, and drops a consumer whose call failed."""
    import pickle

    made: list[FakeConsumer] = []

    def factory(bootstrap: str, **_: object) -> FakeConsumer:
        made.append(FakeConsumer({("ev", 0): list(range(5))}))
        return made[-1]

    monkeypatch.setattr(ks, "consumer_factory", factory)
    stream = ks.KafkaStreamReader(ks._Options({"bootstrap": "x:1", "subscribe": "ev", "startingOffsets": "earliest"}))
    start = stream.initialOffset()
    for _ in range(3):
        end = stream.latestOffset(start, ReadAllAvailable())
        assert end == stream.reportLatestOffset() == {"ev": {"0": 5}}
    assert len(made) == 1 and not made[0].closed
    assert pickle.loads(pickle.dumps(stream))._consumer is None

    def gone(tps: object) -> dict:
        raise OSError("broker gone")

    made[0].end_offsets = gone  # type: ignore[method-assign]
    with pytest.raises(OSError, match="broker gone"):
        stream.latestOffset(start, ReadAllAvailable())
    assert made[0].closed and stream._consumer is None
    assert stream.latestOffset(start, ReadAllAvailable()) == {"ev": {"0": 5}} and len(made) == 2
    stream.stop()
    assert made[1].closed


def test_consumers_skip_the_crc_check_and_fetch_ranges_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``hcep run``'s consumer: kafka-python re-checks each batch's CRC in pure Python (8 MB/s) unless told not to,
    and fetches 1 MB a partition, 500 records a poll, by default."""
    seen: dict = {}

    class Recorder:
        def __init__(self, **config: object) -> None:
            seen.update(config)

    monkeypatch.setattr(kafka, "KafkaConsumer", Recorder)
    ks._consumer("a:1,b:2", client_id="x")
    assert seen["bootstrap_servers"] == ["a:1", "b:2"] and seen["client_id"] == "x"
    assert seen["check_crcs"] is False and seen["group_id"] is None and seen["enable_auto_commit"] is False
    assert seen["max_partition_fetch_bytes"] >= 8 << 20 and seen["max_poll_records"] >= 10_000


def test_missing_options_are_named() -> None:
    with pytest.raises(ValueError, match="kafka.bootstrap.servers"):
        ks._Options({"subscribe": "ev"})
    with pytest.raises(ValueError, match="subscribe"):
        ks._Options({"bootstrap": "x:1"})


# ------------------------------------------------------------------------------------------------ a real broker


def _produce(bootstrap: str, topic: str, partitions: int, values: list[bytes]) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, value in enumerate(values):
        producer.send(topic, value=value, key=str(i).encode(), partition=i % partitions)
    producer.flush()
    producer.close()


@pytest.mark.spark
def test_a_real_topic_in_batch_and_micro_batches(spark, kafka_broker) -> None:
    lines = SAMPLE.read_text().splitlines()
    _produce(kafka_broker.bootstrap, "hcep-spark-src", 2, [line.encode() for line in lines])
    ks.register(spark)
    reader = spark.read.format("hcep-kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
    frame = reader.option("subscribe", "hcep-spark-src").option("maxRecordsPerPartition", "20").load()
    rows = frame.selectExpr("CAST(value AS STRING) v", "partition", "offset").collect()
    assert sorted(r["v"] for r in rows) == sorted(lines)
    assert {(r["partition"], r["offset"]) for r in rows} == {(p, o) for p in (0, 1) for o in range(47)}

    query = (
        spark.readStream.format("hcep-kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
        .option("subscribe", "hcep-spark-src")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .selectExpr("CAST(value AS STRING) v")
        .writeStream.format("memory")
        .queryName("hcep_kafka_test")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [40, 40, 14]
    assert spark.sql("SELECT count(DISTINCT v) AS n FROM hcep_kafka_test").first()["n"] == len(lines)


@pytest.mark.spark
def test_live_ingestion_archive_then_batch(spark, kafka_broker, tmp_path: Path, capsys) -> None:
    """Kafka -> hcep archive --kafka (Spark, checkpointed) -> hcep batch over the archive == hcep match."""
    events = [dict(json.loads(line), id=f"s{i}") for i, line in enumerate(SAMPLE.read_text().splitlines())]
    with_ids = tmp_path / "with_ids.jsonl"
    with_ids.write_text("".join(json.dumps(e) + "\n" for e in events))
    _produce(kafka_broker.bootstrap, "hcep-spark-archive", 1, [json.dumps(e).encode() for e in events])
    archive = tmp_path / "archive"
    argv = [
        "archive",
        "--kafka",
        kafka_broker.bootstrap,
        "--topic",
        "hcep-spark-archive",
        "--to",
        str(archive),
        "--no-progress",
    ]
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    code, _, err = run_cli(argv, capsys)  # a rerun continues after the checkpoint: nothing twice
    assert code == 0, err
    code, batch, err = run_cli(["batch", "--pack", str(PACK), str(archive), "--no-progress"], capsys)
    assert code == 0, err
    code, streaming, err = run_cli(["match", str(with_ids), "--pack", str(PACK)], capsys)
    assert_same_records(batch, streaming)
