"""The streaming plan: the pack's queries, how their stream is cut (families, groups) and into how many buckets.

Why buckets: a group (one value of a family's partition attribute) is the engine's unit, but a Spark state key per
group would make every keyless event (LoadStd, Balance, Imbalance: cluster-wide, semantics section 2) a copy per live
group.  Groups are hashed into a fixed number of buckets instead (the state key); keyless events are copied once per
bucket, and each bucket merges them into its own groups where the batch planner's margins say they can matter.

The cut itself is :func:`app.spark.batch_plan.plan_families` over :func:`engine.evaluate.shard_key`.  A stream's
future is unknown, so it is asked without input statistics (``cut="declared"``: the query is taken at its word, as
``hcep run --workers`` does -- exact when the types that start a skip_till_next_match or partition_contiguity run,
and a singleton of a collapsed query, always carry the key, as in the Hadoop and Spark packs) or with statistics
that promise nothing (``cut="safe"``: such queries run unpartitioned, in one group, exact on any input).

``keyless_types`` declares which event types may lack the partition keys (the Ganglia types for the Hadoop pack,
the types of ``hcep run``'s broadcast topic); every other type then always carries them.  That is what the batch
planner learns from its input's statistics: the cut follows it, and a keyless event is merged into a group only
where the pattern can place it (Q6's LoadStd between its reducer's start and end, not for ten minutes after), which
is most of the operator's work saved.  An event that breaks the declaration is dead-lettered (``undeclared_keyless``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.spark.batch_plan import ANY_TYPE, UNBOUNDED, InputStats, Margins, QueryPlan, plan_families

#: Group key of a family's keyless group (matches made of keyless events only) and of an unpartitioned family.
KEYLESS_GROUP = ""
WHOLE_GROUP = "*"
#: Where a keyless type can lie in a pattern: the keyed components before it (type, window ticks, WHERE bound
#: seconds) and after it (type, window ticks).  See :func:`keyless_places`.
Place = tuple[tuple[tuple[str, int, float], ...], tuple[tuple[str, int], ...]]
#: Seconds a watermark waits on top of the widest half-interval (``hcep run``'s allowed lateness default).
ALLOWED_LATENESS = 2.0


@dataclass(frozen=True)
class FamilyPlan:
    """One family as the executors need it (plain data: pickled into the stateful processor)."""

    fid: int
    attr: str | None
    queries: tuple[int, ...]
    keyed: tuple[int, ...]
    keyless: tuple[int, ...]
    types: frozenset[str] | None
    negated: frozenset[str]
    margins: Margins
    reach: int  # ticks: how far from a group's own events anything can still matter (UNBOUNDED: never expire)
    #: keyless type -> the keyed types that must all precede it, one set per place it can take in a match (see
    #: :func:`keyless_needs`); a type not here reaches a group wherever its margin says.
    needs: dict[str, tuple[frozenset[str], ...]] = field(default_factory=dict)
    #: keyless type -> per place it takes in a pattern: the keyed components before it, each with how far behind it
    #: it can lie (type, the query's window in ticks, the least ``t.ts - c.ts < K`` of its WHERE in seconds; INF_TICK
    #: / inf: none), and the keyed components after it (type, window) (see :func:`keyless_places`).  A type not here
    #: is narrowed by ``needs`` alone, or not at all.
    places: dict[str, tuple[Place, ...]] = field(default_factory=dict)

    def margin(self, etype: str) -> tuple[int, int] | None:
        """(left, right) ticks a keyless event of ``etype`` can lie from a group's own events; None: never needed."""
        anyt = self.margins.get(ANY_TYPE)
        m = self.margins.get(etype, anyt)
        if m is None:
            return None
        if anyt is not None:
            m = (max(m[0], anyt[0]), max(m[1], anyt[1]))
        return m

    def useful(
        self,
        etype: str,
        thi: int,
        first: dict[str, int] | None,
        tlo: int | None = None,
        ts: float | None = None,
        last: dict[str, list[float]] | None = None,
        final: bool = False,
    ) -> bool:
        """Can a keyless ``etype`` event (ticks ``tlo..thi``, reported time ``ts``) still be part of a match with a
        group whose own events of each type began at ``first`` (type -> earliest tlo) and ended at ``last`` (type ->
        [latest thi, latest reported ts])?  Only when, for one of the places it can take, every keyed component
        before it can lie before it, within the query's window and its WHERE's ``t.ts - c.ts < K``; and, when the
        group is ``final`` (it expires: no own event can follow), every keyed component after it can lie after it,
        within the window.  None for ``first`` / ``last`` / ``tlo`` / ``ts``: not known (state from before they were
        kept): no narrowing by it."""
        if first is None:
            return True
        places = None if last is None or tlo is None else self.places.get(etype)
        if places is None or last is None or tlo is None:
            needs = self.needs.get(etype)
            return needs is None or any(all(first.get(t, INF_TICK) <= thi for t in types) for types in needs)
        for before, after in places:
            for ctype, window, seconds in before:
                begun = first.get(ctype)
                if begun is None or begun > thi:
                    break
                got = last.get(ctype)
                if got is not None and (tlo - got[0] > window or (ts is not None and ts - got[1] > seconds)):
                    break
            else:
                if not final:
                    return True  # a component after it may still come
                for ctype, window in after:
                    begun = first.get(ctype)
                    got = last.get(ctype)
                    if begun is None or got is None or got[0] < tlo or begun - thi > window:
                        break
                else:
                    return True
        return False

    @functools.cached_property
    def timed(self) -> frozenset[str]:
        """The keyless types a ``t.ts - c.ts < K`` bound narrows (their log entries carry the reported time)."""
        return frozenset(
            t for t, places in self.places.items() if any(b[2] != math.inf for before, _ in places for b in before)
        )

    def wants(self, etype: str) -> bool:
        return self.types is None or etype in self.types


