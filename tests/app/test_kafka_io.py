"""``app.kafka_io`` uses kafka-python's public API, but for one isolated call (``leader_connected``) that has no public
equivalent: these tests fail if kafka-python changes what that call reads, and show that the rejoin made of public
calls (unsubscribe + subscribe) gives a new assignment with the listener's revoke-then-assign around it."""

from __future__ import annotations

import ast
import os
import random
import time
from pathlib import Path

from tests.conftest import ROOT, Broker


def _private_uses() -> dict[str, list[str]]:
    """Private attributes read on anything but ``self``, per enclosing function."""
    tree = ast.parse((Path(ROOT) / "app" / "kafka_io.py").read_text())
    out: dict[str, list[str]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                    continue
                if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                    out.setdefault(fn.name, []).append(node.attr)
    return out


def test_only_leader_connected_reads_kafka_python_privates() -> None:
    uses = _private_uses()
    assert uses == {"leader_connected": ["_client"]}, uses


def test_the_private_call_still_reads_what_it_expects(kafka_broker: Broker) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    from app.kafka_io import TP, AssignedConsumer, ensure_topics, leader_connected

    topic = f"kio{os.getpid()}-{random.randrange(10**6)}"
    ensure_topics(kafka_broker.bootstrap, {topic: 1})
    consumer = AssignedConsumer(kafka_broker.bootstrap, [topic])
    try:
        raw = consumer._c
        assert isinstance(raw, KafkaConsumer)
        client = raw._client  # what leader_connected reads: fails here first if kafka-python renames it
        assert callable(client.cluster.leader_for_partition) and callable(client.connected)
        deadline = time.monotonic() + 20
        while not consumer.connected(TP(topic, 0)) and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.connected(TP(topic, 0))
        assert not leader_connected(raw, TopicPartition(f"{topic}-missing", 0))  # no leader known
    finally:
        consumer.close()


def test_rejoin_with_public_calls_gives_a_new_assignment(kafka_broker: Broker) -> None:
    from app.kafka_io import TP, GroupConsumer, ensure_topics

    topic = f"kio{os.getpid()}-{random.randrange(10**6)}"
    ensure_topics(kafka_broker.bootstrap, {topic: 2})
    calls: list[tuple[str, set[TP]]] = []
    group = GroupConsumer(
        kafka_broker.bootstrap,
        [topic],
        f"g-{topic}",
        on_revoke=lambda tps: calls.append(("revoke", tps)),
        on_assign=lambda tps: calls.append(("assign", tps)),
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    try:

        def polled_until(n: int) -> bool:
            deadline = time.monotonic() + 30
            while sum(1 for c in calls if c[0] == "assign") < n and time.monotonic() < deadline:
                group.poll(0.1)
            return sum(1 for c in calls if c[0] == "assign") >= n

        assert polled_until(1)
        assert calls[-1] == ("assign", {TP(topic, 0), TP(topic, 1)})
        group.rejoin()
        assert polled_until(2), calls
        assert calls[-2][0] == "revoke" and calls[-1] == ("assign", {TP(topic, 0), TP(topic, 1)})
    finally:
        group.close()
