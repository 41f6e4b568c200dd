"""docs/semantics.md section 9's score: alerts judged against the faults the simulator injected (``ground_truth.json``).

Pure functions over plain data, so that any independent check can run the same arithmetic:

- an alert is counted once: its firing and resolving transitions are one alert (its labels and ``startsAt``);
- only warnings count (severity ``warning`` or ``critical``);
- an alert *detects* a fault when its labels name the fault's entity (``job_id``, ``host`` or ``task_id``) and it
  starts between the fault's ``onset`` and its ``end`` plus ten minutes;
- it *touches* a fault or a ``natural`` entry when, in that window, it names an entity of the fault's ``affected``
  lists, or the entity of a natural entry or of a fault below its floor (``actionable`` false);
- per kind, recall = actionable faults detected / actionable faults; delay = the first detecting alert's
  ``startsAt`` - the fault's ``onset`` (stream time);
- precision = warnings that detect an actionable fault / (all warnings - warnings that only touch); a warning that
  neither detects nor touches is a false warning (reported per 1000 node-hours).

Section 9 leaves open whether a warning that names the entity of a below-floor fault "detects" (it is listed under
"touches"): here it touches, so it counts neither for nor against precision.  Per-kind precision counts the warnings
of the rules that declare that kind (the rule's ``kind`` label, or a Dr. Elephant heuristic mapped to it).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The fault kinds of section 9's table, in its order.
KINDS = ("map_data_skew", "reduce_data_skew", "slow_node", "hung_fetch", "held_output", "runaway_reducer")
#: Severities that count as a warning.
WARNING_OR_WORSE = frozenset({"warning", "critical"})
#: An alert may come this long after a fault's end and still detect it.
GRACE_S = 600.0
#: The labels that name an entity.
ENTITY_LABELS = ("job_id", "host", "task_id")


@dataclass(frozen=True)
class Warning_:
    """One alert (firing and resolving transitions folded), reduced to what the score reads."""

    labels: tuple[tuple[str, str], ...]
    starts: float
    kind: str | None  # the kind its rule declares, when it declares one

    def names(self, label: str, value: str) -> bool:
        return any(k == label and v == value for k, v in self.labels)


@dataclass
class Window:
    """A fault or natural entry: its entities, when it acts, whether it counts for recall."""

    kind: str
    entity: tuple[str, str]
    onset: float
    end: float
    actionable: bool
    severity: float | None
    affected: tuple[tuple[str, str], ...] = ()
    injected: bool = True

    def open(self, t: float) -> bool:
        return self.onset <= t <= self.end + GRACE_S


@dataclass
class KindScore:
    kind: str
    faults: int = 0
    actionable: int = 0
    detected: int = 0
    warnings: int = 0  # warnings of the rules of this kind
    true_warnings: int = 0  # ... that detect an actionable fault
    touch_only: int = 0  # ... that only touch
    false_warnings: int = 0  # ... that neither detect nor touch
    delays: list[float] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    by_severity: list[tuple[float, bool]] = field(default_factory=list)  # (severity, detected) of each fault

    @property
    def recall(self) -> float | None:
        return self.detected / self.actionable if self.actionable else None

    @property
    def precision(self) -> float | None:
        judged = self.warnings - self.touch_only
        return self.true_warnings / judged if judged else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Score:
    kinds: dict[str, KindScore]
    warnings: int = 0
    true_warnings: int = 0
    touch_only: int = 0
    false_warnings: int = 0
    false_examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        judged = self.warnings - self.touch_only
        return self.true_warnings / judged if judged else None


def warnings_of(alerts: Iterable[Mapping[str, Any]], kind_of: Mapping[str, str] | None = None) -> list[Warning_]:
    """The distinct warnings among Alertmanager v2 transitions (``labels``, ``startsAt``; resolutions fold in).

    ``kind_of`` maps an ``alertname`` to the fault kind its rule stands for, where the labels do not say it
    (a ``kind`` label wins)."""
    from contracts.alerts import parse_rfc3339

    seen: dict[tuple[tuple[tuple[str, str], ...], float], Warning_] = {}
    for alert in alerts:
        labels = {str(k): str(v) for k, v in alert.get("labels", {}).items()}
        if labels.get("severity") not in WARNING_OR_WORSE:
            continue
        starts = alert.get("startsAt")
        t = starts if isinstance(starts, (int, float)) else parse_rfc3339(str(starts))
        if t is None:
            continue
        identity = tuple(sorted((k, v) for k, v in labels.items() if k != "severity"))
        kind = labels.get("kind") or (kind_of or {}).get(labels.get("alertname", ""))
        key = (identity, float(t))
        if key not in seen:
            seen[key] = Warning_(identity, float(t), kind)
    return list(seen.values())


def windows_of(truth: Mapping[str, Any]) -> tuple[list[Window], list[Window]]:
    """The injected faults and the natural entries of a ``ground_truth.json``."""
    faults = []
    for f in truth.get("faults", []):
        if not f.get("entity"):  # no target before the window's end: it caused nothing
            continue
        (label, value), *_ = f["entity"].items()
        affected = tuple((lab, str(v)) for lab, values in (f.get("affected") or {}).items() for v in values)
        faults.append(
            Window(
                kind=f["kind"],
                entity=(label, str(value)),
                onset=float(f["onset"]),
                end=float(f["end"]),
                actionable=bool(f["actionable"]),
                severity=float(f["severity"]) if f.get("severity") is not None else None,
                affected=affected,
            )
        )
    natural = []
    for n in truth.get("natural", []):
        (label, value), *_ = n["entity"].items()
        natural.append(
            Window(
                kind=n["kind"],
                entity=(label, str(value)),
                onset=float(n["onset"]),
                end=float(n["end"]),
                actionable=False,
                severity=None,
                injected=False,
            )
        )
    return faults, natural


def detects(w: Warning_, f: Window) -> bool:
    """The warning names the fault's entity inside its window (onset to end + ten minutes)."""
    return f.open(w.starts) and w.names(*f.entity)