@dataclass(frozen=True)
class StreamPlan:
    """Everything the source router and the stateful processor share."""

    plans: tuple[QueryPlan, ...]
    families: tuple[FamilyPlan, ...]
    tick: float
    umax: int  # ticks: the widest interval accepted (the imprecise evaluators' bound, as ``hcep run``)
    bound: float  # seconds: the watermark's delay (largest delta + allowed lateness)
    buckets: int
    distinct: frozenset[str] = field(default_factory=frozenset)
    keyless_types: frozenset[str] | None = None  # declared (see the module doc); None: unknown
    cut: str = "declared"
    token: str = ""  # names this plan in the executors' caches
    full_matches: bool = False  # whole signatures instead of a growing run's increments (semantics section 5)

    @property
    def attrs(self) -> list[str]:
        return sorted({f.attr for f in self.families if f.attr is not None})

    @property
    def max_left(self) -> int:
        """Ticks of keyless events a bucket keeps behind its watermark, for groups that start later."""
        lefts = [m[0] for f in self.families if f.attr is not None for m in f.margins.values()]
        return max(lefts, default=0)

    def bucket_of(self, fid: int, gkey: str) -> int:
        return zlib.crc32(f"{fid}|{gkey}".encode()) % self.buckets


class _Lacks(dict):
    """Per attribute: some events may lack it (every entry reads 1)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return 1


class _Unknown(dict):
    """Per type: :class:`_Lacks`."""

    def get(self, key: Any, default: Any = None) -> Any:
        return _Lacks()


class UnknownStream(InputStats):
    """Statistics of a stream that promises nothing: any type may come with or without any key."""

    def __init__(self) -> None:
        super().__init__(events=0, widest=0, counts={}, lacking={})

    def always_keyed(self, etype: str, attr: str) -> bool:
        return False

    def ever_keyed(self, etype: str, attr: str) -> bool:
        return True

    @property
    def lacking(self) -> dict[str, dict[str, int]]:
        return _Unknown()

    @lacking.setter
    def lacking(self, value: Any) -> None:
        pass


class DeclaredStream(InputStats):
    """Statistics of a stream whose keyless types are declared: those may lack any key, the others never do."""

    def __init__(self, keyless: frozenset[str]) -> None:
        super().__init__(events=0, widest=0, counts={}, lacking={})
        self.keyless_types = keyless

    def always_keyed(self, etype: str, attr: str) -> bool:
        return etype not in self.keyless_types

    def ever_keyed(self, etype: str, attr: str) -> bool:
        return etype not in self.keyless_types

    @property
    def lacking(self) -> dict[str, dict[str, int]]:
        return _Declared(self.keyless_types)

    @lacking.setter
    def lacking(self, value: Any) -> None:
        pass


class _Declared(dict):
    def __init__(self, keyless: frozenset[str]) -> None:
        super().__init__()
        self.keyless = keyless

    def get(self, key: Any, default: Any = None) -> Any:
        return _Lacks() if key in self.keyless else {}


CUTS = ("declared", "safe")
INF_TICK = 2**62


def keyless_needs(
    compiled: list[Any], queries: list[int], keyless: frozenset[str]
) -> dict[str, tuple[frozenset[str], ...]]:
    """For each keyless type of a family's skip_till_any_match queries: the keyed component types before each place
    it takes in a pattern.  A keyless event can be in a group's match only if, for one such place, the group has an
    own event of each of those types that can lie before it.  Why: a day-long query closed by a cluster-wide clock
    event (``SEQ(JobInput j, MapSplit s, ~Mapper x, LoadStd t) WITHIN 1 day``) would otherwise take every LoadStd
    of a day into every job's group, whether the job ever had a JobInput or not (``hcep run`` holds one candidate
    buffer per query instead).  A type with a place that no keyed component precedes, a negated type, or one read
    by a query under another strategy (which sees every event) is left out: it reaches groups by its margin."""
    out: dict[str, list[frozenset[str]]] = {}
    barred: set[str] = set()
    for q in queries:
        cq = compiled[q]
        types = {c.type for c in cq.components} | {n.type for n in cq.negations}
        if ANY_TYPE in types:
            return {}
        barred |= {n.type for n in cq.negations}
        if cq.strategy != "skip_till_any_match":
            barred |= types
            continue
        for i, comp in enumerate(cq.components):
            if comp.type not in keyless:
                continue
            before = frozenset(c.type for c in cq.components[:i] if c.type not in keyless)
            if not before:
                barred.add(comp.type)
            out.setdefault(comp.type, []).append(before)
    return {t: tuple(sorted(set(places), key=sorted)) for t, places in out.items() if t not in barred}


def _ts_gap_bound(expr: Any, later: str, earlier: str) -> float | None:
    """``K`` when ``expr`` says ``later.ts - earlier.ts < K`` (or ``<=``, or the same written the other way round),
    else None."""
    from engine.language import ast

    if not isinstance(expr, ast.Compare):
        return None
    op, left, right = expr.op, expr.left, expr.right
    if op in (">", ">="):
        op, left, right = ("<" if op == ">" else "<="), right, left
    if op not in ("<", "<=") or not isinstance(right, ast.Number) or not isinstance(left, ast.BinOp):
        return None
    if left.op != "-":
        return None
    a, b = left.left, left.right

    def ts_of(node: Any, var: str) -> bool:
        return isinstance(node, ast.AttrRef) and node.var == var and node.index is None and node.attr == "ts"

    return float(right.value) if ts_of(a, later) and ts_of(b, earlier) else None


def _conjuncts(exprs: Iterable[Any]) -> Iterator[Any]:
    from engine.language import ast

    for e in exprs:
        if isinstance(e, ast.And):
            yield from _conjuncts(e.items)
        else:
            yield e


def keyless_places(compiled: list[Any], queries: list[int], keyless: frozenset[str]) -> dict[str, tuple[Place, ...]]:
    """For each keyless type of a family's skip_till_any_match queries: per place it takes in a pattern, the keyed
    components before it -- with how far behind it each can lie: the query's window (ticks) and the least
    ``t.ts - c.ts < K`` of its WHERE (seconds) -- and the keyed components after it (with the window).

    Why: a keyless event reaches a group by the family's margins, the widest of its queries, and a group expiring
    ten minutes after its reducer ended took every Balance, LoadStd and Imbalance of those ten minutes (Q5's window:
    a Balance after the end closes a match), most of the operator's feeds at issue 28's rates; yet Q5's closing
    Balance must lie within 10 minutes of the reducer's start, Q6's LoadStd before its end, HungFetch's within
    2 minutes of the fetch.  Types a query negates or reads under another strategy, and types with a place no keyed
    component bounds, are left out: they reach a group by its margins."""
    out: dict[str, list[Place]] = {}
    barred: set[str] = set()
    for q in queries:
        cq = compiled[q]
        types = {c.type for c in cq.components} | {n.type for n in cq.negations}
        if ANY_TYPE in types:
            return {}
        barred |= {n.type for n in cq.negations}
        if cq.strategy != "skip_till_any_match":
            barred |= types
            continue
        window = INF_TICK if cq.window is None else int(cq.window)
        where = list(_conjuncts(cq.ast.where))
        for i, comp in enumerate(cq.components):
            if comp.type not in keyless:
                continue
            before = []
            for c in cq.components[:i]:
                if c.type in keyless:  # the group's keyless evidence (no WHERE bound: see state._fold)
                    before.append((c.type, window, math.inf))
                    continue
                gaps = [] if comp.kleene or c.kleene else [_ts_gap_bound(e, comp.var, c.var) for e in where]
                before.append((c.type, window, min((g for g in gaps if g is not None), default=math.inf)))
            after = [(c.type, window) for c in cq.components[i + 1 :] if c.type not in keyless]
            if not any(c.type not in keyless for c in cq.components):
                barred.add(comp.type)
            out.setdefault(comp.type, []).append((tuple(before), tuple(after)))
    return {t: tuple(places) for t, places in out.items() if t not in barred}


def build_plan(
    plans: list[QueryPlan],
    *,
    max_delta: float,
    buckets: int,
    allowed_lateness: float = ALLOWED_LATENESS,
    cut: str = "declared",
    keyless_types: frozenset[str] | None = None,
    full_matches: bool = False,
) -> StreamPlan:
    """Families from the batch planner (see the module doc for ``cut``), the watermark and uncertainty bounds of
    ``hcep run``."""
    from app.spark.batch import compile_plan

    if cut not in CUTS:
        raise ValueError(f"cut must be one of {', '.join(CUTS)}, got {cut!r}")
    compiled = [compile_plan(p) for p in plans]
    tick = plans[0].tick if plans else 0.1
    families = []
    stats: InputStats | None = None
    if keyless_types is not None:
        stats = DeclaredStream(frozenset(keyless_types))
    elif cut == "safe":
        stats = UnknownStream()
    for fam in plan_families(compiled, stats):
        windows = [compiled[q].window for q in fam.queries]
        reach = UNBOUNDED if any(w is None for w in windows) else max([fam.reach, *(w + 1 for w in windows)])
        families.append(
            FamilyPlan(
                fid=fam.fid,
                attr=fam.attr,
                queries=tuple(fam.queries),
                keyed=tuple(fam.keyed),
                keyless=tuple(fam.keyless),
                types=fam.types,
                negated=fam.negated,
                margins=dict(fam.margins),
                reach=reach,
                needs={} if keyless_types is None else keyless_needs(compiled, fam.queries, frozenset(keyless_types)),
                places={} if keyless_types is None else keyless_places(compiled, fam.queries, frozenset(keyless_types)),
            )
        )
    plan = StreamPlan(
        plans=tuple(plans),
        families=tuple(families),
        tick=tick,
        umax=math.ceil(2 * max_delta / tick) + 1,
        bound=max_delta + allowed_lateness,
        buckets=max(int(buckets), 1),
        distinct=frozenset(p.name for p in plans if p.output == "distinct"),
        keyless_types=None if keyless_types is None else frozenset(keyless_types),
        cut=cut,
        full_matches=full_matches,
    )
    token = hashlib.sha1(json.dumps(plan_state(plan), default=str).encode()).hexdigest()[:16]
    return dataclasses.replace(plan, token=token)


def describe(plan: StreamPlan) -> list[str]:
    """One line per family, for ``--explain`` and the logs."""
    names = [p.name for p in plan.plans]
    out = []
    for fam in plan.families:
        queries = ", ".join(names[i] for i in fam.queries)
        cut = "unpartitioned" if fam.attr is None else f"by {fam.attr}"
        out.append(f"family {fam.fid} {cut}: {queries}")
    return out


def plan_state(plan: StreamPlan) -> dict[str, Any]:
    """What must not change under a checkpoint (a restart with other buckets or queries would misread the state)."""
    state = {
        "buckets": plan.buckets,
        "cut": plan.cut,
        "keyless_types": None if plan.keyless_types is None else sorted(plan.keyless_types),
        "queries": [[p.name, p.strategy, p.output, p.confidence, p.tick] for p in plan.plans],
        "families": [[f.fid, f.attr, list(f.queries)] for f in plan.families],
    }
    if plan.full_matches:  # (absent otherwise: a checkpoint written before increments keeps its plan)
        state["full_matches"] = True
    return state
