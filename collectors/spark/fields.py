"""Typed access to the fields of one decoded listener event: a missing field or a wrong type is a :class:`BadField`
naming the field, so the line can be dead-lettered with a precise reason instead of crashing the collector."""

from __future__ import annotations

import math
import re
from typing import Any

#: Longest failure text kept on an event (Spark's can be whole Java and Python stack traces).
REASON_LIMIT = 300

_MISSING = object()
_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")


class BadField(ValueError):
    """A field the event needs is missing or has the wrong type."""


def reject_constant(name: str) -> float:
    """``json.loads(parse_constant=...)``: NaN and Infinity are not JSON; Spark never writes them."""
    raise ValueError(f"non-finite number {name}")


def _where(path: str, key: str) -> str:
    return f"'{key}'" if not path else f"{path}.'{key}'"


def get(obj: dict[str, Any], key: str, kind: str, path: str = "", default: Any = _MISSING) -> Any:
    """``obj[key]`` checked to be of ``kind`` (int, num, str, bool, obj, list); ``default`` when absent (or null)."""
    value = obj.get(key)
    if value is None:
        if default is _MISSING:
            raise BadField(f"missing {_where(path, key)}")
        return default
    ok = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "num": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "str": lambda v: isinstance(v, str),
        "bool": lambda v: isinstance(v, bool),
        "obj": lambda v: isinstance(v, dict),
        "list": lambda v: isinstance(v, list),
    }[kind](value)
    if not ok:
        shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        raise BadField(f"{_where(path, key)} must be {_KIND_NAMES[kind]}, got {shown[:80]}")
    return value


_KIND_NAMES = {
    "int": "an integer",
    "num": "a finite number",
    "str": "a string",
    "bool": "true or false",
    "obj": "an object",
    "list": "a list",
}


def reason_text(text: str, limit: int = REASON_LIMIT) -> str:
    """A one-line failure reason: the message's first line and, for a Python traceback, the exception line at its
    end (``[PYTHON_EXCEPTION] ... ValueError: planted``), cut to ``limit`` characters."""
    text = text.strip()
    head = text
    tail = ""
    if _TRACEBACK in text:
        head, _, rest = text.partition(_TRACEBACK)
        for line in reversed(rest.splitlines()):
            if _EXC_LINE.match(line.strip()) and not line.startswith((" ", "\t")):
                tail = line.strip()
                break
    first = head.strip().splitlines()[0].strip() if head.strip() else ""
    out = f"{first} {tail}".strip() if tail else first
    return out if len(out) <= limit else out[: limit - 3] + "..."
