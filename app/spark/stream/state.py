"""The engine inside ``transformWithStateInPandas``: one state key per bucket of groups (see :mod:`.plan`).

Why this shape, and why it gives ``hcep match``'s records:

- Events are fed to a group's evaluators only once Spark's event-time watermark ``W`` has passed them, in the
  runtime's order ``(mid2, seq)``; an event arriving behind ``W`` is *late* (dead-lettered and counted, never fed),
  so every group sees its stream in order, exactly once.
- A group is fed its own events and the keyless events its family can need (:meth:`.plan.FamilyPlan.margin`, and
  :meth:`.plan.FamilyPlan.useful`: only where the group's own events can precede them as the patterns ask): on
  its first release, those of the bucket's keyless log within the left margin of its first event; afterwards, those
  it has not seen, whenever its own events are due (keyless events wait in the log meanwhile: a quiet group is not
  touched), and at its expiry those within the right margin of its last event.  A record is kept only in its home
  group (one holding a keyed event, or -- for matches made of keyless events only -- the family's keyless group),
  as ``hcep batch`` does.
- A keyed group whose newest event is further than its family's reach behind ``W`` cannot take part in any new
  match: it is flushed (its pending records come out, as at the end of ``hcep match``'s input) and removed, so
  quiet keys leak no state.  An end-of-input marker (``--available-now``) releases and flushes everything.
- The state is, per group, the lines fed to its evaluators since their last ``snapshot()`` (taken once more than
  :data:`REPLAY_MAX` lines piled up; restoring feeds them again), MessagePack in LZ4, the groups a call wrote
  together as one page in a ``MapState`` (:func:`pack_page`: one round trip a call), and one ``ValueState`` per
  bucket: its last release point, its keyless log, a small index of its groups (so a batch
  loads only the groups that have work, and writes only those it changed), its pages' counts, and the groups never
  fed yet (their own events waiting behind ``W``: most groups are written once so before their first release, and
  a blob of their own, rewritten as their events arrive, cost more in Spark than the meta they swell: issue 28,
  cut 10).  An event-time timer wakes a bucket with state when ``W`` moves.
- Restoring a snapshot costs more than feeding the events it holds, so the Python worker that wrote a group keeps
  it restored (:data:`_LIVE`), under the version written with it: the state store stays the truth (another worker,
  a retried task or a restart finds a different version and restores), and a group is taken out of the cache while
  a batch changes it, so a failed task never leaves a half-changed group behind.  The bucket's meta is kept the
  same way (:data:`_METAS`, its version in the blob and beside it, :data:`META_VERSION`): read and parsed again
  only after another worker wrote it.

:class:`Bucket` is plain Python (tested without Spark); :class:`BucketProcessor` adapts it to Spark's API.
"""

from __future__ import annotations

import gc
import json
import math
import time
import uuid
import zlib
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

from app.spark.record_columns import record_columns
from app.spark.stream.plan import KEYLESS_GROUP, WHOLE_GROUP, FamilyPlan, StreamPlan

#: The fields of one routed row, as :meth:`Bucket.handle` reads it: one per event and family (keyless events once per
#: bucket), an end marker, or a bad line.
ROW_FIELDS = ("fid", "gkey", "kind", "seq", "mid2", "tlo", "thi", "etype", "json", "origin", "pos", "primary")
#: What the stateful operator gets: per state key (the bucket), values of many rows each (:func:`pack_rows`: the
#: router packs a bucket's rows of a frame into one), not a Spark row per routed row.  Why: PySpark regroups a
#: ``transformWithStateInPandas`` input row by row in Python (``itertuples``, ``groupby``, a pandas frame built from
#: rows) and the shuffle sorts every row; with 200,000 events a micro-batch that was about a tenth of the Python
#: workers' time, paid again by the operator turning the frames back into tuples (issue 28, cut 15).
IN_SCHEMA = "bucket int, rows binary"
#: The columns of :data:`IN_SCHEMA` the operator reads (``bucket`` is its state key).
IN_COLUMNS = ["rows"]
#: A packed value of rows (:func:`pack_rows`) starts with this byte, then MessagePack; or with :data:`ROWS_JSON`,
#: then JSON (a text with lone surrogates, which MessagePack refuses).
ROWS_MSGPACK = b"\x01"
ROWS_JSON = b"\x02"
#: What the operator returns: ``record`` rows, ``dead`` letters, and one ``clock`` row per call (watermark, counts).
OUT_SCHEMA = (
    "kind string, query string, match string, confidence double, start double, `end` double, ret string, "
    "vkey string, emit_mid2 long, emit_seq long, qidx int, emit_idx long, gkey string, reason string, "
    "origin string, pos long, text string, wm long, fed long, groups long, busy_ms double, state_ms double, "
    "rid string, extends string"
)
OUT_COLUMNS = [c.split()[0].strip("`") for c in OUT_SCHEMA.split(", ")]
#: Row kinds (:data:`ROW_FIELDS`' ``kind``).
OWN, KEYLESS, MARKER, BAD = "own", "keyless", "marker", "bad"
#: The kind of :data:`OUT_SCHEMA` rows that carry memory-bound drops (:func:`drops_row`).
DROPPED = "dropped"
NEG_INF = -math.inf
UNKNOWN = -1  # Bucket.timer of a meta written before the timer was kept in it
INF = math.inf
#: Restored groups kept by this worker: (plan token, bucket, key) -> (version, group); least recently used out.
#: Only groups with work coming (in their bucket's index): a sealed group is let go (:meth:`Bucket.save`).
_LIVE: OrderedDict[tuple[str, int, str], tuple[str, Any]] = OrderedDict()
LIVE_GROUPS = 20_000
#: Pages (:func:`pack_page`) this worker wrote or read: (plan token, bucket, version) -> its blobs; a page never
#: changes under its version, so a copy is always right.  Least recently used out past :data:`PAGE_BYTES`.
_PAGES: OrderedDict[tuple[str, int, str], tuple[int, dict[str, memoryview]]] = OrderedDict()
PAGE_BYTES = 32 << 20
#: A call's groups go into pages of about this many bytes (one page holds at least one group).  Why not one page a
#: call: reading a value, the JVM's state server pickles it byte by byte (Pyrolite's ``put_arrayOfPrimitives``
#: through a ``StringBuilder``), and a group restored from a page not kept here reads the whole page.  At 20,000
#: events/s on local[1] a call's page grew to tens of MB, more than :data:`PAGE_BYTES`, so it was never kept and each
#: restore read it again: the state server spent 90 of 120 s doing so and the query stopped making progress (issue
#: 28, cut 16).
PAGE_MAX = 1 << 20
#: A page holding fewer live groups than this share of those written to it is copied into the next page written
#: (its groups' blobs as they are, not restored), so the stored bytes stay within about twice the live groups'.
PAGE_LIVE_SHARE = 0.5
#: Pages copied at most per call (a wave of expiries must not make one call long; a call writes a few pages of
#: :data:`PAGE_MAX`, and about as many fall sparse as their groups expire).
PAGES_COPIED = 16
#: A bucket's meta as this worker last wrote or read it: (plan token, bucket) -> (version, its JSON, the meta).
_METAS: dict[tuple[str, int], tuple[bytes, bytes, dict[str, Any]]] = {}
#: This worker's runner per (plan token, full matches, umax, a group's queries), never fed: a new group's is its
#: ``fresh()`` copy (the evaluators chosen and the types worth feeding decided once, not for every new group: issue
#: 28, cut 12).  The compiled queries it was built over are kept beside it (another plan builds its own).
_TEMPLATES: dict[tuple[str, bool, int, tuple[int, ...]], tuple[list[Any], Any]] = {}
#: Segments (:class:`Segment`) this worker decoded: (plan token, bucket, sid) -> the segment.  A segment never
#: changes under its sid, so a copy is always right; one is dropped when its bucket's meta no longer lists it.
_SEGS: dict[tuple[str, int, str], Segment] = {}
#: Per (plan token, bucket): the sids folded into the key map, in the meta's order, and the key map itself (a sealed
#: group's key -> (sid, position) of its newest entry).  See :meth:`Bucket._keymap`.
_SEGMAP: dict[tuple[str, int], tuple[list[str], dict[str, tuple[str, int]]]] = {}
#: A meta blob: this byte, a 12-byte version, then the meta as MessagePack (:func:`encode_meta`) in an LZ4 block
#: (:data:`META_V2`: the same as JSON; :data:`META_V1`: zlib'd JSON; older still: :func:`pack_blob`'s).
META_V3 = b"\x05"
META_V2 = b"\x03"
META_V1 = b"\x01"
#: A blob (:func:`pack_blob`): this byte, then the JSON as an LZ4 block.  A blob without it is zlib's (written before
#: issue 28's cut 13; a zlib stream starts with 0x78).
BLOB_LZ4 = b"\x04"
#: A group's blob (:func:`pack_group`): this byte, then its state as MessagePack in an LZ4 block.
BLOB_GROUP = b"\x07"
#: A group's runner is snapshotted again once more than this many events were fed to it since its last snapshot
#: (:meth:`StreamGroup.to_state`): restoring it feeds at most this many again (about 5 us each).
REPLAY_MAX = 64


