"""A match record as the Spark jobs' columns, and back: one encoding for ``hcep batch``, ``hcep stream`` and the
archive.

Why: the batch job's groups, the stream operator and the Parquet archive each wrote a record's JSON columns, and the
batch job, the stream sink and the archive each read them back; three copies of one format drift.  The operator
rows (``hcep batch`` and ``hcep stream``) name a growing run's increment ``rid`` and its RETURN ``ret``; the archive
names them ``id`` and ``return``.  Records are those of docs/semantics.md section 5.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from contracts.records import MatchRecord

_COMPACT = (",", ":")


def match_text(match: Mapping[str, Any]) -> str:
    """The ``match`` column: the record's variable -> event ids, compact JSON."""
    return json.dumps(match, separators=_COMPACT)


def return_text(returned: Any) -> str:
    """The ``ret``/``return`` column: the record's RETURN values, compact JSON (values JSON cannot hold as text)."""
    return json.dumps(returned, separators=_COMPACT, default=str)


def record_columns(record: Mapping[str, Any]) -> tuple[str, str, float, float, float, str, str]:
    """``(query, match, confidence, start, end, ret, ret_key)`` of an operator row; ``ret_key`` (the RETURN values,
    sorted) is what distinct output compares."""
    returned = record["return"]
    return (
        record["query"],
        match_text(record["match"]),
        float(record["confidence"]),
        float(record["start"]),
        float(record["end"]),
        return_text(returned),
        json.dumps(list(returned.values()), separators=_COMPACT, sort_keys=True, default=str),
    )


def record_of_row(row: Mapping[str, Any], *, id_column: str = "rid", return_column: str = "ret") -> MatchRecord:
    """The record of a row (an operator row by default; the archive's with ``id_column="id"``,
    ``return_column="return"``): a growing run's increment keeps its ``id`` and ``extends``; a row without them (an
    archive written before increments) is a whole record."""
    out: dict[str, Any] = {"query": row["query"]}
    rid = row.get(id_column)
    if rid is not None:
        out["id"] = rid
    if row.get("extends") is not None:
        out["extends"] = row["extends"]
    out["match"] = json.loads(row["match"])
    out["confidence"] = row["confidence"]
    out["start"] = row["start"]
    out["end"] = row["end"]
    out["return"] = json.loads(row[return_column])
    return cast(MatchRecord, out)
