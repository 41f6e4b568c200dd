"""An in-memory broker, source and sink: the whole service in one process, for tests (bytewax's testing source and
sink are the model).

:class:`MemoryBroker` holds topics of partitions of messages and the consumer groups' state; :class:`MemorySource`
is one group member over it (the :class:`app.stream.source.Source` interface, with Kafka's semantics where the loop
relies on them: per-partition offset order, the rebalance callbacks inside :meth:`~MemorySource.poll`, a dead
member's partitions held until its session times out, committed offsets with metadata).  :class:`MemorySink` stands
for the matches topic and the webhook receivers.  A test appends events, runs the loop turn by turn
(:meth:`app.stream.loop.Service.step`), abandons it at any point (:meth:`app.stream.loop.Service.crash`) and starts a
new service over the same store and broker.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.stream.config import Tp
from app.stream.source import Message, OnPartitions


@dataclass(frozen=True, slots=True)
class MemoryMessage:
    topic: str
    partition: int
    offset: int
    value: bytes | None
    timestamp: int  # milliseconds
    key: bytes | None = None


@dataclass
class _Member:
    name: str
    alive: bool = True
    died_at: float = 0.0
    generation: int = -1  # the group generation whose assignment this member holds
    assignment: set[Tp] = field(default_factory=set)


@dataclass
class _Group:
    members: dict[str, _Member] = field(default_factory=dict)
    generation: int = 0
    stable: bool = True  # False while a membership change waits for the dead to time out
    committed: dict[Tp, tuple[int, str]] = field(default_factory=dict)


class MemoryBroker:
    """Topics, partitions and consumer groups in memory.  ``session_timeout``: seconds a dead member keeps its
    partitions (a rebalance waits for it, as Kafka's does)."""

    def __init__(self, session_timeout: float = 0.0) -> None:
        self.session_timeout = session_timeout
        self.topics: dict[str, list[list[MemoryMessage]]] = {}
        self.groups: dict[str, _Group] = {}
        self.lock = threading.RLock()
        self._members = 0

    # ------------------------------------------------------------------ data
    def create(self, topic: str, partitions: int) -> None:
        with self.lock:
            self.topics.setdefault(topic, [[] for _ in range(partitions)])

    def append(self, topic: str, value: bytes, *, partition: int = 0, key: bytes | None = None) -> int:
        """Append one message; its offset."""
        with self.lock:
            log = self.topics[topic][partition]
            log.append(MemoryMessage(topic, partition, len(log), value, int(time.time() * 1000), key))
            return len(log) - 1

    def publish(self, topic: str, events: Iterable[Mapping[str, Any]], key: str | None = None, pack: int = 1) -> None:
        """Events as JSON, ``pack`` per message (JSON lines), spread over the partitions by ``key``'s value (else
        all to partition 0)."""
        with self.lock:
            parts = len(self.topics[topic])
            batches: dict[int, list[bytes]] = {}
            for ev in events:
                p = 0 if key is None else sum(str(ev.get(key)).encode()) % parts
                batch = batches.setdefault(p, [])
                batch.append(json.dumps(ev).encode())
                if len(batch) >= pack:
                    self.append(topic, b"\n".join(batch), partition=p)
                    batch.clear()
            for p, batch in batches.items():
                if batch:
                    self.append(topic, b"\n".join(batch), partition=p)

    def end(self, tp: Tp) -> int:
        with self.lock:
            return len(self.topics[tp[0]][tp[1]])

    def read(self, tp: Tp, offset: int, limit: int) -> list[MemoryMessage]:
        with self.lock:
            return self.topics[tp[0]][tp[1]][offset : offset + limit]

    def partitions(self, topic: str) -> list[Tp]:
        with self.lock:
            return [(topic, p) for p in range(len(self.topics.get(topic, ())))]

    # ------------------------------------------------------------------ groups
    def join(self, group: str) -> str:
        with self.lock:
            self._members += 1
            name = f"member-{self._members}"
            g = self.groups.setdefault(group, _Group())
            g.members[name] = _Member(name)
            g.stable = False
            return name

    def leave(self, group: str, name: str) -> None:
        with self.lock:
            g = self.groups[group]
            if g.members.pop(name, None) is not None:
                g.stable = False

    def die(self, group: str, name: str) -> None:
        """The member stops without leaving (kill -9): it holds its partitions until its session times out."""
        with self.lock:
            m = self.groups[group].members.get(name)
            if m is not None:
                m.alive = False
                m.died_at = time.monotonic()

    def rebalance(self, group: str) -> None:
        with self.lock:
            self.groups[group].stable = False

    def assignment(self, group: str, name: str, topics: Sequence[str]) -> tuple[int, set[Tp]] | None:
        """``(generation, partitions)`` of a member once the group is stable; None while it rebalances."""
        with self.lock:
            g = self.groups[group]
            now = time.monotonic()
            for m in list(g.members.values()):
                if not m.alive and now - m.died_at >= self.session_timeout:
                    del g.members[m.name]
                    g.stable = False
            if not g.stable:
                if any(not m.alive for m in g.members.values()):
                    return None  # the join waits for the dead member's session to time out
                g.generation += 1
                members = sorted(g.members)
                tps = sorted(tp for t in topics for tp in self.partitions(t))
                for m in g.members.values():
                    m.assignment = set()
                for i, tp in enumerate(tps):
                    g.members[members[i % len(members)]].assignment.add(tp)
                g.stable = True
            me = g.members.get(name)
            if me is None:
                return None
            return g.generation, set(me.assignment)


class MemorySource:
    """One member of a consumer group over a :class:`MemoryBroker` (the :class:`~app.stream.source.Source`
    interface): the shared topics are spread over the group, the broadcast topics read in full."""

    def __init__(
        self, broker: MemoryBroker, shared: Sequence[str], broadcast: Sequence[str] = (), *, group: str = "hcep"
    ) -> None:
        self.broker = broker
        self.shared = list(shared)
        self.broadcast = [t for t in broadcast if t not in self.shared]
        self.group = group
        self.name: str | None = None
        self.generation = -1
        self.assigned: set[Tp] | None = None  # the partitions of the assignment in force; None between epochs
        self.positions: dict[Tp, int] = {}
        self._on_assign: OnPartitions | None = None
        self._on_revoke: OnPartitions | None = None

    def open(self, on_assign: OnPartitions, on_revoke: OnPartitions) -> None:
        self._on_assign, self._on_revoke = on_assign, on_revoke
        for tp in self.broadcast_partitions():
            self.positions[tp] = 0
        if self.shared:
            self.name = self.broker.join(self.group)
        else:
            self.assigned = set()
            on_assign(set())

    def broadcast_partitions(self) -> set[Tp]:
        return {tp for t in self.broadcast for tp in self.broker.partitions(t)}

    def _rebalance(self) -> None:
        if self.name is None or self._on_assign is None or self._on_revoke is None:
            return
        got = self.broker.assignment(self.group, self.name, self.shared)
        if got is None:
            return
        generation, tps = got
        if generation == self.generation:
            return
        if self.assigned is not None:
            try:
                self._on_revoke(set(self.assigned))
            finally:
                self.assigned = None
        self.generation = generation
        for tp in tps:
            self.positions.setdefault(tp, 0)
        self._on_assign(set(tps))
        self.assigned = tps

    def poll(self, limit: int) -> list[Message]:
        self._rebalance()
        if self.assigned is None:
            return []
        out: list[Message] = []
        for tp in sorted(self.assigned | self.broadcast_partitions()):
            if len(out) >= limit:
                break
            got = self.broker.read(tp, self.positions.get(tp, 0), limit - len(out))
            if got:
                self.positions[tp] = got[-1].offset + 1
                out.extend(got)
        if not out:
            time.sleep(0.001)  # as a Kafka poll waits a little for data: no busy loop
        return out

    def seek(self, tp: Tp, offset: int) -> None:
        self.positions[tp] = offset

    def start_offsets(self, tps: list[Tp], where: str) -> dict[Tp, int]:
        return {tp: 0 if where == "earliest" else self.broker.end(tp) for tp in tps}

    def committed(self, tp: Tp) -> tuple[int, str] | None:
        with self.broker.lock:
            g = self.broker.groups.get(self.group)
            return None if g is None or tp[0] not in self.shared else g.committed.get(tp)

    def commit(self, offsets: Mapping[Tp, tuple[int, str]]) -> None:
        with self.broker.lock:
            self.broker.groups.setdefault(self.group, _Group()).committed.update(offsets)

    def highwater(self, tp: Tp) -> int | None:
        return self.broker.end(tp)

    def caught_up(self, tp: Tp, position: int) -> bool:
        return position >= self.broker.end(tp)

    def group_has_partitions(self) -> bool:
        return any(self.broker.partitions(t) for t in self.shared)

    def rejoin(self) -> None:
        self.broker.rebalance(self.group)

    def close(self) -> None:
        if self.name is not None:
            self.broker.leave(self.group, self.name)
            self.name = None

    def crash(self) -> None:
        """Stop as kill -9 would: no revoke, no leave; the group holds this member's partitions for the session."""
        if self.name is not None:
            self.broker.die(self.group, self.name)
            self.name = None
        self._on_assign = self._on_revoke = None


class MemorySink:
    """The outside world of a service in memory: the matches topic (:meth:`record_sink`) and webhook receivers
    (:meth:`deliver`, for :class:`app.alerts.webhook.AlertSender`).  Records everything it is given, repeats too."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[tuple[bytes | None, bytes]] = []  # (key, value) sent to the matches topic
        self.posts: list[tuple[str, list[dict[str, Any]], list[str]]] = []  # (webhook, alert entries, outbox ids)

    def record_sink(self) -> MemoryRecordSink:
        return MemoryRecordSink(self)

    def deliver(
        self, hook: Any, alerts: list[dict[str, Any]], timeout: float = 5.0, ids: list[str] | None = None
    ) -> None:
        with self.lock:
            self.posts.append((hook.name, alerts, list(ids or [])))

    def record_ids(self) -> list[str]:
        with self.lock:
            return [k.decode() for k, _v in self.records if k is not None]

    def alert_ids(self) -> list[str]:
        with self.lock:
            return [i for _hook, _alerts, ids in self.posts for i in ids]


class MemoryRecordSink:
    """:class:`app.stream.publisher.RecordSink` into a :class:`MemorySink`."""

    def __init__(self, sink: MemorySink) -> None:
        self.sink = sink
        self.pending: list[tuple[bytes | None, bytes]] = []

    def send(self, value: bytes, key: bytes | None = None) -> None:
        self.pending.append((key, value))

    def flush(self, timeout: float | None = None) -> None:
        with self.sink.lock:
            self.sink.records.extend(self.pending)
        self.pending = []

    def close(self, timeout: float = 10.0) -> None:
        self.pending = []
