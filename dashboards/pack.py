"""The query pack as plain data: names, descriptions, strategies and alert settings (SPEC section 6).

Why read the YAML here instead of asking the engine: the dashboard shows a pack and formats its alert summaries; it
never compiles a query, so it needs neither lark nor the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: Used when a pack gives a query no output mode (SPEC section 6 default).
DEFAULT_OUTPUT = "all"


@dataclass(frozen=True)
class PackQuery:
    name: str
    description: str = ""
    strategy: str = "skip_till_any_match"
    output: str = DEFAULT_OUTPUT
    confidence: float = 0.0
    enabled: bool = True
    severity: str | None = None  # None: the query raises no alert
    summary: str | None = None
    text: str = ""


@dataclass(frozen=True)
class Pack:
    name: str = ""
    path: str = ""
    queries: tuple[PackQuery, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    def query(self, name: str) -> PackQuery | None:
        return next((q for q in self.queries if q.name == name), None)

    def frame(self) -> pd.DataFrame:
        cols = ["query", "description", "strategy", "output", "confidence", "severity", "enabled"]
        rows = [[q.name, q.description, q.strategy, q.output, q.confidence, q.severity or "", q.enabled]
                for q in self.queries]
        return pd.DataFrame(rows, columns=cols)


def load_pack(path: str | Path | None) -> Pack:
    """Read a pack; a missing or unreadable file gives an empty pack (the pages still show the data)."""
    if path is None:
        return Pack()
    try:
        import yaml

        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, ValueError, ImportError):
        return Pack(path=str(path))
    if not isinstance(doc, dict):
        return Pack(path=str(path))
    queries = []
    for item in doc.get("queries") or []:
        if not isinstance(item, dict) or "name" not in item:
            continue
        alert = item.get("alert") if isinstance(item.get("alert"), dict) else None
        queries.append(PackQuery(
            name=str(item["name"]),
            description=" ".join(str(item.get("description") or "").split()),
            strategy=str(item.get("strategy") or "skip_till_any_match"),
            output=str(item.get("output") or DEFAULT_OUTPUT),
            confidence=float(item.get("confidence") or 0.0),
            enabled=bool(item.get("enabled", True)),
            severity=str(alert.get("severity", "warning")) if alert else None,
            summary=str(alert["summary"]) if alert and alert.get("summary") else None,
            text=str(item.get("query") or ""),
        ))
    settings = doc.get("settings") if isinstance(doc.get("settings"), dict) else {}
    return Pack(str(doc.get("pack") or Path(path).stem), str(path), tuple(queries), settings)
