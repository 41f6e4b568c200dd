"""pSPICE's utility model for one query (digest-pspice sections 3-6): a Markov chain over NFA^b run states learned
online, giving the completion probability of a partial match within its remaining window, and Markov reward processes
giving its expected number of future matches and its expected remaining processing cost tau.

**States.**  A run of :class:`engine.runtime.matcher.Matcher` waits at component ``k``; a Kleene component has two
states, before its first element (``b[1]``) and with elements (``b[i]``, which loops on every take).  Two absorbing
states close the chain: ``F`` (the run was consumed by completing a match) and ``D`` (it died: contiguity failure, or
a completion rejected by a final predicate or a negation).  A window running out is not ``D``: the horizon of the
chain (the remaining window) accounts for it.

**Observations.**  One per (run, event) step on sampled events (:meth:`QueryModel.observer`): ``s -> s'`` with ``s'``
the most advanced state among the runs the step left alive (the run itself and its clones), else ``F`` if it completed
a match, else ``D``; with it the number of match records the step produced and its cost.  So the chain follows a run's
*lineage*: under skip_till_any_match a run that never moves itself still progresses when its clone does.

**Value: expected matches, not only P** [our generalisation].  In the paper a partial match yields at most one complex
event, so its value is the completion probability ``P``.  Here a run can emit many: a trailing Kleene run (Q4) at
every take, a skip_till_next_match Kleene run (Q3) at every proceed while it goes on taking.  The utility therefore
uses ``E``, the expected number of records the lineage emits within the remaining window (a Markov reward process
whose reward is the mean number of records of a transition); when every emission consumes the run (the paper's
patterns) ``E == P`` exactly.  ``P`` itself (column F of ``T^R``) is kept in the table for inspection.

**Cost.**  The reward of a step is the number of runs it leaves alive (>= 1): the work the next event will spend on
that lineage, in run-steps, the unit of the cost model ``a + b * runs_stepped`` (per-step wall-clock times are
sub-microsecond noise in Python, digest ambiguity 5).

**Remaining window.**  The chain counts events a run sees; a run sees its own partition's events and the cluster-wide
ones, at ``lam`` steps per tick (estimated online).  The table is keyed by the remaining window *time* bucket (``B``
equal buckets of the window), each mapped to ``R = lam * remaining ticks`` steps when the table is built; a change of
``lam`` is drift like any other.

**Tables.**  ``p_j = T p_{j-1}`` (``p_0 = e_F``) and, for a reward vector ``r`` (expected one-step reward),
``v_j = r + T v_{j-1}`` (``v_0 = 0``), computed on bins of ``bs`` steps (``T^bs`` and the bs-step rewards by doubling)
so that at most 256 bins cover any window, then linearly interpolated per bucket.

**Rebuilds.**  Counts decay (halved every ``memory`` observations), the estimate is compared with the one the table
was built from every ``check_every`` observations (weighted total-variation distance, and the ratio of ``lam``), and a
drift past the threshold starts a rebuild.  The rebuild is a generator advanced a slice per :meth:`QueryModel.tick`
(amortised over feed calls, deterministic) and swapped in when finished; ``sync=True`` finishes it at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.plan.compiler import CompiledQuery

__all__ = ["QueryModel", "StateSpace", "UtilityTable", "completion_and_cost", "negation_state", "state_space"]

MAX_BINS = 256
#: Steps assumed for a query without WITHIN (runs never expire): the table's single column.
NO_WINDOW_STEPS = 1000
Matrix = list[list[float]]


def negation_state(cq: CompiledQuery, k: int, kin: bool) -> bool:
    """Is a run at component ``k`` (with Kleene elements: ``kin``) inside the gap of a negation?

    A negation between positive components ``a`` and ``a+1`` is *pending* for a run that has bound ``a`` and not begun
    ``a+1``: it waits at ``a+1`` with nothing of it bound (``k == a+1 and not kin``), or it sits at a Kleene ``a`` with
    elements, whose last element may still be followed by a negated event (``k == a and kin``).  These are the
    negation-state partial matches that are never shed (digest-pspice ambiguity 7).  Runs before the gap hold nothing
    of it; runs past it have the gap closed and its veto is checked, at completion, against the negation candidates the
    matcher buffers (``neg_buf``), which shedding never touches.
    """
    for neg in cq.negations:
        a = neg.after
        if (k == a + 1 and not kin) or (k == a and kin and cq.components[a].kleene):
            return True
    return False


@dataclass(frozen=True)
class StateSpace:
    """The chain's states: transient ones in progress order, then ``F`` and ``D``."""

    names: tuple[str, ...]
    sid: tuple[int, ...]  # 2 * k + kin -> state id (-1: a state runs never occupy)
    successors: tuple[tuple[int, ...], ...]  # structural successors of each transient state (the prior)
    protected: tuple[bool, ...]  # negation-state (never shed), per state

    @property
    def m(self) -> int:
        return len(self.names)

    @property
    def final(self) -> int:
        return len(self.names) - 2

    @property
    def dead(self) -> int:
        return len(self.names) - 1


