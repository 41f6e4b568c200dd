"""Quiet groups sealed into segments (issue 28, cut 16): the index keeps only the groups with work coming; a sealed
group comes back when its key does or when it expires; a worker that kept nothing, and one whose cached key map
holds a segment a failed task sealed, find every sealed group again.  Each against ``hcep match``'s records."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import match, stream_plan, write_events
from tests.app.spark_stream.simulate import DictStore, count_reads, run_batches


def _batches(events: list[dict], size: int) -> list[list[tuple[str, int, str]]]:
    lines = [("f.jsonl", i, json.dumps(e)) for i, e in enumerate(events)]
    return [lines[i : i + size] for i in range(0, len(lines), size)]


@pytest.fixture
def cold_worker() -> Any:
    """No group, page, meta or segment kept by this worker between the test's calls."""
    from app.spark.stream import state

    def forget() -> None:
        for cache in (state._LIVE, state._PAGES, state._METAS, state._SEGS, state._SEGMAP):
            cache.clear()

    forget()
    yield forget
    forget()


def test_quiet_groups_are_sealed_and_come_back_when_their_keys_do(
    cluster_events: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After every call the index holds no quiet started group (they are sealed), nor does the worker keep one
    restored; groups whose keys come again are taken out of their segments (the simulated cluster's jobs span many
    calls), and the records are the same."""
    from app.spark.stream import state

    unsealed: list[str] = []
    real = state.Bucket._unseal

    def counted(self: state.Bucket, key: str) -> Any:
        got = real(self, key)
        if got is not None:
            unsealed.append(key)
        return got

    monkeypatch.setattr(state.Bucket, "_unseal", counted)
    sealed = {"most": 0}

    def check(bucket: Any, store: DictStore) -> None:
        for key, e in bucket.index.items():
            special = key.split("|", 1)[1] in (state.KEYLESS_GROUP, state.WHOLE_GROUP)
            assert special or not e[3] or e[2] is not None, f"a quiet started group left in the index: {key}"
        sealed["most"] = max(sealed["most"], bucket.groups_held() - len(bucket.index))
        # the worker keeps restored only groups with work coming (a sealed one is freed while its objects are warm)
        kept = {k for (token, number, k) in state._LIVE if token == bucket.plan.token and number == bucket.number}
        assert kept <= set(bucket.index), f"sealed groups kept restored: {sorted(kept - set(bucket.index))[:3]}"

    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    stores: dict[int, DictStore] = {}
    got, dead = run_batches(stream_plan(buckets=2), _batches(cluster_events, 30), stores=stores, after_call=check)
    assert not dead
    assert_same_records(got, want)
    assert sealed["most"] > 50 and len(unsealed) > 20
    assert not any(stores.values()), "segments or pages left after the end of the input"


def test_a_worker_that_kept_nothing_finds_its_sealed_groups(
    cluster_events: list[dict], tmp_path: Path, cold_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every call on a worker that kept nothing: the key map is built from the stored segments each time."""
    from app.spark.stream import state

    monkeypatch.setattr(state, "LIVE_GROUPS", 0)
    monkeypatch.setattr(state, "PAGE_BYTES", 0)
    read = count_reads(monkeypatch, state.SEGMENT)
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    got, dead = run_batches(
        stream_plan(buckets=3), _batches(cluster_events, 40), after_call=lambda bucket, store: cold_worker()
    )
    assert not dead and read["reads"] > 20
    assert_same_records(got, want)


def test_a_failed_tasks_segments_never_hide_a_sealed_group(
    cluster_events: list[dict], tmp_path: Path, cold_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls that fail after writing (their state rolled back, as Spark does, while the worker keeps what it cached,
    the key map with the failed call's segments among it) and run again: the records are ``hcep match``'s."""
    from app.spark.stream import state
    from app.spark.stream.state import Bucket, compiled_for, decode_meta, encode_meta

    rebuilt = {"segments": 0}  # read back from the store: only when the key map is built again
    unpack = state.Segment.unpack.__func__  # type: ignore[attr-defined]

    def counted(cls: type, blob: Any) -> Any:
        rebuilt["segments"] += 1
        return unpack(cls, blob)

    monkeypatch.setattr(state.Segment, "unpack", classmethod(counted))
    plan = stream_plan(buckets=2)
    compiled = compiled_for(plan)
    rng = random.Random(7)
    stores = {b: DictStore() for b in range(plan.buckets)}
    failed = {"calls": 0}

    def fail_once_written(b: int, rows: list[tuple], wm_ms: int, store: DictStore, meta: Any) -> None:
        if rng.random() < 0.3:  # an attempt that fails once it wrote: its state is not committed
            failed["calls"] += 1
            attempt = Bucket(plan, compiled, decode_meta(meta) if meta is not None else None, copy.deepcopy(store), b)
            attempt.handle(rows, wm_ms)
            encode_meta(attempt.meta())

    records, _ = run_batches(plan, _batches(cluster_events, 25), stores=stores, before_call=fail_once_written)
    assert failed["calls"] > 10 and rebuilt["segments"] > 10
    assert_same_records(records, match(write_events(cluster_events, tmp_path / "c.jsonl")))
    assert not any(stores.values())


def test_a_segment_round_trip_and_its_refusals() -> None:
    from app.spark.stream.state import SEGMENT_V1, Segment

    seg = Segment(1, ["1|a", "1|b", "1|c"], [10, 20, 30], ["v1", "v1", "v2"], [5.0, None, 2.0], [70, 80, 90])
    assert seg.minfed == [2.0, 2.0, 2.0]
    back = Segment.unpack(seg.pack())
    assert (back.fid, back.keys, back.hi, back.ver, back.fed, back.dl) == (
        1,
        ["1|a", "1|b", "1|c"],
        [10, 20, 30],
        ["v1", "v1", "v2"],
        [5.0, None, 2.0],
        [70, 80, 90],
    )
    assert back.entry(1) == [1, 20, None, True, "v1", None]
    assert Segment(0, ["0|x"], [1], ["v"], [None], [2]).minfed == [None]
    assert seg.pack()[:1] == SEGMENT_V1
    with pytest.raises(ValueError, match="not a segment"):
        Segment.unpack(b"\x02junk")
