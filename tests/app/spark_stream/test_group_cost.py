"""What a group costs the operator apart from its events (issue 28): a new group's evaluators reuse their queries'
enumeration plans (planning, i.e. compiling the WHERE clause, was most of the operator's Python), and the rows of one
group in one call are indexed once, not once a row (the index reads all of a group's pending events)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.app.spark_stream.conftest import stream_plan


def test_new_groups_do_not_plan_their_queries_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.imprecise.enumeration as enumeration
    from app.spark.stream.plan import KEYLESS_GROUP, WHOLE_GROUP
    from app.spark.stream.state import StreamGroup, compiled_for

    plan = stream_plan()
    compiled = compiled_for(plan)
    calls: list[str] = []
    real = enumeration.make_plan

    def counting(cq, **kw):  # type: ignore[no-untyped-def]
        calls.append(cq.name)
        return real(cq, **kw)

    monkeypatch.setattr(enumeration, "make_plan", counting)
    fam = next(f for f in plan.families if f.keyed)
    assert fam.keyed
    groups = [StreamGroup(plan, fam, f"job_{k}", compiled) for k in range(20)]
    for g in groups:
        assert g.gkey not in (KEYLESS_GROUP, WHOLE_GROUP)
        assert g.runner is not None
    assert len(calls) == len(set(calls)), calls  # each query planned at most once, whatever the number of groups
    assert len(set(calls)) <= len(fam.keyed)


def test_a_group_is_indexed_once_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.spark.stream.source import route
    from app.spark.stream.state import Bucket, StreamGroup, compiled_for
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    lines = [
        json.dumps({"type": "Reducer", "ts": 1_700_000_000.0 + i, "job_id": "job_1", "task_id": f"t{i}", "id": f"r{i}"})
        for i in range(200)
    ]
    rows = [r[1:-1] for i, text in enumerate(lines) for r in route(plan, "f", i, text, f"f:{i}", 2**62)]
    assert len(rows) >= 200
    calls = 0
    real = StreamGroup.min_pending

    def counting(self: StreamGroup) -> int | None:
        nonlocal calls
        calls += 1
        return real(self)

    monkeypatch.setattr(StreamGroup, "min_pending", counting)
    bucket = Bucket(plan, compiled, None, DictStore(), 0)
    bucket.handle(rows, 0)
    groups = len(bucket.index)
    assert groups >= 1
    assert calls <= 2 * groups, (calls, groups)  # not once per row


def _reducer_rows(plan: Any, n: int, t0: float = 1_700_000_000.0, tag: str = "") -> list[tuple[Any, ...]]:
    from app.spark.stream.source import route

    lines = [
        json.dumps({"type": "Reducer", "ts": t0 + i, "job_id": f"job_{i % 3}", "task_id": f"t{i}", "id": f"r{i}{tag}"})
        for i in range(n)
    ]
    return [r[1:-1] for i, text in enumerate(lines) for r in route(plan, "f", i, text, f"f:{i}", 2**62)]


def test_groups_never_fed_wait_in_the_meta() -> None:
    """A group whose events all wait behind the watermark is kept in the bucket's meta (written every call anyway),
    not as a blob of its own (a state store round trip each); once fed it goes to the store, and the meta lets go."""
    from app.spark.stream.state import PAGE, Bucket, compiled_for, decode_meta, encode_meta, page_blobs
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    store = DictStore()
    bucket = Bucket(plan, compiled, None, store, 0)
    bucket.handle(_reducer_rows(plan, 20), 0)  # no watermark yet: nothing released
    meta = decode_meta(encode_meta(bucket.meta()))
    assert not store and meta["wait"] and set(meta["wait"]) == set(meta["index"])
    waited = set(meta["wait"])
    later = Bucket(plan, compiled, meta, store, 0)
    later.handle([], int((1_700_000_000.0 + 100) * 1000))  # past them: released
    assert not later.waiting and later.groups_held() == len(waited)
    pages = [k for k in store if k.startswith(PAGE)]
    (page,) = pages  # the groups fed in this call: one page, one state store write (and, quiet now, a segment)
    assert set(page_blobs(store[page])) == waited
    assert len(store) == 1 + len(later.segs) and not later.index  # all sealed: nothing left to do but expire


def test_an_older_checkpoints_unfed_group_blob_moves_to_the_meta() -> None:
    """A checkpoint written before :attr:`Bucket.waiting` stored never-fed groups as blobs: such a group restores
    from its blob, and its next write moves it to the meta and removes the blob (no orphan left in the store)."""
    from app.spark.stream.state import Bucket, compiled_for, decode_waiting, pack_blob
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    store = DictStore()
    first = Bucket(plan, compiled, None, store, 0)
    rows = _reducer_rows(plan, 4)
    first.handle(rows, 0)  # no watermark yet: nothing released
    old_meta = first.meta()
    for key, state in old_meta.pop("wait").items():  # as the older code wrote them
        store.put(key, pack_blob(decode_waiting(state)))
        old_meta["index"][key][4] = "v-old"
    bucket = Bucket(plan, compiled, old_meta, store, 0)
    again = _reducer_rows(plan, 4, t0=1_700_000_000.5, tag="b")  # the same jobs and tasks: every group written
    bucket.handle(again, 0)
    assert not store
    assert all(entry[4] is None for entry in bucket.index.values()) and set(bucket.waiting) == set(bucket.index)
    pend = sum(len(decode_waiting(s)["pend"]) for s in bucket.waiting.values())
    assert pend == len(rows) + len(again)


def test_a_waiting_group_untouched_by_a_call_is_neither_decoded_nor_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A never-fed group waits in the meta as MessagePack bytes of its own: a call that gives it no event and releases
    none of its own keeps the very bytes it read (issue 28, cut 14: its events wait about two batches behind Spark's
    watermark, and the meta is written every call)."""
    from app.spark.stream import state
    from app.spark.stream.state import Bucket, compiled_for, decode_meta, encode_meta
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    store = DictStore()
    first = Bucket(plan, compiled, None, store, 0)
    first.handle(_reducer_rows(plan, 6), 0)  # no watermark yet: every group waits
    meta = decode_meta(encode_meta(first.meta()))
    assert meta["wait"] and all(isinstance(v, bytes) for v in meta["wait"].values())
    before = dict(meta["wait"])
    decoded: list[object] = []
    decode = state.decode_waiting

    def counted(stored: object) -> object:
        decoded.append(stored)
        return decode(stored)  # type: ignore[arg-type]

    monkeypatch.setattr(state, "decode_waiting", counted)
    later = Bucket(plan, compiled, meta, store, 0)
    new = _reducer_rows(plan, 1, t0=1_700_000_000.25, tag="n")  # job_0 and a new task: two groups touched
    later.handle(new, int((1_700_000_000.0 - 100) * 1000))  # the watermark before them all
    after = later.meta()["wait"]
    touched = {k for k in before if after[k] is not before[k]}
    assert touched and len(touched) <= 2 and len(decoded) == len(touched)
    assert all(after[k] is before[k] for k in before.keys() - touched)
    pend = {k: len(decode(v)["pend"]) for k, v in after.items()}
    assert sum(pend.values()) == sum(len(decode(v)["pend"]) for v in before.values()) + len(new)