def pack_rows(rows: list[tuple[Any, ...]]) -> bytes:
    """Routed rows (:data:`ROW_FIELDS` each) as one value of :data:`IN_SCHEMA`'s ``rows``."""
    import ormsgpack

    try:
        return ROWS_MSGPACK + ormsgpack.packb(rows)
    except TypeError:  # a string with lone surrogates: JSON escapes them, and gives them back
        return ROWS_JSON + json.dumps(rows).encode("ascii")


def unpack_rows(blob: bytes | bytearray | memoryview) -> list[list[Any]]:
    """The rows of :func:`pack_rows`' value (each a list of :data:`ROW_FIELDS`)."""
    view = memoryview(blob)
    if view[:1] == ROWS_MSGPACK:
        import ormsgpack

        out: list[list[Any]] = ormsgpack.unpackb(view[1:])
        return out
    if view[:1] == ROWS_JSON:
        rows: list[list[Any]] = json.loads(bytes(view[1:]))
        return rows
    raise ValueError(f"not a value of routed rows (first byte {bytes(view[:1])!r})")


def pack_blob(obj: Any) -> bytes:
    """A snapshot as state: JSON (orjson: the snapshot is the operator's largest cost), then LZ4.  LZ4, not zlib:
    zlib's level 1 took 24 of a group's 74 us to write (its JSON 50; LZ4 4) and 10 us to read back (LZ4 1); its
    output is a quarter smaller, which the state store would pay for in bytes only (issue 28, cut 13)."""
    import lz4.block
    import orjson

    return BLOB_LZ4 + lz4.block.compress(orjson.dumps(obj))


def pack_group(state: dict[str, Any]) -> bytes:
    """A group's state (:meth:`StreamGroup.to_state`) as stored: MessagePack (its lines and its runner's snapshot are
    bytes, copied as they are), then LZ4."""
    import lz4.block
    import ormsgpack

    return BLOB_GROUP + lz4.block.compress(ormsgpack.packb(state))


def unpack_blob(blob: bytes | bytearray | memoryview) -> Any:
    """The value of :func:`pack_blob`'s or :func:`pack_group`'s blob (or a zlib blob, written before cut 13)."""
    import orjson

    view = memoryview(blob)
    if view[:1] == BLOB_GROUP:
        import lz4.block
        import ormsgpack

        return ormsgpack.unpackb(lz4.block.decompress(view[1:]))
    if view[:1] == BLOB_LZ4:
        import lz4.block

        return orjson.loads(lz4.block.decompress(view[1:]))
    return orjson.loads(zlib.decompress(view))


#: The ``MapState`` key of a page (:func:`pack_page`) is this and its version; a group's key is ``fid|gkey``.
PAGE = "@"
#: The ``MapState`` key holding the version of the bucket's meta (the 12 bytes after its first), written with it:
#: a worker whose copy (:data:`_METAS`) is that version does not read the meta.  Why: a value read from the state
#: store comes through the JVM's state server, which pickles it byte by byte (Pyrolite's ``put_arrayOfPrimitives``
#: through a ``StringBuilder``), and the meta -- megabytes at 20,000 events/s -- was read in every call, the
#: timer's too (issue 28, cut 17).  A meta without it (older checkpoints) is read as before.
META_VERSION = "~meta"
#: A page: this byte, the header's length (4 bytes, big-endian), the header, the groups' blobs one after another.
PAGE_V1 = b"\x02"


def pack_page(blobs: dict[str, bytes]) -> bytes:
    """The groups a call wrote, as one state value: one state store round trip a call instead of one a group (each a
    socket message to the JVM: 11 % of the Python workers' time at 4,000 events/s, issue 28 cut 10).  Each group keeps
    its own blob (:func:`pack_blob`), found by the header (JSON: key -> [offset, length] after it), so a restore
    decompresses only the group it wants."""
    import orjson

    header: dict[str, list[int]] = {}
    at = 0
    for key, blob in blobs.items():
        header[key] = [at, len(blob)]
        at += len(blob)
    head = orjson.dumps(header)
    return b"".join([PAGE_V1, len(head).to_bytes(4, "big"), head, *blobs.values()])


def page_blobs(page: bytes | bytearray | memoryview) -> dict[str, memoryview]:
    """A page's blobs by group key (views into ``page``: nothing copied)."""
    import orjson

    view = memoryview(page)
    if view[:1] != PAGE_V1:
        raise ValueError(f"not a page of groups (first byte {bytes(view[:1])!r})")
    n = int.from_bytes(view[1:5], "big")
    base = 5 + n
    return {key: view[base + at : base + at + size] for key, (at, size) in orjson.loads(view[5:base]).items()}


#: The ``MapState`` key of a segment (:class:`Segment`) is this and its sid.
SEGMENT = "#"
#: Completed segments a bucket's meta remembers (``done``), so that a worker that folded one can tell it finished
#: from one it folded in a task that failed (whose keys' older entries must come back: :meth:`Bucket._keymap`).
DONE_KEPT = 4096


class Segment:
    """Quiet started groups of one family that one call sealed (:meth:`Bucket._seal`), as columns sorted by their
    expiry deadline (``hi`` + the family's reach): written once, never changed.  The bucket's meta keeps per segment
    how far expiry has gone (``cursor``) and which later positions left it before (``dead``: revived by new events).

    Why: a stream's index held every group until its family's reach had passed (ten minutes for tasks, a day for
    jobs), and every call walked it, wrote it whole into the meta and, on another worker, parsed it whole: at 20,000
    events/s a quarter of a million entries a bucket after eight minutes, scattered over the heap, about a tenth of
    the Python workers' time and growing for as long as the reach (issue 28, cut 16).  Sealed, a quiet group costs
    nothing until it expires or its key comes again."""

    __slots__ = ("fid", "keys", "hi", "ver", "fed", "dl", "minfed")

    def __init__(self, fid: int, keys: list[str], hi: list[int], ver: list[str], fed: list[Any], dl: list[int]) -> None:
        self.fid, self.keys, self.hi, self.ver, self.fed, self.dl = fid, keys, hi, ver, fed, dl
        # minfed[i]: the least fed_to at or after position i (what the keyless log must still hold for them)
        least = INF
        minfed: list[Any] = [None] * len(keys)
        for i in range(len(keys) - 1, -1, -1):
            f = fed[i]
            if f is not None and f < least:
                least = f
            minfed[i] = None if least == INF else least
        self.minfed = minfed

    def entry(self, pos: int) -> list[Any]:
        """The index entry of the group at ``pos`` (as :meth:`Bucket._index` writes them)."""
        return [self.fid, self.hi[pos], None, True, self.ver[pos], self.fed[pos]]

    def pack(self) -> bytes:
        import lz4.block
        import ormsgpack

        raw = ormsgpack.packb([self.fid, self.keys, self.hi, self.ver, self.fed, self.dl])
        return SEGMENT_V1 + lz4.block.compress(raw)

    @classmethod
    def unpack(cls, blob: bytes | bytearray | memoryview) -> Segment:
        import lz4.block
        import ormsgpack

        view = memoryview(blob)
        if view[:1] != SEGMENT_V1:
            raise ValueError(f"not a segment of sealed groups (first byte {bytes(view[:1])!r})")
        fid, keys, hi, ver, fed, dl = ormsgpack.unpackb(lz4.block.decompress(view[1:]))
        return cls(fid, keys, hi, ver, fed, dl)


