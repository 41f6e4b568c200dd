"""The router's fast paths (issue 28, cut 11) give what the plain ones give: the per-frame seq base and decoder,
the frame built column by column with its types, and the partition key's string for a string or an integer."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
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


def test_the_router_frame_holds_route_rows_with_their_types() -> None:
    from app.spark.stream.source import ROUTED_COLUMNS, ROUTED_SCHEMA, route, router

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
    assert list(got.columns) == ROUTED_COLUMNS
    assert [tuple(r) for r in got.itertuples(index=False)] == want
    for column in ("bucket", "fid", "seq", "mid2", "tlo", "thi", "pos"):
        assert got[column].dtype.kind == "i", column
    assert got["primary"].dtype == bool and got["wt"].dtype.kind == "f"
    # what Spark's Arrow conversion takes: each column as the schema's type
    types = {
        "int": pa.int32(),
        "long": pa.int64(),
        "string": pa.string(),
        "boolean": pa.bool_(),
        "double": pa.float64(),
    }
    schema = pa.schema([(c.split()[0], types[c.split()[1]]) for c in ROUTED_SCHEMA.split(", ")])
    table = pa.Table.from_pandas(got, schema=schema, preserve_index=False)
    assert table.num_rows == len(want)


def test_an_empty_frame_has_the_columns() -> None:
    from app.spark.stream.source import ROUTED_COLUMNS, router

    plan = stream_plan(buckets=2, keyless=GANGLIA)
    frames = list(router(plan, 2**62)(iter([pd.DataFrame({"origin": ["f"], "pos": [-1], "text": [""]})])))
    assert list(frames[0].columns) == ROUTED_COLUMNS and len(frames[0]) == 0
