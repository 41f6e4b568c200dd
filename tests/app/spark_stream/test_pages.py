"""The groups a call writes go to the state store as one page (``state.pack_page``): the pages' counts match the
index, a page is removed once none of its groups is left, sparse pages are copied forward so few live groups do not
keep many dead ones stored, a worker that kept nothing restores from the pages alone, and checkpoints written with
a blob per group (before pages) or with zlib blobs (before cut 13) go on.  Each against ``hcep match``'s records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import match, stream_plan, write_events
from tests.app.spark_stream.simulate import DictStore, count_reads, run_batches


def _batches(events: list[dict], size: int) -> list[list[tuple[str, int, str]]]:
    lines = [("f.jsonl", i, json.dumps(e)) for i, e in enumerate(events)]
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def test_pack_page_round_trip() -> None:
    from app.spark.stream.state import pack_blob, pack_page, page_blobs, unpack_blob

    states = {"0|a": {"x": 1}, '1|"j|b"': {"y": [1, 2]}, "2|": {}}
    blobs = page_blobs(pack_page({k: pack_blob(v) for k, v in states.items()}))
    assert {k: unpack_blob(b) for k, b in blobs.items()} == states
    with pytest.raises(ValueError, match="not a page"):
        page_blobs(pack_blob(states))


@pytest.mark.parametrize("page_max", [None, 4000])
def test_pages_are_counted_removed_and_copied_forward(
    cluster_events: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page_max: int | None
) -> None:
    """A call's groups in pages of at most ``PAGE_MAX`` bytes (4,000: many pages a call), every count right."""
    from app.spark.stream import state

    monkeypatch.setattr(state, "PAGES_COPIED", 10**6)
    if page_max is not None:
        monkeypatch.setattr(state, "PAGE_MAX", page_max)
    most = {"pages": 0}
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    seen: dict[int, set[str]] = {}
    calls = {"wrote": 0}

    def check(bucket: Any, store: DictStore) -> None:
        pages = {k[len(state.PAGE) :] for k in store if k.startswith(state.PAGE)}
        segments = {k[len(state.SEGMENT) :] for k in store if k.startswith(state.SEGMENT)}
        assert len(pages) + len(segments) == len(store), "a group blob outside a page"
        assert pages == set(bucket.pages), "a page stored and not counted, or gone"
        assert segments == set(bucket.segs), "a segment stored and not in the meta, or gone"
        holds: dict[str, int] = {}
        for key, version in _groups(bucket).items():
            if version is not None:
                page = bucket.alias.get(version, version)
                holds[page] = holds.get(page, 0) + 1
                assert key in state.page_blobs(store[state.PAGE + page]), "a group its page lacks"
        assert holds == {v: c[0] for v, c in bucket.pages.items()}, "a page's count is not its live groups"
        before = seen.get(bucket.number, set())
        most["pages"] = max(most["pages"], len(set(bucket.pages) - before))
        if set(bucket.pages) - before:  # this call wrote a page: no page left sparse
            calls["wrote"] += 1
            assert all(live >= state.PAGE_LIVE_SHARE * total for live, total in bucket.pages.values())
        seen[bucket.number] = set(bucket.pages)

    stores: dict[int, DictStore] = {}
    got, dead = run_batches(stream_plan(buckets=2), _batches(cluster_events, 40), stores=stores, after_call=check)
    assert not dead and calls["wrote"] > 20
    assert most["pages"] > (5 if page_max else 0)
    assert_same_records(got, want)
    assert not any(stores.values()), "pages left after the end of the input"


def _groups(bucket: Any) -> dict[str, Any]:
    """Every group the bucket holds -> the version its state is stored under: the index's and the sealed ones'."""
    from app.spark.stream import state

    held = {key: entry[4] for key, entry in bucket.index.items()}
    for sid, (_, size, cursor, _, dead, _) in bucket.segs.items():
        seg = state.Segment.unpack(bucket.store.get(state.SEGMENT + sid))
        for pos in range(cursor, size):
            if pos not in dead:
                assert seg.keys[pos] not in held, "a group both in the index and sealed"
                held[seg.keys[pos]] = seg.ver[pos]
    return held


