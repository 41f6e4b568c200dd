"""The query pack as plain data: its queries (names, descriptions, strategies, outputs) and its alert rules
(docs/semantics.md sections 6 and 8).

Why read the YAML here instead of asking the engine: the dashboard only shows a pack -- which rules judge which query,
with what tiers and grouping -- it never compiles a query or judges a record (the service did, and the dashboard
reads its alerts), so it needs neither lark nor the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: Used when a pack gives a query no output mode (docs/semantics.md section 6 default).
DEFAULT_OUTPUT = "all"


@dataclass(frozen=True)
class PackQuery:
    name: str
    description: str = ""
    strategy: str = "skip_till_any_match"
    output: str = DEFAULT_OUTPUT
    confidence: float = 0.0
    enabled: bool = True
    text: str = ""


@dataclass(frozen=True)
class PackRule:
    """One alert rule (``alerts:`` of the pack): which query it judges, how it grades and groups."""

    name: str
    query: str
    description: str = ""
    group_by: tuple[str, ...] = ()
    value: str = ""
    tiers: dict[str, float] = field(default_factory=dict)
    severity: str = ""  # the fixed severity of a rule without tiers
    when: str = ""
    hold: str = ""  # the ``for:`` hold time, as written
    kind: str = ""  # the ``kind`` label (the fault kind of semantics section 9); older packs called it ``anomaly``


@dataclass(frozen=True)
class Pack:
    name: str = ""
    path: str = ""
    queries: tuple[PackQuery, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    rules: tuple[PackRule, ...] = ()

    def query(self, name: str) -> PackQuery | None:
        return next((q for q in self.queries if q.name == name), None)

    def rule(self, name: str) -> PackRule | None:
        return next((r for r in self.rules if r.name == name), None)

    def rules_of(self, query: str) -> list[PackRule]:
        return [r for r in self.rules if r.query == query]

    def output_of(self, query: str) -> str:
        spec = self.query(query)
        return spec.output if spec is not None else DEFAULT_OUTPUT

    def frame(self) -> pd.DataFrame:
        cols = ["query", "description", "strategy", "output", "confidence", "rules", "enabled"]
        rows = [
            [
                q.name,
                q.description,
                q.strategy,
                q.output,
                q.confidence,
                ", ".join(r.name for r in self.rules_of(q.name)),
                q.enabled,
            ]
            for q in self.queries
        ]
        return pd.DataFrame(rows, columns=cols)

    def rules_frame(self) -> pd.DataFrame:
        cols = ["rule", "query", "group_by", "value", "tiers", "when", "for", "kind", "description"]
        rows = [
            [
                r.name,
                r.query,
                ", ".join(r.group_by),
                r.value,
                ", ".join(f"{t} >= {v:g}" for t, v in r.tiers.items()) or r.severity,
                r.when,
                r.hold,
                r.kind,
                r.description,
            ]
            for r in self.rules
        ]
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
        queries.append(
            PackQuery(
                name=str(item["name"]),
                description=" ".join(str(item.get("description") or "").split()),
                strategy=str(item.get("strategy") or "skip_till_any_match"),
                output=str(item.get("output") or DEFAULT_OUTPUT),
                confidence=float(item.get("confidence") or 0.0),
                enabled=bool(item.get("enabled", True)),
                text=str(item.get("query") or ""),
            )
        )
    settings: Any = doc.get("settings") if isinstance(doc.get("settings"), dict) else {}
    rules = [r for r in (_rule(item) for item in doc.get("alerts") or []) if r is not None]
    for item in doc.get("queries") or []:  # the older per-query ``alert:`` shorthand: a rule named after the query
        if isinstance(item, dict) and "name" in item and isinstance(item.get("alert"), dict):
            rules.append(
                PackRule(
                    name=str(item["name"]),
                    query=str(item["name"]),
                    description=" ".join(str(item.get("description") or "").split()),
                    severity=str(item["alert"].get("severity") or "warning"),
                )
            )
    return Pack(str(doc.get("pack") or Path(path).stem), str(path), tuple(queries), settings, tuple(rules))


def load_packs(paths: list[str | Path | None]) -> Pack:
    """Several packs shown as one (the Hadoop and the Spark pack of a demo): their queries and rules side by side,
    named ``hadoop + spark``; the first pack's settings."""
    packs = [load_pack(p) for p in paths if p is not None]
    if not packs:
        return Pack()
    return Pack(
        " + ".join(p.name for p in packs if p.name),
        ", ".join(p.path for p in packs),
        tuple(q for p in packs for q in p.queries),
        packs[0].settings,
        tuple(r for p in packs for r in p.rules),
    )


def _rule(item: Any) -> PackRule | None:
    if not isinstance(item, dict) or "name" not in item or "query" not in item:
        return None
    tiers: dict[str, float] = {}
    if isinstance(item.get("tiers"), dict):
        for tier, threshold in item["tiers"].items():
            try:
                tiers[str(tier)] = float(threshold)
            except (TypeError, ValueError):
                continue
    group = item.get("group_by") or []
    labels: Any = item.get("labels") if isinstance(item.get("labels"), dict) else {}
    return PackRule(
        name=str(item["name"]),
        query=str(item["query"]),
        description=" ".join(str(item.get("description") or "").split()),
        group_by=tuple(str(g) for g in (group if isinstance(group, list) else [group])),
        value=str(item.get("value") or ""),
        tiers=tiers,
        severity=str(item.get("severity") or ""),
        when=" ".join(str(item.get("when") or "").split()),
        hold=str(item.get("for") or ""),
        kind=str(labels.get("kind") or labels.get("anomaly") or ""),
    )