def state_space(cq: CompiledQuery) -> StateSpace:
    """The states of ``cq``'s runs and where the automaton can take each of them."""
    comps = cq.components
    last = len(comps) - 1
    names: list[str] = []
    sid = [-1] * (2 * len(comps))
    protected: list[bool] = []
    for c in comps:
        for kin in (False, True) if c.kleene else (False,):
            sid[2 * c.index + kin] = len(names)
            names.append(f"{c.var}[i]" if kin else (f"{c.var}[1]" if c.kleene else c.var))
            protected.append(negation_state(cq, c.index, kin))
    final = len(names)
    names += ["F", "D"]
    protected += [False, False]

    def bound(j: int) -> int:
        """The state after binding (the first element of) component ``j``."""
        if j == last:
            return final
        return sid[2 * j + 1] if comps[j].kleene else sid[2 * (j + 1)]

    succ: list[tuple[int, ...]] = []
    for c in comps:
        j = c.index
        succ.append((bound(j),))  # (j, False): bind j
        if c.kleene:
            take = final if j == last else sid[2 * j + 1]
            succ.append(tuple(sorted({take} | ({bound(j + 1)} if j < last else set()))))
    return StateSpace(tuple(names), tuple(sid), tuple(succ), tuple(protected))


def _matmul(a: Matrix, b: Matrix) -> Matrix:
    n = len(a)
    cols = list(zip(*b, strict=True))
    return [[sum(x * y for x, y in zip(a[i], cols[j], strict=True)) for j in range(n)] for i in range(n)]


def _matvec(a: Matrix, v: list[float]) -> list[float]:
    return [sum(x * y for x, y in zip(row, v, strict=True)) for row in a]


def _block(t: Matrix, rewards: list[list[float]], steps: int) -> Iterator[None | tuple[Matrix, list[list[float]]]]:
    """``(T^steps, [sum_{i<steps} T^i r for r in rewards])`` by doubling: the transition and the expected rewards of a
    block of steps.  A generator: it yields ``None`` after each matrix product and the result last."""
    n = len(t)
    acc_a: Matrix = [[float(i == j) for j in range(n)] for i in range(n)]
    acc_c = [[0.0] * n for _ in rewards]
    base_a, base_c = t, [list(r) for r in rewards]
    e = steps
    while e:
        if e & 1:  # acc, then base: the block's reward is acc_c + acc_a * base_c (powers of T commute)
            acc_c = [
                [x + y for x, y in zip(ac, _matvec(acc_a, bc), strict=True)]
                for ac, bc in zip(acc_c, base_c, strict=True)
            ]
            acc_a = _matmul(acc_a, base_a)
            yield None
        e >>= 1
        if e:
            base_c = [[x + y for x, y in zip(bc, _matvec(base_a, bc), strict=True)] for bc in base_c]
            base_a = _matmul(base_a, base_a)
            yield None
    yield acc_a, acc_c


Bins = list[list[float]]  # [bin][state]


def _expected(t: Matrix, m: Matrix, final: int) -> list[float]:
    """One-step expected reward per state; the absorbing states (ids >= final: F, then D) earn nothing."""
    return [sum(p * w for p, w in zip(t[s], m[s], strict=True)) if s < final else 0.0 for s in range(len(t))]