#: A segment's value: this byte, then its columns as MessagePack in an LZ4 block.
SEGMENT_V1 = b"\x06"


def _still_sealed(rec: list[Any]) -> int:
    """Groups a segment still holds, from its line in the meta (:attr:`Bucket.segs`): its size, less the positions
    before the cursor (expired) and the dead ones after it (unsealed)."""
    return int(rec[1] - rec[2] - len(rec[4]))


_MID2 = itemgetter(0)
_UNSET: Any = object()


def between(log: list[list[Any]], lo2: float, hi2: float) -> list[list[Any]]:
    """The entries of ``log`` (in ``(mid2, seq)`` order) with ``lo2 <= mid2 < hi2``, found by bisection: the log holds
    the keyless events of the longest margin (Q5's ten minutes), and each released group takes a slice of it."""
    i = 0 if lo2 == NEG_INF else bisect_left(log, lo2, key=_MID2)
    return log[i : bisect_left(log, hi2, lo=i, key=_MID2)]


def _gkey(key: str) -> str:
    """The group key of a bucket's ``fid|gkey`` key."""
    return key.split("|", 1)[1]


def max_width(log: list[list[Any]]) -> int:
    """The widest ``thi - tlo`` of a keyless log's entries (0 when empty)."""
    return max((e[3] - e[2] for e in log), default=0)


def _none(n: int) -> list[None]:
    return [None] * n


def dead_row(reason: str, origin: str | None, pos: int | None, text: str | None) -> tuple:
    return ("dead", *_none(12), reason, origin, pos, text, *_none(7))


def drops_row(query: str, n: int) -> tuple:
    """What the memory bounds dropped of one query in one call (runs, or enumerations cut short): the count in
    ``emit_idx``; the sink adds them to its totals."""
    return (DROPPED, query, *_none(9), n, *_none(12))


def clock_row(wm_ms: int, fed: int, groups: int, busy_ms: float = 0.0, state_ms: float = 0.0) -> tuple:
    """One per call: the watermark it saw, events fed, groups held, and where its time went (all of the call; the
    state's share: snapshots, restores and the state store's calls)."""
    return ("clock", *_none(15), None, wm_ms, fed, groups, busy_ms, state_ms, None, None)


# ------------------------------------------------------------------------------------------------ one group


