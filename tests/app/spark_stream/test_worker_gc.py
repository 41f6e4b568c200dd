"""The stateful operator's Python worker and the garbage collector (issue 28, cut 3): PySpark's daemon runs a full
``gc.collect()`` after every task, which walked every group the worker keeps; the operator freezes its objects at
the end of a call, so that collection sees only what came after, and collects everything once every
``FULL_GC_EVERY`` calls (the cycles of groups let go are reclaimed then)."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.app.spark_stream.conftest import stream_plan


class _Value:
    def __init__(self) -> None:
        self.v: Any = None
        self.reads = 0

    def get(self) -> Any:
        self.reads += 1
        return self.v

    def update(self, v: Any) -> None:
        self.v = v

    def clear(self) -> None:
        self.v = None


class _Map:
    def __init__(self) -> None:
        self.d: dict[Any, Any] = {}

    def getValue(self, k: Any) -> Any:  # noqa: N802 - Spark's names
        return self.d.get(k)

    def updateValue(self, k: Any, v: Any) -> None:  # noqa: N802
        self.d[k] = v

    def removeKey(self, k: Any) -> None:  # noqa: N802
        self.d.pop(k, None)


class _Handle:
    def __init__(self) -> None:
        self.value, self.map, self.timers = _Value(), _Map(), set[int]()

    def getValueState(self, name: str, schema: str) -> _Value:  # noqa: N802
        return self.value

    def getMapState(self, name: str, key: str, value: str) -> _Map:  # noqa: N802
        return self.map

    def registerTimer(self, t: int) -> None:  # noqa: N802
        self.timers.add(t)

    def deleteTimer(self, t: int) -> None:  # noqa: N802
        self.timers.discard(t)

    def listTimers(self) -> Iterator[int]:  # noqa: N802
        return iter(list(self.timers))


class _Clock:
    def __init__(self, wm: int) -> None:
        self.wm = wm

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802
        return self.wm


@pytest.fixture
def thawed() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_a_call_leaves_the_workers_objects_frozen(thawed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    import pandas as pd

    from app.spark.stream import state
    from app.spark.stream.source import route

    plan = stream_plan(buckets=1)
    proc = state.BucketProcessor(plan)
    proc.init(_Handle())
    gc.unfreeze()
    state._CALLS[0] = 0
    full: list[int] = []

    def collect(*generation: int) -> int:
        full.append(state._CALLS[0])
        return gc.collect(*generation)

    monkeypatch.setattr(
        state,
        "gc",
        types.SimpleNamespace(
            freeze=gc.freeze,
            unfreeze=gc.unfreeze,
            collect=collect,
            isenabled=gc.isenabled,
            enable=gc.enable,
            disable=gc.disable,
        ),
    )
    for call in range(state.FULL_GC_EVERY + 1):
        t0 = 1_700_000_000.0 + 10 * call
        lines = [
            json.dumps({"type": "Reducer", "ts": t0 + i, "job_id": "j", "task_id": f"t{call}-{i}", "id": f"{call}-{i}"})
            for i in range(5)
        ]
        rows = [r[1:-1] for i, text in enumerate(lines) for r in route(plan, "f", i, text, f"f:{i}", 2**62)]
        frame = pd.DataFrame({"rows": [state.pack_rows(rows)]})
        list(proc.handleInputRows((0,), iter([frame]), _Clock(int(t0 * 1000))))
        frozen = gc.get_freeze_count()
        assert frozen > 0
        # what the daemon's collection after the task walks: the objects made since, not the frozen ones
        assert len(gc.get_objects()) < frozen / 4, (len(gc.get_objects()), frozen)
    # everything unfrozen and collected once, by the FULL_GC_EVERY-th call
    assert full == [state.FULL_GC_EVERY]


def test_a_call_runs_without_the_automatic_collector(thawed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a call the automatic collector is paused (its generation-2 collections walked everything the call had
    made, again and again: issue 28, cut 9), and after it, even a call that fails, it is on again."""
    import pandas as pd

    from app.spark.stream import state

    plan = stream_plan(buckets=1)
    proc = state.BucketProcessor(plan)
    proc.init(_Handle())
    seen: list[bool] = []
    real = state.Bucket.handle

    def handle(self: Any, rows: Any, wm_ms: int) -> list[tuple]:
        seen.append(gc.isenabled())
        if wm_ms < 0:
            raise RuntimeError("a failing call")
        return real(self, rows, wm_ms)

    monkeypatch.setattr(state.Bucket, "handle", handle)
    assert gc.isenabled()
    list(proc.handleInputRows((0,), iter([pd.DataFrame({"rows": []})]), _Clock(1_700_000_000_000)))
    list(proc.handleExpiredTimer((0,), _Clock(1_700_000_000_000), _Expired(1)))
    with pytest.raises(RuntimeError, match="a failing call"):
        list(proc.handleInputRows((0,), iter([]), _Clock(-1)))
    assert seen == [False, False, False] and gc.isenabled()
    gc.disable()  # a caller that had it off: left off
    try:
        list(proc.handleExpiredTimer((0,), _Clock(1_700_000_000_000), _Expired(1)))
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Expired:
    def __init__(self, t: int) -> None:
        self.t = t

    def getExpiryTimeInMs(self) -> int:  # noqa: N802
        return self.t


