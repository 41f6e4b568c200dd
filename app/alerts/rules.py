"""Alert rules over match records: records are facts, alerts are judgements.

A pack's ``alerts:`` (:class:`engine.language.packs.AlertRuleSpec`) say, per query, when its records make an alert:
a gate (``when``), a graded ``value`` with severity ``tiers`` in the style of Dr. Elephant's heuristics, a grouping
key (one alert per job or reducer, updated as records arrive, never one per record), a ``for`` hold and a resolved
state.  :class:`AlertEngine` applies them to the records of a stream in **stream time**: the largest event time fed
so far, given by the caller with every record and every event.  Nothing here reads a clock, so the same events give
the same alerts whether ``hcep match --alerts`` replays a file or ``hcep run`` consumes Kafka (semantics section 8).

Per rule and group the engine keeps a small state machine (``startsAt`` is the stream time at which the alert was
decided: when the record that made it came out of the engine, or when its ``for`` hold ended -- what the
time-to-detect figures of ``benchmarks/bench_detection.py`` measure)::

    (none) --condition true--> pending --held `for`--> firing --condition false / resolve.when / resolve.after--> (none)

Each transition to firing, each change of severity while firing (the old severity's alert resolves at the same
moment: severity is a label, so it is another alert to Alertmanager) and each resolution is one
:class:`contracts.alerts.Alert`.  The state is plain data (:meth:`AlertEngine.snapshot` / :meth:`restore`) so a
checkpoint can hold it.

Conditions are compiled from the parse tree of the query language's own expressions, never ``eval``-ed; a name is a
RETURN value of the record (``value`` is the rule's graded value).  Missing values are unknown (``None``) and an
unknown condition is false, as in queries.
"""

from __future__ import annotations

import heapq
import json
import math
import operator
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeGuard, cast

from app.alerts.evidence import EvidenceChains
from contracts.alerts import Alert, rfc3339
from contracts.records import MatchRecord, record_id
from engine.language import ast
from engine.language.packs import AlertRuleSpec, Pack

__all__ = ["AlertEngine", "compile_condition", "format_summary"]

Env = dict[str, Any]
GroupKey = tuple[Any, ...]  # a group's label values, in the rule's group_by order
Record = dict[str, Any]  # a match record (docs/semantics.md section 5)
Fn = Callable[[Env], Any]

#: Event ids shown per pattern variable in an alert's evidence (the full record is in the store, by its id).
EVIDENCE_IDS = 10
NEG_INF = -math.inf


# --------------------------------------------------------------------------------------------------- conditions
def _num(x: Any) -> TypeGuard[float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "%": operator.mod}
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compile_condition(expr: ast.Expr) -> Fn:
    """``env -> value`` for an expression over bare names (three-valued: ``None`` is unknown)."""
    if isinstance(expr, ast.Number | ast.String | ast.Bool):
        value = expr.value
        return lambda env: value
    if isinstance(expr, ast.Name):
        name = expr.name
        return lambda env: env.get(name)
    if isinstance(expr, ast.Neg):
        inner = compile_condition(expr.operand)

        def neg(env: Env) -> Any:
            v = inner(env)
            return -v if _num(v) else None

        return neg
    if isinstance(expr, ast.BinOp):
        left, right, op = compile_condition(expr.left), compile_condition(expr.right), _ARITH[expr.op]

        def arith(env: Env) -> Any:
            a, b = left(env), right(env)
            if not (_num(a) and _num(b)) or (expr.op in "/%" and b == 0):
                return None
            return op(a, b)

        return arith
    if isinstance(expr, ast.Compare):
        left, right = compile_condition(expr.left), compile_condition(expr.right)
        if expr.op in ("=", "!="):
            want = expr.op == "="

            def equal(env: Env) -> Any:
                a, b = left(env), right(env)
                if a is None or b is None:
                    return None
                return (a == b) is want

            return equal
        order = _ORDER[expr.op]

        def compare(env: Env) -> Any:
            a, b = left(env), right(env)
            if (_num(a) and _num(b)) or (isinstance(a, str) and isinstance(b, str)):
                return order(a, b)
            return None

        return compare
    if isinstance(expr, ast.And | ast.Or):
        items = [compile_condition(i) for i in expr.items]
        conj = isinstance(expr, ast.And)

        def logic(env: Env) -> Any:
            unknown = False
            for f in items:
                v = f(env)
                if v is (not conj):
                    return not conj
                if v is not conj:
                    unknown = True
            return None if unknown else conj

        return logic
    if isinstance(expr, ast.Not):
        inner = compile_condition(expr.operand)

        def negation(env: Env) -> Any:
            v = inner(env)
            return (not v) if isinstance(v, bool) else None

        return negation
    raise ValueError(f"not an alert-rule expression: {type(expr).__name__}")  # parse_condition admits no other


