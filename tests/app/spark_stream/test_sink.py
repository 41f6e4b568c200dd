"""The sink without Spark: a batch committed twice is written once; the output reads back as records, alerts and
dead letters, and the dashboard's archive backend shows the stream's records and alerts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.spark_stream.conftest import PACK


def _rows(n: int, base: float) -> list[dict]:
    rows = []
    for i in range(n):
        rows.append(
            {
                "kind": "record",
                "query": "Q6",
                "match": json.dumps({"a": [f"s{i}"], "b": [f"l{i}"], "c": [f"e{i}"]}),
                "confidence": 0.9,
                "start": base + i,
                "end": base + i + 60,
                "ret": json.dumps({"task_id": f"task_{i}"}),
                "vkey": "",
                "emit_mid2": int((base + i + 60) * 20),
                "emit_seq": i,
                "qidx": 5,
                "emit_idx": i,
                "gkey": f'"task_{i}"',
            }
        )
    rows.append({"kind": "dead", "reason": "late", "origin": "f", "pos": 3, "text": '{"type": "X"}'})
    rows.append({"kind": "clock", "wm": int((base + 100) * 1000), "fed": 10})
    return rows


class _Frame:
    """A batch's frame that notes how it was run (``collect`` would read it; the real replay is in
    test_stream_spark's test_a_batch_replayed_after_the_sink_committed_it)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    @property
    def write(self) -> _Frame:
        return self

    def format(self, name: str) -> _Frame:
        self.calls.append(("format", name))
        return self

    def mode(self, name: str) -> _Frame:
        self.calls.append(("mode", name))
        return self

    def save(self) -> None:
        self.calls.append(("save",))

    def collect(self) -> list:
        raise AssertionError("a committed batch is read again")


def test_a_batch_is_committed_once(tmp_path: Path) -> None:
    from app.matching.packs import load_pack
    from app.spark.stream.sink import StreamSink, read_dead, read_records, totals

    pack = load_pack(PACK)
    sink = StreamSink(str(tmp_path), pack, 0.1)
    sink.write(_rows(3, 1_700_000_000.0), 0)
    again = StreamSink(str(tmp_path), pack, 0.1)  # a restarted driver
    assert again.committed(0) and again.last_batch == 0
    replayed = _Frame()
    again(replayed, 0)  # Spark replays batch 0: it runs (its state is committed), nothing is read or written
    assert replayed.calls == [("format", "noop"), ("mode", "overwrite"), ("save",)]
    again.write(_rows(2, 1_700_000_500.0), 1)
    assert len(read_records(str(tmp_path))) == 5
    assert [d["reason"] for d in read_dead(str(tmp_path))] == ["late", "late"]
    t = totals(str(tmp_path))
    assert (t["records"], t["late"], t["fed"], t["batches"]) == (5, 2, 20, 2)


def test_the_dashboard_reads_a_stream_output(tmp_path: Path) -> None:
    from app.matching.packs import load_pack
    from app.spark.stream.sink import StreamSink
    from dashboards.backends.archive import ArchiveBackend

    sink = StreamSink(str(tmp_path), load_pack(PACK), 0.1)
    sink.write(_rows(3, 1_700_000_000.0), 0)
    alerts = tmp_path / "alerts"
    alerts.mkdir(exist_ok=True)
    transition = {
        "labels": {"alertname": "RisingLoad", "severity": "warning", "task_id": "task_0"},
        "annotations": {"summary": "x"},
        "startsAt": "2023-11-14T22:13:20Z",
    }
    (alerts / "alerts-000000000009.jsonl").write_text(json.dumps(transition) + "\n")
    loaded = ArchiveBackend(tmp_path).load()
    assert len(loaded["matches"]) == 3 and len(loaded["alerts"]) >= 1
