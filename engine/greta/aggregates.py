"""Per-vertex aggregate vectors of GRETA (paper Theorem 9.1 / digest section 5), kept exact.

A vertex stores, for each window and group, the aggregate over every sub-trend that starts at a START event and ends
at the vertex.  The vector always begins with the sub-trend count (SUM and COUNT(v) need it: an event seen in ``c``
sub-trends contributes ``c`` occurrences), then additive fields, then MIN fields, then MAX fields, so that combining
two vectors is three C-level ``map`` calls.

Exactness: counts are Python ints (trend counts grow like 2^n).  SUMs are kept as an int part (int values) and a
float part scaled by 2^1074 -- every finite double is an integer multiple of 2^-1074 -- so they are exact big ints
too; a float is produced only at output.  Only int and finite float values count as numbers (not bool, NaN, inf or
strings): SUM/AVG/MIN/MAX skip the others, and SUM/AVG/MIN/MAX over no number are ``None``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from engine.events import Event
from engine.plan.trend_template import TrendAgg

__all__ = ["TrendAgg", "Layout", "MaxFirstLayout", "to_output"]

#: Floats are scaled by 2**SCALE_BITS into ints: the smallest subnormal double is 2**-1074.
SCALE_BITS = 1074
INF = math.inf

# Own-contribution operations applied when a vertex is created.
_ADD_C, _ADD_VC, _MIN, _MAX = range(4)


def _number(value: Any) -> int | float | None:
    """``value`` if it counts as a number for trend aggregates, else None."""
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is float and math.isfinite(value):
        return float(value)
    return None


def _scaled(value: float) -> int:
    """``value * 2**SCALE_BITS`` exactly (a finite double's denominator is a power of two <= 2**1074)."""
    num, den = value.as_integer_ratio()
    return num << (SCALE_BITS - den.bit_length() + 1)


def _value(ev: Event, attr: str) -> Any:
    return ev.ts if attr == "ts" else ev.attrs.get(attr)


class Layout:
    """The aggregate vector for a set of trend aggregates over the variables of a template's states."""

    def __init__(self, aggs: Sequence[TrendAgg], state_vars: Sequence[str]) -> None:
        self.aggs = tuple(aggs)
        additive: list[tuple[Any, ...]] = [("count", None, None)]
        mins: list[tuple[Any, ...]] = []
        maxs: list[tuple[Any, ...]] = []

        def need(target: list[tuple[Any, ...]], field: tuple[Any, ...]) -> None:
            if field not in target:
                target.append(field)

        for agg in self.aggs:
            if agg.var is None:
                continue
            if agg.func == "count":
                need(additive, ("cnt", agg.var, None))
            elif agg.func in ("sum", "avg"):
                for kind in ("sumi", "sumf", "nflt", "nnum"):
                    need(additive, (kind, agg.var, agg.attr))
            elif agg.func == "min":
                need(mins, ("min", agg.var, agg.attr))
            elif agg.func == "max":
                need(maxs, ("max", agg.var, agg.attr))
            else:  # pragma: no cover - the parser admits no other function
                raise ValueError(f"unknown trend aggregate {agg.func}")
        self.fields = additive + mins + maxs
        self.slot = {f: i for i, f in enumerate(self.fields)}
        na, nm = len(additive), len(additive) + len(mins)
        self.count_only = len(self.fields) == 1
        if self.count_only:
            self.zero: Any = 0
            self.unit: Any = 1
            self.add: Callable[[Any, Any], Any] = operator.add
        else:
            self.zero = (0,) * na + (INF,) * len(mins) + (-INF,) * len(maxs)
            self.unit = (1,) + self.zero[1:]
            add = operator.add
            if not mins and not maxs:

                def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
                    return tuple(map(add, a, b))

            else:

                def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
                    return (*map(add, a[:na], b[:na]), *map(min, a[na:nm], b[na:nm]), *map(max, a[nm:], b[nm:]))

            self.add = combine
        # Per state: the fields its own event contributes to, as (slot, kind, attr).
        self._own = [
            [(i, kind, attr) for i, (kind, var, attr) in enumerate(self.fields) if var == sv] for sv in state_vars
        ]

    # ------------------------------------------------------------------ propagation

    def start(self, ev: Event) -> Any:
        """The aggregate of the one-event sub-trend before the event's own values are added."""
        return self.unit

    def count(self, agg: Any) -> int:
        return int(agg if self.count_only else agg[0])

    def own(self, state: int, ev: Event) -> list[tuple[int, int, Any]] | None:
        """What ``ev`` at ``state`` adds to each of its sub-trends: ``(slot, op, value)``; None when nothing."""
        fields = self._own[state]
        if not fields:
            return None
        deltas: list[tuple[int, int, Any]] = []
        for i, kind, attr in fields:
            if kind == "cnt":
                deltas.append((i, _ADD_C, None))
                continue
            x = _number(_value(ev, attr))
            if x is None:
                continue
            if kind == "nnum":
                deltas.append((i, _ADD_C, None))
            elif kind == "nflt":
                if type(x) is float:
                    deltas.append((i, _ADD_C, None))
            elif kind == "sumi":
                if type(x) is int:
                    deltas.append((i, _ADD_VC, x))
            elif kind == "sumf":
                if type(x) is float:
                    deltas.append((i, _ADD_VC, _scaled(x)))
            elif kind == "min":
                deltas.append((i, _MIN, x))
            else:
                deltas.append((i, _MAX, x))
        return deltas or None

    @staticmethod
    def apply(pre: tuple[Any, ...], deltas: list[tuple[int, int, Any]]) -> tuple[Any, ...]:
        """Add the event's own contribution to the aggregate of its sub-trends (``pre[0]`` of them)."""
        c = pre[0]
        out = list(pre)
        for i, op, x in deltas:
            if op == _ADD_C:
                out[i] += c
            elif op == _ADD_VC:
                out[i] += x * c
            elif op == _MIN:
                if x < out[i]:
                    out[i] = x
            elif x > out[i]:
                out[i] = x
        return tuple(out)

    # ------------------------------------------------------------------ results

    def value(self, agg: Any, spec: TrendAgg) -> Any:
        """The exact value of ``spec`` from a final aggregate: int, Fraction (from floats or AVG), number or None."""
        if self.count_only:
            return agg
        if spec.var is None:
            return agg[0]
        slot = self.slot
        if spec.func == "count":
            return agg[slot[("cnt", spec.var, None)]]
        if spec.func in ("min", "max"):
            x = agg[slot[(spec.func, spec.var, spec.attr)]]
            return None if x in (INF, -INF) else x
        key = (spec.var, spec.attr)
        nnum = agg[slot[("nnum", *key)]]
        if not nnum:
            return None
        sumi, sumf, nflt = agg[slot[("sumi", *key)]], agg[slot[("sumf", *key)]], agg[slot[("nflt", *key)]]
        if spec.func == "sum":
            return sumi if not nflt else Fraction((sumi << SCALE_BITS) + sumf, 1 << SCALE_BITS)
        return Fraction((sumi << SCALE_BITS) + sumf, nnum << SCALE_BITS)


class MaxFirstLayout:
    """The aggregate of a negative sub-pattern's graph: the latest first-event time over its (sub-)trends.

    A finished negative trend ``(f, ..., l)`` cancels the positive edges that jump over it; the latest ``f`` among
    the trends ending at ``l`` cancels the most, so that is all a negative vertex needs to carry.
    """

    count_only = True
    zero = -INF

    @staticmethod
    def add(a: float, b: float) -> float:
        return a if a >= b else b

    @staticmethod
    def start(ev: Event) -> float:
        return ev.t

    @staticmethod
    def count(agg: float) -> int:
        return 0 if agg == -INF else 1

    @staticmethod
    def own(state: int, ev: Event) -> None:
        return None


def to_output(value: Any) -> Any:
    """A JSON-ready value: exact fractions become floats (None if out of float range); ints stay exact."""
    if isinstance(value, Fraction):
        try:
            return value.numerator / value.denominator
        except OverflowError:
            return None
    return value
