"""``hcep match``'s writer (``app.matching.write``) gives exactly ``json.dumps`` of each record and a newline, whatever
the batch: the records of the sample trace with the Hadoop pack, and values the encoder treats specially."""

from __future__ import annotations

import json
import math
from typing import Any, cast

import pytest

from app.matching.packs import data_path, load_pack
from app.matching.read import built_types, read_events
from app.matching.write import write_records
from engine.evaluate import StreamedMatch
from engine.events import Event
from engine.plan.compiler import compile_spec

ODD: list[dict[str, Any]] = [
    {"query": "q", "match": {"a": ["é", "\u2028", 'x"y\\']}, "confidence": 1.0, "start": 1e16, "end": -0.0,
     "return": {"big": 10**30, "nan": math.nan, "inf": -math.inf, "none": None, "t": True, "l": [1, 2.5, "z"]}},
    {"query": "Q4", "id": "0" * 64, "extends": "f" * 64, "match": {}, "confidence": 0.5, "start": 0, "end": 1,
     "return": {}},
]  # fmt: skip


def _sample_records() -> list[Any]:
    pack = load_pack(data_path("hadoop.yaml"))
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    events = read_events(data_path("samples", "hadoop_sample.jsonl"), float(pack.tick), 7.5, built_types(cqs))
    return list(StreamedMatch(cqs, cast("list[Event]", events), increments=True))


@pytest.mark.parametrize("batch", [1, 2, 3, 256])
def test_the_lines_are_json_dumps_of_each_record(batch: int) -> None:
    records = _sample_records() + ODD
    assert len(records) > 5
    out: list[str] = []
    n = write_records(iter(records), out.append, batch)
    assert n == len(records)
    assert "".join(out) == "".join(json.dumps(r) + "\n" for r in records)
    assert all(len(chunk.splitlines()) <= batch for chunk in out)


def test_nothing_to_write() -> None:
    out: list[str] = []
    assert write_records([], out.append) == 0 and out == []
