"""Publish collector events to Kafka: one topic per source, keyed so that partitioning follows the queries' keys.

The key is the event's ``job_id`` (Hadoop: every event of a job, hence of its tasks, lands in one partition, so one
``hcep run`` process sees whole jobs) or else its ``host`` (Ganglia, whose topic every process reads in full anyway).
Within a partition events keep the collector's order, which the service's per-partition watermark relies on.

A message holds one event (semantics section 1).  ``pack > 1`` puts up to that many events of one partition into one
message as JSON lines, for sources whose rate the Python Kafka client cannot carry one message at a time; the service
reads both.

:class:`Publisher` is the long-lived form the collectors use (``--kafka``): ``send`` as events come, ``flush`` at
the end of each batch (it sends the partly filled packs and waits until the broker acknowledged everything), and only
then may the caller commit its own read position.  That order makes delivery at-least-once: a crash between the
flush and the commit re-sends that batch after the restart, never loses it.  :func:`publish` is the one-shot form.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

TOPIC_PREFIX = "hcep.events."
DEFAULT_PARTITIONS = 4  # as ``hcep run`` creates its topics (app.stream.config.ServiceConfig.topic_partitions)


class PublishError(Exception):
    """The broker cannot be reached, or did not acknowledge a message (the message says which)."""


def topic_for(source: str, prefix: str = TOPIC_PREFIX) -> str:
    """``hadoop`` -> ``hcep.events.hadoop``."""
    return f"{prefix}{source}"


#: The attributes tried, in order, for the partitioning key (Spark's collector passes ``("app_id",)``).
DEFAULT_KEYS = ("job_id", "host")


def event_key(event: dict[str, Any], keys: tuple[str, ...] = DEFAULT_KEYS) -> bytes | None:
    """The partitioning key: job, else host, else none (round-robin); or the first of ``keys`` the event has."""
    for attr in keys:
        value = event.get(attr)
        if value is not None:
            return str(value).encode()
    return None


def _dumps(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"))


class Publisher:
    """A long-lived, batching publisher of one source's events to one topic.

    ``pack`` events of one partition share a message (JSON lines); ``linger_ms`` lets the producer batch messages.
    With ``ensure`` the constructor waits up to ``timeout`` seconds for the broker to answer (else
    :class:`PublishError`) and creates the topic with ``partitions`` partitions when it is missing; without, the topic
    must exist or the broker must auto-create it.
    """

    def __init__(
        self,
        bootstrap: str,
        source: str,
        *,
        topic: str | None = None,
        pack: int = 1,
        linger_ms: int = 20,
        partitions: int = DEFAULT_PARTITIONS,
        timeout: float = 15.0,
        ensure: bool = True,
        keys: tuple[str, ...] = DEFAULT_KEYS,
    ) -> None:
        from app import kafka_io

        self.bootstrap = bootstrap
        self.keys = keys
        self.topic = topic or topic_for(source)
        self.pack = max(1, int(pack))
        self.sent = 0  # events handed to send()
        self._pending: dict[int, list[str]] = {}
        self._producer: Any = None
        try:
            if ensure:
                kafka_io.wait_for_broker(bootstrap, timeout=timeout)
                kafka_io.ensure_topics(bootstrap, {self.topic: partitions})
            self._producer = kafka_io.Producer(bootstrap, linger_ms=linger_ms, client_id=f"hcep-publish-{source}")
            self._parts = self._producer.partitions(self.topic)
        except (kafka_io.KafkaError, OSError) as err:
            self.close()
            raise PublishError(f"cannot publish to Kafka at {bootstrap}: {err or type(err).__name__}") from None

    def send(self, event: dict[str, Any], text: str | None = None) -> None:
        """Queue one event (``text``: its JSON if the caller has it already)."""
        line = text if text is not None else _dumps(event)
        key = event_key(event, self.keys)
        self.sent += 1
        if self.pack <= 1:
            self._send(line.encode(), key, None)
            return
        # Pack per partition, not per key: a partition's messages then keep the collector's order exactly.
        parts = self._parts
        part = self._producer.partition_for(key, parts) if key is not None else parts[self.sent % len(parts)]
        lines = self._pending.get(part)
        if lines is None:
            lines = self._pending[part] = []
        lines.append(line)
        if len(lines) >= self.pack:
            del self._pending[part]
            self._send("\n".join(lines).encode(), key, part)

    def send_many(self, events: Iterable[dict[str, Any]]) -> int:
        n = 0
        for event in events:
            self.send(event)
            n += 1
        return n

    def _send(self, value: bytes, key: bytes | None, partition: int | None) -> None:
        try:
            self._producer.send(self.topic, value, key, partition=partition)
        except Exception as err:  # noqa: BLE001 - kafka-python raises assorted errors (buffer full, too large)
            raise PublishError(f"cannot publish to {self.topic} at {self.bootstrap}: {err}") from None

    def flush(self, timeout: float | None = None) -> None:
        """Send the partly filled packs and wait until the broker acknowledged every message (else raise)."""
        pending, self._pending = self._pending, {}
        for part, lines in pending.items():
            self._send("\n".join(lines).encode(), None, part)
        try:
            self._producer.flush(timeout=timeout)
        except Exception as err:  # noqa: BLE001 - a delivery error or a flush timeout
            raise PublishError(
                f"Kafka at {self.bootstrap} did not acknowledge events on {self.topic}: {err or type(err).__name__}"
            ) from None

    def close(self) -> None:
        """Close the producer without flushing (call :meth:`flush` first to deliver what is queued)."""
        if self._producer is not None:
            producer, self._producer = self._producer, None
            with contextlib.suppress(Exception):  # closing must not mask the real error
                producer.close(timeout=5.0)

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def publish(
    events: Iterable[dict], bootstrap: str, source: str, *, topic: str | None = None, pack: int = 1, linger_ms: int = 20
) -> int:
    """Send ``events`` to ``topic`` (default ``hcep.events.<source>``); return how many were sent.

    Blocks until the broker acknowledged every message (a failure raises: the caller must not think it published).
    """
    with Publisher(bootstrap, source, topic=topic, pack=pack, linger_ms=linger_ms, ensure=False) as publisher:
        count = publisher.send_many(events)
        publisher.flush()
    return count
