"""YAML query packs (docs/semantics.md section 6): a named set of queries with their per-query options, and alert rules.

Queries produce records (facts); a pack's ``alerts:`` rules judge them (:class:`AlertRuleSpec`): a condition and a
graded value over one query's RETURN names, parsed with the query language's own expression grammar
(:func:`engine.language.parser.parse_condition`), severity tiers, grouping, hold and resolution.  The rules are
evaluated by ``app.alerts.rules``; here they are only read and checked.

Packs are data written by operators, so loading is strict: ``yaml.safe_load`` only, unknown or duplicate keys and
wrong types are errors, and every error names the file, the query and -- where one exists -- the line and column in
the YAML file (a query's own errors are translated from the query text to the file via yaml's node marks).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from engine.events import DEFAULT_TICK
from engine.language import ast
from engine.language.parser import UNITS, parse_condition, parse_query

__all__ = ["AlertRuleSpec", "Pack", "PackError", "QuerySpec", "load_pack", "parse_pack", "DEFAULT_STRATEGY"]

DEFAULT_STRATEGY = "skip_till_any_match"
ALERT_SEVERITIES = ("info", "warning", "critical")
#: Dr. Elephant's severity tiers, least severe first, and the severity label each carries.
TIER_SEVERITY = {"low": "info", "moderate": "warning", "severe": "critical", "critical": "critical"}

PACK_KEYS = ("pack", "tick", "description", "queries", "alerts", "settings")
QUERY_KEYS = ("name", "description", "strategy", "confidence", "output", "alert", "enabled", "query")
ALERT_KEYS = ("severity", "webhook", "summary")
RULE_KEYS = (
    "name",
    "query",
    "description",
    "group_by",
    "when",
    "value",
    "tiers",
    "severity",
    "for",
    "resolve",
    "summary",
    "labels",
    "webhook",
    "enabled",
)
RESOLVE_KEYS = ("when", "after")


class PackError(ValueError):
    """An invalid pack: ``"<file>: [query <name>, | rule <name>, ][line L, column C: ]<reason>"``."""

    def __init__(
        self, reason: str, source: str = "<string>", query: str = "", line: int = 0, column: int = 0, rule: str = ""
    ) -> None:
        self.reason = reason
        self.source = source
        self.query = query
        self.rule = rule
        self.line = line
        self.column = column
        where = [f"query {query}"] if query else []
        if rule:
            where.append(f"rule {rule}")
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
class AlertRuleSpec:
    """One alert rule: when records of ``query`` make an alert, how severe, for which group, and when it clears.

    - ``when``: the gate, an expression over the query's RETURN names (minimum task counts, excess time, bytes...);
      ``None`` is always true.
    - ``value`` and ``tiers``: the graded quantity and its ascending thresholds (``value >= threshold``), named by
      Dr. Elephant's tiers (low, moderate, severe, critical) or by severities (info, warning, critical); below the
      lowest tier the condition is false.  Without tiers the alert has the fixed ``severity``.
    - ``group_by``: RETURN names whose values identify one alert (one per job, per reducer...); they become labels.
    - ``for_seconds``: how long (stream time) the condition must hold before the alert fires.
    - ``resolve_when``: an expression that resolves a firing alert when a record satisfies it (hysteresis); without
      it, a record for which the condition is false resolves it.  ``resolve_after``: seconds of stream time without a
      record meeting the condition after which a firing alert resolves (``None``: never by time).
    """

    name: str
    query: str
    description: str = ""
    group_by: tuple[str, ...] = ()
    when: ast.Expr | None = None
    value: ast.Expr | None = None
    tiers: tuple[tuple[str, float], ...] = ()
    severity: str = "warning"
    for_seconds: float = 0.0
    resolve_when: ast.Expr | None = None
    resolve_after: float | None = None
    summary: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    webhook: str | None = None
    enabled: bool = True
    when_text: str = ""
    value_text: str = ""

    def severity_of(self, tier: str) -> str:
        return TIER_SEVERITY.get(tier, tier)


@dataclass(frozen=True)
class Pack:
    name: str
    tick: float
    queries: tuple[QuerySpec, ...]
    source: str
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    alerts: tuple[AlertRuleSpec, ...] = ()

    def rules(self) -> tuple[AlertRuleSpec, ...]:
        """The enabled alert rules over enabled queries: the pack's ``alerts:``, then one rule per query that still
        carries the older per-query ``alert:`` shorthand (an alert for every record, fixed severity, one alert per
        distinct RETURN value)."""
        enabled = {q.name for q in self.queries if q.enabled}
        out = [r for r in self.alerts if r.enabled and r.query in enabled]
        for q in self.queries:
            if q.alert and q.enabled:
                names = tuple(item.name for item in q.query.returns)
                out.append(
                    AlertRuleSpec(
                        name=q.name,
                        query=q.name,
                        description=q.description,
                        group_by=names,
                        severity=q.alert["severity"],
                        summary=q.alert.get("summary", ""),
                        webhook=q.alert["webhook"],
                        resolve_after=3600.0,
                    )
                )
        return tuple(out)

    def get(self, name: str) -> QuerySpec:
        """The query called ``name``; KeyError lists the pack's names (the CLI's ``--query`` relies on it)."""
        for spec in self.queries:
            if spec.name == name:
                return spec
        raise KeyError(f"pack {self.name} has no query {name!r} (it has {', '.join(q.name for q in self.queries)})")


def load_pack(path: str | os.PathLike[str]) -> Pack:
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
        rules: list[AlertRuleSpec] = []
        if "alerts" in data and data["alerts"] is not None:
            alerts = data["alerts"]
            anode = node("alerts")
            if not isinstance(alerts, list):
                self.error("'alerts' must be a list of alert rules", node=anode)
            rule_nodes = anode.value if isinstance(anode, yaml.SequenceNode) else []
            by_name = {s.name: s for s in specs}
            for i, item in enumerate(alerts):
                rule = self.alert_rule(item, i, rule_nodes[i] if i < len(rule_nodes) else None, by_name)
                if any(r.name == rule.name for r in rules):
                    self.rule_error(
                        "duplicate alert rule name", rule.name, rule_nodes[i] if i < len(rule_nodes) else anode
                    )
                rules.append(rule)
        return Pack(
            name=name,
            tick=float(tick),
            queries=tuple(specs),
            source=self.source,
            description=description,
            settings=dict(settings),
            alerts=tuple(rules),
        )

    # ------------------------------------------------------------------ alert rules

    def rule_error(self, reason: str, rule: str, node: yaml.Node | None) -> NoReturn:
        line, column = _mark(node)
        raise PackError(reason, self.source, "", line, column, rule=rule)

    def alert_rule(
        self, item: Any, i: int, item_node: yaml.Node | None, queries: dict[str, QuerySpec]
    ) -> AlertRuleSpec:
        label = f"#{i + 1}"
        if not isinstance(item, dict):
            self.rule_error(f"each entry of 'alerts' must be a mapping, not {type(item).__name__}", label, item_node)
        dup = _duplicate_key(item_node)
        if dup is not None:
            self.rule_error(f"duplicate key '{dup.value}'", label, dup)
        index = _mapping_index(item_node)

        def node(key: str, part: int = 1) -> yaml.Node | None:
            return index[key][part] if key in index else item_node

        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            self.rule_error("'name' is required and must be a non-empty string", label, node("name"))
        for key in item:
            if key not in RULE_KEYS:
                self.rule_error(f"unknown key '{key}' (allowed: {', '.join(RULE_KEYS)})", name, node(str(key), 0))
        qname = item.get("query")
        if not isinstance(qname, str) or qname not in queries:
            known = ", ".join(queries) or "none"
            self.rule_error(f"'query' must name a query of this pack ({known}), got {qname!r}", name, node("query"))
        returns = {r.name for r in queries[qname].query.returns}

        def condition(key: str, value: Any, at: yaml.Node | None) -> tuple[ast.Expr, str]:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                self.rule_error(f"'{key}' must be an expression (text), got {value!r}", name, at)
            text = str(value)
            try:
                expr = parse_condition(text, name)
            except ast.QueryError as exc:
                line, column = self.query_position(text, exc, at) if isinstance(at, yaml.ScalarNode) else _mark(at)
                raise PackError(exc.reason, self.source, "", line, column, rule=name) from None
            for n in ast.walk(expr):
                if isinstance(n, ast.Name) and n.name not in returns and n.name != "value":
                    shown = ", ".join(sorted(returns)) or "none"
                    fake = ast.QueryError("", name, n.line, n.column)
                    line, column = self.query_position(text, fake, at) if isinstance(at, yaml.ScalarNode) else _mark(at)
                    raise PackError(
                        f"'{n.name}' is not a RETURN name of query {qname} (it has: {shown})",
                        self.source,
                        "",
                        line,
                        column,
                        rule=name,
                    )
            return expr, text

        description = item.get("description", "") or ""
        if not isinstance(description, str):
            self.rule_error("'description' must be a string", name, node("description"))
        group_by = item.get("group_by", [])
        if isinstance(group_by, str):
            group_by = [group_by]
        if not isinstance(group_by, list) or not all(isinstance(g, str) for g in group_by):
            self.rule_error("'group_by' must be a list of RETURN names", name, node("group_by"))
        for g in group_by:
            if g not in returns:
                self.rule_error(
                    f"group_by '{g}' is not a RETURN name of query {qname} (it has: {', '.join(sorted(returns))})",
                    name,
                    node("group_by"),
                )
        when = when_text = None
        if "when" in item:
            when, when_text = condition("when", item["when"], node("when"))
        value = value_text = None
        if "value" in item:
            value, value_text = condition("value", item["value"], node("value"))
        tiers: list[tuple[str, float]] = []
        if "tiers" in item:
            raw = item["tiers"]
            if value is None:
                self.rule_error("'tiers' grade a 'value': give one", name, node("tiers"))
            if not isinstance(raw, dict) or not raw:
                self.rule_error(
                    "'tiers' must map tier names to thresholds, e.g. {low: 2, moderate: 4, severe: 8, critical: 16}",
                    name,
                    node("tiers"),
                )
            names = list(raw)
            vocab = TIER_SEVERITY if all(t in TIER_SEVERITY for t in names) else ALERT_SEVERITIES
            for t in names:
                if t not in vocab:
                    self.rule_error(
                        f"unknown tier '{t}' (use low, moderate, severe, critical or info, warning, critical)",
                        name,
                        node("tiers"),
                    )
                if not _is_number(raw[t]):
                    self.rule_error(f"tier '{t}' needs a number, got {raw[t]!r}", name, node("tiers"))
            order = list(vocab)
            tiers = sorted(((t, float(raw[t])) for t in names), key=lambda x: order.index(x[0]))
            if any(b[1] <= a[1] for a, b in zip(tiers, tiers[1:], strict=False)):
                self.rule_error("tier thresholds must rise with the tiers", name, node("tiers"))
        severity = item.get("severity", "warning")
        if severity not in ALERT_SEVERITIES:
            self.rule_error(
                f"'severity' must be one of {', '.join(ALERT_SEVERITIES)}, got {severity!r}", name, node("severity")
            )
        if "severity" in item and tiers:
            self.rule_error("give 'severity' or 'tiers', not both", name, node("severity"))
        for_seconds = self.duration(item.get("for", 0), name, node("for"), "for")
        resolve_when = None
        resolve_after = None
        if "resolve" in item:
            res = item["resolve"]
            rnode = node("resolve")
            if not isinstance(res, dict):
                self.rule_error("'resolve' must be a mapping with 'when' and/or 'after'", name, rnode)
            rindex = _mapping_index(rnode)
            for key in res:
                if key not in RESOLVE_KEYS:
                    self.rule_error(
                        f"unknown resolve key '{key}' (allowed: {', '.join(RESOLVE_KEYS)})",
                        name,
                        rindex.get(str(key), (rnode, rnode))[0],
                    )
            if "when" in res:
                resolve_when, _ = condition("resolve.when", res["when"], rindex.get("when", (None, rnode))[1])
            if "after" in res:
                resolve_after = self.duration(
                    res["after"], name, rindex.get("after", (None, rnode))[1], "resolve.after"
                )
        summary = item.get("summary", "") or ""
        if not isinstance(summary, str):
            self.rule_error("'summary' must be a string", name, node("summary"))
        labels = item.get("labels", {}) or {}
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
            for k, v in labels.items()
        ):
            self.rule_error("'labels' must map label names to strings", name, node("labels"))
        webhook = item.get("webhook")
        if webhook is not None and (not isinstance(webhook, str) or not webhook.strip()):
            self.rule_error(f"'webhook' must be a non-empty string, got {webhook!r}", name, node("webhook"))
        enabled = item.get("enabled", True)
        if not isinstance(enabled, bool):
            self.rule_error(f"'enabled' must be true or false, got {enabled!r}", name, node("enabled"))
        return AlertRuleSpec(
            name=name,
            query=qname,
            description=description,
            group_by=tuple(group_by),
            when=when,
            value=value,
            tiers=tuple(tiers),
            severity=severity,
            for_seconds=for_seconds,
            resolve_when=resolve_when,
            resolve_after=resolve_after,
            summary=summary,
            labels={str(k): str(v) for k, v in labels.items()},
            webhook=webhook,
            enabled=enabled,
            when_text=when_text or "",
            value_text=value_text or "",
        )

    def duration(self, value: Any, rule: str, at: yaml.Node | None, key: str) -> float:
        """``90`` (seconds), ``"90 s"``, ``"2 minutes"``, ``"1 hour"`` -> seconds (the WITHIN units)."""
        if _is_number(value) and value >= 0:
            return float(value)
        if isinstance(value, str):
            parts = value.split()
            if len(parts) == 1:
                m = re.fullmatch(r"(\d+(?:\.\d+)?)([a-zA-Z]+)", parts[0])
                parts = [m.group(1), m.group(2)] if m else parts
            if len(parts) == 2 and parts[1].lower() in UNITS:
                try:
                    return float(parts[0]) * UNITS[parts[1].lower()]
                except ValueError:
                    pass
        self.rule_error(f'\'{key}\' must be a duration such as 90, "90 s" or "2 minutes", got {value!r}', rule, at)

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
        style = getattr(scalar, "style", None)  # a ScalarNode's; other nodes have none
        if style in ("|", ">"):
            newline = self.text.find("\n", start, end)  # skip the block header (| or >, indicators, comment)
            start = newline + 1 if newline >= 0 else start
        elif style in ("'", '"'):
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
