"""The router's fast paths (issue 28, cut 11) give what the plain ones give: the per-frame seq base and decoder,
the frame built column by column with its types, and the partition key's string for a string or an integer."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.app.spark_stream.conftest import GANGLIA, stream_plan

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _reference_key(value: object) -> str | None:
    """What the partition key's string was before its fast paths."""
    if value is None:
        return None
    if isinstance(value, bool) or (isinstance(value, float) and value.is_integer()):
        value = int(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_partition_keys_are_json_dumps_strings(value: object) -> None:
    from app.spark.events import canonical_key

    assert canonical_key(value) == _reference_key(value)


def test_keys_of_strings_beyond_ascii_and_huge_integers() -> None:
    from app.spark.events import canonical_key

    for value in ["job_1", 'é\u2028\x00"\\', "\ud800", 2**80, -(2**70), 0, True, 3.0, 2.5]:
        assert canonical_key(value) == _reference_key(value), value


def _lines() -> list[str]:
    events = [
        {
            "type": "ReducerStart",
            "ts": 1000,
            "delta": 0.5,
            "job_id": "j1",
            "task_id": "t1",
            "attempt_id": "a1",
            "host": "n1",
        },
        {
            "type": "ReducerEnd",
            "status": "SUCCEEDED",
            "ts": 1010.5,
            "delta": 0.5,
            "job_id": "j1",
            "task_id": "t1",
            "attempt_id": "a1",
            "host": "n1",
        },
        {"type": "Balance", "ts": 1003, "delta": 7.5, "val": 1.0},
        {"type": "Metric", "ts": 1004, "delta": 7.5, "host": "n2", "metric": "cpu", "val": 0.5, "id": "m1"},
    ]
    return [json.dumps(e) for e in events] + ["", "not json", json.dumps({"type": "ReducerStart"})]


def test_the_router_frame_packs_route_rows_by_bucket() -> None:
    """A frame's rows reach the shuffle packed, one value a bucket (issue 28, cut 15): unpacked, each bucket's are
    exactly ``route``'s for that bucket, in order, and its ``wt`` is their greatest (the watermark's input)."""
    from app.spark.stream import source
    from app.spark.stream.source import ROUTED_SCHEMA, route, router
    from app.spark.stream.state import unpack_rows

    plan = stream_plan(buckets=3, keyless=GANGLIA)
    name = "/data/in/part-7.jsonl"
    text = "\n".join(_lines())
    frames = list(router(plan, 2**62)(iter([pd.DataFrame({"origin": [name], "pos": [-1], "text": [text]})])))
    assert len(frames) == 1
    got = frames[0]
    want = [
        r for i, line in enumerate(text.split("\n")) for r in route(plan, name, i, line, f"part-7.jsonl:{i}", 2**62)
    ]
    assert {r[3] for r in want} >= {"own", "keyless", "bad"}
    assert list(got.columns) == ["bucket", "rows", "wt"]
    assert sorted(got["bucket"]) == sorted({r[0] for r in want})
    for bucket, packed, wt in got.itertuples(index=False):
        mine = [r for r in want if r[0] == bucket]
        assert [tuple(r) for r in unpack_rows(packed)] == [r[1:13] for r in mine]
        assert wt == max(r[13] for r in mine)
    assert got["bucket"].dtype == "int32" and got["wt"].dtype.kind == "f"
    # what Spark's Arrow conversion takes: each column as the schema's type
    types = {"int": pa.int32(), "binary": pa.binary(), "double": pa.float64()}
    schema = pa.schema([(c.split()[0], types[c.split()[1]]) for c in ROUTED_SCHEMA.split(", ")])
    assert pa.Table.from_pandas(got, schema=schema, preserve_index=False).num_rows == len(got)
    # a bucket's rows beyond PACK_ROWS go into more values, in order
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(source, "PACK_ROWS", 2)
        (small,) = list(router(plan, 2**62)(iter([pd.DataFrame({"origin": [name], "pos": [-1], "text": [text]})])))
    for bucket in set(small["bucket"]):
        parts = [unpack_rows(p) for b, p in zip(small["bucket"], small["rows"], strict=True) if b == bucket]
        assert all(len(p) <= 2 for p in parts)
        assert [tuple(r) for p in parts for r in p] == [r[1:13] for r in want if r[0] == bucket]


def test_packed_rows_keep_every_value() -> None:
    """Rows MessagePack cannot take (a text with a lone surrogate) are packed as JSON, and read back the same."""
    from app.spark.stream.state import ROWS_JSON, ROWS_MSGPACK, pack_rows, unpack_rows

    rows = [(1, None, "own", 2**62, -5, 3, 4, "T", '{"a": "\u00e9"}', "f", 7, True)]
    assert pack_rows(rows)[:1] == ROWS_MSGPACK
    odd = [(*rows[0][:8], "\ud800 lone", *rows[0][9:])]
    assert pack_rows(odd)[:1] == ROWS_JSON
    for value in (rows, odd, rows * 3):
        assert [tuple(r) for r in unpack_rows(pack_rows(value))] == value
    with pytest.raises(ValueError, match="not a value of routed rows"):
        unpack_rows(b"\x09junk")


def test_an_empty_frame_has_the_columns() -> None:
    from app.spark.stream.source import router

    plan = stream_plan(buckets=2, keyless=GANGLIA)
    frames = list(router(plan, 2**62)(iter([pd.DataFrame({"origin": ["f"], "pos": [-1], "text": [""]})])))
    assert list(frames[0].columns) == ["bucket", "rows", "wt"] and len(frames[0]) == 0


_IDS = st.text() | st.sampled_from(["part-7.jsonl:0", 'a"b', "back\\slash", "tab\there", "é", "\ud800", "\x7f"])


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=4).filter(lambda k: k != "id"), _JSON, max_size=4), _IDS, st.booleans())
def test_an_id_written_into_the_line_parses_as_the_object_with_id_added(obj: dict, eid: str, spaced: bool) -> None:
    """The router adds a missing id to the line's text (issue 28, cut 15), not by dumping the object again: parsed,
    the text must be exactly ``obj`` with ``id`` added last, as the router's own ``obj["id"] = eid`` makes it."""
    from app.spark.stream.source import with_id

    text = json.dumps(obj, indent=1 if spaced else None, ensure_ascii=not spaced)
    got = json.loads(with_id(text, eid, not obj))
    want = {**obj, "id": eid}
    assert got == want and list(got) == list(want)


def test_the_routed_line_carries_the_default_id_and_the_same_values() -> None:
    from app.spark.stream.source import route
    from engine.events import loads_exact

    plan = stream_plan(buckets=3, keyless=GANGLIA)
    line = '{"type": "Balance", "ts": 1003, "delta": 7.5, "val": 1e400, "k": {"a": [1, 2.5]} }'
    (row, *_) = route(plan, "f", 3, line, "f:3", 2**62)
    text = row[9]
    assert loads_exact(text.encode()) == {**json.loads(line), "id": "f:3"}
    assert json.loads(line) == json.loads(json.dumps(json.loads(line)))  # the same as the object dumped again
