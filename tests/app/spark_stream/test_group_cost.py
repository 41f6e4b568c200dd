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


def _strings(obj: Any) -> list[str]:
    """Every string in a JSON value (keys and values)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in [k, *_strings(v)]]
    if isinstance(obj, list):
        return [x for v in obj for x in _strings(v)]
    return []


def test_groups_never_fed_go_to_the_page_not_the_meta() -> None:
    """A group whose events all wait behind the watermark is written to the call's page like any other: the meta,
    written whole every call, holds no event text (it held them all before cut 10: 5.6 of 7.2 MB at 4,000
    events/s).  A meta that kept such groups (``wait``, before pages) goes on: each moves to a page when written."""
    from app.spark.stream.state import PAGE, Bucket, compiled_for, pack_blob, page_blobs, unpack_blob
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    store = DictStore()
    bucket = Bucket(plan, compiled, None, store, 0)
    rows = _reducer_rows(plan, 20)
    bucket.handle(rows, 0)  # no watermark yet: nothing released
    meta = unpack_blob(pack_blob(bucket.meta()))
    (page,) = store
    states = {k: unpack_blob(b) for k, b in page_blobs(store[page]).items()}
    assert set(states) == set(meta["index"]) and not meta["wait"]
    texts = {r[8] for r in rows}
    assert not any(x in texts for x in _strings(meta))  # no event's text in the meta
    assert sum(len(s["pend"]) for s in states.values()) == len(rows)
    # as a checkpoint before pages held them
    old = {**meta, "wait": states, "pages": {}, "index": {k: [*e[:4], None, *e[5:]] for k, e in meta["index"].items()}}
    store.clear()
    later = Bucket(plan, compiled, old, store, 0)
    later.handle([], int((1_700_000_000.0 + 100) * 1000))  # past them: released
    assert later.index and not later.waiting
    (page,) = store  # the groups fed in this call: one page, one state store write
    assert page.startswith(PAGE) and set(page_blobs(store[page])) == set(later.index)


def test_an_older_checkpoints_unfed_group_blob_moves_to_a_page() -> None:
    """A checkpoint written before :attr:`Bucket.waiting` stored never-fed groups as blobs: such a group restores
    from its blob, and its next write moves it to the call's page and removes the blob (no orphan left)."""
    from app.spark.stream.state import PAGE, Bucket, compiled_for, page_blobs, unpack_blob
    from tests.app.spark_stream.simulate import DictStore

    plan = stream_plan(buckets=1)
    compiled = compiled_for(plan)
    store = DictStore()
    first = Bucket(plan, compiled, None, store, 0)
    rows = _reducer_rows(plan, 4)
    first.handle(rows, 0)  # no watermark yet: nothing released
    old_meta = first.meta()
    (page,) = store
    for key, blob in page_blobs(store.pop(page)).items():  # as the older code wrote them
        store.put(key, bytes(blob))
        old_meta["index"][key][4] = "v-old"
    old_meta["pages"] = {}
    bucket = Bucket(plan, compiled, old_meta, store, 0)
    again = _reducer_rows(plan, 4, t0=1_700_000_000.5, tag="b")  # the same jobs and tasks: every group written
    bucket.handle(again, 0)
    (page,) = store
    assert page.startswith(PAGE)
    states = {k: unpack_blob(b) for k, b in page_blobs(store[page]).items()}
    assert set(states) == set(bucket.index) and not bucket.waiting
    assert sum(len(s["pend"]) for s in states.values()) == len(rows) + len(again)