class _Lenient(string.Formatter):
    """``str.format`` that leaves an unknown field as written and shows a value whose format spec does not fit it
    (``{ratio:.1f}`` of ``None``) plainly, so a summary never fails."""

    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(key, str) and key not in kwargs:
            return "{" + key + "}"
        return super().get_value(key, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return str(super().format_field(value, format_spec))
        except (ValueError, TypeError):
            return str(value)


_FORMATTER = _Lenient()


def format_summary(template: str, env: Env) -> str:
    try:
        return _FORMATTER.vformat(template, (), env)
    except (ValueError, IndexError, AttributeError, KeyError):
        return template


# --------------------------------------------------------------------------------------------------- rules
@dataclass
class _Rule:
    spec: AlertRuleSpec
    pack: str
    output: str
    when: Fn | None
    value: Fn | None
    resolve_when: Fn | None

    @property
    def name(self) -> str:
        return self.spec.name

    def judge(self, env: Env) -> tuple[bool, str | None]:
        """(active, tier or severity) for one record's values; ``env`` gains ``value``."""
        spec = self.spec
        if self.value is not None:
            env["value"] = self.value(env)
        if self.when is not None and self.when(env) is not True:
            return False, None
        if not spec.tiers:
            return True, None
        v = env.get("value")
        if not _num(v):
            return False, None
        tier = None
        for name, threshold in spec.tiers:
            if v >= threshold:
                tier = name
        return tier is not None, tier


@dataclass
class _Group:
    """One alert group's state (plain data: it is what a checkpoint stores)."""

    status: str  # "pending" or "firing"
    since: float  # stream time the condition became true (pending start)
    tier: str | None
    last_true: float  # stream time of the last record meeting the condition
    fired_at: float | None = None  # startsAt of the firing alert
    env: dict[str, Any] | None = None  # the RETURN values (and value) behind the alert
    confidence: float = 0.0
    evidence: dict[str, Any] | None = None
    records: int = 0
    labels: dict[str, str] | None = None  # labels of the firing alert (to resolve exactly it)
    record: dict[str, Any] | None = field(default=None, repr=False)  # the record behind ``evidence``, until built
    cleared_by: dict[str, Any] | None = None  # the values of the record that resolved it

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "record"}


def _key_text(rule: str, key: GroupKey) -> str:
    return json.dumps([rule, list(key)], separators=(",", ":"), default=str)


