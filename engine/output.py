"""Helpers shared by the evaluators for output records (docs/semantics.md section 5)."""

from __future__ import annotations

import json
from typing import Any


def hashable(value: Any) -> Any:
    """A RETURN value usable as a dictionary key (distinct output): JSON text for lists and objects."""
    try:
        hash(value)
        return value
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)


def key_of(value: Any) -> Any:
    """``value`` as a dictionary key that is equal exactly when the values are: the value itself when hashable, else
    a tagged JSON text.  Equivalence attributes index partitions; an event may carry a list or object there
    (``{"job_id": {"a": 1}}``), which must not crash a pool or index look-up (issue 18, found by fuzzing)."""
    if value is None or value.__class__ in _PLAIN:
        return value
    try:
        hash(value)
        return value
    except TypeError:
        return ("\x00json", json.dumps(value, sort_keys=True, default=str))


_PLAIN = frozenset({str, int, float, bool})


def return_key(values: Any) -> tuple[Any, ...]:
    """The key of one distinct RETURN tuple."""
    return tuple(hashable(v) for v in values)
