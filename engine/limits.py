"""Memory bounds on partial matches: the configuration every evaluator takes through
:meth:`engine.evaluator.Evaluator.set_limits` (what each evaluator does with them: :mod:`engine.runtime.limits`).

Why a module of its own, at the bottom of the engine: the bounds are a pack setting read by the command line and the
service, and part of the evaluator contract; the enforcement is each evaluator's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_RUNS", "DEFAULT_RUNS_PER_KEY", "Limits", "LimitsError", "from_settings"]

DEFAULT_RUNS_PER_KEY = 20_000
DEFAULT_RUNS = 200_000


@dataclass(frozen=True)
class Limits:
    """Bounds on partial matches per partition key and per query; ``None``: unbounded."""

    runs_per_key: int | None = DEFAULT_RUNS_PER_KEY
    runs: int | None = DEFAULT_RUNS

    def with_overrides(self, runs_per_key: int | None = None, runs: int | None = None) -> Limits:
        """Command-line values (``0``: unbounded) over these."""

        def pick(option: int | None, current: int | None) -> int | None:
            if option is None:
                return current
            return None if option == 0 else option

        return Limits(pick(runs_per_key, self.runs_per_key), pick(runs, self.runs))


class LimitsError(ValueError):
    """A bad ``settings.limits`` value; the message names the key."""


def from_settings(settings: Mapping[str, Any] | None) -> Limits:
    """The :class:`Limits` of a pack's ``settings`` (``limits: {runs_per_key, runs}``), defaults for what is absent."""
    raw = (settings or {}).get("limits")
    if raw is None:
        return Limits()
    if not isinstance(raw, Mapping):
        raise LimitsError(f"settings.limits must be a mapping, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in ("runs_per_key", "runs"))
    if unknown:
        raise LimitsError(f"settings.limits: unknown key(s) {', '.join(unknown)} (known: runs_per_key, runs)")
    values: dict[str, int | None] = {}
    for key, default in (("runs_per_key", DEFAULT_RUNS_PER_KEY), ("runs", DEFAULT_RUNS)):
        value = raw.get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise LimitsError(f"settings.limits.{key} must be an integer >= 1 or null (unbounded), got {value!r}")
        values[key] = value
    return Limits(values["runs_per_key"], values["runs"])
