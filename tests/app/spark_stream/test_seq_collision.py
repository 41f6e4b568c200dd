"""Two lines of two files can share a ``seq`` (ten bits of the file name's hash, then the line: files whose hashes
agree collide at equal lines, and a stream of one file a second has hundreds after ten minutes).  A keyless event is
decoded once per call for all the groups that take it: the decoded copy must be the line's own, never the other
file's.  Found by ``bench_stream_sustained --minutes 20``: ``OutOfOrderError`` ten minutes in, the stream down."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import GANGLIA, match, stream_plan, write_events
from tests.app.spark_stream.simulate import run_batches


def _colliding(name: str) -> str:
    """Another file name whose ``seq`` at each line equals ``name``'s."""
    want = zlib.crc32(name.encode()) & 0x3FF
    return next(n for n in (f"b{i}.jsonl" for i in range(1 << 16)) if zlib.crc32(n.encode()) & 0x3FF == want)


def _reducer(task: str, start: float, end: float) -> list[dict]:
    common = {"job_id": task.rsplit("_r_", 1)[0], "task_id": task, "attempt_id": f"{task}_0", "host": "n1"}
    return [
        {"type": "ReducerStart", "ts": start, "delta": 0.5, **common},
        {"type": "ReducerEnd", "ts": end, "delta": 0.5, "status": "SUCCEEDED", **common},
    ]


def test_keyless_lines_sharing_a_seq_are_each_fed_as_themselves(tmp_path: Path) -> None:
    from app.spark.stream.source import seq_of

    first, second = "a.jsonl", _colliding("a.jsonl")
    assert seq_of(first, 0) == seq_of(second, 0)
    early = {"type": "Balance", "ts": 1000, "delta": 7.5, "val": 1.0, "id": "early"}
    late = {"type": "Balance", "ts": 1300, "delta": 7.5, "val": 1.0, "id": "late"}
    # r_1 runs between the two Balances (fed both, in order); r_2 starts after the second and takes both on its
    # first release (Q5's left margin); r_3 runs after both as well: in one call, each takes the Balances it needs
    events = [
        *_reducer("job_1_r_1", 1100, 1150),
        *_reducer("job_1_r_2", 1350, 1360),
        *_reducer("job_1_r_3", 1370, 1380),
        {"type": "Imbalance", "ts": 1120, "delta": 7.5, "val": 3.0, "id": "imb"},
    ]
    for i, e in enumerate(events):
        e["id"] = f"e{i}"
    everything = sorted([early, late, *events], key=lambda e: e["ts"])
    want = match(write_events(everything, tmp_path / "all.jsonl"))
    assert any(r["query"] == "Q5" for r in want)
    batches = [
        [(first, 0, json.dumps(early))],
        [(second, 0, json.dumps(late))] + [("c.jsonl", i + 1, json.dumps(e)) for i, e in enumerate(events)],
    ]
    got, dead = run_batches(stream_plan(buckets=1, keyless=GANGLIA), batches)
    assert not dead
    assert_same_records(got, want)