class StreamGroup:
    """One group's queries (a :class:`engine.evaluate.PackRunner`, the driver of ``hcep match`` and ``hcep run``,
    under the pack's memory bounds), the ids of its own (keyed) events for the home rule, and its own events the
    watermark has not released yet."""

    def __init__(self, plan: StreamPlan, fam: FamilyPlan, gkey: str, compiled: list[Any], state: Any = None) -> None:
        self.plan, self.fam, self.gkey = plan, fam, gkey
        self.queries = fam.queries if gkey == WHOLE_GROUP else fam.keyless if gkey == KEYLESS_GROUP else fam.keyed
        self.qidx = {plan.plans[q].name: q for q in self.queries}
        self.compiled = compiled
        self._runner: Any = None  # built when first fed or restored: a group that only holds pending events has none
        self.drops_seen: dict[str, int] = {}  # the runner's drop counts already reported (Bucket.drops)
        self.chains: dict[str, bool] = {}  # a chain's latest record id -> whether its whole signature holds a key
        self.own: dict[str, int] = {}  # id -> thi of the group's keyed events fed (home rule)
        self.pending: list[list[Any]] = []  # [mid2, seq, tlo, thi, json, type] not yet released
        # type -> the earliest tlo of the group's own events of that type (FamilyPlan.useful); None: not known
        self.first: dict[str, int] | None = {}
        self.started = False  # fed at least once (the keyless left margin was merged in)
        self.lo: float = INF
        self.hi: float = NEG_INF
        self.fed_to: float = NEG_INF  # ticks: the bucket's keyless log before this point has been considered
        self.idx = 0
        # The runner's state as stored: a snapshot (pack_blob's bytes; None: a fresh runner) and the events fed since,
        # as (seq, the line's UTF-8 bytes) -- see :meth:`to_state`.
        self.base: bytes | None = None
        self.replay: list[tuple[int, bytes]] = []
        if state is not None:
            self.own = dict(state["own"])
            self.pending = [list(p) for p in state["pend"]]
            first = state.get("first")  # a snapshot written before it was kept: every keyless event is useful
            self.first = None if first is None or any(len(p) < 6 for p in self.pending) else dict(first)
            self.started = bool(state["started"])
            self.lo = INF if state["lo"] is None else state["lo"]
            self.hi = NEG_INF if state["hi"] is None else state["hi"]
            self.idx = state["idx"]
            self.fed_to = NEG_INF if state["fed"] is None else state["fed"]
            self.chains = dict(state.get("chains") or {})
            if "snap" in state:  # written before cut 19: the runner's whole snapshot
                if state["snap"] is not None:
                    # The pack feeder's snapshot (the format of the bare PackFeeder this group held before: older
                    # checkpoints restore unchanged).  Drops it holds were reported when they happened.
                    self.runner.restore(state["snap"])
                    self.drops_seen = dict(self.runner.limit_drops())
                    self.base = pack_blob(state["snap"])  # what the events fed from now on are replayed over
            elif state.get("base") is not None or state.get("replay"):
                self._replayed(state.get("base"), state.get("replay") or [])

    @property
    def runner(self) -> Any:
        """The group's queries, built on first use (making them is most of a new group's cost)."""
        if self._runner is None:
            at = (self.plan.token, self.plan.full_matches, self.plan.umax, tuple(self.queries))
            got = _TEMPLATES.get(at)
            if got is None or got[0] is not self.compiled:
                from app.spark.batch_plan import plans_limits
                from engine.evaluate import PackRunner

                template = PackRunner.of(
                    [self.compiled[q] for q in self.queries],
                    self.plan.umax,
                    limits=plans_limits(self.plan.plans),
                    increments=not self.plan.full_matches,  # growing runs as chains (semantics section 5)
                )
                if len(_TEMPLATES) >= 64:  # plans come and go in one process only in tests
                    _TEMPLATES.clear()
                got = _TEMPLATES[at] = (self.compiled, template)
            self._runner = got[1].fresh()
        return self._runner

    def new_drops(self) -> dict[str, int]:
        """Per query: partial matches the memory bounds dropped since the last call (none before the runner).  Asked
        of every group a call fed: the runner's total first (a sum of counters), the queries only when it moved."""
        if self._runner is None or self._runner.dropped() == sum(self.drops_seen.values()):
            return {}
        out: dict[str, int] = {}
        for name, n in self._runner.limit_drops().items():
            seen = self.drops_seen.get(name, 0)
            if n > seen:
                out[name] = n - seen
                self.drops_seen[name] = n
        return out

    def to_state(self) -> dict[str, Any]:
        """The group as state (:func:`pack_group`).  The runner is stored as the events fed to it since its last
        snapshot (``replay``, the lines as they came), and a new snapshot (``base``) is taken only once more than
        :data:`REPLAY_MAX` of them have piled up.  Why: most groups are written once or twice in their life with a
        dozen events, and their evaluators' snapshot -- about 5 KB of JSON holding the events again, decoded -- was
        51 us of the 110 us a group cost the operator (snapshot, its JSON and LZ4: 24 % of its CPU at 20,000
        events/s), while their lines cost a copy.  Restoring (another worker, a retried task, a sealed group expiring)
        feeds the lines again to a fresh runner, the records they made dropped: the same state, the evaluators being
        deterministic (issue 28, cut 19)."""
        if self.started and len(self.replay) > REPLAY_MAX:
            self.base = pack_blob(self.runner.snapshot())
            self.replay = []
        return {
            "own": self.own,
            "pend": self.pending,
            "started": self.started,
            "lo": None if self.lo == INF else self.lo,
            "hi": None if self.hi == NEG_INF else self.hi,
            "idx": self.idx,
            "fed": None if self.fed_to == NEG_INF else self.fed_to,
            "first": self.first,
            "chains": self.chains,
            "base": self.base,
            "replay": self.replay,
        }

    def _replayed(self, base: bytes | None, replay: list[Any]) -> None:
        """The runner of :meth:`to_state`'s ``base`` and ``replay``: the snapshot restored, then each line fed again
        (decoded as :meth:`release` decodes it), what it completes dropped -- it came out when first fed."""
        from engine.events import decoder_for, loads_exact

        runner = self.runner
        if base is not None:
            runner.restore(unpack_blob(base))
        decode = decoder_for(self.plan.tick).event
        for seq, raw in replay:
            runner.feed(decode(loads_exact(raw), seq))
        self.base = None if base is None else bytes(base)
        self.replay = [(int(seq), bytes(raw)) for seq, raw in replay]
        self.drops_seen = dict(runner.limit_drops())  # reported when they happened

    def min_pending(self) -> int | None:
        # the least entry's mid2 is the least mid2 (entries compare by mid2 first), found without a generator
        return min(self.pending)[0] if self.pending else None

    def expired(self, w: float) -> bool:
        """No event at or after ``w`` (ticks) can still share a match with this keyed group's events."""
        if self.gkey in (KEYLESS_GROUP, WHOLE_GROUP) or self.pending or not self.started:
            return False
        return w - self.plan.umax > self.hi + self.fam.reach

    def release(
        self,
        w: float,
        log: list[list[Any]],
        decode: Any,
        out: list[tuple],
        final: bool = False,
        shared_events: dict[tuple[int, str], tuple[Any, bytes]] | None = None,
        width: int | None = None,
    ) -> int:
        """Feed, in order, the own events before ``w`` and the keyless events of ``log`` this group needs: once
        started, those it has not considered yet (``[fed_to, w)``); on the first release, those before ``w`` within
        the left margin of its first event; ``final`` (the group expires: no own event can follow), only those within
        the right margin of its last.  Returns the number of events fed.  ``log`` is in ``(mid2, seq)`` order;
        ``width``: its widest event's ``thi - tlo`` (ticks), when the caller knows it.

        A keyed group is released only when its own events are due or it expires: keyless events wait in the
        bucket's log until then (the same events in the same order, fed later), so a quiet group costs nothing."""
        from engine.events import loads_exact

        w2 = 2 * w
        own_now = sorted((p for p in self.pending if p[0] < w2), key=lambda p: (p[0], p[1]))
        if not self.started and not own_now and self.gkey not in (KEYLESS_GROUP, WHOLE_GROUP):
            return 0
        if own_now:
            self.pending = [p for p in self.pending if p[0] >= w2]
            first = self.first
            if first is not None:
                for p in own_now:
                    if len(p) < 6:
                        self.first = first = None
                        break
                    if p[2] < first.get(p[5], INF):
                        first[p[5]] = p[2]
        keyed_group = self.gkey not in (KEYLESS_GROUP, WHOLE_GROUP)
        shared: list[list[Any]] = []
        if self.fam.attr is not None and log:
            if self.started or not keyed_group:
                shared = between(log, 2 * self.fed_to if self.started else NEG_INF, w2)
            else:
                first = min(p[2] for p in own_now)
                # Nothing ending before first - (the widest left margin) can be taken: start the scan there.
                wide = max_width(log) if width is None else width
                margin = self.fam.margin
                for e in between(log, 2 * (first - self.fam.widest_left) - wide, w2):
                    m = margin(e[4])
                    if m is not None and e[3] >= first - m[0]:
                        shared.append(e)
            if keyed_group:
                shared = self._needed(shared, w, final)
        self.started = True
        self.fed_to = w
        merged = sorted(
            [(p[0], p[1], p[2], p[3], p[4], True) for p in own_now]
            + [(e[0], e[1], e[2], e[3], e[5], False) for e in shared],
            key=lambda r: (r[0], r[1]),
        )
        cache = {} if shared_events is None else shared_events
        runner, replay = self.runner, self.replay
        for mid2, seq, tlo, thi, text, own in merged:
            # Python's value at orjson's speed (the texts are valid JSON: the router's); the bytes kept to replay
            if own:
                raw = text.encode("utf-8", "surrogatepass")
                ev = decode(loads_exact(raw), seq)
            else:  # a keyless event goes to many groups: decoded once per call (events are never changed)
                # by line, not by seq alone: two files' lines can share a seq (source.seq_of)
                got = cache.get((seq, text))
                if got is None:
                    raw = text.encode("utf-8", "surrogatepass")
                    got = cache[(seq, text)] = (decode(loads_exact(raw), seq), raw)
                ev, raw = got
            replay.append((seq, raw))
            if own:
                self.own[ev.id] = thi
                self.lo = min(self.lo, tlo)
                self.hi = max(self.hi, thi)
            for _, record in runner.feed(ev):
                self._emit(record, mid2, seq, out)
        if keyed_group or self.fam.attr is None:
            return len(merged)
        # The keyless group's own ids (keyed events of negated types) are needed only while they can be in a match.
        if self.fam.reach < 2**60 and self.own:
            floor = w - 4 * self.fam.reach - 2 * self.plan.umax
            self.own = {i: t for i, t in self.own.items() if t >= floor}
        return len(merged)

    def _needed(self, shared: list[list[Any]], w: float, final: bool) -> list[list[Any]]:
        """Of the keyless events ``shared``, those this keyed group can still need: within its family's margin, and
        where its own events can precede them as the patterns ask (:meth:`.plan.FamilyPlan.useful_from`; an own event
        still to come can lie before one up to umax ticks behind ``w``); ``final``, only those within the right margin
        of its last own event.  Decided once per event type, then one comparison per event."""
        fam, soon = self.fam, w - self.plan.umax
        useful = fam.useful_from(self.first)
        # etype -> (the least thi kept, the greatest tlo kept); None: never needed
        limits: dict[str, tuple[float, float] | None] = {}
        kept = []
        for e in shared:
            etype = e[4]
            lim = limits.get(etype, _UNSET)
            if lim is _UNSET:
                m = fam.margin(etype)
                lim = limits[etype] = (
                    None
                    if m is None
                    else (
                        min(soon, useful.get(etype, NEG_INF)),
                        self.hi + m[1] if final else INF,
                    )
                )
            if lim is not None and e[3] >= lim[0] and e[2] <= lim[1]:
                kept.append(e)
        return kept

    def flush(self, out: list[tuple]) -> None:
        if self._runner is None and not self.started:
            return  # never fed: nothing to flush
        for _, record in self.runner.flush():
            self._emit(record, 2**62, 2**62, out)

    def _emit(self, record: dict[str, Any], mid2: int, seq: int, out: list[tuple]) -> None:
        self.idx += 1
        rid = record.get("id")
        if self.gkey != WHOLE_GROUP:
            own = self.own
            holds = any(i in own for ids in record["match"].values() for i in ids)
            if rid is not None:  # an increment's home is its whole signature's
                holds = self.chains.pop(record.get("extends") or "", False) or holds
                self.chains[rid] = holds
            if holds != (self.gkey != KEYLESS_GROUP):
                return  # this match's home is another group
        out.append(
            (
                "record",
                *record_columns(record),
                int(mid2),
                int(seq),
                self.qidx.get(record["query"], -1),
                self.idx,
                self.gkey,
                *_none(9),
                rid,
                record.get("extends"),
            )
        )


# ------------------------------------------------------------------------------------------------ one bucket