def _completion_and_cost(
    t: Matrix, emissions: Matrix, costs: Matrix, final: int, horizon: float, slice_bins: int = 16
) -> Iterator[None | tuple[int, Bins, Bins, Bins]]:
    """:func:`completion_and_cost` as a generator of slices (``None``), the result last."""
    n = len(t)
    horizon = max(1.0, horizon)
    bs = max(1, math.ceil(horizon / MAX_BINS))
    nb = max(1, math.ceil(horizon / bs))
    block = None
    for block in _block(t, [_expected(t, emissions, final), _expected(t, costs, final)], bs):
        if block is None:
            yield None
    assert block is not None
    a, (c_e, c_tau) = block
    p = [float(s == final) for s in range(n)]
    e = [0.0] * n
    tau = [0.0] * n
    ps, es, taus = [p], [e], [tau]
    for j in range(nb):
        p = _matvec(a, p)
        e = [x + y for x, y in zip(c_e, _matvec(a, e), strict=True)]
        tau = [x + y for x, y in zip(c_tau, _matvec(a, tau), strict=True)]
        ps.append(p)
        es.append(e)
        taus.append(tau)
        if j % slice_bins == slice_bins - 1:
            yield None
    yield bs, ps, es, taus


def completion_and_cost(
    t: Matrix, costs: Matrix, final: int, horizon: float, emissions: Matrix | None = None
) -> tuple[int, Bins, Bins, Bins]:
    """``(bs, P, E, tau)`` on bins: ``X[j][s]`` for ``j * bs`` remaining steps, ``j = 0 .. ceil(horizon / bs)``, with
    ``bs`` keeping the bins at most :data:`MAX_BINS`.  P: reach ``final`` (absorbing); E: expected emissions;
    tau: expected cost.

    ``t`` must have its absorbing rows set (states ``>= final``: ``F``, then ``D``; they earn no reward);
    ``costs[s][s2]`` / ``emissions[s][s2]`` are the mean cost / records of ``s -> s2`` (default emissions: 1 on every
    transition into ``final``, so that E == P).
    """
    if emissions is None:
        emissions = [[float(j == final) for j in range(len(t))] for _ in t]
    for out in _completion_and_cost(t, emissions, costs, final, horizon):
        if out is not None:
            return out
    raise AssertionError("unreachable")


def _interpolate(bins: list[list[float]], bs: int, steps: float, s: int) -> float:
    x = steps / bs
    j = min(int(x), len(bins) - 1)
    if j >= len(bins) - 1:
        return bins[-1][s]
    f = x - j
    return bins[j][s] * (1.0 - f) + bins[j + 1][s] * f


@dataclass
class UtilityTable:
    """P, E and tau per (state, remaining-window bucket) of one query, and what they were built from (for drift)."""

    p: list[list[float]]  # [state][bucket]: completion probability (reach F)
    value: list[list[float]]  # expected matches (the utility's numerator; == p for one-match-per-run patterns)
    tau: list[list[float]]  # expected remaining cost, run-steps
    t: Matrix  # the transition estimate used
    lam: float  # run steps per tick used
    learned: bool  # False: built from the structural prior only