def test_a_worker_that_kept_nothing_restores_from_the_pages(
    cluster_events: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No group kept restored and no page kept: every call reads its groups from the store's pages."""
    from app.spark.stream import state

    monkeypatch.setattr(state, "LIVE_GROUPS", 0)
    monkeypatch.setattr(state, "PAGE_BYTES", 0)
    state._LIVE.clear()
    state._PAGES.clear()
    reads = count_reads(monkeypatch, state.PAGE)
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    got, dead = run_batches(stream_plan(buckets=3), _batches(cluster_events, 60))
    assert not dead and reads["reads"] > 20
    assert_same_records(got, want)


def test_a_checkpoint_with_a_blob_per_group_goes_on(cluster_events: list[dict], tmp_path: Path) -> None:
    """State written before pages (each started group a blob under its key, no ``pages`` in the meta): the groups
    restore from their blobs, and each blob is removed as its group moves to a page; the records are the same."""
    from app.spark.stream import state

    plan = stream_plan(buckets=2)
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    batches = _batches(cluster_events, 50)
    half = len(batches) // 2
    stores: dict[int, DictStore] = {}
    metas: dict[int, Any] = {}
    first, dead = run_batches(plan, batches[:half], end=False, stores=stores, metas=metas)
    old = 0
    for b, store in stores.items():  # as the code before pages (and segments) would have written it
        meta = state.decode_meta(metas[b])
        index = dict(meta["index"])
        for sid, (_, size, cursor, _, dead, _) in meta.pop("segs").items():
            seg = state.Segment.unpack(store.pop(state.SEGMENT + sid))
            index.update((seg.keys[p], seg.entry(p)) for p in range(cursor, size) if p not in dead)
        alias = meta.pop("alias")
        for page in [k for k in store if k.startswith(state.PAGE)]:
            for key, blob in state.page_blobs(store.pop(page)).items():
                entry = index.get(key)
                # its state, not one since rewritten
                if entry is not None and alias.get(entry[4], entry[4]) == page[len(state.PAGE) :]:
                    store.put(key, bytes(blob))
                    entry[4] = key  # any version not a page's: the group's own blob
                    old += 1
        assert meta.pop("pages") and not store.keys() - index.keys()
        meta["index"] = index
        del meta["done"]
        metas[b] = state.encode_meta(meta)
    state._LIVE.clear()
    state._PAGES.clear()
    assert old > 20
    removed: list[str] = []
    remove = DictStore.remove

    def counting(self: DictStore, key: str) -> None:
        removed.append(key)
        remove(self, key)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DictStore, "remove", counting)
        rest, dead2 = run_batches(plan, batches[half:], stores=stores, metas=metas)
    assert not dead and not dead2
    assert_same_records(first + rest, want)
    assert not any(stores.values())
    own = [k for k in removed if not k.startswith((state.PAGE, state.SEGMENT))]
    assert len(own) == len(set(own)) == old  # each old blob removed once


def test_a_checkpoint_of_zlib_blobs_goes_on(
    cluster_events: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """State written before cut 13 (every blob zlib'd JSON, without :data:`~app.spark.stream.state.BLOB_LZ4`, each
    group's runner as its whole snapshot, as before cut 19): a stream goes on from it, restoring from the pages alone,
    with the same records; what it writes since is :func:`~app.spark.stream.state.pack_group`'s (a sparse page's
    blobs are copied forward as they are)."""
    import zlib

    import orjson

    from app.spark.stream import state

    plan = stream_plan(buckets=2)
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    batches = _batches(cluster_events, 50)
    half = len(batches) // 2
    stores: dict[int, DictStore] = {}
    metas: dict[int, Any] = {}

    def whole(g: state.StreamGroup) -> dict:  # the group as written before cut 19: its runner's snapshot
        out = {k: v for k, v in to_state(g).items() if k not in ("base", "replay")}
        return {**out, "snap": g.runner.snapshot() if g.started else None}

    to_state = state.StreamGroup.to_state
    with monkeypatch.context() as mp:
        mp.setattr(state.StreamGroup, "to_state", whole)
        mp.setattr(state, "pack_group", lambda obj: zlib.compress(orjson.dumps(obj), 1))
        first, dead = run_batches(plan, batches[:half], end=False, stores=stores, metas=metas)
    pages = [page for store in stores.values() for key, page in store.items() if key.startswith(state.PAGE)]
    blobs = [b for page in pages for b in state.page_blobs(page).values()]
    assert blobs and all(b[:1] == b"\x78" for b in blobs)  # zlib's
    state._LIVE.clear()
    state._PAGES.clear()
    written: list[bytes] = []

    def kept(self: DictStore, key: str, blob: bytes) -> None:
        if key.startswith(state.PAGE):
            written.append(blob)
        self[key] = blob

    with monkeypatch.context() as mp:
        mp.setattr(DictStore, "put", kept)
        rest, dead2 = run_batches(plan, batches[half:], stores=stores, metas=metas)
    assert not dead and not dead2
    assert_same_records(first + rest, want)
    kinds = {bytes(b[:1]) for page in written for b in state.page_blobs(page).values()}
    assert kinds == {state.BLOB_GROUP, b"\x78"}  # groups written again, and zlib blobs copied forward as they are


def test_blobs_round_trip_in_both_formats() -> None:
    import zlib

    import orjson

    from app.spark.stream.state import BLOB_LZ4, pack_blob, unpack_blob

    value = {"own": {"a": 1}, "pend": [[2, 3, 4.5, 'x\n"y']], "snap": None}
    assert pack_blob(value)[:1] == BLOB_LZ4 and unpack_blob(pack_blob(value)) == value
    assert unpack_blob(memoryview(b"." + pack_blob(value))[1:]) == value  # a page's view
    assert unpack_blob(zlib.compress(orjson.dumps(value), 1)) == value  # written before cut 13


def test_a_page_larger_than_the_cache_is_still_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page just kept stays, however large: a page over ``PAGE_BYTES`` that was dropped at once was read again
    from the state store for every group restored from it (issue 28, cut 16)."""
    from app.spark.stream import state

    monkeypatch.setattr(state, "PAGE_BYTES", 100)
    state._PAGES.clear()
    state._keep_page(("t", 0, "a"), 60, {})
    state._keep_page(("t", 0, "b"), 500, {})
    assert list(state._PAGES) == [("t", 0, "b")]
    state._keep_page(("t", 0, "a"), 60, {})  # kept again: the newest, the other out
    assert list(state._PAGES) == [("t", 0, "a")]
    state._PAGES.clear()
