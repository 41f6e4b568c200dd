"""``hcep stream``'s operator writes a growing run (Q4) as ``hcep match`` does: the same chain of increments, split
over micro-batches and buckets, and with ``--full-matches`` the whole signatures the chain rebuilds (semantics
section 5).  Without Spark (tests/app/spark_stream/simulate.py); the Parquet round trip keeps ``id`` and ``extends``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from app.spark.archive import ArchiveWriter, read_table, record_from_row
from contracts.records import rebuild
from tests.app.spark_stream.conftest import match, stream_plan, write_events
from tests.app.spark_stream.simulate import run_batches


def _batches(events: list[dict], n: int) -> list[list[tuple[str, int, str]]]:
    lines = [("f.jsonl", i, json.dumps(e)) for i, e in enumerate(events)]
    size = max(len(lines) // n, 1)
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def _q4(records: list[dict]) -> list[dict]:
    return [r for r in records if r["query"] == "Q4"]


@pytest.mark.parametrize("n", [1, 7])
def test_stream_writes_the_chain_of_match(sample_events: list[dict], tmp_path: Path, n: int) -> None:
    want = _q4(match(write_events(sample_events, tmp_path / "s.jsonl")))
    got, dead = run_batches(stream_plan(), _batches(sample_events, n))
    got = _q4(got)
    assert not dead and any("extends" in r for r in want)
    key = lambda r: r["id"]  # noqa: E731 - completion order differs across buckets only between chains
    assert sorted(got, key=key) == sorted(want, key=key)


def test_full_matches_are_the_rebuilt_chain(sample_events: list[dict]) -> None:
    plan = stream_plan()
    inc, _ = run_batches(plan, _batches(sample_events, 5))
    full, _ = run_batches(dataclasses.replace(plan, full_matches=True), _batches(sample_events, 5))
    inc, full = _q4(inc), _q4(full)
    assert all("id" not in r for r in full) and len(inc) == len(full)

    def sets(r: dict) -> tuple:
        return json.dumps({v: sorted(ids) for v, ids in r["match"].items()}, sort_keys=True), r["end"]

    assert sorted(map(sets, rebuild(inc))) == sorted(map(sets, full))


def test_archive_keeps_the_chain(sample_events: list[dict], tmp_path: Path) -> None:
    records = _q4(match(write_events(sample_events, tmp_path / "s.jsonl")))
    with ArchiveWriter(tmp_path / "arch") as writer:
        writer.add_matches(records)
    back = [record_from_row(r) for r in read_table(tmp_path / "arch", "matches").to_pylist()]
    assert sorted(back, key=lambda r: r["id"]) == sorted(records, key=lambda r: r["id"])


def test_an_archive_written_before_increments_still_reads(tmp_path: Path) -> None:
    """Files without the ``id`` and ``extends`` columns: whole records, read as before."""
    import pyarrow as pa

    from app.spark.archive import MATCH_PARTITIONS, MATCH_SCHEMA, _write, match_row

    old = pa.schema([f for f in MATCH_SCHEMA if f.name not in ("id", "extends")])
    record = {"query": "Q4", "match": {"a": ["1"], "b": ["2", "3"]}, "confidence": 1.0, "start": 1.0, "end": 2.0}
    record["return"] = {"job_id": "j"}
    row = {k: v for k, v in match_row(record, 0).items() if k not in ("id", "extends")}
    _write(tmp_path / "arch" / "matches", [row], old, MATCH_PARTITIONS, "old")
    assert [record_from_row(r) for r in read_table(tmp_path / "arch", "matches").to_pylist()] == [record]
