"""Dr. Elephant's ``Severity`` (analysis/Severity.java): five levels and the threshold helpers.

Ported as written: thresholds compare as doubles, ``>=`` ascending and ``<=`` descending, and NaN matches nothing.
"""

from __future__ import annotations

from enum import IntEnum


class Severity(IntEnum):
    """Severity levels, valued as in Java (NONE 0 .. CRITICAL 4)."""

    NONE = 0
    LOW = 1
    MODERATE = 2
    SEVERE = 3
    CRITICAL = 4


def severity_max(*severities: Severity) -> Severity:
    """``Severity.max(...)``: the highest, NONE for none."""
    current = Severity.NONE
    for sev in severities:
        current = sev if sev > current else current
    return current


def severity_min(a: Severity, b: Severity) -> Severity:
    """``Severity.min(a, b)``."""
    return a if a < b else b


def ascending(value: float, low: float, moderate: float, severe: float, critical: float) -> Severity:
    """``getSeverityAscending``: CRITICAL from ``critical`` up, NONE below ``low``."""
    v = float(value)
    if v >= critical:
        return Severity.CRITICAL
    if v >= severe:
        return Severity.SEVERE
    if v >= moderate:
        return Severity.MODERATE
    if v >= low:
        return Severity.LOW
    return Severity.NONE


def descending(value: float, low: float, moderate: float, severe: float, critical: float) -> Severity:
    """``getSeverityDescending``: CRITICAL from ``critical`` down, NONE above ``low``."""
    v = float(value)
    if v <= critical:
        return Severity.CRITICAL
    if v <= severe:
        return Severity.SEVERE
    if v <= moderate:
        return Severity.MODERATE
    if v <= low:
        return Severity.LOW
    return Severity.NONE


def ascending4(value: float, limits: tuple[float, float, float, float]) -> Severity:
    """``ascending`` with the four limits as one tuple (how every heuristic keeps them)."""
    return ascending(value, *limits)


def descending4(value: float, limits: tuple[float, float, float, float]) -> Severity:
    """``descending`` with the four limits as one tuple."""
    return descending(value, *limits)


def heuristic_score(severity: Severity, tasks: int) -> int:
    """``Utils.getHeuristicScore``: severity x tasks from MODERATE up, else 0."""
    return int(severity) * tasks if severity >= Severity.MODERATE else 0
