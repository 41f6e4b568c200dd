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

The bounds reach an evaluator through :meth:`engine.evaluator.Evaluator.set_limits` (:func:`apply`) and its drops come
back in :meth:`~engine.evaluator.Evaluator.stats` (:func:`dropped`); :func:`enforce` is the NFA^b runtime's part.
The configuration itself is :mod:`engine.limits` (re-exported here).
"""

from __future__ import annotations

from typing import Any

from engine.evaluator import Evaluator
from engine.limits import DEFAULT_RUNS, DEFAULT_RUNS_PER_KEY, Limits, LimitsError, from_settings
from engine.output import key_of

__all__ = [
    "DEFAULT_RUNS",
    "DEFAULT_RUNS_PER_KEY",
    "Limits",
    "LimitsError",
    "apply",
    "dropped",
    "enforce",
    "from_settings",
]


def apply(matcher: Evaluator, limits: Limits) -> Any:
    """Set ``limits`` on ``matcher`` (any :class:`~engine.evaluator.Evaluator`); returns it."""
    matcher.set_limits(limits)
    return matcher


def dropped(matcher: Evaluator) -> int:
    """Partial matches the bounds dropped so far: runs (NFA^b) or enumerations cut short (possible worlds)."""
    return matcher.dropped()


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
