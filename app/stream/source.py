"""Where the service's events come from: the :class:`Source` interface and its Kafka implementation.

Why an interface: the loop needs only a few things of its input -- messages in per-partition offset order, an
assignment that may change (with a call before and after), seeking, the end of each partition and a place to commit
offsets for hand-over -- and with those behind one small interface the whole service runs in-process over
:class:`app.stream.memory.MemorySource` in tests, crash included.  :class:`KafkaSource` reads the *shared* topics
through a consumer group (their partitions are spread over the group's processes) and the *broadcast* topics in full
(every process needs the cluster-wide events), outside the group.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from app.stream.config import ServiceConfig, Tp

log = logging.getLogger("hcep.run")

#: The callbacks a source calls around an assignment change (inside :meth:`Source.poll`, on the caller's thread).
OnPartitions = Callable[[set[Tp]], None]


class Message(Protocol):
    """One consumed message (a Kafka record: one event, or several as JSON lines)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def timestamp(self) -> int:  # milliseconds since the epoch, when the producer sent it
        ...


class Source(Protocol):
    """The service's input.  ``on_assign(partitions)`` starts an epoch (the broadcast partitions are added by the
    loop), ``on_revoke`` ends it; both run inside :meth:`poll`.  A source without shared topics assigns (nothing)
    once, at :meth:`open`."""

    def open(self, on_assign: OnPartitions, on_revoke: OnPartitions) -> None: ...

    def broadcast_partitions(self) -> set[Tp]: ...

    def poll(self, limit: int) -> list[Message]:
        """Messages of the assigned partitions (broadcast ones only while an assignment is in force)."""
        ...

    def seek(self, tp: Tp, offset: int) -> None: ...

    def start_offsets(self, tps: list[Tp], where: str) -> dict[Tp, int]:
        """Each partition's first (``earliest``) or next (``latest``) offset."""
        ...

    def committed(self, tp: Tp) -> tuple[int, str] | None:
        """The group's committed ``(offset, metadata)`` of a shared partition (another host's hand-over)."""
        ...

    def commit(self, offsets: Mapping[Tp, tuple[int, str]]) -> None: ...

    def highwater(self, tp: Tp) -> int | None:
        """The partition's end offset as last seen (no request); None when not known yet."""
        ...

    def caught_up(self, tp: Tp, position: int) -> bool:
        """Is ``position`` at the partition's end, as far as the source can tell now?"""
        ...

    def group_has_partitions(self) -> bool:
        """Do the shared topics have partitions at all (so that holding none of them may be a stuck group)?"""
        ...

    def rejoin(self) -> None:
        """Ask the group for a new assignment."""
        ...

    def close(self) -> None: ...


