"""Dr. Elephant's ``math/Statistics.java`` with Java's arithmetic (long truncation, NaN cast to 0).

``find_two_groups`` is ported as written, including its recursion's second threshold being the *difference* of the
two groups' means (not their midpoint): that is what Dr. Elephant runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

SECOND_IN_MS = 1000
MINUTE_IN_MS = 60 * SECOND_IN_MS
HOUR_IN_MS = 60 * MINUTE_IN_MS
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)


class JavaError(Exception):
    """An exception the Java code throws here (IllegalArgumentException, ArithmeticException): Dr. Elephant then
    abandons the job's whole analysis, and so does the port."""


def to_long(x: float) -> int:
    """Java's ``(long) double``: truncation toward zero, NaN to 0, saturating at the long range."""
    if math.isnan(x):
        return 0
    if x >= LONG_MAX:
        return LONG_MAX
    if x <= LONG_MIN:
        return LONG_MIN
    return int(x)


def ldiv(a: int, b: int) -> int:
    """Java's long ``a / b``: truncates toward zero; division by zero throws."""
    if b == 0:
        raise JavaError("ArithmeticException: / by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def average(values: Sequence[int]) -> int:
    """``Statistics.average``: double sum over length, cast to long (0 for an empty list: NaN cast)."""
    total = 0.0
    for v in values:
        total += v
    if not values:
        return 0
    return to_long(total / float(len(values)))


def median(values: list[int]) -> int:
    """``Statistics.median`` (sorts in place, as Java does); an empty list throws."""
    if not values:
        raise JavaError("IllegalArgumentException: Median of an empty list is not defined.")
    values.sort()
    middle = len(values) // 2
    if len(values) % 2 == 0:
        return ldiv(values[middle - 1] + values[middle], 2)
    return values[middle]


def percentile(values: list[int], pct: int) -> int:
    """``Statistics.percentile``: nearest rank."""
    if not values:
        raise JavaError("IllegalArgumentException: Percentile of empty list is not defined.")
    if pct > 100 or pct < 0:
        raise JavaError("IllegalArgumentException: Percentile has to be between 0-100")
    if pct == 0:
        return 0
    values.sort()
    position = math.ceil(len(values) * pct / 100.0)
    if position == 0:
        return values[position]
    return values[position - 1]


def deviates(values: Sequence[int], buffer: int, factor: float) -> list[int]:
    """``Statistics.deviates``: indices more than max(buffer, avg*factor) above the average."""
    if not values:
        return []
    avg = average(values)
    minimum_diff = max(buffer, to_long(avg * factor))
    return [i for i, v in enumerate(values) if v - avg > minimum_diff]


def _two_means(values: Sequence[int], middle: int) -> tuple[list[int], list[int]]:
    smaller = [v for v in values if v < middle]
    larger = [v for v in values if not v < middle]
    return smaller, larger


def find_two_groups(values: Sequence[int]) -> tuple[list[int], list[int]]:
    """``Statistics.findTwoGroups``: split at the mean, then twice at (mean of larger - mean of smaller)."""
    return _find_two_groups_recursive(values, average(values), 2)


def _find_two_groups_recursive(values: Sequence[int], middle: int, levels: int) -> tuple[list[int], list[int]]:
    if levels > 0:
        smaller, larger = _two_means(values, middle)
        new_middle = average(larger) - average(smaller)
        return _find_two_groups_recursive(values, new_middle, levels - 1)
    return _two_means(values, middle)


def describe_factor(value: int, compare: int, suffix: str) -> str:
    """``Statistics.describeFactor``: "(5.00x)", or "" when the ratio is NaN."""
    if compare == 0:
        if value == 0:
            return ""
        factor = math.inf if value > 0 else -math.inf
        return "(" + ("Infinity" if factor > 0 else "-Infinity") + suffix + ")"
    return "(" + f"{value / compare:.2f}" + suffix + ")"


def readable_timespan(milliseconds: int) -> str:
    """``Statistics.readableTimespan``: "1 hr 2 min 3 sec"."""
    if milliseconds == 0:
        return "0 sec"
    seconds = ldiv(milliseconds, 1000)
    minutes = ldiv(seconds, 60)
    hours = ldiv(minutes, 60)
    minutes = int(math.fmod(minutes, 60))
    seconds = int(math.fmod(seconds, 60))
    parts = []
    if hours > 0:
        parts.append(f"{hours} hr")
    if minutes > 0:
        parts.append(f"{minutes} min")
    if seconds > 0:
        parts.append(f"{seconds} sec")
    return " ".join(parts)