class AlertEngine:
    """The alert rules of one pack over its records, in stream time.

    :meth:`observe` a record (with the stream time at which it came out), :meth:`advance` the stream time after
    every event; both return the alert transitions they decided, in order."""

    def __init__(self, pack: Pack, *, generator_url: str = "") -> None:
        self.pack = pack.name
        self.generator_url = generator_url
        outputs = {q.name: q.output for q in pack.queries}
        self.by_query: dict[str, list[_Rule]] = {}
        self.rules: dict[str, _Rule] = {}
        for spec in pack.rules():
            rule = _Rule(
                spec,
                pack.name,
                outputs.get(spec.query, "all"),
                None if spec.when is None else compile_condition(spec.when),
                None if spec.value is None else compile_condition(spec.value),
                None if spec.resolve_when is None else compile_condition(spec.resolve_when),
            )
            self.by_query.setdefault(spec.query, []).append(rule)
            self.rules[spec.name] = rule
        self.queries = frozenset(self.by_query)
        self.groups: dict[tuple[str, GroupKey], _Group] = {}
        self.deadlines: list[tuple[float, int, str, GroupKey, str, float]] = []  # (time, seq, rule, key, kind, token)
        self._seq = 0
        self.now = NEG_INF
        self.chains = EvidenceChains(EVIDENCE_IDS)  # growing runs' increments -> whole evidence (semantics section 5)

    # ------------------------------------------------------------------ feeding
    def observe(self, record: MatchRecord | Mapping[str, Any], now: float) -> list[Alert]:
        """The transitions ``record``, which came out of the engine at stream time ``now``, causes (and any deadline
        passed by ``now``).  ``now`` may lie behind the stream time already reached -- a process that took over
        another's partitions replays their older events -- and the record is then judged at its own time: its holds
        and staleness count from there, and a deadline already passed is met at once."""
        rules = self.by_query.get(record.get("query", ""))
        out = self.advance(now) if now > self.now else []
        if not rules:
            return out
        record = self.chains.view(cast(dict[str, Any], record))  # a record is its JSON object: a dict
        values = record.get("return") or {}
        for rule in rules:
            env = dict(values)
            active, tier = rule.judge(env)
            key = tuple(_label(values.get(g)) for g in rule.spec.group_by)
            group = self.groups.get((rule.name, key))
            if active:
                self._active(rule, key, group, tier, env, record, now, out)
            elif group is not None:
                self._inactive(rule, key, group, env, now, out)
        if now < self.now:
            out.extend(self._expire(self.now))
        return out

    def observe_many(self, records: Iterable[MatchRecord | Mapping[str, Any]], now: float) -> list[Alert]:
        out: list[Alert] = []
        for record in records:
            out.extend(self.observe(record, now))
        return out

    def advance(self, now: float) -> list[Alert]:
        """Move stream time to ``now``: fire held alerts whose ``for`` has passed, resolve stale ones."""
        if now <= self.now:
            return []
        self.now = now
        return self._expire(now)

    def _expire(self, now: float) -> list[Alert]:
        out: list[Alert] = []
        heap = self.deadlines
        while heap and heap[0][0] <= now:
            at, _, name, key, kind, token = heapq.heappop(heap)
            group = self.groups.get((name, key))
            rule = self.rules.get(name)
            if group is None or rule is None:
                continue
            if kind == "fire" and group.status == "pending" and group.since == token:
                self._fire(rule, key, group, at, out)
            elif kind == "stale" and group.status == "firing" and group.last_true == token:
                self._resolve(rule, key, group, at, out)
        return out

    # ------------------------------------------------------------------ transitions
    def _active(
        self,
        rule: _Rule,
        key: GroupKey,
        group: _Group | None,
        tier: str | None,
        env: Env,
        record: Record,
        now: float,
        out: list[Alert],
    ) -> None:
        spec = rule.spec
        if group is None:
            group = self.groups[(rule.name, key)] = _Group("pending", now, tier, now)
            if spec.for_seconds > 0:
                self._deadline(now + spec.for_seconds, rule.name, key, "fire", now)
        self._note(rule, group, env, record, tier)
        group.last_true = now
        if group.status == "pending":
            if now - group.since >= spec.for_seconds:
                self._fire(rule, key, group, now, out)
        elif self._rank(rule, tier) > self._rank(rule, group.tier):  # escalation: the old severity resolves
            old = self._alert(rule, group, now, ends_at=now)
            out.append(old)
            group.tier = tier
            group.fired_at = now
            alert = self._alert(rule, group, now)
            group.labels = alert.labels
            out.append(alert)
        if group.status == "firing" and spec.resolve_after is not None:
            self._deadline(now + spec.resolve_after, rule.name, key, "stale", now)

    def _inactive(self, rule: _Rule, key: GroupKey, group: _Group, env: Env, now: float, out: list[Alert]) -> None:
        if group.status == "pending":
            del self.groups[(rule.name, key)]
            return
        if rule.resolve_when is None or rule.resolve_when(env) is True:
            group.cleared_by = {k: v for k, v in env.items() if k != "value" or v is not None}
            self._resolve(rule, key, group, now, out)

    def _fire(self, rule: _Rule, key: GroupKey, group: _Group, at: float, out: list[Alert]) -> None:
        group.status = "firing"
        group.fired_at = at
        alert = self._alert(rule, group, at)
        group.labels = alert.labels
        out.append(alert)
        if rule.spec.resolve_after is not None:
            self._deadline(group.last_true + rule.spec.resolve_after, rule.name, key, "stale", group.last_true)

    def _resolve(self, rule: _Rule, key: GroupKey, group: _Group, at: float, out: list[Alert]) -> None:
        out.append(self._alert(rule, group, at, ends_at=at))
        del self.groups[(rule.name, key)]

    def _deadline(self, at: float, name: str, key: GroupKey, kind: str, token: float) -> None:
        self._seq += 1
        heapq.heappush(self.deadlines, (at, self._seq, name, key, kind, token))

    @staticmethod
    def _rank(rule: _Rule, tier: str | None) -> int:
        names = [t for t, _ in rule.spec.tiers]
        return names.index(tier) if tier in names else -1

    def _note(self, rule: _Rule, group: _Group, env: Env, record: Record, tier: str | None) -> None:
        """Keep the evidence of the latest record, unless a firing alert has seen a stronger one."""
        group.records += 1
        if group.status == "firing" and self._rank(rule, tier) < self._rank(rule, group.tier):
            return
        if group.status == "pending":
            group.tier = tier
        group.env = env
        group.confidence = float(record.get("confidence", 1.0))
        group.record = record  # the evidence is built when an alert or a snapshot needs it: most records need none
        group.evidence = None

    def _evidence(self, rule: _Rule, group: _Group) -> dict[str, Any]:
        record = group.record
        if record is not None:
            match = record.get("match") or {}
            shown = {
                v: (
                    list(islice(ids, EVIDENCE_IDS)) + [f"... {len(ids) - EVIDENCE_IDS} more"]
                    if len(ids) > EVIDENCE_IDS
                    else list(ids)
                )
                for v, ids in match.items()
            }
            group.evidence = {
                "query": record.get("query"),
                "record_id": record_id(record, rule.output),
                "match": shown,
                "return": record.get("return") or {},
                "start": record.get("start"),
                "end": record.get("end"),
            }
            group.record = None
        return group.evidence or {}

    # ------------------------------------------------------------------ alert objects
    def _alert(self, rule: _Rule, group: _Group, at: float, ends_at: float | None = None) -> Alert:
        spec = rule.spec
        env = dict(group.env or {})
        tier = group.tier
        severity = spec.severity_of(tier) if tier is not None else spec.severity
        labels = group.labels if (ends_at is not None and group.labels) else None
        if labels is None:
            labels = {"alertname": spec.name, "severity": severity, "pack": rule.pack, "query": spec.query}
            if tier is not None and tier != severity:
                labels["tier"] = tier
            for g in spec.group_by:
                labels[g] = _label(env.get(g))
            labels.update(spec.labels)
        fmt_env = {**env, "severity": labels.get("severity", severity), "tier": tier or severity}
        annotations = {
            "summary": format_summary(spec.summary, fmt_env) if spec.summary else _default_summary(spec, env),
            "description": spec.description,
            "confidence": repr(round(group.confidence, 6)),
            "evidence": json.dumps(
                {**self._evidence(rule, group), "records": group.records},
                sort_keys=True,
                default=str,
                separators=(",", ":"),
            ),
            "active_since": rfc3339(group.since) if math.isfinite(group.since) else "",
        }
        if "value" in env and env["value"] is not None:
            annotations["value"] = str(env["value"])
        if ends_at is not None and group.cleared_by:  # the summary stays the one it fired with; what cleared it:
            annotations["resolved_by"] = json.dumps(group.cleared_by, sort_keys=True, default=str)
        starts = group.fired_at if group.fired_at is not None else at
        return Alert(labels, annotations, starts, ends_at, self.generator_url, at=at)

    def firing(self) -> list[Alert]:
        """The alerts firing now (their latest evidence), e.g. for an Alertmanager that restarted."""
        return [
            self._alert(self.rules[name], g, self.now)
            for (name, _k), g in self.groups.items()
            if g.status == "firing" and name in self.rules
        ]

    # ------------------------------------------------------------------ checkpoints
    def snapshot(self) -> dict[str, Any]:
        """Plain data: the stream time and every group's state (deadlines follow from them)."""
        for (name, _key), g in self.groups.items():
            if g.record is not None and name in self.rules:
                self._evidence(self.rules[name], g)
        return {
            "now": None if self.now == NEG_INF else self.now,
            "groups": [[name, list(key), g.to_json()] for (name, key), g in self.groups.items()],
            "chains": self.chains.snapshot(),
        }

    def restore(self, data: dict[str, Any] | None) -> None:
        self.groups.clear()
        self.deadlines.clear()
        self.chains.restore(data.get("chains") if data else None)
        if not data:
            self.now = NEG_INF
            return
        self.now = NEG_INF if data.get("now") is None else float(data["now"])
        self.merge(data)

    def merge(self, data: dict[str, Any]) -> None:
        """Take over the groups of another engine's snapshot (a process that died): those this one has not got."""
        self.chains.merge(data.get("chains"))
        for name, key, state in data.get("groups", []):
            rule = self.rules.get(name)
            if rule is None:
                continue  # a rule removed from the pack since: its groups go
            k = tuple(key)
            if (name, k) in self.groups:
                continue
            group = _Group(**state)
            self.groups[(name, k)] = group
            spec = rule.spec
            if group.status == "pending" and spec.for_seconds > 0:
                self._deadline(group.since + spec.for_seconds, name, k, "fire", group.since)
            elif group.status == "firing" and spec.resolve_after is not None:
                self._deadline(group.last_true + spec.resolve_after, name, k, "stale", group.last_true)


def _label(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _default_summary(spec: AlertRuleSpec, env: Env) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in env.items() if k != "value")
    return f"{spec.name}: {shown}" if shown else spec.name
