"""YAML query packs (SPEC section 6): a named set of queries with their per-query options.

Packs are data written by operators, so loading is strict: ``yaml.safe_load`` only, unknown or duplicate keys and
wrong types are errors, and every error names the file, the query and -- where one exists -- the line and column in
the YAML file (a query's own errors are translated from the query text to the file via yaml's node marks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from engine.events import DEFAULT_TICK
from engine.language import ast
from engine.language.parser import parse_query

__all__ = ["Pack", "PackError", "QuerySpec", "load_pack", "parse_pack", "DEFAULT_STRATEGY"]

DEFAULT_STRATEGY = "skip_till_any_match"
ALERT_SEVERITIES = ("info", "warning", "critical")

PACK_KEYS = ("pack", "tick", "description", "queries", "settings")
QUERY_KEYS = ("name", "description", "strategy", "confidence", "output", "alert", "enabled", "query")
ALERT_KEYS = ("severity", "webhook", "summary")


class PackError(ValueError):
    """An invalid pack: ``"<file>: [query <name>, ][line L, column C: ]<reason>"``."""

    def __init__(self, reason: str, source: str = "<string>", query: str = "", line: int = 0, column: int = 0) -> None:
        self.reason = reason
        self.source = source
        self.query = query
        self.line = line
        self.column = column
        where = [f"query {query}"] if query else []
        if line:
            where.append(f"line {line}, column {column}")
        prefix = f"{source}: " + (", ".join(where) + ": " if where else "")
        super().__init__(prefix + reason)


@dataclass(frozen=True)
class QuerySpec:
    """One query of a pack with its options resolved (defaults applied, strategy agreed with the text)."""

    name: str
    query: ast.Query
    strategy: str = DEFAULT_STRATEGY
    confidence: float = 0.0
    output: str = "all"
    description: str = ""
    alert: dict[str, str] | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Pack:
    name: str
    tick: float
    queries: tuple[QuerySpec, ...]
    source: str
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> QuerySpec:
        """The query called ``name``; KeyError lists the pack's names (the CLI's ``--query`` relies on it)."""
        for spec in self.queries:
            if spec.name == name:
                return spec
        raise KeyError(f"pack {self.name} has no query {name!r} (it has {', '.join(q.name for q in self.queries)})")


def load_pack(path: str | Path) -> Pack:
    """Read and validate the pack file at ``path``; errors name ``path`` as given."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"cannot read the pack: {exc}", source) from None
    return parse_pack(text, source)


def parse_pack(text: str, source: str = "<string>") -> Pack:
    """Validate a pack given as YAML text; ``source`` is the file name used in error messages."""
    return _PackReader(text, source).read()


# --------------------------------------------------------------------------- implementation


def _mark(node: yaml.Node | None) -> tuple[int, int]:
    if node is None:
        return 0, 0
    return node.start_mark.line + 1, node.start_mark.column + 1


