"""The ``shedding:`` mapping of a pack's free-form ``settings:`` (docs/semantics.md section 6), parsed strictly.

Packs are written by operators, so every error names the offending key (``settings.shedding.<key>``) and, through
:func:`from_pack`, the pack file.  Example::

    settings:
      shedding: {enabled: true, latency_bound_ms: 200, weights: {Q6: 2.0}}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["POLICIES", "SheddingConfig", "SheddingConfigError", "from_pack", "parse_shedding"]

#: ``pspice``: drop the partial matches of lowest utility (the paper).  The two baselines exist for benchmarks and A/B
#: runs: ``random_runs`` drops as many partial matches chosen uniformly (PM-BL), ``random_events`` drops input events
#: instead (E-BL) and, unlike the other two, can produce false positives (a dropped negated event cannot veto).
POLICIES = ("pspice", "random_runs", "random_events")

_PREFIX = "settings.shedding"


class SheddingConfigError(ValueError):
    """An invalid ``settings.shedding`` mapping; the message starts with the key at fault."""


@dataclass(frozen=True)
class SheddingConfig:
    """Load-shedding options of one pack (defaults: the paper's LB = 1 s and our resolutions of its open constants)."""

    enabled: bool = False
    latency_bound_ms: float = 1000.0
    weights: Mapping[str, float] = field(default_factory=dict)
    policy: str = "pspice"
    #: b_s of the paper's Eq. 6, as a share of the bound: absorbs misfit latency functions and sudden rate changes.
    safety_fraction: float = 0.1
    #: Shed this share below the computed n'_pm, so the detector does not fire again at the very next event.
    hysteresis: float = 0.1
    #: Utility-table columns: the remaining window is cut into this many equal time buckets.
    window_buckets: int = 32
    #: Utility levels victims are bucketed into (level 0 = no chance to complete, or window already over).
    utility_levels: int = 64
    #: Observe run transitions on one event in N (observation costs a callback per run step); the latency fits learn
    #: from one other event in N (timed without the observer).
    observe_every: int = 16
    #: Rebuild a query's utility table when its transition estimates moved this far (weighted total variation).
    drift_threshold: float = 0.05
    #: Observations a query needs before its first learned table replaces the structural prior.
    min_observations: int = 500
    #: Check for drift every this many observations of a query.
    check_every: int = 2000
    seed: int = 0

    @property
    def latency_bound(self) -> float:
        """The bound in seconds."""
        return self.latency_bound_ms / 1000.0

    def weight(self, query: str) -> float:
        return float(self.weights.get(query, 1.0))


_NUMBER_KEYS: dict[str, tuple[float, float, bool]] = {
    # key: (low, high, low bound exclusive)
    "latency_bound_ms": (0.0, math.inf, True),
    "safety_fraction": (0.0, 0.9, False),
    "hysteresis": (0.0, 0.9, False),
    "drift_threshold": (0.0, 1.0, True),
}
_INT_KEYS: dict[str, tuple[int, int]] = {
    "window_buckets": (1, 4096),
    "utility_levels": (2, 4096),
    "observe_every": (1, 1_000_000),
    "min_observations": (0, 10**9),
    "check_every": (1, 10**9),
    "seed": (0, 2**63 - 1),
}
KEYS = ("enabled", "policy", "weights", *_NUMBER_KEYS, *_INT_KEYS)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_shedding(settings: Mapping[str, Any] | None, queries: Iterable[str] | None = None) -> SheddingConfig:
    """Read ``settings['shedding']`` (absent or null: shedding off).  ``queries`` (the pack's query names), when given,
    lets ``weights`` be checked against them.  Raises :class:`SheddingConfigError` naming the key."""
    raw = (settings or {}).get("shedding")
    if raw is None:
        return SheddingConfig()
    if not isinstance(raw, Mapping):
        raise SheddingConfigError(f"{_PREFIX}: must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in KEYS:
            raise SheddingConfigError(f"{_PREFIX}.{key}: unknown key (allowed: {', '.join(KEYS)})")
    values: dict[str, Any] = {}
    if "enabled" in raw:
        if not isinstance(raw["enabled"], bool):
            raise SheddingConfigError(f"{_PREFIX}.enabled: must be true or false, got {raw['enabled']!r}")
        values["enabled"] = raw["enabled"]
    else:
        values["enabled"] = True  # writing a shedding section means wanting it
    if "policy" in raw:
        if raw["policy"] not in POLICIES:
            raise SheddingConfigError(f"{_PREFIX}.policy: must be one of {', '.join(POLICIES)}, got {raw['policy']!r}")
        values["policy"] = raw["policy"]
    for key, (lo, hi, open_lo) in _NUMBER_KEYS.items():
        if key not in raw:
            continue
        v = raw[key]
        if not _is_number(v) or v > hi or v < lo or (open_lo and v == lo):
            span = f"> {lo:g}" if hi == math.inf else f"within {'(' if open_lo else '['}{lo:g}, {hi:g}]"
            raise SheddingConfigError(f"{_PREFIX}.{key}: must be a number {span}, got {v!r}")
        values[key] = float(v)
    for key, (lo, hi) in _INT_KEYS.items():
        if key not in raw:
            continue
        v = raw[key]
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise SheddingConfigError(f"{_PREFIX}.{key}: must be an integer within [{lo}, {hi}], got {v!r}")
        values[key] = v
    if "weights" in raw:
        values["weights"] = _weights(raw["weights"], None if queries is None else list(queries))
    return SheddingConfig(**values)


def _weights(raw: Any, names: list[str] | None) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SheddingConfigError(f"{_PREFIX}.weights: must be a mapping of query name to weight, got {raw!r}")
    out: dict[str, float] = {}
    for name, w in raw.items():
        if names is not None and name not in names:
            raise SheddingConfigError(f"{_PREFIX}.weights.{name}: no such query (the pack has {', '.join(names)})")
        if not _is_number(w) or w <= 0:
            raise SheddingConfigError(f"{_PREFIX}.weights.{name}: must be a number > 0, got {w!r}")
        out[str(name)] = float(w)
    return out


def from_pack(pack: Any) -> SheddingConfig:
    """The shedding configuration of a loaded :class:`engine.language.packs.Pack`; errors become a ``PackError``
    naming the pack file, like every other pack error."""
    from engine.language.packs import PackError

    try:
        return parse_shedding(pack.settings, [q.name for q in pack.queries])
    except SheddingConfigError as exc:
        raise PackError(str(exc), pack.source) from None