class Bucket:
    """One state key: its groups, keyless log and release point, over a store of group blobs (a dict in tests, the
    ``MapState`` in Spark: ``get(key)``, ``put(key, blob)``, ``remove(key)``)."""

    def __init__(self, plan: StreamPlan, compiled: list[Any], meta: Any, store: Any, number: int = 0) -> None:
        from engine.events import decoder_for

        self.plan, self.compiled, self.store, self.number = plan, compiled, store, number
        self.decode = decoder_for(plan.tick).event
        meta = meta or {}
        self.released: float = NEG_INF if meta.get("released") is None else meta["released"]
        self.log: dict[int, list[list[Any]]] = {int(k): v for k, v in meta.get("log", {}).items()}
        # key -> [fid, hi, min pending mid2, started, version]: which groups have work, without loading them
        self.index: dict[str, list[Any]] = meta.get("index", {})
        # the event-time timer registered for this bucket (ms; None: none; UNKNOWN: a meta from before it was kept)
        self.timer: int | None = meta.get("timer", UNKNOWN)
        # key -> the state of a group never fed (its own events wait behind the watermark): kept here, in the meta
        # written every call anyway, rather than as a blob in the call's page (most groups are written once like
        # this before their first release; as blobs, rewritten as their events came, they cost the JVM more: cut 10),
        # as :func:`encode_waiting`'s bytes (a dict in a JSON meta of before cut 14: :func:`decode_waiting` takes both)
        self.waiting: dict[str, bytes | dict[str, Any]] = meta.get("wait", {})
        # page version -> [its groups still stored there, those written to it] (:meth:`save`); a version not here is
        # a blob of the group's own, under its key (a checkpoint written before pages)
        self.pages: dict[str, list[int]] = meta.get("pages", {})
        # page version -> the page its groups' blobs were copied into (:meth:`_copy_sparse`): a group keeps the
        # version it was written under (a sealed segment never changes), and that version is read through this
        self.alias: dict[str, str] = meta.get("alias", {})
        # sid -> [fid, size, cursor, the deadline at the cursor (None: done), dead positions at or after the cursor,
        # the least fed_to at or after the cursor]: the bucket's sealed segments, in the order they were sealed
        self.segs: dict[str, list[Any]] = meta.get("segs", {})
        # sids of the latest completed segments (DONE_KEPT), oldest first (:meth:`_keymap`)
        self.done: list[str] = meta.get("done", [])
        self.fams = {f.fid: f for f in plan.families}
        self.live: dict[str, StreamGroup] = {}
        self.touched: set[str] = set()
        # (seq, line) -> the keyless event, decoded once in this call, and the line's bytes
        self.shared_events: dict[tuple[int, str], tuple[Any, bytes]] = {}
        self.state_s = 0.0  # seconds in restores, snapshots and state store calls (reported in the clock row)
        self.drops: dict[str, int] = {}  # per query: dropped by the memory bounds in this call (drops rows)
        self.meta_read: tuple[bytes, bytes] | None = None  # (version, JSON) of the meta read (BucketProcessor)
        self._kmap: dict[str, tuple[str, int]] | None = None  # the worker's key map, once brought up to the meta

    def meta(self) -> dict[str, Any]:
        return {
            "released": None if self.released == NEG_INF else self.released,
            "log": {str(k): v for k, v in self.log.items() if v},
            "index": self.index,
            "timer": self.timer,
            "wait": {k: v if isinstance(v, bytes) else encode_waiting(v) for k, v in self.waiting.items()},
            "pages": self.pages,
            "alias": self.alias,
            "segs": self.segs,
            "done": self.done,
        }

    def empty(self) -> bool:
        return not self.index and not self.segs and not any(self.log.values())

    def groups_held(self) -> int:
        """Groups the bucket holds: in the index and sealed in segments."""
        return len(self.index) + sum(_still_sealed(rec) for rec in self.segs.values())

    def group(self, fid: int, gkey: str) -> StreamGroup:
        key = f"{fid}|{gkey}"
        got = self.live.get(key)
        if got is not None:
            return got
        entry = self.index.get(key)
        if entry is None and self.segs:
            entry = self._unseal(key)
        cached = _LIVE.pop((self.plan.token, self.number, key), None)
        if entry is not None and cached is not None and cached[0] == entry[4]:
            got = cached[1]
        elif key in self.waiting:
            got = StreamGroup(self.plan, self.fams[fid], gkey, self.compiled, decode_waiting(self.waiting[key]))
        else:
            t0 = time.perf_counter()
            blob = self._stored(key, entry[4]) if entry is not None and entry[4] is not None else None
            state = unpack_blob(blob) if blob is not None else None
            got = StreamGroup(self.plan, self.fams[fid], gkey, self.compiled, state)
            self.state_s += time.perf_counter() - t0
        self.live[key] = got
        return got

    def _stored(self, key: str, version: str) -> Any:
        """A group's blob as stored under ``version``: in a page (or the page it was copied into), or a blob of its
        own (older checkpoints)."""
        version = self.alias.get(version, version)
        if version in self.pages:
            return self._page(version).get(key)
        return self.store.get(key)

    def _page(self, version: str) -> dict[str, memoryview]:
        """A page's blobs: this worker's copy (:data:`_PAGES`), else read from the store (one round trip)."""
        at = (self.plan.token, self.number, version)
        got = _PAGES.get(at)
        if got is not None:
            _PAGES.move_to_end(at)
            return got[1]
        raw = self.store.get(PAGE + version)
        if raw is None:  # the meta names a page the store lacks: its groups restore empty, as a missing blob did
            return {}
        blobs = page_blobs(bytes(raw))
        _keep_page(at, len(raw), blobs)
        return blobs

    def _let_go(self, key: str, version: str | None) -> None:
        """The copy of group ``key`` stored under ``version`` is no longer its state: its page counts one group less
        (and is removed when none is left), or its own blob is removed."""
        if version is None:
            return
        version = self.alias.get(version, version)
        counts = self.pages.get(version)
        if counts is None:
            self.store.remove(key)
            return
        counts[0] -= 1
        if counts[0] <= 0:
            self._remove_page(version)

    def _remove_page(self, version: str) -> None:
        """A page none of the bucket's groups reads any more: out of the store, the counts and this worker."""
        del self.pages[version]
        for old in [old for old, now in self.alias.items() if now == version]:
            del self.alias[old]
        self.store.remove(PAGE + version)
        _PAGES.pop((self.plan.token, self.number, version), None)

    def handle(self, rows: Iterable[tuple], wm_ms: int) -> list[tuple]:
        """One call: buffer the new rows (late ones dead-lettered), release up to the watermark, expire quiet groups;
        at an end marker, release and flush everything.  ``rows``: each of :data:`ROW_FIELDS`."""
        started = time.perf_counter()
        w = wm_ms / (1000.0 * self.plan.tick) if wm_ms > 0 else NEG_INF
        w2 = 2 * w
        out: list[tuple] = []
        end = False
        new_keyless: set[int] = set()
        # (fid, gkey) -> the group its rows go to: looked up once a call, not once a row (most rows are own events)
        buffered: dict[tuple[int, str], StreamGroup] = {}
        for fid, gkey, kind, seq, mid2, tlo, thi, etype, text, origin, pos, primary in rows:
            if kind == MARKER:
                end = True
                continue
            if kind == BAD:
                out.append(dead_row(etype, origin, pos, text))
                continue
            if mid2 < w2:
                if primary:
                    out.append(dead_row("late", origin, pos, text))
                continue
            if kind == KEYLESS:
                self.log.setdefault(fid, []).append([mid2, seq, tlo, thi, etype, text])
                new_keyless.add(fid)
            else:
                g = buffered.get((fid, gkey))
                if g is None:
                    g = buffered[(fid, gkey)] = self.group(fid, gkey)
                g.pending.append([mid2, seq, tlo, thi, text, etype])
        for g in buffered.values():  # once a group, not once an event (min_pending reads all its pending events)
            self._index(g)
        for fid in new_keyless:
            self.log[fid].sort(key=lambda e: (e[0], e[1]))
            if self.fams[fid].keyless and self.plan.bucket_of(fid, KEYLESS_GROUP) == self.number:
                self._index(self.group(fid, KEYLESS_GROUP))  # it sees every keyless event from the start
        fed = self.release(INF if end else w, out)
        if end:
            self._unseal_all()
            for key in list(self.index):
                fid, gkey = key.split("|", 1)
                self.group(int(fid), gkey).flush(out)
                self._drop(key)
            self.log = {}
            self.released = NEG_INF
        for g in self.live.values():
            self._count_drops(g)
        out.extend(drops_row(name, n) for name, n in sorted(self.drops.items()))
        self.drops = {}
        self.save()
        busy = 1000 * (time.perf_counter() - started)
        out.append(clock_row(int(wm_ms), fed, self.groups_held(), busy, 1000 * self.state_s))
        return out

    def release(self, w: float, out: list[tuple]) -> int:
        """Feed the groups with work up to ``w`` (ticks): those with own events due, the keyless group (it takes every
        keyless event as it comes); expire the quiet ones -- all decided from the index, so a group without work is
        not even loaded."""
        if w <= self.released:
            return 0
        prev = self.released
        lo2, w2 = 2 * prev, 2 * w
        soon = w - self.plan.umax
        # (key, fid, whether it has events to release -- else it expires): decided from the index, without loading it.
        # The keyless groups (one a family) are looked up, not searched for: this loop visits every group the bucket
        # holds, most of them quiet, every call, so it does the least per group (issue 28, cut 13).
        work: list[tuple[str, int, bool]] = []
        special: set[str] = set()
        for fid in self.fams:
            for gkey in (KEYLESS_GROUP, WHOLE_GROUP):
                key = f"{fid}|{gkey}"
                entry = self.index.get(key)
                if entry is None:
                    continue
                special.add(key)
                new_keyless = gkey == KEYLESS_GROUP and bool(between(self.log.get(fid, []), lo2, w2))
                if new_keyless or entry[2] is not None and entry[2] < w2:
                    work.append((key, fid, True))
        reach = {fid: fam.reach for fid, fam in self.fams.items()}
        for key, entry in self.index.items():
            minp = entry[2]
            if minp is not None:
                if minp < w2 and key not in special:
                    work.append((key, entry[0], True))
            elif entry[3] and entry[1] is not None and soon > entry[1] + reach[entry[0]] and key not in special:
                work.append((key, entry[0], False))  # quiet past its family's reach: it expires
        work.extend(self._expiring(soon))  # sealed groups past their deadline, moved back into the index
        widths: dict[int, int] = {}
        fed = 0
        for key, fid, due in sorted(work):
            g = self.group(fid, _gkey(key))
            log = self.log.get(fid, [])
            width = widths.get(fid)
            if width is None:
                width = widths[fid] = max_width(log)
            if due:
                fed += g.release(w, log, self.decode, out, shared_events=self.shared_events, width=width)
                self._index(g)
            if g.expired(w):
                fed += g.release(w, log, self.decode, out, final=True, shared_events=self.shared_events, width=width)
                g.flush(out)
                self._drop(key)
        self.released = w
        self._prune(w)
        return fed

    def _prune(self, w: float) -> None:
        """Keep the keyless events not yet released and those a group starting now could still need."""
        if w == INF:
            return
        floor = w - self.plan.max_left - self.plan.umax - 1  # a group starting now looks back this far
        waiting = [e[5] for e in self.index.values() if e[3] and e[5] is not None]  # started groups' fed_to
        waiting += [rec[5] for rec in self.segs.values() if rec[5] is not None]  # and the sealed ones'
        floor2 = 2 * min(waiting, default=w)
        for fid, log in self.log.items():
            self.log[fid] = [e for e in log if e[0] >= floor2 or e[3] >= floor]

    def _index(self, g: StreamGroup) -> None:
        """Note a group changed in this call (written back by :meth:`save`)."""
        key = f"{g.fam.fid}|{g.gkey}"
        old = self.index.get(key)
        version = old[4] if old is not None else None
        fed_to = None if g.fed_to == NEG_INF else g.fed_to
        self.index[key] = [g.fam.fid, None if g.hi == NEG_INF else g.hi, g.min_pending(), g.started, version, fed_to]
        self.live[key] = g
        self.touched.add(key)

    def _count_drops(self, g: StreamGroup) -> None:
        for name, n in g.new_drops().items():
            self.drops[name] = self.drops.get(name, 0) + n

    def _drop(self, key: str) -> None:
        entry = self.index.pop(key, None)
        gone = self.live.pop(key, None)
        if gone is not None:
            self._count_drops(gone)
        self.touched.discard(key)
        self.waiting.pop(key, None)
        if entry is not None:
            self._let_go(key, entry[4])

    def save(self) -> None:
        """Write back the groups changed in this call as one page under a new version (the groups kept restored by
        this worker under it); a group never fed into :attr:`waiting` (the meta) instead.  Pages mostly let go of
        are copied into this one (:meth:`_copy_sparse`)."""
        t0 = time.perf_counter()
        pages: list[tuple[str, dict[str, bytes]]] = []
        written: list[str] = []
        size = PAGE_MAX
        for key in sorted(self.touched):
            g = self.live[key]
            entry = self.index[key]
            old, entry[4] = entry[4], None
            self._let_go(key, old)
            if not g.started:
                self.waiting[key] = encode_waiting(g.to_state())
                continue
            self.waiting.pop(key, None)
            blob = pack_group(g.to_state())
            if size + len(blob) > PAGE_MAX and (not pages or pages[-1][1]):
                pages.append((uuid.uuid4().hex[:12], {}))
                size = 0
            version, blobs = pages[-1]
            blobs[key] = blob
            size += len(blob)
            entry[4] = version
            _LIVE[(self.plan.token, self.number, key)] = (version, g)
            written.append(key)
        self.touched.clear()
        if pages:
            pages.extend(self._copy_sparse())
        for version, blobs in pages:
            page = pack_page(blobs)
            self.store.put(PAGE + version, page)
            self.pages[version] = [len(blobs), len(blobs)]
            _keep_page((self.plan.token, self.number, version), len(page), page_blobs(page))
        self._seal()
        # A group sealed now waits to expire (or for a key or keyless event to wake it): it is let go here, its
        # objects still warm, rather than pushed out of the cache later (freeing cold evicted groups was 10 % of the
        # workers at 20,000 events/s); the operator alone used the same CPU and 30 % less memory (issue 28, cut 18).
        for key in written:
            if key not in self.index:
                _LIVE.pop((self.plan.token, self.number, key), None)
        while len(_LIVE) > LIVE_GROUPS:
            _LIVE.popitem(last=False)
        self.state_s += time.perf_counter() - t0

    def _version_of(self, key: str) -> str | None:
        """The version group ``key`` is stored under (in the index or sealed), without moving it; None: none."""
        entry = self.index.get(key)
        if entry is not None:
            version: str | None = entry[4]
            return version
        hit = self._sealed(key)
        return None if hit is None else hit[2].ver[hit[1]]

    # -------------------------------------------------------------------------------------------- sealed groups

    def _keymap(self) -> dict[str, tuple[str, int]]:
        """This worker's key map of the bucket's segments (:data:`_SEGMAP`), brought up to the meta once a call:
        segments the meta no longer lists and that completed are folded out, new ones folded in, in the order they
        were sealed (a key's newest entry wins; its older ones are dead).  Anything else -- a segment sealed by a
        task that failed, or one the meta lists before a segment already folded -- and the map is built again from
        the meta's segments, so it never hides a live entry."""
        if self._kmap is not None:
            return self._kmap
        at = (self.plan.token, self.number)
        got = _SEGMAP.get(at)
        if got is None:
            got = _SEGMAP[at] = ([], {})
        folded, kmap = got
        current = self.segs
        gone = [sid for sid in folded if sid not in current]
        rebuild = False
        if gone:
            done = set(self.done)
            rebuild = any(sid not in done for sid in gone)
            if not rebuild:
                for sid in gone:
                    self._fold_out(sid, folded, kmap)
        if not rebuild:
            have = set(folded)
            order = list(current)
            first_new = next((i for i, sid in enumerate(order) if sid not in have), len(order))
            rebuild = any(sid not in have for sid in order[:first_new]) or any(sid in have for sid in order[first_new:])
        if rebuild:
            for sid in folded:
                _SEGS.pop((self.plan.token, self.number, sid), None)
            folded.clear()
            kmap.clear()
            first_new = 0
        for sid in list(current)[first_new:]:
            self._fold_in(sid, self._segment(sid), folded, kmap)
        self._kmap = kmap
        return kmap

    def _fold_in(self, sid: str, seg: Segment, folded: list[str], kmap: dict[str, tuple[str, int]]) -> None:
        folded.append(sid)
        for pos, key in enumerate(seg.keys):
            kmap[key] = (sid, pos)

    def _fold_out(self, sid: str, folded: list[str], kmap: dict[str, tuple[str, int]]) -> None:
        seg = _SEGS.pop((self.plan.token, self.number, sid), None)
        if seg is not None:
            for pos, key in enumerate(seg.keys):
                if kmap.get(key) == (sid, pos):
                    del kmap[key]
        else:  # not kept (cannot happen for a folded segment): drop what points to it
            for key in [k for k, (s, _) in kmap.items() if s == sid]:
                del kmap[key]
        folded.remove(sid)

    def _segment(self, sid: str) -> Segment:
        """A segment: this worker's copy (:data:`_SEGS`), else read from the store (one round trip)."""
        at = (self.plan.token, self.number, sid)
        got = _SEGS.get(at)
        if got is None:
            raw = self.store.get(SEGMENT + sid)
            if raw is None:
                raise RuntimeError(f"bucket {self.number}: the meta names segment {sid}, which the state store lacks")
            got = _SEGS[at] = Segment.unpack(bytes(raw))
        return got

    def _sealed(self, key: str) -> tuple[str, int, Segment] | None:
        """Where group ``key`` is sealed (sid, position, segment), if it is."""
        if not self.segs:
            return None
        got = self._keymap().get(key)
        if got is None:
            return None
        sid, pos = got
        rec = self.segs.get(sid)
        if rec is None or pos < rec[2] or pos in rec[4]:
            return None
        return sid, pos, self._segment(sid)

    def _unseal(self, key: str) -> list[Any] | None:
        """Move group ``key`` from its segment back into the index (new events came for it); its entry, or None."""
        hit = self._sealed(key)
        if hit is None:
            return None
        sid, pos, seg = hit
        self.segs[sid][4].append(pos)
        entry = self.index[key] = seg.entry(pos)
        self._settle(sid)
        return entry

    def _unseal_all(self) -> None:
        """Every sealed group back into the index (the end of the input flushes them all)."""
        for sid in list(self.segs):
            rec, seg = self.segs[sid], self._segment(sid)
            dead = set(rec[4])
            for pos in range(rec[2], rec[1]):
                if pos not in dead:
                    self.index[seg.keys[pos]] = seg.entry(pos)
            rec[2:] = [rec[1], None, [], None]
            self._settle(sid)

    def _expiring(self, soon: float) -> list[tuple[str, int, bool]]:
        """The sealed groups whose deadline ``soon`` has passed, moved back into the index, as :meth:`release`'s
        work (each segment is in deadline order: the cursor moves on over them)."""
        work: list[tuple[str, int, bool]] = []
        for sid in list(self.segs):
            rec = self.segs[sid]
            if rec[3] is None or not soon > rec[3]:
                continue
            seg = self._segment(sid)
            dead = set(rec[4])
            at, size = rec[2], rec[1]
            while at < size and soon > seg.dl[at]:
                if at not in dead:
                    key = seg.keys[at]
                    self.index[key] = seg.entry(at)
                    work.append((key, rec[0], False))
                at += 1
            rec[2:] = [
                at,
                seg.dl[at] if at < size else None,
                [d for d in rec[4] if d >= at],
                seg.minfed[at] if at < size else None,
            ]
            self._settle(sid)
        return work

    def _settle(self, sid: str) -> None:
        """A segment with no live group left is removed: from the store, the meta (noted in ``done``) and this
        worker's map."""
        if _still_sealed(self.segs[sid]) > 0:
            return
        del self.segs[sid]
        self.store.remove(SEGMENT + sid)
        self.done.append(sid)
        if len(self.done) > DONE_KEPT:
            del self.done[: len(self.done) - DONE_KEPT]
        got = _SEGMAP.get((self.plan.token, self.number))
        if got is not None and sid in got[0]:
            self._fold_out(sid, got[0], got[1])

    def _seal(self) -> None:
        """Seal the quiet started groups of the index (nothing pending, not a family's keyless group) into a new
        segment per family, in deadline order: the index keeps only the groups with work coming."""
        quiet: dict[int, list[tuple[int, str, list[Any]]]] = {}
        for key, e in self.index.items():
            if e[2] is None and e[3] and e[4] is not None and e[1] is not None and key not in self.waiting:
                gkey = _gkey(key)
                if gkey != KEYLESS_GROUP and gkey != WHOLE_GROUP:
                    got = quiet.get(e[0])
                    if got is None:
                        got = quiet[e[0]] = []
                    got.append((e[1] + self.fams[e[0]].reach, key, e))
        if not quiet:
            return
        kmap = self._keymap()
        folded = _SEGMAP[(self.plan.token, self.number)][0]
        for fid, items in sorted(quiet.items()):
            items.sort(key=lambda x: (x[0], x[1]))
            seg = Segment(
                fid,
                [k for _, k, _ in items],
                [e[1] for _, _, e in items],
                [e[4] for _, _, e in items],
                [e[5] for _, _, e in items],
                [d for d, _, _ in items],
            )
            sid = uuid.uuid4().hex[:12]
            self.store.put(SEGMENT + sid, seg.pack())
            self.segs[sid] = [fid, len(items), 0, seg.dl[0], [], seg.minfed[0]]
            _SEGS[(self.plan.token, self.number, sid)] = seg
            self._fold_in(sid, seg, folded, kmap)
            for _, key, _ in items:
                del self.index[key]

    def _copy_sparse(self) -> list[tuple[str, dict[str, bytes]]]:
        """Move the groups of the pages whose live share fell under :data:`PAGE_LIVE_SHARE` (the sparsest first, at
        most :data:`PAGES_COPIED`) into new pages (about :data:`PAGE_MAX` each; an old page's groups all into one),
        blobs as they are, and remove those pages: a page lives while any of its groups does, so without this a few
        long-lived groups would keep many pages of dead ones stored.  Returns the new pages (version, blobs), to be
        written with the call's."""
        out: list[tuple[str, dict[str, bytes]]] = []
        size = PAGE_MAX
        sparse = sorted(
            (counts[0] / counts[1], old)
            for old, counts in self.pages.items()
            if counts[0] < PAGE_LIVE_SHARE * counts[1]
        )
        for _, old in sparse[:PAGES_COPIED]:
            live: dict[str, bytes] = {}
            for key, blob in self._page(old).items():
                held = self._version_of(key)
                if held is None or self.alias.get(held, held) != old:
                    continue  # written again since, or gone
                live[key] = bytes(blob)
            if not live:
                self._remove_page(old)
                continue
            more = sum(len(b) for b in live.values())
            if size + more > PAGE_MAX and (not out or out[-1][1]):
                out.append((uuid.uuid4().hex[:12], {}))
                size = 0
            version, blobs = out[-1]
            blobs.update(live)
            size += more
            # Its groups keep their versions (a sealed segment never changes); those versions now read the new page.
            for alias, now in self.alias.items():
                if now == old:
                    self.alias[alias] = version
            self.alias[old] = version
            self._remove_page(old)
        return out


