"""Epochs: one assignment of partitions, its engine rebuilt from the checkpoints, its watermark merge and replay.

Any change of the group's assignment starts a new *epoch* (:func:`begin`): a fresh engine, a fresh watermark, every
partition sought back to its rebuild point, and a replay that brings the engine to where the checkpoint left it --
exact (outputs discarded up to the checkpoint's release key K) when this process resumes its own assignment, with id
de-duplication otherwise (:mod:`app.checkpoint` argues why either loses and repeats nothing).  An :class:`Epoch`
then releases the merged events in key order: :meth:`Epoch.replay` while rebuilding, :meth:`Epoch.live` after.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, cast

from app.pack_runner import PackRunner
from app.store import Store
from app.stream.config import ServiceConfig, Tp
from app.stream.source import Source, topics_of
from app.watermark import NEG_INF, Key, Watermark

log = logging.getLogger("hcep.run")

#: A released watermark entry: ``(t, source rank, partition, offset, index, event)``.
Entry = tuple[Any, ...]


class Epoch:
    """The state of one assignment: the engine, the merge buffer, per partition the read position, what was read
    before the checkpoint (replayed, not counted or dead-lettered again) and the dead letters to skip again."""

    def __init__(self, runner: PackRunner, wm: Watermark) -> None:
        self.runner = runner
        self.wm = wm
        # id(event) -> when it could first be processed (see app.pack_runner), kept only while shedding is on
        self.arrivals: dict[int, float] | None = {} if runner.shedder is not None else None
        self.assignment: set[Tp] = set()
        self.position: dict[Tp, int] = {}
        self.replayed_until: dict[Tp, int] = {}  # offsets below were read before the checkpoint
        self.skip: dict[Tp, set[tuple[int, int]]] = {}
        self.exact_until: list[Any] | None = None  # K while an exact replay runs
        self.horizon_replay = NEG_INF
        self.seq = 0  # events fed to the engine
        self.last_t = NEG_INF  # time of the last event fed
        self.fed_key: Key | None = None  # release key of the last event fed: the checkpoint's K
        self.active = False  # between the assignment and its revocation
        self.started_at = time.monotonic()

    @property
    def replaying(self) -> bool:
        return self.exact_until is not None

    def add(
        self, tp: Tp, rank: int, start: int, position: int, newest: float, skip: set[tuple[int, int]], now: float
    ) -> None:
        """Read ``tp`` from ``start``; offsets below ``position`` were read before the checkpoint."""
        self.position[tp] = start
        self.replayed_until[tp] = position
        self.skip[tp] = skip
        self.wm.add(tp, rank, tp[1], start, newest, now)

    def replay(self) -> tuple[list[Entry], list[Any], bool]:
        """One step of the exact replay: ``(released, to feed, done)`` -- released in key order up to K, fed only
        those with ``thi >= H`` (their outputs discarded); done once every partition is read past the checkpoint
        and nothing at or below K waits (the engine then stands where the checkpointed one stood at K)."""
        wm = self.wm
        assert self.exact_until is not None
        until = cast(Key, tuple(self.exact_until))
        pending = {tp for tp in self.assignment if self.position[tp] < self.replayed_until[tp]}
        frontier = wm.frontier(lambda tp, _p: tp in pending)
        out = wm.release(frontier, until=until)
        h = self.horizon_replay
        feed = [entry[5] for entry in out if entry[5].thi >= h]
        done = not pending and (not wm.heap or tuple(wm.heap[0][:5]) > until)
        if done:
            wm.released = until if wm.released is None or wm.released < until else wm.released
            self.fed_key = until
            self.exact_until = None
            log.info("replay done: engine rebuilt up to %s", list(until))
        return out, feed, done

    def live(self, now: float, caught_up: Callable[[Any], bool]) -> list[Entry]:
        """What the watermark releases now (partitions idle and read up do not hold it)."""
        wm = self.wm
        return wm.release(wm.live_frontier(now, caught_up))

    def caught_up(self, source: Source) -> bool:
        """Every partition read up to its end and nothing waiting in the merge buffer."""
        return all(source.caught_up(tp, self.position.get(tp, 0)) for tp in self.assignment) and self.wm.pending() == 0


def scope(cfg: ServiceConfig, tp: Tp) -> str:
    """Where a partition's checkpoint row lives: the group's (shared partitions move between processes) or this
    process's (every process reads the broadcast partitions)."""
    return f"group:{cfg.group}" if tp[0] in cfg.shared_topics else instance_scope(cfg)