class KafkaSource:
    """:class:`Source` over Kafka (:mod:`app.kafka_io`): a group consumer for the shared topics, an assigned one for
    the broadcast topics.  Creates missing topics (the matches topic too) at :meth:`open`."""

    def __init__(self, cfg: ServiceConfig) -> None:
        self.cfg = cfg
        self.shared = frozenset(cfg.shared_topics)
        self.group: Any = None
        self.bcast: Any = None
        self.assigned = False  # an assignment is in force (between on_assign and on_revoke)
        self._unreachable_at = -math.inf  # when a partition's leader was last found unreachable
        self._ends: dict[Tp, tuple[int | None, float]] = {}  # end offsets asked of the broker: (offset, when)

    def open(self, on_assign: OnPartitions, on_revoke: OnPartitions) -> None:
        from app import kafka_io

        cfg = self.cfg
        kafka_io.wait_for_broker(cfg.bootstrap, timeout=60)
        want = {t: cfg.topic_partitions for t in cfg.topics}
        if cfg.matches_topic:
            want[cfg.matches_topic] = cfg.topic_partitions
        kafka_io.ensure_topics(cfg.bootstrap, want)
        client = f"hcep-run-{cfg.instance}"
        if cfg.broadcast_topics:
            self.bcast = kafka_io.AssignedConsumer(
                cfg.bootstrap, [t for t in cfg.topics if t not in self.shared], client_id=client
            )

        def assign(tps: set[Any]) -> None:
            on_assign({(tp.topic, tp.partition) for tp in tps})
            self.assigned = True

        def revoke(tps: set[Any]) -> None:
            try:
                on_revoke({(tp.topic, tp.partition) for tp in tps})
            finally:
                self.assigned = False

        if cfg.shared_topics:
            timeout_ms = int(cfg.session_timeout * 1000)
            self.group = kafka_io.GroupConsumer(
                cfg.bootstrap,
                cfg.shared_topics,
                cfg.group,
                client_id=client,
                on_revoke=revoke,
                on_assign=assign,
                session_timeout_ms=timeout_ms,
                heartbeat_interval_ms=max(100, timeout_ms // 3),
            )
        else:
            assign(set())

    def _consumer(self, tp: Tp) -> Any:
        return self.group if tp[0] in self.shared else self.bcast

    def broadcast_partitions(self) -> set[Tp]:
        return set() if self.bcast is None else {(tp.topic, tp.partition) for tp in self.bcast.assignment()}

    def poll(self, limit: int) -> list[Message]:
        # Short polls keep each loop turn short, so a match waits little for its checkpoint and webhook.
        got: list[Message] = []
        if self.group is not None:
            got = self.group.poll(0.05 if self.bcast is None else 0.02, limit)
        if self.bcast is not None and self.assigned:
            more = self.bcast.poll(0.0 if got else 0.03, limit)
            if more:
                got = got + more if got else more
        return got

    def seek(self, tp: Tp, offset: int) -> None:
        from app.kafka_io import TP

        self._consumer(tp).seek(TP(*tp), offset)

    def start_offsets(self, tps: list[Tp], where: str) -> dict[Tp, int]:
        from app.kafka_io import TP

        out: dict[Tp, int] = {}
        by_consumer: dict[int, list[Tp]] = {}
        for tp in tps:
            by_consumer.setdefault(id(self._consumer(tp)), []).append(tp)
        for group in by_consumer.values():
            consumer = self._consumer(group[0])
            ours = [TP(*tp) for tp in group]
            got = consumer.beginning_offsets(ours) if where == "earliest" else consumer.end_offsets(ours)
            for tp in group:
                out[tp] = got[TP(*tp)]
        return out

    def committed(self, tp: Tp) -> tuple[int, str] | None:
        from app.kafka_io import TP

        if self.group is None or tp[0] not in self.shared:
            return None
        got: tuple[int, str] | None = self.group.committed(TP(*tp))
        return got

    def commit(self, offsets: Mapping[Tp, tuple[int, str]]) -> None:
        from app.kafka_io import TP

        if self.group is not None and offsets:
            self.group.commit({TP(*tp): v for tp, v in offsets.items()})

    def highwater(self, tp: Tp) -> int | None:
        from app.kafka_io import TP

        hw: int | None = self._consumer(tp).highwater(TP(*tp))
        return hw

    def caught_up(self, tp: Tp, position: int) -> bool:
        """Read up to the end as far as we know.  Not while the broker is unreachable, nor within ``idle_timeout``
        after: the end offsets we know may be stale then."""
        from app.kafka_io import TP

        consumer = self._consumer(tp)
        now = time.monotonic()
        if not consumer.connected(TP(*tp)):
            self._unreachable_at = now
            return False
        if now - self._unreachable_at < self.cfg.idle_timeout:
            return False
        hw = consumer.highwater(TP(*tp))
        if hw is None:
            hw = self._end_offset(tp, consumer, now)
        return hw is not None and position >= hw  # unknown until a fetch answered: not caught up

    def _end_offset(self, tp: Tp, consumer: Any, now: float) -> int | None:
        """The partition's end offset, asked of the broker (at most once per idle timeout) while no fetch response
        has told it: a partition resumed exactly at its end (nothing to replay after a rebalance) gets no records,
        and kafka-python may then never report its high watermark, so it would hold the watermark for good."""
        from app.kafka_io import TP

        known = self._ends.get(tp)
        if known is not None and now - known[1] < self.cfg.idle_timeout:
            return known[0]
        end: int | None
        try:
            end = consumer.end_offsets([TP(*tp)]).get(TP(*tp))
        except Exception as err:  # noqa: BLE001 - a broker away: not caught up, ask again later
            log.debug("end offset of %s[%d] not known (%s)", tp[0], tp[1], err)
            end = None
        self._ends[tp] = (end, now)
        return end

    def group_has_partitions(self) -> bool:
        return self.group is not None and any(self.group.partitions(t) for t in self.cfg.shared_topics)

    def rejoin(self) -> None:
        if self.group is not None:
            self.group.rejoin()

    def close(self) -> None:
        for c in (self.group, self.bcast):
            if c is not None:
                c.close()
        self.group = self.bcast = None


def topics_of(tps: Iterable[Tp]) -> str:
    """``t[0], t[1], u[0]`` for a log line."""
    return ", ".join(f"{t}[{p}]" for t, p in sorted(tps))
