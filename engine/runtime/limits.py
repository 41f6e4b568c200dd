"""Memory bounds on partial matches (issue 18): what a query may hold, per partition key and in total.

Why: a skip_till_any_match Kleene query over many events has exponentially many matches by design, and a flood of
first-component events under a long window holds one run each; no input may take a process past its memory.  The
bounds are lossy on purpose, counted, and set high enough never to bind on the Hadoop pack's normal load
(``benchmarks/README.md``, memory):

- the NFA^b runtime (:class:`engine.runtime.matcher.Matcher`, and the enumeration behind trend queries GRETA cannot
  evaluate) holds *runs*: after each event, a partition pool with more than ``runs_per_key`` runs, or a query with more
  than ``runs`` in all, loses the runs at the end of the pools this event touched (the latest created or stepped),
  each counted in ``dropped_runs``;
- the exact possible-worlds evaluator (:class:`engine.imprecise.evaluator.ImpreciseMatcher`) holds no runs: its
  partial matches are the assignments it enumerates when an event closes signatures.  At most ``runs_per_key``
  signatures are evaluated for one closing event (one key) and ``runs`` for all the closings of one event, and their
  confidence DP gets a work budget in proportion (``WORK_PER_SIGNATURE`` transitions each on average, at most
  ``CLOSING_WORK``); an enumeration cut short is counted in ``truncated`` (its remaining signatures are not
  output).  Whatever the bounds, one signature whose DP passes ``SIGNATURE_WORK`` transitions is skipped and counted
  in ``skipped`` (a Kleene set of a dozen overlapping elements under an order-dependent predicate);
- GRETA's graph grows polynomially (one vertex per relevant event in the window) and is not bounded here.

The pSPICE shedder (:mod:`engine.shedding`) still drops partial matches on latency; these bounds are the memory floor
under it.  Pack settings (``settings.limits: {runs_per_key: N, runs: N}``, ``null`` for no bound) set them per pack;
``hcep match`` and ``hcep run`` override them with ``--max-runs-per-key`` and ``--max-runs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.output import key_of

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


def _targets(matcher: Any) -> list[Any]:
    """The objects that hold partial matches inside ``matcher`` (a trend enumerator's inner NFA^b runtime)."""
    inner = getattr(matcher, "inner", None)
    return [inner] if inner is not None and hasattr(inner, "pools") else [matcher]


def apply(matcher: Any, limits: Limits) -> Any:
    """Set ``limits`` on ``matcher`` (as :func:`engine.runtime.matcher.make_matcher` makes it); returns it."""
    for m in _targets(matcher):
        if hasattr(m, "pools"):
            m.max_runs_per_key = limits.runs_per_key
            m.max_runs = limits.runs
            caps = [c for c in (limits.runs_per_key, limits.runs) if c is not None]
            m.limit_at = min(caps) if caps else float("inf")
        elif hasattr(m, "max_signatures_per_closing"):
            m.max_signatures_per_closing = limits.runs_per_key
            m.max_signatures_per_step = limits.runs
    return matcher


def dropped(matcher: Any) -> int:
    """Partial matches the bounds dropped so far: runs (NFA^b) or enumerations cut short (possible worlds)."""
    return sum(
        getattr(m, "dropped_runs", 0) + getattr(m, "truncated", 0) + getattr(m, "skipped", 0) for m in _targets(matcher)
    )


def enforce(m: Any, ev: Any) -> None:
    """Bring the pools ``ev`` touched back under the bounds of the NFA^b runtime ``m`` (see the module doc)."""
    pools = m.pools
    if m.partitioned:
        x = key_of(ev.attrs.get(m.attr0))
        keys = list(pools) if x is None else [k for k in (x, None) if k in pools]
    else:
        keys = [None] if None in pools else []
    per = m.max_runs_per_key
    removed = 0
    if per is not None:
        for k in keys:
            runs = pools[k]
            if len(runs) > per:
                removed += len(runs) - per
                del runs[per:]
    total = m.max_runs
    if total is not None and m.alive - removed > total:
        for k in sorted(keys, key=lambda k: len(pools[k]), reverse=True):
            excess = m.alive - removed - total
            if excess <= 0:
                break
            runs = pools[k]
            n = min(excess, len(runs))
            del runs[len(runs) - n :]
            removed += n
    for k in keys:
        if not pools[k]:
            del pools[k]
    m.alive -= removed
    m.dropped_runs += removed


class StreamedMatch:
    """:func:`engine.runtime.matcher.match_events` as a generator under ``limits``: iterate it for the records in the
    same order, each as soon as it completes, so that an exponential output is written out instead of held; then
    :meth:`dropped` gives what the bounds dropped per query."""

    def __init__(self, queries: Iterable[Any], events: Iterable[Any], limits: Limits | None = None) -> None:
        self.cqs = list(queries)
        self.events = events
        self.limits = limits if limits is not None else Limits()
        self.matchers: list[Any] = []

    def __iter__(self) -> Iterator[dict]:
        from engine.runtime.matcher import make_matcher, sort_events

        ordered = sort_events(self.events)
        widest = max((e.thi - e.tlo for e in ordered), default=0)
        self.matchers = [apply(make_matcher(cq, widest), self.limits) for cq in self.cqs]
        matchers = self.matchers
        for ev in ordered:
            for m in matchers:
                got = m.feed(ev)
                if got:
                    yield from got
        for m in matchers:
            yield from m.flush()

    def dropped(self) -> dict[str, int]:
        """Per query name with drops: runs dropped or enumerations cut short."""
        out = {}
        for cq, m in zip(self.cqs, self.matchers, strict=False):
            n = dropped(m)
            if n:
                out[cq.name] = n
        return out