def test_a_meta_is_parsed_again_only_when_another_worker_wrote_it(
    thawed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bucket's meta (it holds the groups waiting for their first release) is parsed only when this worker's copy
    is not the stored version, and not written when a call left it unchanged; older checkpoints' metas (zlib'd, with
    a version or without, and LZ4'd JSON) still read."""
    import zlib

    import lz4.block
    import orjson
    import pandas as pd

    from app.spark.stream import state
    from app.spark.stream.source import route

    plan = stream_plan(buckets=1)
    handle = _Handle()
    proc = state.BucketProcessor(plan)
    proc.init(handle)
    parsed: list[int] = []

    read_meta = state._read_meta

    def counted(blob: bytes) -> tuple[bytes, dict[str, Any]]:
        parsed.append(len(blob))
        return read_meta(blob)

    monkeypatch.setattr(state, "_read_meta", counted)
    state._METAS.clear()
    t0 = 1_700_000_000.0
    lines = [
        json.dumps({"type": "Reducer", "ts": t0 + i, "job_id": "j", "task_id": f"t{i}", "id": f"r{i}"})
        for i in range(5)
    ]
    rows = [r[1:-1] for i, text in enumerate(lines) for r in route(plan, "f", i, text, f"f:{i}", 2**62)]
    wm = int(t0 * 1000)
    list(proc.handleInputRows((0,), iter([pd.DataFrame({"rows": [state.pack_rows(rows)]})]), _Clock(wm)))
    written = handle.value.v
    assert written[0][:1] == state.META_V3 and handle.timers == {wm + 1}
    reads = handle.value.reads
    list(proc.handleExpiredTimer((0,), _Clock(wm), _Expired(wm - 5)))  # an older timer: nothing changes
    assert handle.value.v is written and not parsed  # neither parsed nor written again
    # nor read: the meta's version, stored beside it, is this worker's copy's (the JVM pickles a value it returns
    # byte by byte)
    assert handle.value.reads == reads and handle.map.d[(state.META_VERSION,)] == (written[0][1:13],)
    state._METAS.clear()  # the bucket's next task runs on another worker
    list(proc.handleExpiredTimer((0,), _Clock(wm), _Expired(wm - 5)))
    assert len(parsed) == 1 and handle.value.v is written and handle.value.reads == reads + 1
    # a task that failed after this worker wrote a newer meta: the store holds the older version, which is read
    cached = state._METAS[(plan.token, 0)]
    state._METAS[(plan.token, 0)] = (b"ffffffffffff", *cached[1:])
    list(proc.handleExpiredTimer((0,), _Clock(wm), _Expired(wm - 5)))
    assert len(parsed) == 2 and handle.value.reads == reads + 2
    # older checkpoints' metas: zlib'd JSON without a version (as pack_blob wrote them), then with one (META_V1), then
    # LZ4'd JSON (META_V2): their waiting groups are dicts, not MessagePack bytes
    meta = proc._bucket((0,)).meta()
    raw = orjson.dumps({**meta, "wait": {k: state.decode_waiting(v) for k, v in meta["wait"].items()}})
    olders = [
        zlib.compress(raw, 1),
        state.META_V1 + b"0123456789ab" + zlib.compress(raw, 1),
        state.META_V2 + b"0123456789ac" + lz4.block.compress(raw),
    ]
    for n, older in enumerate(olders):
        handle.value.v = (older,)
        state._METAS.clear()
        later = [json.dumps({"type": "Reducer", "ts": t0 + 20, "job_id": "j", "task_id": f"t9{n}", "id": f"r9{n}"})]
        rows = [r[1:-1] for i, text in enumerate(later) for r in route(plan, "f", 9, text, "f:9", 2**62)]
        list(proc.handleInputRows((0,), iter([pd.DataFrame({"rows": [state.pack_rows(rows)]})]), _Clock(wm)))
        assert handle.value.v[0][:1] == state.META_V3
        waiting = proc._bucket((0,)).waiting
        assert all(isinstance(g, bytes) for g in waiting.values())  # written again as MessagePack
        # the older meta's events and the new
        assert sum(len(state.decode_waiting(g)["pend"]) for g in waiting.values()) == len(lines) + 1
