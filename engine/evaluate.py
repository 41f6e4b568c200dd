"""Evaluating compiled queries: the evaluator a query gets, a pack fed in one pass, and how a pack's stream is cut.

- :func:`make_matcher` -- the evaluator :func:`engine.plan.choose.choose` names, from the registry of
  :mod:`engine.evaluator` (this module imports every evaluator, so the registry is complete once it is imported);
- :class:`PackFeeder` -- several evaluators over one stream, each event only to those that want its type (the one
  feed loop, :mod:`engine.onepass`, re-exported here);
- :class:`PackRunner` -- a query pack as ``hcep run``, ``hcep match --alerts`` and the Spark jobs run it: its queries'
  evaluators under the pack's memory bounds, behind its pSPICE latency bound when asked, its replay horizon, its
  snapshots, and **the one place that decides how a pack's stream may be cut** (:func:`shard_key`, :func:`feed_types`);
- :func:`match_events` and :class:`StreamedMatch` -- a finite stream, sorted and matched by a :class:`PackRunner`
  (the one driver: the same bounds, feeder and statistics as every other command's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import engine.greta.matcher  # noqa: F401 - registers GRETA, the two-step enumerator and the NFA^b runtime
import engine.imprecise.evaluator  # noqa: F401 - registers the possible-worlds evaluator
from engine.evaluator import Clock, Evaluator, Record, registered, window_horizon
from engine.events import Event
from engine.limits import Limits, from_settings
from engine.onepass import PackFeeder
from engine.plan.choose import choose_evaluator
from engine.plan.compiler import CompiledQuery, compile_spec
from engine.runtime.matcher import sort_events
from engine.shedding import SheddingConfig, SheddingMatcher, from_pack

if TYPE_CHECKING:
    from engine.language.packs import Pack

__all__ = [
    "JOB_KEYS",
    "PackFeeder",
    "PackRunner",
    "StreamedMatch",
    "feed_types",
    "make_matcher",
    "match_events",
    "pack_horizon",
    "shard_key",
    "sort_events",
    "write_increments",
]

NEG_INF = -math.inf
#: Events :class:`StreamedMatch` feeds at a time (``feed_many``): the records of a chunk are held until it is fed.
STREAM_CHUNK = 256
#: The smallest chunk, while records come at every event (growing runs as increments: small records).
STREAM_CHUNK_MIN = 32
NFA_STRATEGIES = ("skip_till_next_match", "partition_contiguity")
SKIP_STRATEGIES = ("skip_till_any_match", "skip_till_next_match")
#: Equivalence attributes that keep a query's matches within one job (so one process of a group sees them whole).
JOB_KEYS = frozenset({"job_id", "task_id", "attempt_id"})


def write_increments(matchers: Iterable[Evaluator], on: bool = True) -> None:
    """Have the evaluators that write growing runs (the NFA^b runtime) write them as increments (docs/semantics.md
    section 5), or (``on=False``) as whole signatures, as ``--full-matches`` asks."""
    for m in matchers:
        m.set_output(increments=on)


def make_matcher(cq: CompiledQuery, max_uncertainty: int = 0) -> Evaluator:
    """The evaluator :func:`engine.plan.choose.choose_evaluator` picks for ``cq``: trend-aggregate queries get GRETA
    or, when GRETA cannot evaluate them, two-step enumeration; other skip_till_any_match queries the exact
    possible-worlds evaluator, the other strategies the NFA^b runtime on midpoints.  ``max_uncertainty`` (ticks): the
    widest interval the stream may carry (the imprecise evaluator's safe-emit bound)."""
    made: Evaluator = registered()[choose_evaluator(cq)].cls(cq, max_uncertainty)
    return made


# ------------------------------------------------------------------------------------------------ cutting a stream


def shard_key(cq: CompiledQuery, always_keyed: Callable[[str, str], bool] | None = None) -> str | None:
    """The attribute whose values cut the query's stream into parts evaluated apart (each part: the events with one
    value, plus the events lacking the attribute), or None when the query must see its whole stream.

    The first equivalence attribute, when every run of the query is bound to one value of it: not without
    equivalence, not under strict_contiguity (it sees every event); under skip_till_next_match and
    partition_contiguity (which consume events) only when the first component's type always carries the attribute
    (an unbound run takes the next event of any partition), and collapsed output only when a singleton component's
    type does (one collapsed record may merge partitions otherwise).  ``always_keyed(type, attr)`` says what the input
    guarantees; None (unknown) takes the query at its word."""
    if not cq.equivalence or cq.strategy == "strict_contiguity":
        return None
    attr = cq.equivalence[0]
    if always_keyed is None:
        return attr
    if cq.strategy in NFA_STRATEGIES and not always_keyed(cq.components[0].type, attr):
        return None
    if cq.output == "collapsed" and not any(always_keyed(c.type, attr) for c in cq.components if not c.kleene):
        return None
    return attr


def feed_types(cq: CompiledQuery) -> frozenset[str] | None:
    """The event types the query's evaluator must be fed; None: all (a contiguity strategy sees every event)."""
    if cq.strategy not in SKIP_STRATEGIES:
        return None
    return frozenset(cq.relevant_types) | frozenset(n.type for n in cq.negations)


def pack_horizon(last_t: float, windows: Iterable[int | None], umax: int, evaluators: Iterable[Evaluator]) -> float:
    """H (ticks): events with ``thi < H`` can no longer change any output after the last fed time ``last_t`` (the rule
    ``app.checkpoint`` documents), from the windows and each evaluator's own :meth:`~Evaluator.horizon`."""
    wins = list(windows)
    if any(w is None for w in wins):
        return NEG_INF
    h = window_horizon(last_t, max((w for w in wins if w is not None), default=0), umax)
    if h == NEG_INF:
        return h
    for m in evaluators:
        h = min(h, m.horizon(last_t, umax))
    return h


# ------------------------------------------------------------------------------------------------ a query pack


class PackRunner:
    """All enabled queries of a pack, fed one event at a time; knows each query's output mode and alert.

    **Shedding in the service.**  pSPICE needs each event's *queueing latency*: how long it waited before the engine
    took it.  The service passes ``arrival`` = the Kafka record's timestamp plus the watermark's deliberate hold
    (largest delta + allowed lateness, in seconds), because an event cannot be processed before the watermark passes
    it; what remains is consumer lag and processing backlog, which is what overload looks like.  A partition that
    goes quiet holds the watermark for up to the idle timeout, which then counts as latency too: keep the bound
    above the idle timeout.  Replays (restart, rebalance) feed without ``arrival``, so nothing is shed while the
    engine state is rebuilt; a rebuilt engine may therefore hold runs the killed process had shed, and report a
    (true) match it would have missed.  Shedding never produces a false positive: negation-state runs are never shed.
    """

    def __init__(
        self,
        pack: Pack,
        umax: int,
        *,
        shedding: bool = True,
        limits: Limits | None = None,
        lazy_ids: bool = False,
        increments: bool = False,
    ) -> None:
        specs = [q for q in pack.queries if q.enabled]
        tick = float(pack.tick)
        cqs = [compile_spec(q, tick) for q in specs]
        config = from_pack(pack)
        self._build(
            pack,
            specs,
            cqs,
            umax,
            # Memory bounds on partial matches (engine.runtime.limits): the pack's settings.limits unless given.
            limits if limits is not None else from_settings(getattr(pack, "settings", None)),
            config,
            shedding and config.enabled,
            lazy_ids,
            increments,
        )

    @classmethod
    def of(
        cls,
        cqs: Sequence[CompiledQuery],
        umax: int,
        *,
        limits: Limits | None = None,
        shedding: SheddingConfig | None = None,
        increments: bool = False,
        lazy_ids: bool = False,
        specs: Sequence[Any] | None = None,
        kind: str | None = None,
    ) -> PackRunner:
        """A runner over compiled queries, for code without a pack object (``hcep match``, the Spark groups, tests).

        ``limits``: the memory bounds (default: :class:`~engine.limits.Limits`' defaults, as a pack without
        ``settings.limits``; ``Limits(None, None)``: unbounded); ``shedding``: pSPICE's configuration (None or
        disabled: no shedder); ``specs``: what each record is paired with, one per query (default: the compiled
        queries themselves), so ``runner.feed`` answers ``(spec, record)`` pairs either way; ``kind``: the registered
        evaluator every query gets (default: :func:`make_matcher`'s choice; the conformance suite names each kind).
        ``pack`` is None."""
        self = cls.__new__(cls)
        qs = list(cqs)
        config = shedding if shedding is not None else SheddingConfig()
        self._build(
            None,
            list(specs) if specs is not None else qs,
            qs,
            umax,
            limits if limits is not None else Limits(),
            config,
            config.enabled,
            lazy_ids,
            increments,
            kind,
        )
        return self

    def _build(
        self,
        pack: Pack | None,
        specs: list[Any],
        cqs: list[CompiledQuery],
        umax: int,
        limits: Limits,
        config: SheddingConfig,
        shed: bool,
        lazy_ids: bool,
        increments: bool,
        kind: str | None = None,
    ) -> None:
        if len(specs) != len(cqs):
            raise ValueError(f"{len(specs)} specs for {len(cqs)} compiled queries")
        self.pack = pack
        self.tick = float(pack.tick) if pack is not None else float(cqs[0].tick) if cqs else 0.1
        self.umax = umax
        self.specs = specs
        self.by_name = {cq.name: spec for spec, cq in zip(specs, cqs, strict=True)}
        self.cqs = cqs
        self.limits = limits
        kinds = registered()
        self._makers: list[Callable[[CompiledQuery, int], Evaluator]] = [
            kinds[choose_evaluator(cq) if kind is None else kind].cls for cq in cqs
        ]
        self._output = (increments, lazy_ids)
        self.windows = [cq.window for cq in self.cqs]
        self.shedding = config
        self._shed = shed
        # Under the skipping strategies an event of a type no query names changes nothing: do not feed it.
        types: set[str] = set()
        for cq in self.cqs:
            needed = feed_types(cq)
            if needed is None:
                self.types: frozenset[str] | None = None
                break
            types |= needed
        else:
            self.types = frozenset(types)
        self._start()

    def _start(self, like: PackFeeder | None = None) -> None:
        """The evaluators, nothing fed yet, and what feeds them (``like``: a feeder of this runner's queries, whose
        routes the new one shares)."""
        umax = self.umax
        self.matchers: list[Evaluator] = [make(cq, umax) for make, cq in zip(self._makers, self.cqs, strict=True)]
        increments, lazy_ids = self._output
        for m in self.matchers:
            m.set_limits(self.limits)
            # Growing runs as increments (docs/semantics.md section 5): what hcep run stores and publishes; lazy ids
            # when the records only meet the alert rules (hcep match --alerts).
            m.set_output(increments=increments, lazy_ids=lazy_ids)
        self.pairs = list(zip(self.specs, self.matchers, strict=True))
        # One pass over the pack (PackFeeder): each event reaches only the queries that name its type; the records
        # and their order are those of feeding every query in turn.
        self.feeder = PackFeeder(self.matchers, umax, like=like)
        self.shedder = SheddingMatcher(self.matchers, self.shedding, feeder=self.feeder) if self._shed else None

    def fresh(self) -> PackRunner:
        """A runner of the same queries and settings with nothing fed: what :meth:`of` would build, without deciding
        again what depends on the queries alone (each query's evaluator, the types worth feeding).  The Spark
        operator makes one for every new group, thousands a second."""
        new = PackRunner.__new__(PackRunner)
        new.__dict__.update(
            {k: v for k, v in self.__dict__.items() if k not in ("matchers", "pairs", "feeder", "shedder")}
        )
        new._start(self.feeder)
        return new

    def feed(self, ev: Event, arrival: float | None = None) -> list[tuple[Any, Record]]:
        """The match records ``ev`` completes, with the spec of the query of each.  ``arrival``: when the event could
        first have been processed (wall-clock seconds); only then may the shedder drop partial matches for it."""
        recs = self.shedder.feed(ev, arrival=arrival) if self.shedder is not None else self.feeder.feed(ev)
        if not recs:
            return []
        by_name = self.by_name
        return [(by_name[r["query"]], r) for r in recs]

    def feed_records(self, events: Iterable[Event]) -> list[Record]:
        """:meth:`feed_many` without the pairing: the records alone (the finite-stream matchers' hot loop)."""
        if self.shedder is not None:
            return self.shedder.feed_many(events)
        return self.feeder.feed_many(events)

    def feed_many(self, events: Iterable[Event]) -> list[tuple[Any, Record]]:
        """The records of ``feed`` on each event in turn (without arrival times: nothing is shed), as ``(spec,
        record)`` pairs like :meth:`feed`, for callers that feed a batch (the Spark groups)."""
        recs = self.shedder.feed_many(events) if self.shedder is not None else self.feeder.feed_many(events)
        if not recs:
            return []
        by_name = self.by_name
        return [(by_name[r["query"]], r) for r in recs]

    def advance(self, clock: Clock) -> list[tuple[Any, Record]]:
        """The records the stream's clock moving to ``clock`` releases (a watermark passed, no event)."""
        return [(self.by_name[r["query"]], r) for r in self.feeder.advance(clock)]

    def flush(self) -> list[tuple[Any, Record]]:
        return [(self.by_name[r["query"]], r) for r in self.feeder.flush()]

    def horizon(self, last_t: float) -> float:
        """The replay horizon (ticks) after the last fed time ``last_t`` (see ``app.checkpoint``)."""
        return pack_horizon(last_t, self.windows, self.umax, self.matchers)

    def snapshot(self) -> dict[str, Any]:
        """The pack's state as plain data (the evaluators' and the one-pass clock; a shedder's learnt models are not
        state: a restored shedder learns them again)."""
        return self.feeder.snapshot()

    def restore(self, state: Mapping[str, Any]) -> None:
        self.feeder.restore(state)

    def runs_alive(self) -> dict[str, int]:
        return {spec.name: m.runs_alive() for spec, m in self.pairs}

    def limit_drops(self) -> dict[str, int]:
        """Per query: partial matches the memory bounds dropped since this runner was built (runs, or enumerations
        cut short: :mod:`engine.runtime.limits`)."""
        return {spec.name: m.dropped() for spec, m in self.pairs}

    def dropped(self) -> int:
        """:meth:`limit_drops`' sum: a caller that reports drops as they happen asks only when this moved."""
        return sum(m.dropped() for m in self.matchers)

    def shed_counts(self) -> dict[str, tuple[int, int]]:
        """Per query: (partial matches shed, input events dropped) so far; empty without shedding.  Events are
        dropped only by the ``random_events`` baseline policy and count against every query."""
        if self.shedder is None:
            return {}
        runs = {q.matcher.name: q.shed_runs for q in self.shedder.queries}
        dropped = self.shedder.shed_events
        return {spec.name: (runs.get(spec.name, 0), dropped) for spec in self.specs}

    def shard_keys(self, always_keyed: Callable[[str, str], bool] | None = None) -> dict[str, str | None]:
        """Per query, the attribute its stream can be cut by (:func:`shard_key`)."""
        return {cq.name: shard_key(cq, always_keyed) for cq in self.cqs}

    def unpartitioned(self, attrs: frozenset[str] = JOB_KEYS) -> list[str]:
        """Queries that would miss matches when the group splits the jobs over several processes: those whose stream
        cannot be cut (:func:`shard_key`) or whose equivalence names none of ``attrs``."""
        return [cq.name for cq in self.cqs if shard_key(cq) is None or not (set(cq.equivalence) & attrs)]


# ------------------------------------------------------------------------------------------------ finite streams


def match_events(
    queries: CompiledQuery | list[CompiledQuery], events: Iterable[Event], *, increments: bool = False
) -> list[Record]:
    """Match a finite stream: sort it, feed every query, return all records in order of completion.

    With several queries, the records of one event come in the order the queries were given.  No memory bounds
    (:class:`StreamedMatch` takes them).  ``increments``: growing runs written as chains (:func:`write_increments`),
    as ``hcep match`` writes them.
    """
    cqs = [queries] if isinstance(queries, CompiledQuery) else list(queries)
    return list(StreamedMatch(cqs, events, Limits(None, None), increments=increments))


class StreamedMatch:
    """:func:`match_events` as a generator under ``limits`` (default: :class:`~engine.limits.Limits`' defaults):
    iterate it for the records in the same order, each as soon as it completes, so that an exponential output is
    written out instead of held; then :meth:`dropped` gives what the bounds dropped per query.  The stream is fed
    through a :class:`PackRunner` (:attr:`runner`, built when iterated), as every command feeds the engine."""

    def __init__(
        self,
        queries: Iterable[CompiledQuery],
        events: Iterable[Event],
        limits: Limits | None = None,
        increments: bool = False,
    ) -> None:
        self.cqs = list(queries)
        self.increments = increments
        self.events = events
        self.limits = limits if limits is not None else Limits()
        self.runner: PackRunner | None = None
        self.matchers: list[Evaluator] = []

    def __iter__(self) -> Iterator[Record]:
        ordered = sort_events(self.events)
        widest = max((e.thi - e.tlo for e in ordered), default=0)
        runner = self.runner = PackRunner.of(self.cqs, widest, limits=self.limits, increments=self.increments)
        self.matchers = runner.matchers
        # Fed a chunk at a time (an event no query reads costs a few local updates), the chunk shrinking while
        # records come (they are held until the chunk is fed: a query with a record per event, each listing its whole
        # Kleene binding, ran 40% slower when 256 events' records were held at once) and growing back while none do;
        # never below STREAM_CHUNK_MIN events (one event a call made Q4, a record per event, pay the feeder's set-up
        # per event: 14% of its matching).
        feed = runner.feed_records
        i, n, size = 0, len(ordered), STREAM_CHUNK
        while i < n:
            got = feed(ordered[i : i + size])
            i += size
            if got:
                size = max(STREAM_CHUNK_MIN, size >> 2)
                yield from got
            elif size < STREAM_CHUNK:
                size <<= 1
        for _, record in runner.flush():
            yield record

    def dropped(self) -> dict[str, int]:
        """Per query name with drops: runs dropped or enumerations cut short."""
        if self.runner is None:
            return {}
        return {name: n for name, n in self.runner.limit_drops().items() if n}
