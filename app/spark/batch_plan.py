"""Planning the batch matcher's cut of the stream (see :mod:`app.spark.batch`): which queries can be partitioned by
which attribute on this input, and how far from a group's own events a keyless event can still matter.

Pure Python (no Spark): the planner works from :class:`InputStats`, one aggregation over the parsed input.  Whether
and by what a query's stream may be cut is the engine's decision (:func:`engine.evaluate.shard_key`, the one the pack
runner of ``hcep run`` makes too); this module only asks it with what the input guarantees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.evaluate import SKIP_STRATEGIES, feed_types, shard_key
from engine.limits import Limits

#: "Unbounded" in ticks (a query without WITHIN).
UNBOUNDED = 2**62
#: Margin key that applies to every type (contiguity strategies: any event between two of a run matters).
ANY_TYPE = "*"


@dataclass(frozen=True)
class QueryPlan:
    """What an executor needs to compile one query (the parsed query and its options: plain, picklable data), and
    the pack's memory bounds (``settings.limits``): a group's runner applies them as ``hcep match`` does."""

    name: str
    query: Any  # engine.language.ast.Query
    strategy: str
    output: str
    confidence: float
    tick: float
    limits: Limits = field(default_factory=Limits)


def plans_limits(plans: Sequence[QueryPlan]) -> Limits:
    """The memory bounds of a pack's plans (one pack: one ``settings.limits``; the defaults without plans)."""
    return plans[0].limits if plans else Limits()


@dataclass
class InputStats:
    """What the planner must know about the input: per type, how many events and how many lack each attribute."""

    events: int
    widest: int  # ticks: the widest uncertainty interval
    counts: dict[str, int]
    lacking: dict[str, dict[str, int]]  # type -> attr -> events without it
    keys: dict[str, int] = field(default_factory=dict)  # attr -> about how many distinct values (groups)

    def always_keyed(self, etype: str, attr: str) -> bool:
        return self.lacking.get(etype, {}).get(attr, 0) == 0

    def ever_keyed(self, etype: str, attr: str) -> bool:
        return self.counts.get(etype, 0) > self.lacking.get(etype, {}).get(attr, 0)

    def keyless(self, types: frozenset[str] | None, attr: str) -> int:
        """Events of ``types`` (None: all) that lack ``attr``."""
        return sum(v.get(attr, 0) for t, v in self.lacking.items() if types is None or t in types)


Margins = dict[str, tuple[int, int]]


@dataclass
class Family:
    """Queries sharing one cut of the stream."""

    fid: int
    attr: str | None  # None: unpartitioned, one group
    queries: list[int] = field(default_factory=list)
    keyed: list[int] = field(default_factory=list)  # queries that can match a keyed event: run in the keyed groups
    keyless: list[int] = field(default_factory=list)  # queries whose matches can be all keyless: the "" group
    types: frozenset[str] | None = frozenset()  # None: every type (a contiguity strategy sees them all)
    negated: frozenset[str] = frozenset()
    #: Per event type: how many ticks before a group's first / after its last own event a keyless event can still
    #: belong to one of its matches.
    margins: Margins = field(default_factory=dict)
    broadcast: bool = True  # keyless events go to the executors as a broadcast (else copied into the groups)

    @property
    def reach(self) -> int:
        """The widest margin of the family."""
        return max((max(m) for m in self.margins.values()), default=0)

    def describe(self, names: Sequence[str]) -> str:
        queries = ", ".join(names[i] for i in self.queries)
        if self.attr is None:
            return f"unpartitioned: {queries}"
        how = "keyless events broadcast" if self.broadcast else "keyless events copied into groups"
        return f"by {self.attr} ({how}): {queries}"


def partition_attr(cq: Any, stats: InputStats | None) -> str | None:
    """The attribute a query can be cut by on this input, or None: :func:`engine.evaluate.shard_key` told what the
    input's statistics guarantee (see :mod:`app.spark.batch`)."""
    return shard_key(cq, None if stats is None else stats.always_keyed)


def query_margins(cq: Any, attr: str, stats: InputStats | None) -> Margins:
    """Where a keyless event must lie to be part of a match of a group (of this query).

    A match spans less than WITHIN.  A component placed between two components whose types always carry the key
    lies between two of the group's own events (margin 0); one before the first such component can be up to
    WITHIN earlier, one after the last up to WITHIN later; negations likewise, by the gap they sit in.  Under a
    contiguity strategy every event within WITHIN of a run matters, whatever its type.
    """
    w = UNBOUNDED if cq.window is None else cq.window + 1
    if cq.strategy not in SKIP_STRATEGIES:
        return {ANY_TYPE: (w, w)}
    keyed = [c.index for c in cq.components if stats is not None and stats.always_keyed(c.type, attr)]
    first, last = (min(keyed), max(keyed)) if keyed else (None, None)
    out: Margins = {}

    def add(etype: str, left: int, right: int) -> None:
        if stats is not None and stats.always_keyed(etype, attr):
            return  # never keyless
        old = out.get(etype, (0, 0))
        out[etype] = (max(old[0], left), max(old[1], right))

    for c in cq.components:
        add(c.type, w if first is None or c.index < first else 0, w if last is None or c.index > last else 0)
    for neg in cq.negations:
        before = first is None or neg.after + 1 <= first
        after = last is None or neg.after >= last
        add(neg.type, w if before else 0, w if after else 0)
    return out


def merge_margins(a: Margins, b: Margins) -> Margins:
    out = dict(a)
    for etype, (left, right) in b.items():
        old = out.get(etype, (0, 0))
        out[etype] = (max(old[0], left), max(old[1], right))
    return out


def plan_families(compiled: Sequence[Any], stats: InputStats | None) -> list[Family]:
    """Queries grouped by the attribute they are cut by (one family of unpartitioned queries)."""
    by_attr: dict[str | None, Family] = {}
    for i, cq in enumerate(compiled):
        attr = partition_attr(cq, stats)
        fam = by_attr.get(attr)
        if fam is None:
            fam = by_attr[attr] = Family(len(by_attr), attr)
        fam.queries.append(i)
        negated = frozenset(n.type for n in cq.negations)
        fam.negated |= negated
        if cq.strategy in SKIP_STRATEGIES:
            if fam.types is not None:
                fam.types = fam.types | cq.relevant_types | negated
        else:
            fam.types = None  # irrelevant events break contiguity: the family must see every type
        if attr is None:
            continue
        positive = [c.type for c in cq.components]
        if stats is None or any(stats.ever_keyed(t, attr) for t in positive):
            fam.keyed.append(i)
        if stats is None or all(stats.lacking.get(t, {}).get(attr, 0) for t in positive):
            fam.keyless.append(i)  # every component can be filled by a keyless event
        fam.margins = merge_margins(fam.margins, query_margins(cq, attr, stats))
    return list(by_attr.values())


def relevant_types(cq: Any) -> frozenset[str] | None:
    """The event types a query's matcher must be fed (None: all -- a contiguity strategy sees every event)."""
    return feed_types(cq)
