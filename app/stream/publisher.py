"""Committed match records to the matches topic, from the store, on a thread of its own.

A thread of its own so that a broker outage never stalls the engine; at least once: a record sent but not yet marked
published when the process dies is sent again at the next start (consumers de-duplicate by key, the record id).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from app.store import Store

log = logging.getLogger("hcep.run")


class RecordSink(Protocol):
    """Where match records go: ``send`` may be asynchronous, ``flush`` waits for (and raises on) delivery."""

    def send(self, value: bytes, key: bytes | None = None) -> None: ...
    def flush(self, timeout: float | None = None) -> None: ...
    def close(self, timeout: float = 10.0) -> None: ...


class KafkaRecordSink:
    """:class:`RecordSink` on a Kafka topic (:class:`app.kafka_io.Producer`)."""

    def __init__(self, bootstrap: str, topic: str, client_id: str) -> None:
        from app.kafka_io import Producer

        self.topic = topic
        self.producer = Producer(bootstrap, linger_ms=5, client_id=client_id)

    def send(self, value: bytes, key: bytes | None = None) -> None:
        self.producer.send(self.topic, value, key=key)

    def flush(self, timeout: float | None = None) -> None:
        self.producer.flush(timeout=timeout)

    def close(self, timeout: float = 10.0) -> None:
        self.producer.close(timeout=timeout)


class MatchPublisher(threading.Thread):
    """Sends the committed, unpublished records of ``instance`` to the sink ``connect()`` makes (made again after a
    failure), keyed by record id, and marks them published."""

    def __init__(self, store_file: str, instance: str, connect: Callable[[], RecordSink], name: str = "") -> None:
        super().__init__(name="hcep-matches", daemon=True)
        self.store_file = store_file
        self.instance = instance
        self.connect = connect
        self.target = name  # for the log
        self.wake = threading.Event()
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()

    def run(self) -> None:
        store = Store(self.store_file)
        sink: RecordSink | None = None
        failing = False
        try:
            while not self.stopping.is_set():
                rows = store.unpublished(self.instance, limit=5000)
                if rows:
                    try:
                        if sink is None:
                            sink = self.connect()
                        for rid, _query, text in rows:
                            sink.send(text.encode(), key=rid.encode())
                        sink.flush(timeout=30)
                        store.mark_published([r[0] for r in rows])
                        if failing:
                            log.info("publishing match records to %s again", self.target)
                        failing = False
                        continue
                    except Exception as err:  # noqa: BLE001 - broker away: keep the rows, try again later
                        (log.debug if failing else log.warning)(
                            "publishing %d match record(s) to %s failed (%s); retrying", len(rows), self.target, err
                        )
                        failing = True
                self.wake.wait(1.0)
                self.wake.clear()
        finally:
            if sink is not None:
                with contextlib.suppress(Exception):
                    sink.close(timeout=5)
            store.close()
