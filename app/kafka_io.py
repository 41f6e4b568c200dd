"""The only module that imports kafka-python: a small typed layer the rest of the app uses.

Why a layer: the processing code (watermark, engine, checkpoints) stays testable without Kafka, the client library
can be swapped, and the client settings that matter on a 2-core machine (large fetches, no CRC re-checks, producer
batching) live in one place.  kafka-python 2.x is used: its rebalance callbacks run inside ``poll()`` on the caller's
thread, which the checkpoint-on-revoke logic of :mod:`app.stream` relies on.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, NoBrokersAvailable, TopicAlreadyExistsError
from kafka.partitioner.default import murmur2
from kafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

__all__ = [
    "KafkaError",
    "Record",
    "TP",
    "Producer",
    "GroupConsumer",
    "AssignedConsumer",
    "ensure_topics",
    "wait_for_broker",
    "end_offsets",
    "read_all",
]


@dataclass(frozen=True, order=True)
class TP:
    """A topic partition, hashable and ordered (our own type: callers never see kafka-python's)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


class Record(Protocol):
    """What a consumed message offers (kafka-python's ConsumerRecord satisfies it without copying)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def _tp(tp: TP) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)


def _ours(tp: TopicPartition) -> TP:
    return TP(tp.topic, tp.partition)


_CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
    "max_poll_records": 20000,
    "fetch_max_bytes": 64 * 1024 * 1024,
    "max_partition_fetch_bytes": 16 * 1024 * 1024,
    "fetch_min_bytes": 1,
    "fetch_max_wait_ms": 100,
    "check_crcs": False,  # the broker checked them; re-checking in Python costs ~15% of consumer time
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 2000,
    "max_poll_interval_ms": 300000,
    # Reconnect within 2 s of a broker coming back (the default backs off up to 30 s), and see partitions that a
    # restarted broker reports late within 5 s (an assignment made without them is redone then).
    "reconnect_backoff_max_ms": 2000,
    "metadata_max_age_ms": 5000,
}


# -------------------------------------------------------------------------------------------------------- producer
class Producer:
    """A batching producer: ``send`` is asynchronous, ``flush`` waits for every send to be acknowledged."""

    def __init__(
        self,
        bootstrap: str,
        *,
        linger_ms: int = 20,
        batch_size: int = 512 * 1024,
        acks: int | str = "all",
        client_id: str = "hcep",
    ) -> None:
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap.split(","),
            client_id=client_id,
            linger_ms=linger_ms,
            batch_size=batch_size,
            acks=acks,
            retries=2147483647,
            max_in_flight_requests_per_connection=1,  # retries keep the per-partition order
            max_request_size=16 * 1024 * 1024,
            reconnect_backoff_max_ms=2000,
        )
        self.errors: list[BaseException] = []

    def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int | None = None) -> None:
        future = self._producer.send(topic, value=value, key=key, partition=partition)
        future.add_errback(self.errors.append)

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids (creating it on brokers that auto-create topics)."""
        return sorted(self._producer.partitions_for(topic))

    @staticmethod
    def partition_for(key: bytes, partitions: list[int]) -> int:
        """The partition the default partitioner gives ``key`` (murmur2, as the Java client)."""
        return partitions[(int(murmur2(key)) & 0x7FFFFFFF) % len(partitions)]

    def flush(self, timeout: float | None = None) -> None:
        """Wait for all sends; raise the first delivery error (so callers never lose events silently)."""
        self._producer.flush(timeout=timeout)
        if self.errors:
            err = self.errors[0]
            self.errors.clear()
            raise err

    def close(self, timeout: float = 10.0) -> None:
        self._producer.close(timeout=timeout)


# -------------------------------------------------------------------------------------------------------- consumers
class _Consumer:
    def __init__(self, consumer: KafkaConsumer) -> None:
        self._c = consumer

    def poll(self, timeout: float, max_records: int | None = None) -> list[Record]:
        """Records of all partitions, each partition's in offset order."""
        batches = self._c.poll(timeout_ms=int(timeout * 1000), max_records=max_records)
        if not batches:
            return []
        if len(batches) == 1:
            return next(iter(batches.values()))
        out: list[Record] = []
        for recs in batches.values():
            out.extend(recs)
        return out

    def assignment(self) -> set[TP]:
        return {_ours(tp) for tp in self._c.assignment()}

    def seek(self, tp: TP, offset: int) -> None:
        self._c.seek(_tp(tp), offset)

    def seek_to_beginning(self, tps: Iterable[TP]) -> None:
        self._c.seek_to_beginning(*[_tp(tp) for tp in tps])

    def position(self, tp: TP) -> int:
        return int(self._c.position(_tp(tp)))

    def connected(self, tp: TP) -> bool:
        """Is the connection to the partition's leader up?  (While it is not, silence proves nothing.)"""
        return leader_connected(self._c, _tp(tp))

    def highwater(self, tp: TP) -> int | None:
        """The end offset the last fetch response reported (no request)."""
        hw = self._c.highwater(_tp(tp))
        return None if hw is None else int(hw)

    def beginning_offsets(self, tps: Iterable[TP]) -> dict[TP, int]:
        got = self._c.beginning_offsets([_tp(tp) for tp in tps])
        return {_ours(tp): off for tp, off in got.items()}

    def end_offsets(self, tps: Iterable[TP]) -> dict[TP, int]:
        got = self._c.end_offsets([_tp(tp) for tp in tps])
        return {_ours(tp): off for tp, off in got.items()}

    def close(self) -> None:
        try:
            self._c.close(autocommit=False)
        except Exception:  # noqa: BLE001 - closing a consumer whose broker went away must not mask the real error
            log.debug("consumer close failed", exc_info=True)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python has no type information
    def __init__(self, on_revoke: Callable[[set[TP]], None], on_assign: Callable[[set[TP]], None]) -> None:
        self._on_revoke = on_revoke
        self._on_assign = on_assign

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._on_revoke({_ours(tp) for tp in revoked})

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._on_assign({_ours(tp) for tp in assigned})


class GroupConsumer(_Consumer):
    """A member of a consumer group: the group shares the partitions of ``topics``.

    ``on_revoke`` / ``on_assign`` run inside :meth:`poll`, on the caller's thread, around each rebalance.
    Membership is dynamic: static membership (KIP-345) would spare the rebalance after a restart, but Kafka 2.3.0's
    implementation can leave a restarted leader with a stale, empty assignment after a broker restart (fixed in
    2.3.1).  A killed member is dropped after ``session_timeout_ms``, which the service keeps short.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Iterable[str],
        group: str,
        *,
        on_revoke: Callable[[set[TP]], None],
        on_assign: Callable[[set[TP]], None],
        client_id: str = "hcep",
        **overrides: Any,
    ) -> None:
        config = dict(_CONSUMER_DEFAULTS, **overrides)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group, client_id=client_id, **config)
        self._topics = list(topics)
        self._listener = _Listener(on_revoke, on_assign)
        consumer.subscribe(topics=self._topics, listener=self._listener)
        super().__init__(consumer)

    def partitions(self, topic: str) -> set[int]:
        return set(self._c.partitions_for_topic(topic) or ())

    def poll(self, timeout: float, max_records: int | None = None) -> list[Record]:
        """As :meth:`_Consumer.poll`; a join that kafka-python completes for a generation it has meanwhile reset
        (a rejoin racing a join in flight, seen after a broker restart: ``AssertionError: Coordinator selected invalid
        assignment protocol: None`` out of ``poll``, which ended ``hcep run``) is logged and joined again."""
        try:
            return super().poll(timeout, max_records)
        except AssertionError as err:
            if "invalid assignment protocol" not in str(err):
                raise
            log.warning("group join completed without a generation (%s): joining the group again", err)
            self.rejoin()
            return []

    def rejoin(self) -> None:
        """A new round of assignment at the next poll: leave the group and subscribe again (public calls only; the
        listener sees the usual revoke-then-assign around the rejoin)."""
        self._c.unsubscribe()
        self._c.subscribe(topics=self._topics, listener=self._listener)

    def commit(self, offsets: Mapping[TP, tuple[int, str]]) -> None:
        """Commit ``{tp: (next offset, metadata)}`` to the group (monitoring and hand-over; errors are logged)."""
        if not offsets:
            return
        try:
            self._c.commit({_tp(tp): OffsetAndMetadata(off, meta, -1) for tp, (off, meta) in offsets.items()})
        except KafkaError as err:  # a rebalance in progress, the broker restarting: the next checkpoint commits
            log.info("offset commit to Kafka failed (%s); the local checkpoint stands", err)

    def committed(self, tp: TP) -> tuple[int, str] | None:
        got = self._c.committed(_tp(tp), metadata=True)
        if got is None:
            return None
        return got.offset, got.metadata or ""


class AssignedConsumer(_Consumer):
    """Reads every partition of ``topics`` itself, outside any group (for cluster-wide events every process needs)."""

    def __init__(
        self, bootstrap: str, topics: Iterable[str], *, client_id: str = "hcep", wait: float = 30.0, **overrides: Any
    ) -> None:
        config = dict(_CONSUMER_DEFAULTS, **overrides)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None, client_id=client_id, **config)
        tps: list[TopicPartition] = []
        deadline = time.monotonic() + wait
        for topic in topics:
            parts = consumer.partitions_for_topic(topic)
            while not parts and time.monotonic() < deadline:
                time.sleep(0.2)
                parts = consumer.partitions_for_topic(topic)
            if not parts:
                consumer.close()
                raise KafkaError(f"topic {topic} has no partitions (does it exist?)")
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        consumer.assign(tps)
        super().__init__(consumer)


# -------------------------------------------------------------------------------------------------------- private
def leader_connected(consumer: KafkaConsumer, tp: TopicPartition) -> bool:
    """Is ``consumer``'s connection to the leader of ``tp`` up?  The one use of kafka-python's private API.

    Why private: nothing public tells it.  ``bootstrap_connected()`` speaks of the bootstrap connection only;
    ``metrics()`` has ``connection-count``, which counts failed connections too, and per-node request rates that
    take a sample window (30 s) to fall; ``end_offsets()`` answers it, but blocks up to ``request_timeout_ms`` (5
    minutes) while the broker is away.  The service needs the answer at once, every loop turn it thinks itself idle
    (:meth:`app.stream.source.KafkaSource.caught_up`).  ``tests/app/test_kafka_io.py`` fails if kafka-python
    changes what this reads.
    """
    client = consumer._client
    leader = client.cluster.leader_for_partition(tp)
    return leader is not None and leader >= 0 and bool(client.connected(leader))


# -------------------------------------------------------------------------------------------------------- admin
def wait_for_broker(bootstrap: str, timeout: float = 30.0) -> None:
    """Block until the broker answers a metadata request (raise NoBrokersAvailable after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=5000)
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except (NoBrokersAvailable, KafkaError, OSError):
            if time.monotonic() > deadline:
                raise NoBrokersAvailable(f"no Kafka broker answers at {bootstrap} after {timeout:.0f} s") from None
            time.sleep(0.3)


def ensure_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    """Create the topics that are missing, ``{name: partitions}`` (replication factor 1: a one-broker setup; a
    production cluster creates its topics itself and this finds them there)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(name, parts, 1) for name, parts in topics.items() if name not in existing]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(new)
        # Wait until the metadata shows them (the create call returns before every broker knows).
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            described = {t["topic"]: t for t in admin.describe_topics(list(topics))}
            if all(len(described.get(n, {}).get("partitions") or []) > 0 for n in topics):
                return
            time.sleep(0.1)
    finally:
        admin.close()


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: end offset}`` of a topic."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        got = consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return {tp.partition: off for tp, off in got.items()}
    finally:
        consumer.close()


def read_all(bootstrap: str, topic: str, timeout: float = 10.0) -> list[Record]:
    """Every record currently in ``topic`` (all partitions, from the beginning): for tools and tests."""
    ends = end_offsets(bootstrap, topic)
    consumer = AssignedConsumer(bootstrap, [topic])
    try:
        consumer.seek_to_beginning(TP(topic, p) for p in ends)
        out: list[Record] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out.extend(consumer.poll(0.2))
            if all(consumer.position(TP(topic, p)) >= end for p, end in ends.items()):
                break
        return out
    finally:
        consumer.close()
