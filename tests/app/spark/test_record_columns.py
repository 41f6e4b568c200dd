"""The one encoding of a match record as the Spark jobs' columns (app.spark.record_columns): what the batch job and
the stream operator write reads back as the same record, and so does the archive's row."""

from __future__ import annotations

from typing import Any

from app.spark.archive import match_row, record_from_row
from app.spark.record_columns import record_columns, record_of_row

WHOLE: dict[str, Any] = {
    "query": "Q1",
    "match": {"a": ["e1"], "b": ["e2", "e3"]},
    "confidence": 0.75,
    "start": 10.0,
    "end": 12.5,
    "return": {"job_id": "job_1", "n": 2},
}
INCREMENT: dict[str, Any] = {
    "query": "Q4",
    "id": "r2",
    "extends": "r1",
    "match": {"d": ["e9"]},
    "confidence": 1.0,
    "start": 3.0,
    "end": 9.0,
    "return": {"total": 7},
}
OPERATOR_COLUMNS = ("query", "match", "confidence", "start", "end", "ret", "ret_key")


def _operator_row(record: dict[str, Any]) -> dict[str, Any]:
    row = dict(zip(OPERATOR_COLUMNS, record_columns(record), strict=True))
    row["rid"], row["extends"] = record.get("id"), record.get("extends")
    return row


def test_operator_row_reads_back_as_the_record() -> None:
    for record in (WHOLE, INCREMENT):
        assert record_of_row(_operator_row(record)) == record


def test_archive_row_reads_back_as_the_record() -> None:
    for record in (WHOLE, INCREMENT):
        assert record_from_row(match_row(record, 0)) == record


def test_distinct_key_is_the_return_values() -> None:
    """What distinct output compares: the RETURN values without their names."""
    columns = record_columns({**WHOLE, "return": {"x": 1, "y": {"b": 2, "a": 1}}})
    assert columns[-1] == '[1,{"a":1,"b":2}]'
    assert columns[5] == '{"x":1,"y":{"b":2,"a":1}}'
