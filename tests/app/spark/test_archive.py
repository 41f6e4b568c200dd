"""The Parquet archive (pyarrow only): partitions, heterogeneous attributes, exact round trip, append safety."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.spark.conftest import PACK, SAMPLE
from tests.app.spark.helpers import run_cli

pytest.importorskip("pyarrow")


def test_round_trip_is_exact(tmp_path: Path) -> None:
    from app.spark.archive import ArchiveWriter, event_from_row, read_table
    from engine import event_from_json

    events = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    events.append(
        {
            "type": "Odd",
            "ts": 86_400.5,
            "lo": 86_400.0,
            "hi": 86_401.0,
            "job_id": 7,
            "nested": {"a": [1]},
            "flag": True,
            "text": "ü",
        }
    )
    with ArchiveWriter(tmp_path, flush_rows=40) as writer:  # three flushes, three batches
        writer.add_events(events)
    table = read_table(tmp_path)
    assert table.num_rows == len(events) and writer.flushes == 3
    for i, (obj, row) in enumerate(zip(events, table.to_pylist(), strict=True)):
        a, b = event_from_json(obj, seq=i), event_from_json(event_from_row(row), seq=i)
        assert (a.type, a.id, a.ts, a.lo, a.hi, a.tlo, a.thi, a.attrs) == (
            b.type,
            b.id,
            b.ts,
            b.lo,
            b.hi,
            b.tlo,
            b.thi,
            b.attrs,
        )
    odd = table.to_pylist()[-1]
    assert (odd["date"], odd["type"], odd["job_id"], odd["period"]) == ("1970-01-02", "Odd", "7", None)
    load = next(r for r in table.to_pylist() if r["type"] == "LoadStd")
    assert (load["val"], load["cluster"], load["task_id"]) == (0.18, "hadoop-lab", None)


def test_partitions_and_appends(tmp_path: Path, capsys) -> None:
    from app.spark.archive import read_table

    files = []
    for _ in range(2):  # the same input twice: two runs, new files each time, nothing overwritten
        code, _, err = run_cli(
            ["archive", str(SAMPLE), "--to", str(tmp_path), "--pack", str(PACK), "--no-progress"], capsys
        )
        assert code == 0, err
        assert "94 events, 27 match records" in err
        files.append(len(list(tmp_path.rglob("*.parquet"))))
    assert files[1] == 2 * files[0]
    dirs = {p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("*/date=*/*=*")}
    assert "events/date=2023-11-14/type=LoadStd" in dirs and "matches/date=2023-11-14/query=Q6" in dirs
    assert read_table(tmp_path).num_rows == 2 * 94
    matches = read_table(tmp_path, "matches").to_pylist()
    assert len(matches) == 2 * 27
    assert {m["task_id"] for m in matches if m["query"] == "Q3"} == {"task_1700000000000_0001_r_000001"}


def test_match_records_are_recognised_and_bad_lines_named(tmp_path: Path, capsys) -> None:
    from app.spark.archive import read_table

    code, records, err = run_cli(["match", str(SAMPLE), "--pack", str(PACK)], capsys)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in records) + SAMPLE.read_text())
    code, _, err = run_cli(["archive", str(mixed), "--to", str(tmp_path / "a"), "--no-progress"], capsys)
    assert code == 0 and "94 events, 27 match records" in err
    assert read_table(tmp_path / "a", "matches").num_rows == 27
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "X", "ts": 1}\n{"type": "X"\n')
    code, _, err = run_cli(["archive", str(bad), "--to", str(tmp_path / "b"), "--no-progress"], capsys)
    assert code == 2 and f"{bad}:2: invalid JSON" in err


@pytest.mark.spark
def test_spark_reads_the_archive(spark, tmp_path: Path) -> None:
    from app.spark.archive import ArchiveWriter

    with ArchiveWriter(tmp_path) as writer:
        writer.add_events(json.loads(line) for line in SAMPLE.read_text().splitlines())
    frame = spark.read.option("basePath", str(tmp_path / "events")).parquet(str(tmp_path / "events"))
    assert {"date", "type", "attrs", "job_id", "period"} <= set(frame.columns)
    counts = {r["type"]: r["count"] for r in frame.groupBy("type").count().collect()}
    assert counts["LoadStd"] == sum('"LoadStd"' in line for line in SAMPLE.read_text().splitlines())
