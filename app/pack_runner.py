"""The engine side of ``hcep run``: every enabled query of a pack, fed one event at a time, behind the pack's
pSPICE latency bound when its ``settings.shedding`` asks for one.

Why a module of its own: the service (:mod:`app.service`) deals with Kafka, the watermark and checkpoints; what the
engine is fed, which output mode and alert each query has, and how much was shed are this class's business.

**Shedding in the service.**  pSPICE needs each event's *queueing latency*: how long it waited before the engine
took it.  The service passes ``arrival`` = the Kafka record's timestamp plus the watermark's deliberate hold
(largest delta + allowed lateness, in seconds), because an event cannot be processed before the watermark passes
it; what remains is consumer lag and processing backlog, which is what overload looks like.  A partition that goes
quiet holds the watermark for up to the idle timeout, which then counts as latency too: keep the bound above the
idle timeout.  Replays (restart, rebalance) feed without ``arrival``, so nothing is shed while the engine state is
rebuilt; a rebuilt engine may therefore hold runs the killed process had shed, and report a (true) match it would
have missed.  Shedding never produces a false positive: negation-state runs are never shed.
"""

from __future__ import annotations

from typing import Any

from app.checkpoint import horizon

#: Equivalence attributes that keep a query's matches within one job (so one process of a group sees them whole).
JOB_KEYS = frozenset({"job_id", "task_id", "attempt_id"})


class PackRunner:
    """All enabled queries of a pack, fed one event at a time; knows each query's output mode and alert."""

    def __init__(self, pack: Any, umax: int, *, shedding: bool = True, limits: Any = None,
                 lazy_ids: bool = False) -> None:
        from engine.plan.compiler import compile_spec
        from engine.runtime import limits as run_limits
        from engine.runtime.matcher import PackFeeder, make_matcher
        from engine.shedding import SheddingMatcher, from_pack

        self.pack = pack
        self.tick = float(pack.tick)
        self.umax = umax
        self.specs = [q for q in pack.queries if q.enabled]
        self.by_name = {spec.name: spec for spec in self.specs}
        self.cqs = [compile_spec(q, self.tick) for q in self.specs]
        # Memory bounds on partial matches (engine.runtime.limits): the pack's settings.limits unless given.
        self.limits = limits if limits is not None else run_limits.from_settings(getattr(pack, "settings", None))
        self.matchers = [run_limits.apply(make_matcher(cq, umax), self.limits) for cq in self.cqs]
        if lazy_ids:  # the records only meet the alert rules (hcep match --alerts): ids built when read
            for m in self.matchers:
                if hasattr(m, "lazy_ids"):
                    m.lazy_ids = True
        self.pairs = list(zip(self.specs, self.matchers, strict=True))
        self.windows = [cq.window for cq in self.cqs]
        self.shedding = from_pack(pack)
        on = shedding and self.shedding.enabled
        # One pass over the pack (engine.runtime.matcher.PackFeeder): each event reaches only the queries that name
        # its type; the records and their order are those of feeding every query in turn.
        self.shedder = SheddingMatcher(self.matchers, self.shedding, one_pass=True) if on else None
        self.feeder = PackFeeder(self.matchers, umax) if self.shedder is None else None
        # Under the skipping strategies an event of a type no query names changes nothing: do not feed it.
        contiguous = any(cq.strategy in ("strict_contiguity", "partition_contiguity") for cq in self.cqs)
        self.types: frozenset[str] | None = None
        if not contiguous:
            types: set[str] = set()
            for cq in self.cqs:
                types |= set(cq.relevant_types)
                types |= {n.type for n in cq.negations}
            self.types = frozenset(types)

    def feed(self, ev: Any, arrival: float | None = None) -> list[tuple[Any, dict]]:
        """The match records ``ev`` completes, with the spec of the query of each.  ``arrival``: when the event could
        first have been processed (wall-clock seconds); only then may the shedder drop partial matches for it."""
        recs = self.shedder.feed(ev, arrival=arrival) if self.shedder is not None else self.feeder.feed(ev)
        if not recs:
            return []
        by_name = self.by_name
        return [(by_name[r["query"]], r) for r in recs]

    def horizon(self, last_t: float) -> float:
        return horizon(last_t, self.windows, self.umax, self.matchers, self.tick)

    def runs_alive(self) -> dict[str, int]:
        return {spec.name: m.runs_alive() for spec, m in self.pairs}

    def limit_drops(self) -> dict[str, int]:
        """Per query: partial matches the memory bounds dropped since this runner was built (runs, or enumerations
        cut short: :mod:`engine.runtime.limits`)."""
        from engine.runtime.limits import dropped

        return {spec.name: dropped(m) for spec, m in self.pairs}

    def shed_counts(self) -> dict[str, tuple[int, int]]:
        """Per query: (partial matches shed, input events dropped) so far; empty without shedding.  Events are
        dropped only by the ``random_events`` baseline policy and count against every query."""
        if self.shedder is None:
            return {}
        runs = {q.matcher.name: q.shed_runs for q in self.shedder.queries}
        dropped = self.shedder.shed_events
        return {spec.name: (runs.get(spec.name, 0), dropped) for spec in self.specs}

    def unpartitioned(self, attrs: frozenset[str] = JOB_KEYS) -> list[str]:
        """Queries that would miss matches when the group splits the jobs over several processes."""
        return [cq.name for cq in self.cqs if not (set(cq.equivalence) & attrs)]