# ------------------------------------------------------------------------------------------------ Spark adapter


class MemoryStore(dict):
    """:class:`Bucket`'s group store in memory (the operator without Spark: tests, ``bench_stream_operator``)."""

    def get(self, key: str) -> Any:  # type: ignore[override]
        return super().get(key)

    def put(self, key: str, blob: bytes) -> None:
        self[key] = blob

    def remove(self, key: str) -> None:
        self.pop(key, None)


class _MapStore:
    """:class:`Bucket`'s group store over a Spark ``MapState`` (key string -> blob binary)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def get(self, key: str) -> bytes | None:
        got = self.state.getValue((key,))
        return None if got is None else got[0]

    def put(self, key: str, blob: bytes) -> None:
        self.state.updateValue((key,), (blob,))

    def remove(self, key: str) -> None:
        self.state.removeKey((key,))


def _keep_page(at: tuple[str, int, str], size: int, blobs: dict[str, memoryview]) -> None:
    """Keep a page's blobs in this worker (:data:`_PAGES`), within :data:`PAGE_BYTES`."""
    _PAGES[at] = (size, blobs)
    _PAGES.move_to_end(at)
    total = sum(size for size, _ in _PAGES.values())
    while total > PAGE_BYTES and len(_PAGES) > 1:  # never the page just kept, however large
        total -= _PAGES.popitem(last=False)[1][0]