def instance_scope(cfg: ServiceConfig, instance: str | None = None) -> str:
    return f"instance:{cfg.group}/{cfg.instance if instance is None else instance}"


def begin(cfg: ServiceConfig, epoch: Epoch, parts: set[Tp], store: Store, source: Source, ranks: dict[str, int]) -> int:
    """Set ``epoch`` up for ``parts`` from the store's checkpoints (seeking ``source``); the checkpoint seq it
    continues from."""
    from app.checkpoint import parse_offset_metadata

    shared = set(cfg.shared_topics)
    epoch.assignment = set(parts)
    ckpt = store.checkpoint(instance_scope(cfg))
    rows = {tp: store.offset(scope(cfg, tp), *tp) for tp in parts}
    exact = (
        ckpt is not None
        and ckpt.released is not None
        and {tuple(a) for a in ckpt.assignment} == parts
        and all(r is not None and r.writer == cfg.instance and r.seq == ckpt.seq for r in rows.values())
    )
    now = time.monotonic()
    # Partitions without a local checkpoint: a Kafka commit with our metadata (another host had them), else the
    # configured end of the log.
    resets: dict[Tp, tuple[int, int, float]] = {}
    rest: list[Tp] = []
    for tp in (tp for tp in parts if rows[tp] is None):
        got = source.committed(tp) if tp[0] in shared else None
        meta = parse_offset_metadata(got[1]) if got else None
        if got and meta:
            resets[tp] = (meta[0], got[0], meta[1])
        else:
            rest.append(tp)
    for tp, off in source.start_offsets(rest, cfg.start_from).items() if rest else ():
        resets[tp] = (off, off, NEG_INF)
    # Shared partitions taken over from another process are rebuilt from its horizon, which may be older than ours:
    # the broadcast events (Ganglia) its open runs join with must then be replayed from its rebuild points for them
    # too, or those runs would miss them.
    writers = {
        r.writer
        for tp, r in rows.items()
        if tp[0] in shared and r is not None and r.writer and r.writer != cfg.instance
    }
    for tp in sorted(parts):
        row = rows[tp]
        start, position, newest = resets.get(tp, (0, 0, NEG_INF))
        if row is not None:
            start, position = row.rebuild_from, row.position
            newest = NEG_INF if row.newest is None else row.newest
        if tp[0] not in shared:
            for writer in sorted(writers):
                other = store.offset(instance_scope(cfg, writer), *tp)
                if other is not None and other.rebuild_from < start:
                    start = other.rebuild_from
                    newest = NEG_INF if other.newest is None else other.newest
        source.seek(tp, start)
        skip = store.deadletter_offsets(tp[0], tp[1], start, position) if position > start else set()
        epoch.add(tp, ranks[tp[0]], start, position, newest, skip, now)
    if exact and ckpt is not None:
        epoch.exact_until = list(ckpt.released or [])
        epoch.horizon_replay = NEG_INF if ckpt.horizon is None else ckpt.horizon
    epoch.active = True
    log.info(
        "epoch: %d partitions (%s), %s",
        len(parts),
        topics_of(parts),
        f"exact replay up to {epoch.exact_until}" if exact else "replay with id de-duplication",
    )
    return ckpt.seq if ckpt else 0
