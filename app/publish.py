"""Publish collector events to Kafka: one topic per source, keyed so that partitioning follows the queries' keys.

The key is the event's ``job_id`` (Hadoop: every event of a job, hence of its tasks, lands in one partition, so one
``hcep run`` process sees whole jobs) or else its ``host`` (Ganglia, whose topic every process reads in full anyway).
Within a partition events keep the collector's order, which the service's per-partition watermark relies on.

A message holds one event (SPEC section 1).  ``pack > 1`` puts up to that many events of one partition into one
message as JSON lines, for sources whose rate the Python Kafka client cannot carry one message at a time; the service
reads both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

TOPIC_PREFIX = "hcep.events."


def topic_for(source: str, prefix: str = TOPIC_PREFIX) -> str:
    """``hadoop`` -> ``hcep.events.hadoop``."""
    return f"{prefix}{source}"


def event_key(event: dict[str, Any]) -> bytes | None:
    """The partitioning key: job, else host, else none (round-robin)."""
    for attr in ("job_id", "host"):
        value = event.get(attr)
        if value is not None:
            return str(value).encode()
    return None


def publish(events: Iterable[dict], bootstrap: str, source: str, *, topic: str | None = None, pack: int = 1,
            linger_ms: int = 20) -> int:
    """Send ``events`` to ``topic`` (default ``hcep.events.<source>``); return how many were sent.

    Blocks until the broker acknowledged every message (a failure raises: the caller must not think it published).
    """
    from app.kafka_io import Producer

    name = topic or topic_for(source)
    producer = Producer(bootstrap, linger_ms=linger_ms, client_id=f"hcep-publish-{source}")
    count = 0
    try:
        if pack <= 1:
            for event in events:
                producer.send(name, json.dumps(event, separators=(",", ":")).encode(), event_key(event))
                count += 1
        else:
            # Pack per partition, not per key: a partition's messages then keep the collector's order exactly.
            parts = producer.partitions(name)
            pending: dict[int, list[str]] = {}
            for event in events:
                key = event_key(event)
                part = producer.partition_for(key, parts) if key is not None else parts[count % len(parts)]
                lines = pending.setdefault(part, [])
                lines.append(json.dumps(event, separators=(",", ":")))
                count += 1
                if len(lines) >= pack:
                    producer.send(name, "\n".join(lines).encode(), key, partition=part)
                    del pending[part]
            for part, lines in pending.items():
                producer.send(name, "\n".join(lines).encode(), None, partition=part)
        producer.flush()
    finally:
        producer.close()
    return count