_COMPILED: dict[str, list[Any]] = {}
#: Calls between two full collections of a worker's heap (:func:`_thaw`): a safety net, not a need.  The operator
#: makes no reference cycles since cut 8 (``tests/engine/test_snapshot_garbage.py``: the compiled NFA^b snapshot made
#: one per group written, 180,000 objects per 64 calls of ``bench_stream_operator``), and each full collection walks
#: every object the worker keeps: 1 to 6 s once a stream's groups have built up (0.8 s a minute of the operator's CPU
#: at 64 in ``bench_stream_operator --full-gc-every 64``: 70.0 s against 50.1 s at 1024 over 25 minutes).
FULL_GC_EVERY = 1024
_CALLS = [0]


def _thaw() -> None:
    """At the start of a call, every :data:`FULL_GC_EVERY`-th one: unfreeze the worker's objects and collect them all
    once (the cycles of groups let go are reclaimed then).  Between, they stay frozen (``gc.freeze`` at the end of a
    call): PySpark's daemon runs a full ``gc.collect()`` after every task, which walked the groups this worker keeps
    (:data:`_LIVE`, a million objects) each time -- more CPU than the operator's own work -- and Python's own full
    collections within a call walked them too (issue 28, cut 3)."""
    _CALLS[0] += 1
    if _CALLS[0] % FULL_GC_EVERY == 0:
        gc.unfreeze()
        gc.collect()


