"""The NFA^b runtime for precise time (docs/semantics.md sections 3-5): runs, partitions, windows, the four strategies.

Runs share their bindings: a Kleene binding is a persistent list of :class:`KleeneCell` nodes, so cloning a run copies
one short list of references (the shared match buffer of the SASE+ paper, without Dewey versions: see
digest-nfab section 7).  Runs live in pools keyed by the value of the query's first equivalence attribute; an event
carrying that attribute visits its own pool and the pool of still-unbound runs, an event lacking it (a cluster-wide
Ganglia event) visits every pool.  Runs die when their window has passed; pools of keys gone quiet are swept.

Events must be fed in time order (``Event.t``, ties in input order); :func:`sort_events` sorts a finite list.
Events with intervals are evaluated at their midpoint here; exact confidence comes from ``engine.imprecise``.
``feed_many`` takes a batch (the same records as ``feed`` per event).  The class implements
:class:`engine.evaluator.Evaluator` and :class:`engine.evaluator.Sheddable`; its snapshots: :mod:`engine.runtime.state`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any, cast

from mypy_extensions import mypyc_attr

from contracts.records import IncrementIds, record_id
from engine.evaluator import START, Clock, Due, Record, Stats, register, window_horizon
from engine.events import Event
from engine.language.ast import Aggregate, walk
from engine.limits import Limits
from engine.onepass import feed_alone
from engine.output import key_of, return_key
from engine.plan.compiler import CompiledQuery
from engine.plan.predicates import KleeneCell, references
from engine.runtime import state
from engine.runtime.limits import enforce
from engine.runtime.run import OutOfOrderError, Run
from engine.snapshot import EventCodec

__all__ = ["KleeneIds", "Matcher", "OutOfOrderError", "Run", "sort_events"]

SWEEP_EVERY = 4096
_UNHASHABLE = (list, dict)
NEG_INF = -math.inf
INF = math.inf


@mypyc_attr(allow_interpreted_subclasses=True)  # GRETA's capture, tests and benchmarks subclass it
class Matcher:
    """Incremental evaluation of one compiled query: :meth:`feed` events in time order, collect match records."""

    def __init__(self, cq: CompiledQuery, max_uncertainty: int = 0) -> None:
        self.cq = cq
        self.name = cq.name
        self.tick = cq.tick
        self.comps = cq.components
        self.n = len(cq.components)
        self.last = self.n - 1
        self.window = cq.window
        self.strategy = cq.strategy
        self.any = cq.strategy == "skip_till_any_match"
        self.collapsed = cq.output == "collapsed"
        self.distinct = cq.output == "distinct"
        self.attrs = cq.equivalence
        self.partitioned = bool(self.attrs) and cq.strategy != "strict_contiguity"
        # Attributes checked per run: with pools, the first is implied by the pool.
        self.check_attrs = tuple(enumerate(self.attrs))[1:] if self.partitioned else tuple(enumerate(self.attrs))
        self.attr0 = self.attrs[0] if self.attrs else ""  # read only when partitioned (attrs non-empty)
        # Irrelevant types change nothing under the skipping strategies; contiguity strategies must see them.
        self.skip_irrelevant = cq.strategy in ("skip_till_any_match", "skip_till_next_match")
        self.relevant = cq.relevant_types
        self.neg_types = {neg.type for neg in cq.negations}
        self.neg_buf: dict[str, tuple[list[Any], list[Any]]] = {t: ([], []) for t in self.neg_types}
        self.pools: dict[Any, list[Run]] = {}
        self.alive = 0  # runs in the pools, kept by every change to them (a shedder reads it per event)
        self.now = NEG_INF
        self.fed = 0
        self.emitted: set[Any] = set()
        self.matches = 0
        self._future = self._future_forms() if self.distinct and self.any else None
        # A step observer (pSPICE, :meth:`observe`); None: the step functions bare, looked up per feed (a bound method
        # of its own kept on the matcher would make it cyclic garbage, freed only by the cyclic collector).
        self._observed: Callable[[Run, Event, float, list[Run], list[Record]], None] | None = None
        self.shed_runs = 0  # runs removed by shed() (engine.shedding); the hot path never reads it
        self.first_type = cq.components[0].type
        #: Kleene ids of records as :class:`KleeneIds` (built when read) instead of lists: for consumers that read the
        #: RETURN values and rarely the ids (alert rules), a trailing Kleene's growing prefixes then cost O(1) each
        #: instead of a copy of the whole prefix.  Such records are not JSON-serialisable as they are.
        self.lazy_ids = False
        #: Records of growing runs as increments (semantics section 5): a run that completes a match at every event it
        #: takes (a trailing Kleene component under the strategies other than skip_till_any_match, ``all`` output)
        #: writes, after its first record, only the events taken since its previous one, which it names in
        #: ``extends``.  Off: whole signatures (``--full-matches``), quadratic in a run's length.
        self.increments = False
        self.grows = not self.any and self.comps[-1].kleene and cq.output == "all"
        # Memory bounds (engine.runtime.limits): runs per pool and in total; feed() compares ``alive`` with the
        # smaller one, so they cost one comparison per event until they bind.
        self.max_runs_per_key: int | None = None
        self.max_runs: int | None = None
        self.limit_at: float = math.inf
        self.dropped_runs = 0  # runs dropped by those bounds
        #: No run started before this (a lower bound of every run's ``t_first``): a sweep whose horizon is below it
        #: has nothing to drop and skips the pools (a day-long window over an hour: every sweep).  -inf: unknown.
        self.oldest = NEG_INF

    # ------------------------------------------------------------------ public

    def feed(self, ev: Event) -> list[Record]:
        """Process one event; return the match records it completes, in order of completion."""
        t = ev.t
        if t < self.now:
            raise OutOfOrderError(f"event {ev.id} at tick {t} arrived after tick {self.now}")
        self.now = t
        self.fed += 1
        if self.fed % SWEEP_EVERY == 0:
            self.sweep()
        etype = ev.type
        if etype not in self.relevant and self.skip_irrelevant:
            return []
        if etype in self.neg_types:
            ts, evs = self.neg_buf[etype]
            ts.append(t)
            evs.append(ev)
        out: list[Record] = []
        pools = self.pools
        if self.partitioned:
            x = ev.attrs.get(self.attr0)
            if x.__class__ in _UNHASHABLE:
                x = key_of(x)  # a list or object as the key: its pool is keyed by JSON text
            if x is None:
                self._step_pools(list(pools), ev, t, out)
            else:
                runs = pools.get(x)  # the event's own pool (the common case, inline), then the unbound runs
                if runs:
                    step = self._step
                    kept: list[Run] = []
                    for r in runs:
                        step(r, ev, t, kept, out)
                    if self._future is not None and len(kept) > len(runs):
                        kept = self._merge(kept)
                    self.alive += len(kept) - len(runs)
                    if kept:
                        pools[x] = kept
                    else:
                        del pools[x]
                if None in pools:
                    self._step_pools((None,), ev, t, out)
        else:
            self._step_pools((None,), ev, t, out)
        if etype == self.first_type:
            self._start(ev, t, out)
        if self.alive > self.limit_at:
            enforce(self, ev)
        if out:
            self.matches += len(out)
        return out

    def _step_pools(self, keys: Iterable[Any], ev: Event, t: float, out: list[Record]) -> None:
        """Step the runs of the pools ``keys``; runs of the unbound pool that bound the key move to its pool."""
        pools = self.pools
        moved: list[Run] = []
        step = self._step
        for key in keys:
            runs = pools.get(key)
            if not runs:
                continue
            kept: list[Run] = []
            for r in runs:
                step(r, ev, t, kept, out)
            if self._future is not None and len(kept) > len(runs):
                kept = self._merge(kept)
            self.alive += len(kept) - len(runs)
            if key is None and self.partitioned:
                moved.extend(r for r in kept if r.eqv[0] is not None)
                kept = [r for r in kept if r.eqv[0] is None]
            if kept:
                pools[key] = kept
            else:
                del pools[key]
        for r in moved:
            pools.setdefault(key_of(r.eqv[0]), []).append(r)

    def feed_many(self, events: Iterable[Event]) -> list[Record]:
        """``feed`` each event in turn and concatenate the records (the same records, in the same order), through
        the one feed loop (:func:`engine.onepass.feed_alone`): under the skipping strategies an event of a type the
        query does not name only moves the clock (and counts towards the periodic sweep)."""
        return feed_alone(self, events)

    def flush(self) -> list[Record]:
        """End of input: nothing is held back by the precise runtime."""
        return []

    def runs_alive(self) -> int:
        return sum(len(runs) for runs in self.pools.values())

    # ------------------------------------------------------------------ the rest of the evaluator contract

    def advance(self, clock: Clock) -> list[Record]:
        """The clock moved on through events this query does not name: records only ever complete on an event, but
        the clock moves (so an older event is refused) and runs past their window are swept as ``feed_many`` would."""
        if clock.t > self.now:
            self.now = clock.t
        if clock.fed > self.fed:
            crossed = clock.fed // SWEEP_EVERY > self.fed // SWEEP_EVERY
            self.fed = clock.fed
            if crossed:
                self.sweep()
        return []

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        return state.snapshot(self, codec)

    def restore(self, snap: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        state.restore(self, snap, codec)
        self.oldest = NEG_INF  # the restored runs' starts are not known: the next sweep looks

    def stats(self) -> Stats:
        return Stats(self.fed, self.matches, self.alive, self.shed_runs, self.dropped_runs)

    def dropped(self) -> int:
        return self.dropped_runs

    def horizon(self, last_t: float, umax: int) -> float:
        """A run open at ``last_t`` started less than a window before it (:func:`engine.evaluator.window_horizon`)."""
        return window_horizon(last_t, self.window, umax)

    # ------------------------------------------------------------------ fed by a one-pass feeder (engine.onepass)

    ordered = True
    bounds = False  # it reads the clock's t and fed only (events at their midpoint)

    def wants(self) -> frozenset[str] | None:
        """Under the skipping strategies the types the query names (its components and negations); the contiguity
        strategies see every event, and so does a subclass that overrides :meth:`feed`."""
        if not self.skip_irrelevant or type(self).feed is not Matcher.feed:
            return None
        return frozenset(self.relevant) | frozenset(self.neg_types)

    def due(self) -> Due:
        """The periodic sweep: at the next multiple of ``SWEEP_EVERY`` events."""
        return (INF, (self.fed // SWEEP_EVERY + 1) * SWEEP_EVERY)

    def clock(self) -> Clock:
        return Clock(self.now, START.now, START.umax, self.fed)

    def set_clock(self, clock: Clock) -> None:
        if clock.t > self.now:
            self.now = clock.t
        if clock.fed > self.fed:
            self.fed = clock.fed

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        if increments is not None:
            self.increments = increments
        if lazy_ids is not None:
            self.lazy_ids = lazy_ids

    def set_limits(self, limits: Limits) -> None:
        self.max_runs_per_key = limits.runs_per_key
        self.max_runs = limits.runs
        caps = [c for c in (limits.runs_per_key, limits.runs) if c is not None]
        self.limit_at = min(caps) if caps else math.inf

    # ------------------------------------------------------------------ load-shedding hook (engine.shedding)
    # Used only by engine.shedding.SheddingMatcher, between two feed() calls; feed() itself is unchanged and none of
    # these run unless a shedder calls them.

    def visit_keys(self, ev: Event) -> list[Any]:
        """The pools :meth:`feed` would step for ``ev`` (mirrors its routing): the runs this event is matched against,
        which a per-event latency guard may thin out before the event is processed."""
        if self.skip_irrelevant and ev.type not in self.relevant:
            return []
        pools = self.pools
        if self.partitioned:
            x = key_of(ev.attrs.get(self.attr0))
            if x is None:
                return list(pools)
            return [k for k in (x, None) if k in pools]
        return [None] if None in pools else []

    def pending_work(self, ev: Event) -> int:
        """How many runs :meth:`feed` would step for ``ev``: its processing cost driver (pSPICE's n_pm, per event)."""
        pools = self.pools
        return sum(len(pools[k]) for k in self.visit_keys(ev))

    def shed(self, drop: Callable[[Run], bool], keys: Iterable[Any] | None = None) -> int:
        """Remove the runs ``drop`` selects from the pools ``keys`` (default: all); return how many.

        Only partial matches go: negation candidates (``neg_buf``) and the ``emitted`` set of distinct output are left
        alone, and no surviving run changes, so the output afterwards is a subset of the unshed output.
        """
        pools = self.pools
        removed = 0
        for key in list(pools) if keys is None else list(keys):
            runs = pools.get(key)
            if not runs:
                continue
            kept = [r for r in runs if not drop(r)]
            if len(kept) != len(runs):
                removed += len(runs) - len(kept)
                if kept:
                    pools[key] = kept
                else:
                    del pools[key]
        self.shed_runs += removed
        self.alive -= removed
        return removed

    @property
    def _step(self) -> Callable[[Run, Event, float, list[Run], list[Record]], None]:
        """The step function :meth:`feed` uses: the observer's, else the strategy's bare one."""
        return self._observed or (self._step_any if self.any else self._step_next)

    def observe(self, callback: Callable[[Run, int, bool, list[Any], int, int], None] | None) -> None:
        """Install (``None``: remove) an observer of run steps, for learning pSPICE's transition statistics.

        After each step of a run ``r`` the callback gets ``(r, k, kin, kept, n0, completed)``: the run's state before
        the step, the step's output list ``kept`` whose entries from ``n0`` on are the runs it left alive (the run
        itself and its clones), and how many match records the step produced.  Without an observer the step functions
        run bare.
        """
        if callback is None:
            self._observed = None
            return
        raw = self._step_any if self.any else self._step_next

        def step(r: Run, ev: Event, t: float, kept: list[Run], out: list[Record]) -> None:
            k, kin, n0, o0 = r.k, r.kin, len(kept), len(out)
            raw(r, ev, t, kept, out)
            callback(r, k, kin, kept, n0, len(out) - o0)

        self._observed = step

    def sweep(self) -> None:
        """Drop runs whose window has passed and negation candidates no future match can see."""
        w = self.window
        if w is None:
            return
        horizon = self.now - w
        if horizon >= self.oldest:
            oldest = self.now  # runs started later start at or after it (time order)
            pools = self.pools
            for key, runs in list(pools.items()):
                first = min(map(_T_FIRST, runs))
                if first <= horizon:  # (a pool with nothing to drop is left as it is)
                    alive = [r for r in runs if r.t_first > horizon]
                    if not alive:
                        del pools[key]
                        continue
                    pools[key] = alive
                    first = min(map(_T_FIRST, alive))
                if first < oldest:
                    oldest = first
            self.alive = sum(map(len, pools.values()))
            self.oldest = oldest
        for ts, evs in self.neg_buf.values():
            cut = bisect_right(ts, horizon)
            if cut:
                del ts[:cut]
                del evs[:cut]

    # ------------------------------------------------------------------ runs

    def _eq_ok(self, r: Run, ev: Event) -> bool:
        eqv = r.eqv
        attrs = ev.attrs
        for i, attr in self.check_attrs:
            bound = eqv[i]
            if bound is not None:
                v = attrs.get(attr)
                if v is not None and v != bound:
                    return False
        return True

    def _bind_eqv(self, r: Run, ev: Event) -> None:
        eqv = r.eqv
        if None not in eqv:
            return  # every attribute bound (or none to bind): nothing changes
        attrs = ev.attrs
        new = None
        for i, attr in enumerate(self.attrs):
            if eqv[i] is None:
                v = attrs.get(attr)
                if v is not None:
                    if new is None:
                        new = list(eqv)
                    new[i] = v
        if new is not None:
            r.eqv = tuple(new)

    def _start(self, ev: Event, t: float, out: list[Record]) -> None:
        c0 = self.comps[0]
        if ev.type != c0.type:
            return
        bind = [None] * self.n
        if c0.begin is not None and not c0.begin(bind, ev):
            return
        r = Run(0, False, bind, t, NEG_INF, NEG_INF, (None,) * len(self.attrs))
        kept: list[Run] = []
        self._advance(r, 0, ev, t, kept, out)
        self.alive += len(kept)
        for run in kept:
            self.pools.setdefault(key_of(run.eqv[0]) if self.partitioned else None, []).append(run)

    def _advance(self, r: Run, k: int, ev: Event, t: float, kept: list[Run], out: list[Record]) -> None:
        """Bind ``ev`` as the (first element of the) component ``k``: the begin edge."""
        comp = self.comps[k]
        if comp.kleene:
            r.bind[k] = KleeneCell(ev, None, comp.aggs_step(None, ev))
            r.t_prev = r.t_last
            r.kin = True
        else:
            r.bind[k] = ev
            r.kin = False
        r.k = k
        r.t_last = t
        self._bind_eqv(r, ev)
        if k == self.last:
            self._complete(r, out)
            if comp.kleene:
                kept.append(r)  # a trailing Kleene run goes on taking
        else:
            if not comp.kleene:
                r.k = k + 1
            kept.append(r)

    def _take(self, r: Run, ev: Event, t: float, kept: list[Run], out: list[Record]) -> None:
        """Append ``ev`` to the Kleene component the run is building: the take edge."""
        k = r.k
        prev = r.bind[k]
        r.bind[k] = KleeneCell(ev, prev, self.comps[k].aggs_step(prev.aggs, ev))
        r.t_last = t
        self._bind_eqv(r, ev)
        if k == self.last:
            self._complete(r, out)
        kept.append(r)

    def _ignore(self, r: Run, ev: Event, kept: list[Run]) -> None:
        strategy = self.strategy
        if strategy == "skip_till_next_match":
            kept.append(r)
        elif strategy == "partition_contiguity" and not self._eq_ok(r, ev):
            kept.append(r)  # an event of another partition
        # strict contiguity, or partition contiguity on an event of the run's own partition: the run dies

    def _step_next(self, r: Run, ev: Event, t: float, kept: list[Run], out: list[Record]) -> None:
        """skip_till_next_match, partition_contiguity, strict_contiguity: one deterministic move, or a split.

        These strategies read the stream in its (tick, arrival) order (semantics section 4): every event fed after the
        run's last selected one follows it, a same-tick event included, so no time comparison is made here."""
        w = self.window
        if w is not None and t - r.t_first >= w:
            return
        k = r.k
        comp = self.comps[k]
        etype = ev.type
        if comp.kleene and r.kin:
            take = bool(etype == comp.type and self._eq_ok(r, ev) and (comp.take is None or comp.take(r.bind, ev)))
            proceed = False
            if k < self.last:
                c2 = self.comps[k + 1]
                proceed = bool(etype == c2.type and self._eq_ok(r, ev) and (c2.begin is None or c2.begin(r.bind, ev)))
            if proceed:
                self._advance(r.clone() if take else r, k + 1, ev, t, kept, out)
            if take:
                self._take(r, ev, t, kept, out)
            elif not proceed:
                self._ignore(r, ev, kept)
            return
        if etype == comp.type and self._eq_ok(r, ev) and (comp.begin is None or comp.begin(r.bind, ev)):
            self._advance(r, k, ev, t, kept, out)
        else:
            self._ignore(r, ev, kept)

    def _step_any(self, r: Run, ev: Event, t: float, kept: list[Run], out: list[Record]) -> None:
        """skip_till_any_match: every qualifying event is both taken (a clone) and ignored (the run itself).

        In collapsed mode a Kleene component takes every qualifying event in place (one maximal set per run) and a
        proceeding clone keeps only the elements strictly earlier than the event it proceeds with.
        """
        w = self.window
        if w is not None and t - r.t_first >= w:
            return
        k = r.k
        comp = self.comps[k]
        etype = ev.type
        if comp.kleene and r.kin:
            if k < self.last:
                c2 = self.comps[k + 1]
                if etype == c2.type and self._eq_ok(r, ev):
                    cell = r.bind[k]
                    if self.collapsed:
                        while cell is not None and cell.event.t >= t:
                            cell = cell.prev
                    if cell is not None and t > cell.event.t:
                        r2 = r.clone()
                        r2.bind[k] = cell
                        r2.t_last = cell.event.t
                        if c2.begin is None or c2.begin(r2.bind, ev):
                            self._advance(r2, k + 1, ev, t, kept, out)
            if etype == comp.type and self._eq_ok(r, ev):
                if self.collapsed:
                    if t > r.t_prev and (comp.take is None or comp.take(r.bind, ev)):
                        self._take(r, ev, t, kept, out)  # the run itself takes it: no ignore branch
                        return
                elif t > r.t_last and (comp.take is None or comp.take(r.bind, ev)):
                    self._take(r.clone(), ev, t, kept, out)
            kept.append(r)
            return
        if (
            etype == comp.type
            and t > r.t_last
            and self._eq_ok(r, ev)
            and (comp.begin is None or comp.begin(r.bind, ev))
        ):
            if self.collapsed and comp.kleene:
                self._advance(r, k, ev, t, kept, out)
                return
            self._advance(r.clone(), k, ev, t, kept, out)
        kept.append(r)

    # ------------------------------------------------------------------ merging (distinct output)

    def _future_forms(self) -> dict[tuple[int, bool], list[tuple[int, str]]]:
        """For each run state, what of the binding can still matter: the merge key of equivalent runs."""
        cq = self.cq
        index = {c.var: c.index for c in cq.components}
        table: dict[tuple[int, bool], list[tuple[int, str]]] = {}
        for k in range(self.n):
            for kin in (False, True):
                exprs = list(cq.final_exprs) + [e for c in cq.components[k + 1 :] for e in c.begin_exprs + c.take_exprs]
                comp = cq.components[k]
                exprs += comp.take_exprs if kin else comp.begin_exprs + comp.take_exprs
                exprs += [e for neg in cq.negations for e in neg.exprs]
                exprs += [r.expr for r in cq.ast.returns]
                needs: set[tuple[int, str]] = set()
                for e in exprs:
                    iterated = cq.forall.get(id(e))
                    for var, forms in references(e).items():
                        if var == iterated:
                            needs.add((index[var], "chain"))
                        elif var in index:
                            for f in forms:
                                needs.add((index[var], f))
                for neg in cq.negations:
                    needs.add((neg.after, "last"))
                    needs.add((neg.after + 1, "first"))
                for e in exprs:  # a median reads every element, not the running aggregates
                    for node in walk(e):
                        if isinstance(node, Aggregate) and node.func == "median" and node.var in index:
                            needs.add((index[node.var], "chain"))
                bound = k + 1 if kin else k
                table[(k, kin)] = sorted((j, f) for j, f in needs if j < bound and f != "i")
        return table

    def _merge(self, runs: list[Run]) -> list[Run]:
        """Keep one run per future-equivalent class (the youngest start lives longest), drop runs whose RETURN value
        was already output: distinct output needs one signature per value, not all of them."""
        table = self._future
        assert table is not None  # merging is for distinct output under skip_till_any_match only
        ready = self.cq.return_ready
        seen: dict[tuple[Any, ...], int] = {}
        out: list[Run] = []
        for r in runs:
            if ready < r.k and self._return_key(r) in self.emitted:
                continue
            parts: list[Any] = [r.k, r.kin, r.t_last, key_of(r.eqv)]
            bind = r.bind
            for j, form in table[(r.k, r.kin)]:
                b = bind[j]
                if form in ("single", "chain"):
                    parts.append(id(b))
                elif form == "first":
                    parts.append(id(b.first))
                elif form in ("last", "prev"):
                    parts.append(id(b.event))
                elif form == "len":
                    parts.append(b.length)
                else:
                    parts.append(b.aggs)
            key = tuple(parts)
            at = seen.get(key)
            if at is None:
                seen[key] = len(out)
                out.append(r)
            elif r.t_first > out[at].t_first:
                out[at] = r
        return out

    # ------------------------------------------------------------------ completion

    def _negated(self, r: Run) -> bool:
        """Is there a negated event that cancels the finished match (docs/semantics.md section 3, item 5)?

        "Between" is strict in the order the strategy reads the stream: by point under skip_till_any_match (events of
        one tick are concurrent), by (tick, arrival) under the other strategies (docs/semantics.md section 4), where a
        negated event of the same tick as P's last event but arriving after it, and before Q's first, lies between
        them."""
        bind = r.bind
        comps = self.comps
        for neg in self.cq.negations:
            before = bind[neg.after]
            after = bind[neg.after + 1]
            e1 = before.event if comps[neg.after].kleene else before
            e2 = after.first if comps[neg.after + 1].kleene else after
            t1, t2 = e1.t, e2.t
            ts, evs = self.neg_buf[neg.type]
            if self.any:
                lo, hi = bisect_right(ts, t1), bisect_left(ts, t2)
            else:
                lo, hi = bisect_left(ts, t1), bisect_right(ts, t2)
            k1, k2 = (t1, e1.seq), (t2, e2.seq)
            for i in range(lo, hi):
                e = evs[i]
                if not self.any and not k1 < (e.t, e.seq) < k2:
                    continue
                if self._eq_consistent(r, e) and (neg.check is None or neg.check(bind, e)):
                    return True
        return False

    def _eq_consistent(self, r: Run, ev: Event) -> bool:
        for i, attr in enumerate(self.attrs):
            bound = r.eqv[i]
            if bound is not None:
                v = ev.attrs.get(attr)
                if v is not None and v != bound:
                    return False
        return True

    def _return_key(self, r: Run) -> tuple[Any, ...]:
        return return_key(fn(r.bind, None) for _, fn in self.cq.returns)

    def _complete(self, r: Run, out: list[Record]) -> None:
        cq = self.cq
        bind = r.bind
        if cq.final is not None and not cq.final(bind, None):
            return
        if cq.negations and self._negated(r):
            return
        returned = {}
        for name, fn in cq.returns:  # (a loop: a comprehension is a call of its own, per record)
            returned[name] = fn(bind, None)
        if self.distinct:
            key = return_key(returned.values())
            if key in self.emitted:
                return
            self.emitted.add(key)
        out.append(self._record(r, returned))

    def _record(self, r: Run, returned: dict[str, Any]) -> Any:  # Any: GRETA's capture makes (bind, eqv) pairs
        if self.increments and self.grows:
            return self._increment(r, returned)
        match: dict[str, list[str]] = {}
        lo = math.inf
        hi = NEG_INF
        lazy = self.lazy_ids
        for comp, b in zip(self.comps, r.bind, strict=True):
            if comp.kleene:
                if lazy:
                    match[comp.var] = KleeneIds(b)  # type: ignore[assignment]
                    klo, khi = _span(b)
                else:
                    ids, klo, khi = _kleene_ids(b)
                    match[comp.var] = ids
                if klo < lo:
                    lo = klo
                if khi > hi:
                    hi = khi
            else:
                match[comp.var] = [b.id]
                if b.lo < lo:
                    lo = b.lo
                if b.hi > hi:
                    hi = b.hi
        return {
            "query": self.name,
            "match": match,
            "confidence": 1.0,
            "start": lo,
            "end": hi,
            "return": returned,
        }

    def _increment(self, r: Run, returned: dict[str, Any]) -> Record:
        """The record of a growing run as an increment of its previous record (semantics section 5): the trailing Kleene
        variable lists the events taken since then (in record order among themselves, docs/semantics.md section 5),
        ``extends`` names it, and ``id`` is the record id (:func:`contracts.records.record_id`: whole for a chain's
        first record, chained for the others).  ``start``, ``end`` and ``return`` are of the whole prefix; the cost is
        that of the increment."""
        comps = self.comps
        bind = r.bind
        last = self.last
        cell = bind[last]
        match: dict[str, list[str]] = {}
        lo = cell.lo
        hi = cell.hi
        for j in range(last):
            b = bind[j]
            if comps[j].kleene:
                ids, klo, khi = _kleene_ids(b)
                match[comps[j].var] = ids
                if klo < lo:
                    lo = klo
                if khi > hi:
                    hi = khi
            else:
                match[comps[j].var] = [b.id]
                if b.lo < lo:
                    lo = b.lo
                if b.hi > hi:
                    hi = b.hi
        chain = r.chain
        parent: str | None = None
        new: list[Event] = []
        x = cell
        stop = None if chain is None else chain[0]
        while x is not None and x is not stop:
            new.append(x.event)
            x = x.prev
        if len(new) > 1:
            new.sort(key=_id_key)
        grow = comps[last].var
        ids = [e.id for e in new]
        match[grow] = ids
        if chain is not None and x is stop:
            parent = chain[1]
            ider: IncrementIds = chain[2] or IncrementIds(self.name, match, grow)  # None: restored from a snapshot
            rid = ider.of(parent, ids)
        else:  # the chain's first record: the ordinary id of its whole signature
            rid = record_id({"query": self.name, "match": match})
            ider = IncrementIds(self.name, match, grow)
        r.chain = (cell, rid, ider)
        out: dict[str, Any] = {"query": self.name, "id": rid}
        if parent is not None:
            out["extends"] = parent
        out["match"] = match
        out["confidence"] = 1.0
        out["start"] = lo
        out["end"] = hi
        out["return"] = returned
        return cast(Record, out)  # built key by key: section 5's order, extends only when there is a parent


class KleeneIds(Sequence[Any]):
    """The ids of a Kleene binding in record order, built on first use (:attr:`Matcher.lazy_ids`)."""

    __slots__ = ("cell", "_ids")

    def __init__(self, cell: KleeneCell) -> None:
        self.cell = cell
        self._ids: list[str] | None = None

    def _list(self) -> list[str]:
        if self._ids is None:
            evs = self.cell.events()
            evs.sort(key=lambda e: (e.tlo, e.thi, e.id))
            self._ids = [e.id for e in evs]
        return self._ids

    def __len__(self) -> int:
        return self.cell.length

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return f"KleeneIds({self._list()!r})"


def _span(cell: KleeneCell) -> tuple[float, float]:
    """The earliest ``lo`` and latest ``hi`` of a Kleene binding: kept along the chain, so O(1)."""
    return cell.lo, cell.hi


def _id_key(e: Event) -> tuple[int, int, str]:
    """Record order of a Kleene binding's elements (semantics section 5): by interval, then id (no id sorts first)."""
    return e.tlo, e.thi, "" if e.id is None else e.id


def _kleene_ids(cell: KleeneCell) -> tuple[list[str], float, float]:
    """The ids of a Kleene binding in record order (by interval, then id) and the earliest ``lo`` / latest ``hi``.

    A trailing Kleene component under skip_till_next_match outputs a record at every element it takes, each listing
    every element so far: rebuilding and sorting that list per record made a job's records quadratic in Python work.
    The sorted list (with the sort keys beside it) is cached on the cell and shared along the chain: a new cell inserts
    its id where it sorts (nearly always last: events come in time order; a same-tick event with a smaller id goes a
    place or two earlier) and a record copies the list with one slice.  A cell's cache is valid while the shared list
    has exactly its length, which holds when it is the newest cell of its chain (lists only grow)."""
    cache = getattr(cell, "ids", None)
    if cache is not None and len(cache[0]) == cell.length:
        return cache[0][:], cache[2], cache[3]
    prev = cell.prev
    if prev is not None and cache is None:
        pc = getattr(prev, "ids", None)
        if pc is not None and len(pc[0]) == prev.length:
            e = cell.event
            key = _id_key(e)
            keys = pc[1]
            if key > keys[-1]:
                pc[0].append(e.id)
                keys.append(key)
            else:
                at = bisect_right(keys, key)
                pc[0].insert(at, e.id)
                keys.insert(at, key)
            if e.lo < pc[2]:
                pc[2] = e.lo
            if e.hi > pc[3]:
                pc[3] = e.hi
            cell.ids = pc
            return pc[0][:], pc[2], pc[3]
    evs = cell.events()
    # Sorted by the key alone: two elements may tie on it (one event id twice in the input; found by fuzzing), and
    # Events do not compare.
    keyed = sorted(((_id_key(e), e) for e in evs), key=itemgetter(0)) if len(evs) > 1 else [(_id_key(evs[0]), evs[0])]
    ids = [e.id for _, e in keyed]
    lo = min(e.lo for e in evs)
    hi = max(e.hi for e in evs)
    if cache is None:
        cell.ids = [ids, [k for k, _ in keyed], lo, hi]
    return ids[:], lo, hi


def sort_events(events: Iterable[Event]) -> list[Event]:
    """Time order for the precise runtime: by point, ties in input order (by ``seq``).

    Events already in ``seq`` order (a file as read) are sorted by point alone: the sort is stable, so ties keep
    that order, which is the ``(t, seq)`` order, for a fraction of the cost (keys read in C, no tuples)."""
    evs = list(events)
    seqs = list(map(_SEQ, evs))
    if seqs == sorted(seqs):
        evs.sort(key=_POINT)
        return evs
    return sorted(evs, key=lambda e: (e.t, e.seq))


_SEQ = attrgetter("seq")
_T_FIRST = attrgetter("t_first")
_POINT = attrgetter("t")


#: (A call, not a class decorator: mypyc compiles a decorated class as a plain Python class.)
register("nfa")(Matcher)
