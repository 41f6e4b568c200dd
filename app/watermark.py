"""Merge the partitions of all sources into one stream in time order, under a watermark.

Why per partition: a partition is read in offset order on every run, so a rule that looks only at the partition's
own history gives the same answer on every replay.  An event is *late* when its time is more than ``bound`` (largest
delta + allowed lateness) behind the newest event read before it from its partition; late events are dropped
(the caller counts and dead-letters them).  Every later event of a partition is therefore at or after
``newest - bound``, so the global watermark ``min over partitions (newest - bound)`` is safe: events strictly before
it are released to the engine in key order ``(t, source, partition, offset, index)``, a total order that is the same
on every run.  A partition that has been silent for ``idle_timeout`` seconds while fully read stops holding the
watermark back (the usual idleness rule); if it speaks again behind the released watermark, those events are late as
well.

The per-partition :class:`RebuildTracker` remembers, for the checkpoint, the first offset from which replaying the
partition rebuilds everything the engine still needs (see :mod:`app.checkpoint`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

NEG_INF = -math.inf
INF = math.inf

#: (t, source rank, partition, offset, index in the message): the release order.
Key = tuple[float, int, int, int, int]
#: A buffered event: its key ``(t, rank, partition, offset, index)`` then the event.
Entry = tuple[float, int, int, int, int, Any]


class RebuildTracker:
    """Per partition: the smallest offset whose event may still matter for a time horizon ``H``.

    Entries ``[offset, hi_bound, segment_max_t]`` with strictly increasing ``hi_bound`` (an upper bound of the event's
    ``thi``, rounded up to ``bucket`` ticks so that a day of events needs few entries).  An event whose bound is not
    above the last entry's is covered by that earlier offset and only raises its segment's max.  Popping entries
    whose bound is < H gives the rebuild offset; the popped segments' max time is the partition's newest time before
    it, which a replay needs to repeat the lateness decisions.
    """

    __slots__ = ("entries", "bucket", "max_before", "next_offset")

    def __init__(self, next_offset: int, max_before: float = NEG_INF, bucket: int = 10) -> None:
        # Segments ``[first offset, bound (ticks), largest time]``: mutable, the last one's time rises in place.
        self.entries: deque[list[Any]] = deque()
        self.bucket = bucket
        self.max_before = max_before
        self.next_offset = next_offset

    def note(self, offset: int, thi: int, t: float) -> None:
        bound = (thi // self.bucket + 1) * self.bucket
        entries = self.entries
        if entries and bound <= entries[-1][1]:
            last = entries[-1]
            if t > last[2]:
                last[2] = t
        else:
            entries.append([offset, bound, t])
        self.next_offset = offset + 1

    def rebuild_point(self, horizon: float) -> tuple[int, float]:
        """``(offset, max time before it)``: replaying from ``offset`` yields every event with ``thi >= horizon``."""
        entries = self.entries
        while entries and entries[0][1] < horizon:
            seg = entries.popleft()
            if seg[2] > self.max_before:
                self.max_before = seg[2]
        if entries:
            return entries[0][0], self.max_before
        return self.next_offset, self.max_before


class _Part:
    __slots__ = ("rank", "partition", "newest", "seen_at", "tracker")

    def __init__(self, rank: int, partition: int, newest: float, tracker: RebuildTracker, now: float) -> None:
        self.rank = rank
        self.partition = partition
        self.newest = newest
        self.seen_at = now
        self.tracker = tracker


class Watermark:
    """The merge buffer: :meth:`offer` each consumed event, :meth:`release` what the watermark has passed."""

    def __init__(self, bound: float, idle_timeout: float = 5.0, tick: float = 1.0) -> None:
        self.bound = bound  # ticks
        self.idle_timeout = idle_timeout
        self.ticks_per_second = 1.0 / tick
        self.parts: dict[Hashable, _Part] = {}
        self.heap: list[Entry] = []
        self.released: Key | None = None  # key of the last released event
        self.value = NEG_INF  # the watermark (ticks) of the last release
        self.resumed_at = NEG_INF  # when a partition last spoke again after idling (see live_frontier)

    def add(self, tp: Hashable, rank: int, partition: int, next_offset: int, newest: float, now: float) -> None:
        """Track a partition; ``newest`` is its newest event time before ``next_offset`` (from a checkpoint)."""
        self.parts[tp] = _Part(rank, partition, newest, RebuildTracker(next_offset, newest), now)

    def tracker(self, tp: Hashable) -> RebuildTracker:
        return self.parts[tp].tracker

    def offer(
        self, tp: Hashable, offset: int, index: int, ev: Any, now: float, *, keep: bool = True, floor: Key | None = None
    ) -> str | None:
        """Buffer ``ev`` (an engine Event), the ``index``-th event of the message at ``offset``; return the reason
        when it is late (then it is not buffered).  ``keep=False`` tracks the event without buffering it (a type no
        query reads); ``floor``: keys at or below it count as behind the watermark (a replay's K, for new events)."""
        p = self.parts[tp]
        if now - p.seen_at > self.idle_timeout:
            self.resumed_at = now
        p.seen_at = now
        t = ev.t
        p.tracker.note(offset, ev.thi, t)
        if t < p.newest - self.bound:
            return "late"
        if t > p.newest:
            p.newest = t
        key = (t, p.rank, p.partition, offset, index)
        if (self.released is not None and key <= self.released) or (floor is not None and key <= floor):
            return "behind_watermark"
        if keep:
            heapq.heappush(self.heap, (t, p.rank, p.partition, offset, index, ev))
        return None

    def offer_point(
        self, tp: Hashable, offset: int, index: int, t: float, thi: int, now: float, floor: Key | None = None
    ) -> str | None:
        """:meth:`offer` with ``keep=False`` for an event given by its time ``t`` and ``thi`` alone (a type no query
        reads: the service does not build it)."""
        p = self.parts[tp]
        if now - p.seen_at > self.idle_timeout:
            self.resumed_at = now
        p.seen_at = now
        p.tracker.note(offset, thi, t)
        if t < p.newest - self.bound:
            return "late"
        if t > p.newest:
            p.newest = t
        if self.released is not None or floor is not None:
            key = (t, p.rank, p.partition, offset, index)
            if (self.released is not None and key <= self.released) or (floor is not None and key <= floor):
                return "behind_watermark"
        return None

    def frontier(self, members: Callable[[Hashable, _Part], bool]) -> float:
        """``min(newest - bound)`` over the partitions ``members`` selects; +inf when none is selected."""
        low = INF
        for tp, p in self.parts.items():
            if members(tp, p):
                v = p.newest - self.bound
                if v < low:
                    low = v
        return low

    def live_frontier(self, now: float, caught_up: Callable[[Hashable], bool]) -> float:
        """The normal watermark: partitions idle (silent for ``idle_timeout`` and fully read) do not count -- except
        for ``idle_timeout`` after an idle partition spoke again.

        Data after a quiet spell may come in a burst (a collector catching up after an outage), and it reaches the
        partitions a little apart: when the first partition's burst is read, the others' may not be on the broker
        yet, or their fetch not answered, so they still look idle and fully read.  Were the watermark to run ahead
        with the first partition, the others' bursts would be late.  So for one ``idle_timeout`` after a partition
        speaks again, an idle partition still counts, at its newest time plus the wall-clock time it has been silent:
        a source that was silent because nothing happened (a cluster quiet at night, Ganglia between two rounds)
        hardly holds the watermark then, a source behind by an outage holds it until its burst is in."""
        if not self.parts:
            return NEG_INF
        timeout = self.idle_timeout
        grace = now - self.resumed_at <= timeout
        low = INF
        for tp, p in self.parts.items():
            silent = now - p.seen_at
            newest = p.newest
            if silent > timeout and caught_up(tp):
                if not grace:
                    continue
                newest += silent * self.ticks_per_second
            v = newest - self.bound
            if v < low:
                low = v
        return low

    def release(self, wm: float, until: Key | None = None) -> list[Entry]:
        """Pop, in key order, the buffered entries ``(t, rank, partition, offset, index, ev)`` with ``t < wm`` (and key
        ``<= until`` when given)."""
        heap = self.heap
        out: list[Entry] = []
        while heap:
            top = heap[0]
            if top[0] >= wm:
                break
            if until is not None and top[:5] > until:
                break
            out.append(heapq.heappop(heap))
        if out:
            last = out[-1]
            self.released = last[:5]
        if wm > self.value and wm != INF:
            self.value = wm
        elif out and out[-1][0] > self.value:
            self.value = out[-1][0]
        return out

    def pending(self) -> int:
        return len(self.heap)

    def newest(self) -> float:
        return max((p.newest for p in self.parts.values()), default=NEG_INF)