def _mapping_index(node: yaml.Node | None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """Key -> (key node, value node) of a composed mapping, for positions."""
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.setdefault(key.value, (key, value))
    return out


def _duplicate_key(node: yaml.Node | None) -> yaml.Node | None:
    """The first repeated key of a mapping node (safe_load silently keeps the last one)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: set[str] = set()
    for key, _value in node.value:
        if isinstance(key, yaml.ScalarNode):
            if key.value in seen:
                return key
            seen.add(key.value)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text_offset(text: str, line: int, column: int) -> int:
    """Character offset of a 1-based line/column in ``text`` (clamped to the text)."""
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    return min(sum(len(s) + 1 for s in lines[: line - 1]) + max(column, 1) - 1, len(text))


class _PackReader:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.root: yaml.Node | None = None

    def error(self, reason: str, query: str = "", node: yaml.Node | None = None) -> NoReturn:
        line, column = _mark(node)
        raise PackError(reason, self.source, query, line, column)

    def read(self) -> Pack:
        try:
            data = yaml.safe_load(self.text)
            self.root = yaml.compose(self.text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            problem = getattr(exc, "problem", None) or str(exc)
            context = getattr(exc, "context", None)
            reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
            line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
            position = getattr(exc, "position", None)  # a ReaderError (a control character) has no mark
            if isinstance(exc, yaml.reader.ReaderError):
                ch = exc.character
                reason = f"invalid YAML: {exc.reason} ({f'#x{ch:04x}' if isinstance(ch, int) else repr(ch)})"
            if mark is None and isinstance(position, int):
                before = self.text[:position]
                line, column = before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1
            raise PackError(reason, self.source, "", line, column) from None
        if not isinstance(data, dict):
            kind = "an empty document" if data is None else f"a {type(data).__name__}"
            self.error(f"a pack must be a YAML mapping, not {kind}", node=self.root)
        dup = _duplicate_key(self.root)
        if dup is not None:
            self.error(f"duplicate key '{dup.value}'", node=dup)
        index = _mapping_index(self.root)

        def node(key: str, part: int = 1) -> yaml.Node | None:
            return index[key][part] if key in index else self.root

        for key in data:
            if key not in PACK_KEYS:
                self.error(f"unknown key '{key}' (allowed: {', '.join(PACK_KEYS)})", node=node(str(key), 0))
        name = data.get("pack")
        if not isinstance(name, str) or not name.strip():
            self.error("'pack' (the pack's name) is required and must be a non-empty string", node=node("pack"))
        tick = data.get("tick", DEFAULT_TICK)
        if not _is_number(tick) or tick <= 0:
            self.error(f"'tick' must be a number > 0 (seconds), got {tick!r}", node=node("tick"))
        description = data.get("description", "") or ""
        if not isinstance(description, str):
            self.error("'description' must be a string", node=node("description"))
        settings = data.get("settings") or {}
        if not isinstance(settings, dict):
            self.error("'settings' must be a mapping", node=node("settings"))
        queries = data.get("queries")
        if not isinstance(queries, list) or not queries:
            self.error("'queries' is required and must be a non-empty list", node=node("queries"))
        qnode = node("queries")
        item_nodes = qnode.value if isinstance(qnode, yaml.SequenceNode) else []
        specs: list[QuerySpec] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(queries):
            item_node = item_nodes[i] if i < len(item_nodes) else None
            spec = self.query_spec(item, i, item_node)
            if spec.name in seen:
                self.error(
                    f"duplicate query name (also query #{seen[spec.name] + 1})",
                    spec.name,
                    _mapping_index(item_node).get("name", (None, item_node))[1],
                )
            seen[spec.name] = i
            specs.append(spec)
        return Pack(
            name=name,
            tick=float(tick),
            queries=tuple(specs),
            source=self.source,
            description=description,
            settings=dict(settings),
        )

    def query_spec(self, item: Any, i: int, item_node: yaml.Node | None) -> QuerySpec:
        label = f"#{i + 1}"
        if not isinstance(item, dict):
            self.error(f"each entry of 'queries' must be a mapping, not {type(item).__name__}", label, item_node)
        dup = _duplicate_key(item_node)
        if dup is not None:  # before reading the name: a repeated key makes it ambiguous
            self.error(f"duplicate key '{dup.value}'", label, dup)
        index = _mapping_index(item_node)

        def node(key: str, part: int = 1) -> yaml.Node | None:
            return index[key][part] if key in index else item_node

        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            self.error("'name' is required and must be a non-empty string", label, node("name"))
        for key in item:
            if key not in QUERY_KEYS:
                self.error(f"unknown key '{key}' (allowed: {', '.join(QUERY_KEYS)})", name, node(str(key), 0))

        text = item.get("query")
        if not isinstance(text, str) or not text.strip():
            self.error("'query' (the SASE+ text) is required and must be a string", name, node("query"))
        try:
            query = parse_query(text, name)
        except ast.QueryError as exc:
            line, column = self.query_position(text, exc, index.get("query", (None, None))[1])
            raise PackError(exc.reason, self.source, name, line, column) from None

        description = item.get("description", "") or ""
        if not isinstance(description, str):
            self.error("'description' must be a string", name, node("description"))

        strategy = item.get("strategy")
        if strategy is None:
            strategy = query.strategy or DEFAULT_STRATEGY
        elif not isinstance(strategy, str) or strategy not in ast.STRATEGIES:
            self.error(
                f"'strategy' must be one of {', '.join(ast.STRATEGIES)}, got {strategy!r}", name, node("strategy")
            )
        elif query.strategy is not None and strategy != query.strategy:
            self.error(
                f"'strategy' {strategy} conflicts with the query text's {query.strategy}", name, node("strategy")
            )

        confidence = item.get("confidence", 0.0)
        if not _is_number(confidence) or not 0.0 <= confidence <= 1.0:
            self.error(f"'confidence' must be a number between 0 and 1, got {confidence!r}", name, node("confidence"))

        output = item.get("output", "all")
        if output not in ast.OUTPUT_MODES:
            self.error(f"'output' must be one of {', '.join(ast.OUTPUT_MODES)}, got {output!r}", name, node("output"))

        enabled = item.get("enabled", True)
        if not isinstance(enabled, bool):
            self.error(f"'enabled' must be true or false, got {enabled!r}", name, node("enabled"))

        alert = self.alert(item.get("alert"), name, node("alert")) if "alert" in item else None
        return QuerySpec(
            name=name,
            query=query,
            strategy=strategy,
            confidence=float(confidence),
            output=output,
            description=description,
            alert=alert,
            enabled=enabled,
        )

    def alert(self, alert: Any, name: str, alert_node: yaml.Node | None) -> dict[str, str] | None:
        """``alert: {severity, webhook, summary?}``; ``alert:`` left empty (null) means no alert."""
        if alert is None:
            return None
        if not isinstance(alert, dict):
            self.error("'alert' must be a mapping with severity and webhook", name, alert_node)
        dup = _duplicate_key(alert_node)
        if dup is not None:
            self.error(f"duplicate alert key '{dup.value}'", name, dup)
        index = _mapping_index(alert_node)

        def node(key: str, part: int = 1) -> yaml.Node | None:
            return index[key][part] if key in index else alert_node

        for key in alert:
            if key not in ALERT_KEYS:
                self.error(f"unknown alert key '{key}' (allowed: {', '.join(ALERT_KEYS)})", name, node(str(key), 0))
        severity = alert.get("severity")
        if severity not in ALERT_SEVERITIES:
            self.error(
                f"alert 'severity' must be one of {', '.join(ALERT_SEVERITIES)}, got {severity!r}",
                name,
                node("severity"),
            )
        webhook = alert.get("webhook")
        if not isinstance(webhook, str) or not webhook.strip():
            self.error(f"alert 'webhook' must be a non-empty string, got {webhook!r}", name, node("webhook"))
        out = {"severity": severity, "webhook": webhook}
        if "summary" in alert:
            if not isinstance(alert["summary"], str):
                self.error("alert 'summary' must be a string", name, node("summary"))
            out["summary"] = alert["summary"]
        return out

    def query_position(self, text: str, exc: ast.QueryError, scalar: yaml.Node | None) -> tuple[int, int]:
        """Translate a line/column in the query text to the YAML file.

        The scalar's value and its source differ by indentation (block ``|``), folding (``>``, plain multi-line) and
        escapes (quoted), so the non-blank characters of the value up to the error are matched, in order, against the
        source; each is found at or after the previous match.  Exact for block and plain scalars.
        """
        if scalar is None or not exc.line:
            return _mark(scalar)
        start, end = scalar.start_mark.index, scalar.end_mark.index
        if scalar.style in ("|", ">"):
            newline = self.text.find("\n", start, end)  # skip the block header (| or >, indicators, comment)
            start = newline + 1 if newline >= 0 else start
        elif scalar.style in ("'", '"'):
            start += 1
        target = _text_offset(text, exc.line, exc.column)
        pos = start
        found = None
        for ch in text[: target + 1]:
            if ch.isspace():
                continue
            hit = self.text.find(ch, pos, end)
            if hit < 0:
                break
            found, pos = hit, hit + 1
        if found is None:
            return _mark(scalar)
        if target >= len(text.rstrip()):  # the end of the query: just after its last character
            found += 1
        line = self.text.count("\n", 0, found) + 1
        column = found - (self.text.rfind("\n", 0, found) + 1) + 1
        return line, column
