"""The match record (SPEC section 5) and its identity."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class MatchRecord:
    """One match: the event ids bound to each pattern variable, its confidence, its time span and RETURN values."""

    query: str
    match: dict[str, list[str]]
    confidence: float
    start: float
    end: float
    returns: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> MatchRecord:
        """From the JSON object of SPEC section 5 (``return`` is a Python keyword, hence ``returns``)."""
        return cls(
            str(obj["query"]),
            dict(obj.get("match") or {}),
            float(obj.get("confidence", 1.0)),
            float(obj.get("start", 0.0)),
            float(obj.get("end", 0.0)),
            dict(obj.get("return") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "match": self.match,
            "confidence": self.confidence,
            "start": self.start,
            "end": self.end,
            "return": self.returns,
        }


def record_id(record: dict[str, Any] | MatchRecord, output: str = "all") -> str:
    """The identity of a match record: sha256 of the query and the signature (the sorted event ids per variable) or,
    for ``distinct`` output, of the RETURN value, which is what that mode makes unique."""
    obj = record.to_dict() if isinstance(record, MatchRecord) else record
    if output == "distinct":
        body: Any = [obj["query"], "return", obj.get("return", {})]
    else:
        match = obj.get("match", {})
        body = [obj["query"], "match", {var: sorted(ids) for var, ids in match.items()}]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