@contextmanager
def operator_call(pause_collector: bool = True) -> Iterator[None]:
    """One call of the operator: :func:`_thaw`, then no automatic collection until the call ends, when the objects it
    left behind are frozen with the rest (``pause_collector=False``: the collector left on, for
    ``bench_stream_operator --collector on``).

    Why the pause: a call allocates in proportion to its events, and Python's generation-2 collections, triggered all
    along, each walk every object not frozen: all the call has made so far.  At 4,000 events/s
    (``bench_stream_operator --rate 4000 --collector on``) they were 38 of the operator's 73 CPU seconds, paused 0 of
    28 (issue 28, cut 9).  Nothing is lost: reference counting frees what the call drops, and the operator makes no
    reference cycles (``tests/engine/test_snapshot_garbage.py``); what another library's cycles hold waits for the
    next full collection (:data:`FULL_GC_EVERY`)."""
    _thaw()
    was_on = gc.isenabled()
    if pause_collector:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
        gc.freeze()  # the objects this call left behind join the frozen ones


def encode_meta(meta: dict[str, Any]) -> bytes:
    """A bucket's meta (:meth:`Bucket.meta`) as MessagePack: its never-fed groups are already bytes of their own
    (:func:`encode_waiting`), so they cost a copy here, not an encoding.  MessagePack, not JSON: the meta is written
    every call and read whenever another worker wrote it, and JSON escaped every event text of the waiting groups
    (a 34 MB meta at 20,000 events/s took orjson 75-115 ms to write and 450-520 ms to read; as MessagePack with the
    groups as bytes, 25 and 72 ms: issue 28, cut 14)."""
    import ormsgpack

    return ormsgpack.packb(meta)


def decode_meta(raw: bytes) -> dict[str, Any]:
    """The inverse of :func:`encode_meta`."""
    import ormsgpack

    out: dict[str, Any] = ormsgpack.unpackb(raw)
    return out


#: A never-fed group's state (:meth:`StreamGroup.to_state`) as it waits in the meta: the meta's own codec, applied
#: once when the group is written and undone only when it is loaded again, so a group that waits through a call
#: untouched is neither decoded nor encoded in it (its events wait about two batches behind Spark's watermark).
encode_waiting = encode_meta


def decode_waiting(stored: bytes | dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`encode_waiting`; a JSON meta's (:data:`META_V2` and older) waiting group is a dict."""
    return stored if isinstance(stored, dict) else decode_meta(stored)


def _read_meta(blob: bytes) -> tuple[bytes, dict[str, Any]]:
    """The encoded meta of a meta blob and the meta (:data:`META_V3`; or the JSON of :data:`META_V2`, or of
    :data:`META_V1` from before issue 28's cut 13)."""
    if blob[:1] == META_V3:
        import lz4.block

        raw = bytes(lz4.block.decompress(blob[13:]))
        return raw, decode_meta(raw)
    import orjson

    if blob[:1] == META_V2:
        import lz4.block

        raw = bytes(lz4.block.decompress(blob[13:]))
    else:
        raw = zlib.decompress(blob[13:])
    return raw, orjson.loads(raw)


def compiled_for(plan: StreamPlan) -> list[Any]:
    """Compiled once per Python worker (workers are reused across batches)."""
    from app.spark.batch import compile_plan

    got = _COMPILED.get(plan.token)
    if got is None:
        got = _COMPILED[plan.token] = [compile_plan(p) for p in plan.plans]
    return got


def _processor_base() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


class BucketProcessor(_processor_base()):  # type: ignore[misc]
    """The ``StatefulProcessor``: a :class:`Bucket` per call, its state in a ``MapState`` and a ``ValueState``."""

    def __init__(self, plan: StreamPlan, keys: list[int] | None = None) -> None:
        self.plan = plan
        #: state key -> bucket number (the keys spread the buckets over Spark's partitions: see ``.keys``)
        self.bucket_of_key = {k: b for b, k in enumerate(keys if keys is not None else range(plan.buckets))}

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.meta = handle.getValueState("meta", "blob binary")
        self.groups = handle.getMapState("groups", "key string", "blob binary")

    def _bucket(self, key: Any) -> Bucket:
        """The bucket from its meta: read and parsed again only when this worker's copy (:data:`_METAS`) is not the
        stored version (:data:`META_VERSION`; the meta holds the groups waiting for their first release: parsing it
        was ~30 ms a call)."""
        number = self.bucket_of_key[int(key[0])]
        cached = _METAS.pop((self.plan.token, number), None)  # out while this call changes it
        data, read = None, None
        stored = self.groups.getValue((META_VERSION,)) if cached is not None else None
        if cached is not None and stored is not None and bytes(stored[0]) == cached[0]:
            data, read = cached[2], (cached[0], cached[1])  # this worker's copy is the stored meta: not read
        elif got := self.meta.get():
            blob = bytes(got[0])
            if blob[:1] in (META_V3, META_V2, META_V1):
                version = blob[1:13]
                if cached is not None and cached[0] == version:
                    raw, data = cached[1], cached[2]
                else:
                    raw, data = _read_meta(blob)
                read = (version, raw)
            else:
                data = unpack_blob(blob)
        bucket = Bucket(self.plan, compiled_for(self.plan), data, _MapStore(self.groups), number)
        bucket.meta_read = read
        return bucket

    def _finish(self, bucket: Bucket, wm_ms: int, out: list[tuple]) -> Any:
        """Write the bucket's meta and keep one timer at the watermark + 1 ms (wake when it moves): the timer kept in
        the meta spares listing them, and one already right is left alone (each call is a round trip to the JVM).
        Returns the call's output rows as a frame, or None."""
        import pandas as pd

        want = None if bucket.empty() else max(int(wm_ms), 0) + 1
        old = bucket.timer
        if old != want:
            if old == UNKNOWN:
                for t in list(self.handle.listTimers()):
                    self.handle.deleteTimer(t)
            elif old is not None:
                self.handle.deleteTimer(old)
            if want is not None:
                self.handle.registerTimer(want)
        bucket.timer = want
        if want is None:
            self.meta.clear()
            self.groups.removeKey((META_VERSION,))
        else:
            meta = bucket.meta()
            raw = encode_meta(meta)
            read = bucket.meta_read
            if read is not None and read[1] == raw:
                version = read[0]  # unchanged (a timer's call after the rows'): no write
            else:
                import lz4.block

                version = uuid.uuid4().hex[:12].encode()
                self.meta.update((META_V3 + version + lz4.block.compress(raw),))
                self.groups.updateValue((META_VERSION,), (version,))
            _METAS[(self.plan.token, bucket.number)] = (version, raw, meta)
        return pd.DataFrame(out, columns=OUT_COLUMNS) if out else None

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:  # noqa: N802, N803
        with operator_call():
            wm = timerValues.getCurrentWatermarkInMs()
            bucket = self._bucket(key)
            flat: list[Any] = []
            for pdf in rows:
                for packed in pdf["rows"]:
                    flat.extend(unpack_rows(packed))
            frame = self._finish(bucket, wm, bucket.handle(flat, wm))
        if frame is not None:
            yield frame

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:  # noqa: N802, N803
        with operator_call():
            wm = timerValues.getCurrentWatermarkInMs()
            bucket = self._bucket(key)
            if bucket.timer == expiredTimerInfo.getExpiryTimeInMs():
                bucket.timer = None  # PySpark deletes the timer that fired once this call returns
            frame = self._finish(bucket, wm, bucket.handle([], wm))
        if frame is not None:
            yield frame

    def close(self) -> None:
        pass
