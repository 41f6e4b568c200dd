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
import hashlib
import json
import math
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from app.spark.batch_plan import ANY_TYPE, UNBOUNDED, InputStats, Margins, QueryPlan, plan_families

#: Group key of a family's keyless group (matches made of keyless events only) and of an unpartitioned family.
KEYLESS_GROUP = ""
WHOLE_GROUP = "*"
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

    @cached_property
    def _margin_of(self) -> dict[str, tuple[int, int] | None]:
        return {}  # etype -> margin(etype), filled as asked (margin is asked per keyless event and group)

    @cached_property
    def widest_left(self) -> int:
        """Ticks: the widest left margin of any keyless type (where a group's first release starts looking)."""
        return max((m[0] for m in self.margins.values()), default=0)

    def margin(self, etype: str) -> tuple[int, int] | None:
        """(left, right) ticks a keyless event of ``etype`` can lie from a group's own events; None: never needed."""
        cache = self._margin_of
        if etype in cache:
            return cache[etype]
        m = cache[etype] = self._margin(etype)
        return m

    def _margin(self, etype: str) -> tuple[int, int] | None:
        anyt = self.margins.get(ANY_TYPE)
        m = self.margins.get(etype, anyt)
        if m is None:
            return None
        if anyt is not None:
            m = (max(m[0], anyt[0]), max(m[1], anyt[1]))
        return m

    def useful(self, etype: str, thi: int, first: dict[str, int] | None) -> bool:
        """Can a keyless ``etype`` event ending at ``thi`` still be part of a match with a group whose own events of
        each type began at ``first`` (type -> earliest tlo; None: not known)?  Only when, for one of the places it
        can take, every keyed component before it can lie before it."""
        places = self.needs.get(etype)
        if places is None or first is None:
            return True
        return any(all(first.get(t, INF_TICK) <= thi for t in types) for types in places)

    def useful_from(self, first: dict[str, int] | None) -> dict[str, float]:
        """:meth:`useful` as thresholds: keyless type -> the least ``thi`` at which an event of it is useful to a
        group whose own events began at ``first`` (a type not named: always useful).  One place is open once all
        its keyed types have begun, so the threshold is the least, over places, of their latest beginning."""
        if first is None:
            return {}
        return {
            etype: min(
                (max((first.get(t, INF_TICK) for t in types), default=-INF_TICK) for types in places), default=math.inf
            )
            for etype, places in self.needs.items()
        }

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