class QueryModel:
    """Transition statistics, the utility table and its rebuilds for one query (see the module docstring)."""

    def __init__(
        self,
        cq: CompiledQuery,
        *,
        buckets: int = 32,
        prior: float = 1.0,
        memory: int = 50_000,
        drift_threshold: float = 0.05,
        lam_drift: float = 0.25,
        check_every: int = 2000,
        min_observations: int = 500,
        sync: bool = False,
    ) -> None:
        self.cq = cq
        self.name = cq.name
        self.space = state_space(cq)
        self.window = cq.window
        self.buckets = buckets if cq.window is not None else 1
        self.prior = prior
        self.memory = memory
        self.drift_threshold = drift_threshold
        self.lam_drift = lam_drift
        self.check_every = check_every
        self.min_observations = min_observations
        self.sync = sync
        m = self.space.m
        self.counts: Matrix = [[0.0] * m for _ in range(m)]
        self.rewards: Matrix = [[0.0] * m for _ in range(m)]  # summed cost (run-steps)
        self.emits: Matrix = [[0.0] * m for _ in range(m)]  # summed match records
        self.observations = 0  # all time
        self._since_decay = 0
        self._since_check = 0
        self._tally = [0]  # steps seen by the observer since the last note_event
        self._transitions = [0]  # ... of which transitions (within the window)
        # lam = (steps / runs) per event * (events / ticks), from decayed sums over sampled events
        self._steps = 0.0
        self._runs = 0.0
        self._events = 0.0
        self._ticks = 0.0
        self._last_t: float | None = None
        self._last_fed = 0
        self.rebuilds = 0  # learned tables swapped in
        self.version = 0  # bumped on every swap: the shedder re-levels its utilities
        self._build: Iterator[UtilityTable | None] | None = None
        self.table: UtilityTable = self._finish(self._builder(1.0, learned=False))

    # ------------------------------------------------------------------ observation

    def record(self, s: int, s2: int, cost: float = 1.0, emitted: float | None = None) -> None:
        """One observed step ``s -> s2`` (state ids of :attr:`space`), e.g. from a test or another runtime; ``emitted``
        defaults to 1 for a step into ``F`` and 0 otherwise."""
        self.counts[s][s2] += 1.0
        self.rewards[s][s2] += cost
        self.emits[s][s2] += float(s2 == self.space.final) if emitted is None else emitted
        self._count(1)

    def observer(self, now: Callable[[], float]) -> Callable[..., None]:
        """The callback for :meth:`engine.runtime.matcher.Matcher.observe`; ``now`` gives the matcher's current tick."""
        sid = self.space.sid
        counts, rewards, emits = self.counts, self.rewards, self.emits
        final, dead = self.space.final, self.space.dead
        w = self.window
        tally, transitions = self._tally, self._transitions

        def cb(r: Any, k: int, kin: bool, kept: list[Any], n0: int, completed: int) -> None:
            tally[0] += 1  # a step for the rate lam, even when it is no transition
            if w is not None and now() - r.t_first >= w:
                return  # the window ran out: the chain's horizon, not a death
            s = sid[2 * k + kin]
            n = len(kept) - n0
            if n == 0:
                s2 = final if completed else dead
            else:
                s2 = -1
                for i in range(n0, len(kept)):
                    x = kept[i]
                    y = sid[2 * x.k + x.kin]
                    if y > s2:
                        s2 = y
            counts[s][s2] += 1.0
            rewards[s][s2] += n if n > 1 else 1.0
            if completed:
                emits[s][s2] += completed
            transitions[0] += 1

        return cb

    def note_event(self, t: float, fed: int, runs_before: int) -> None:
        """After a sampled event: the observer's steps, the runs alive before the event, the matcher's event count and
        the event's tick update the estimate of ``lam``, and the steps count as observations."""
        steps, transitions = self._tally[0], self._transitions[0]
        self._tally[0] = self._transitions[0] = 0
        if runs_before > 0:
            self._steps += steps
            self._runs += runs_before
        if self._last_t is not None and t > self._last_t:
            self._events += fed - self._last_fed
            self._ticks += t - self._last_t
        if self._last_t is None or t > self._last_t:
            self._last_t = t
            self._last_fed = fed
        if transitions:
            self._count(transitions)

    def _count(self, n: int) -> None:
        self.observations += n
        self._since_decay += n
        self._since_check += n
        if self._since_decay >= self.memory:  # forget slowly, so that the estimate can drift
            self._since_decay = 0
            for row in self.counts + self.rewards + self.emits:
                for i in range(len(row)):
                    row[i] *= 0.5
            self._steps *= 0.5
            self._runs *= 0.5
            self._events *= 0.5
            self._ticks *= 0.5

    @property
    def lam(self) -> float | None:
        """Estimated run steps per tick, or None before there is evidence."""
        if self._runs <= 0 or self._ticks <= 0 or self._events <= 0:
            return None
        return (self._steps / self._runs) * (self._events / self._ticks)

    def transitions(self) -> Matrix:
        """The current estimate of T: counts plus the structural prior, absorbing F and D."""
        sp = self.space
        m = sp.m
        t: Matrix = []
        for s in range(m):
            if s >= sp.final:
                t.append([float(s == j) for j in range(m)])
                continue
            row = list(self.counts[s])
            if self.prior:
                row[s] += self.prior
                for j in sp.successors[s]:
                    row[j] += self.prior
            total = sum(row)
            t.append([x / total for x in row] if total > 0 else [float(s == j) for j in range(m)])
        return t

    def mean_costs(self) -> Matrix:
        """Mean cost per observed transition (1 run-step where nothing was observed)."""
        m = self.space.m
        return [
            [self.rewards[s][j] / self.counts[s][j] if self.counts[s][j] > 0 else 1.0 for j in range(m)]
            for s in range(m)
        ]

    def mean_emissions(self) -> Matrix:
        """Mean match records per observed transition; where nothing was observed, 1 into ``F`` (the prior)."""
        m, final = self.space.m, self.space.final
        return [
            [self.emits[s][j] / self.counts[s][j] if self.counts[s][j] > 0 else float(j == final) for j in range(m)]
            for s in range(m)
        ]

    # ------------------------------------------------------------------ drift and rebuilds

    def drift(self) -> float:
        """Weighted total-variation distance between the current estimate and the table's (rows weighted by visits)."""
        now = self.transitions()
        old = self.table.t
        visits = [sum(row) for row in self.counts]
        total = sum(visits)
        if total <= 0:
            return 0.0
        return sum(
            v / total * 0.5 * sum(abs(x - y) for x, y in zip(now[s], old[s], strict=True))
            for s, v in enumerate(visits)
            if v > 0
        )

    def needs_rebuild(self) -> bool:
        """First learned table once there are enough observations; afterwards on drift of T or of ``lam``."""
        if self.observations < self.min_observations:
            return False
        if not self.table.learned:
            return True
        lam = self.lam
        if lam is not None and abs(lam / self.table.lam - 1.0) > self.lam_drift:
            return True
        return self.drift() > self.drift_threshold

    @property
    def building(self) -> bool:
        return self._build is not None

    def tick(self) -> bool:
        """Maintenance between events: start a rebuild when due, advance a running one by a slice; True when a new
        table was swapped in."""
        if self._build is None:
            due = self._since_check >= self.check_every or (
                not self.table.learned and self.observations >= self.min_observations
            )
            if not due:
                return False
            self._since_check = 0
            if not self.needs_rebuild():
                return False
            self._build = self._builder(self.lam or self.table.lam, learned=True)
            if self.sync:
                return self._swap(self._finish(self._build))
        out = next(self._build, None)
        if out is None:
            return False
        return self._swap(out)

    def rebuild_now(self) -> None:
        """Build from the current statistics at once (tests; a service may also call it from a timer)."""
        self._swap(self._finish(self._builder(self.lam or self.table.lam, learned=True)))

    def _swap(self, table: UtilityTable) -> bool:
        self.table = table
        self._build = None
        self.rebuilds += 1
        self.version += 1
        return True

    @staticmethod
    def _finish(gen: Iterator[UtilityTable | None]) -> UtilityTable:
        for out in gen:
            if out is not None:
                return out
        raise AssertionError("a table build ended without a table")

    def remaining_steps(self, bucket: int, lam: float) -> float:
        """Steps a run sees in the middle of remaining-window bucket ``bucket``."""
        if self.window is None:
            return float(NO_WINDOW_STEPS)
        return lam * (bucket + 0.5) * self.window / self.buckets

    def _builder(self, lam: float, learned: bool) -> Iterator[UtilityTable | None]:
        """A table build as a generator of slices (``None``: one matrix product or 16 bins done), the table last."""
        t = self.transitions()
        sp = self.space
        horizon = float(NO_WINDOW_STEPS) if self.window is None else lam * self.window
        res = None
        for res in _completion_and_cost(t, self.mean_emissions(), self.mean_costs(), sp.final, horizon):
            if res is None:
                yield None
        assert res is not None
        bs, ps, es, taus = res
        steps = [self.remaining_steps(b, lam) for b in range(self.buckets)]

        def table(bins: Bins) -> list[list[float]]:
            return [[_interpolate(bins, bs, x, s) for x in steps] for s in range(sp.m)]

        yield UtilityTable(table(ps), table(es), table(taus), t, lam, learned)