def _touches(w: Warning_, f: Window) -> bool:
    if not f.open(w.starts):
        return False
    if any(w.names(lab, v) for lab, v in f.affected):
        return True
    return (not f.actionable or not f.injected) and w.names(*f.entity)


def score(
    truth: Mapping[str, Any],
    alerts: Iterable[Mapping[str, Any]],
    kind_of: Mapping[str, str] | None = None,
    *,
    example_limit: int = 5,
) -> Score:
    """Section 9's score of one cluster's alerts against its truth."""
    faults, natural = windows_of(truth)
    warnings = warnings_of(alerts, kind_of)
    kinds = {k: KindScore(k) for k in KINDS}
    for f in faults:
        ks = kinds.setdefault(f.kind, KindScore(f.kind))
        ks.faults += 1
        hits = sorted(w.starts for w in warnings if detects(w, f))
        if f.severity is not None:
            ks.by_severity.append((f.severity, bool(hits)))
        if not f.actionable:
            continue
        ks.actionable += 1
        if hits:
            ks.detected += 1
            ks.delays.append(hits[0] - f.onset)
        else:
            ks.missed.append(f"{f.entity[0]}={f.entity[1]}")
    out = Score(kinds)
    for w in warnings:
        detecting = any(f.actionable and detects(w, f) for f in faults)
        touches = not detecting and any(_touches(w, x) for x in (*faults, *natural))
        out.warnings += 1
        out.true_warnings += detecting
        out.touch_only += touches
        false = not detecting and not touches
        out.false_warnings += false
        if false and len(out.false_examples) < example_limit:
            out.false_examples.append({"labels": dict(w.labels), "startsAt": w.starts})
        ks = kinds.get(w.kind or "")
        if ks is not None:
            ks.warnings += 1
            ks.true_warnings += detecting
            ks.touch_only += touches
            ks.false_warnings += false
    return out


def merge(scores: Sequence[Score]) -> Score:
    """The sum of several clusters' scores (counts add up, delays and severities pool)."""
    total = Score({k: KindScore(k) for k in KINDS})
    for s in scores:
        total.warnings += s.warnings
        total.true_warnings += s.true_warnings
        total.touch_only += s.touch_only
        total.false_warnings += s.false_warnings
        total.false_examples.extend(s.false_examples[: max(0, 5 - len(total.false_examples))])
        for k, ks in s.kinds.items():
            t = total.kinds.setdefault(k, KindScore(k))
            for name in ("faults", "actionable", "detected", "warnings", "true_warnings", "touch_only"):
                setattr(t, name, getattr(t, name) + getattr(ks, name))
            t.false_warnings += ks.false_warnings
            t.delays.extend(ks.delays)
            t.missed.extend(ks.missed)
            t.by_severity.extend(ks.by_severity)
    return total


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (nearest rank), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None
