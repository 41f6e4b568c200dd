"""The static GRETA template (paper Algorithm 1 / digest section 3) and the window grid.

A template is a small automaton: one *state* per pattern variable (an event type may label several states, as in the
paper's section 9 on repeated types), *transitions* ``src -> dst`` saying which events may be adjacent in a trend
(``"seq"``: consecutive components; ``"plus"``: a Kleene component to itself), START and END states.  Predicates are
compiled closures with the planner's calling convention ``fn(bind, cur)`` (:mod:`engine.plan.predicates`):

- ``State.local``  -- on the event alone (``fn(bind0, ev)``): a vertex predicate that filters events early;
- ``State.entry``  -- on a Kleene variable's first element (``b[1].x``): needed where the event starts the set
  (as START, or entered through a ``"seq"`` transition);
- ``State.exit``   -- on its last element (``b[b.len].x``, ``fn(bind, None)`` with ``bind[state]`` the vertex): needed
  where the event ends the set (as END, or left through a ``"seq"`` transition);
- ``Transition.pred`` -- on the adjacent pair (``fn(bind, e)`` with ``bind[src]`` the predecessor): edge predicates.

A transition may also carry *negations*: negative sub-patterns (templates themselves) whose finished trends, lying
strictly between a predecessor and an event, remove that edge (paper section 5, case ``SEQ(Pi, NOT N, Pj)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fn", "State", "RangeSpec", "Transition", "Template", "TrendAgg", "Windows", "is_single_event"]

Fn = Callable[[Any, Any], Any]


@dataclass
class State:
    """One template state: the events of ``type`` bound to the pattern variable ``var``."""

    index: int
    var: str
    type: str
    kleene: bool = False
    local: Fn | None = None
    entry: Fn | None = None
    exit: Fn | None = None
    #: Predicate texts for ``explain``: ("local" | "entry" | "exit", text).
    notes: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RangeSpec:
    """A transition predicate that is one range comparison ``q OP key`` between a value of the new event
    (``q = dst_side(bind0, e)``) and a value of the predecessor (``key = src_side(bind, None)``): the Fenwick fast
    path indexes predecessors by ``key`` and finds every qualifying one with a prefix query."""

    dst_side: Fn
    src_side: Fn
    op: str  # "<" | "<=" | ">" | ">=": the edge exists iff  q OP key
    key_text: str = ""


@dataclass
class Transition:
    """``src -> dst``: an event of ``dst`` may directly follow an event of ``src`` in a trend."""

    src: int
    dst: int
    kind: str  # "seq" | "plus"
    pred: Fn | None = None
    range: RangeSpec | None = None
    negations: list[Template] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    neg_texts: list[str] = field(default_factory=list)


@dataclass
class Template:
    """The GRETA template of one (positive or negative) pattern; ``attrs`` are the equivalence attributes."""

    states: list[State]
    transitions: list[Transition]
    start: frozenset[int]
    end: frozenset[int]
    attrs: tuple[str, ...] = ()

    def pred_types(self, state: int) -> list[str]:
        """The paper's ``predTypes``: types of the states with a transition into ``state``."""
        return [self.states[t.src].type for t in self.transitions if t.dst == state]


@dataclass(frozen=True)
class Windows:
    """The window grid in ticks: window ``k`` is ``[k*slide, k*slide + size)``; ``size`` None is one unbounded
    window (id 0) over the whole stream."""

    size: int | None
    slide: int

    def wids(self, t: float) -> range:
        """The windows containing tick ``t`` (k of them when size = k * slide)."""
        if self.size is None:
            return range(0, 1)
        return range(math.floor((t - self.size) / self.slide) + 1, math.floor(t / self.slide) + 1)

    def start(self, wid: int) -> float:
        return -math.inf if self.size is None else wid * self.slide

    def end(self, wid: int) -> float:
        """The first tick after window ``wid``: it closes once the stream reaches this tick."""
        return math.inf if self.size is None else wid * self.slide + self.size


@dataclass(frozen=True)
class TrendAgg:
    """One trend aggregate: ``COUNT(*)`` (var None), ``COUNT(v)`` (attr None), ``SUM|MIN|MAX|AVG(v.attr)``."""

    func: str
    var: str | None = None
    attr: str | None = None

    @property
    def text(self) -> str:
        if self.var is None:
            return "COUNT(*)"
        inner = self.var if self.attr is None else f"{self.var}.{self.attr}"
        return f"{self.func.upper()}({inner})"


def is_single_event(tpl: Template) -> bool:
    """A negative sub-pattern of one event type (``~Type v``): its trends are single events."""
    return len(tpl.states) == 1 and not tpl.transitions and tpl.start == tpl.end == frozenset({0})
