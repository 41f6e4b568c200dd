"""Helpers shared by the evaluators for output records (SPEC section 5)."""

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


def return_key(values: Any) -> tuple:
    """The key of one distinct RETURN tuple."""
    return tuple(hashable(v) for v in values)
