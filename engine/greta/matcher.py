"""Trend-aggregate evaluators, each an :class:`engine.evaluator.Evaluator` (snapshots: :mod:`engine.greta.state`).

Output (one record per group and window, emitted when the window closes)::

    {"query": "T1", "match": {"host": "h1"}, "confidence": 1.0, "start": 600.0, "end": 1200.0,
     "return": {"trends": 1234567890123456789, "cpu": 17.5}}

- ``match`` is the group: the equivalence attributes' values (``{}`` without ``[attr]``; an attribute no event of the
  trends carries is ``null``);
- ``start``/``end`` are the window ``[start, end)`` in seconds (without WITHIN: the first and last relevant event);
- ``return`` holds the RETURN items over *all* trends of the group lying entirely inside the window; counts are exact
  ints (JSON big integers), SUM is an int for int values, other non-integral results are floats;
- a (group, window) without any trend produces no record; ``confidence`` is 1.0 (precise points).

Windows: ``WITHIN d SLIDE s`` makes windows ``[k*s, k*s + d)`` for every integer k (in ticks, aligned on time 0);
without SLIDE they are tumbling (``s = d``); a window closes (and is emitted) when an event at or after its end is fed,
or at :meth:`flush`.  A trend counts in a window iff all its events lie in it -- so it satisfies the per-match
``t_last - t_first < d`` (docs/semantics.md section 2), but a trend that satisfies it and straddles a window boundary
counts only in the windows that hold it whole (with tumbling windows, possibly none): GRETA aggregates per window, the
per-match evaluators bound each match.  Without WITHIN there is one window, the whole input, emitted at :meth:`flush`.

Events must come in time order (``Event.t``); events sharing a tick are concurrent and never adjacent in a trend.
Events with an uncertainty interval are placed at its midpoint: GRETA over imprecise timestamps is out of scope.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, cast

from engine.evaluator import NEVER, START, Clock, Due, Record, Stats, register, window_horizon
from engine.events import Event
from engine.greta import state
from engine.greta.aggregates import Layout, TrendAgg, to_output
from engine.greta.graph import Graph, _hashable
from engine.language import ast
from engine.limits import Limits
from engine.plan.compiler import CompiledQuery
from engine.plan.trends import GretaPlan, TrendSpec, plan_greta, trend_spec
from engine.runtime.matcher import Matcher, OutOfOrderError
from engine.snapshot import EventCodec

__all__ = ["GretaMatcher", "TrendEnumerator", "evaluate_return"]

#: How often (in closed windows) incremental GRETA drops expired vertices: a quarter of a window's worth of slides.
_EXPIRE_FRACTION = 4


def evaluate_return(expr: ast.Expr, values: dict[TrendAgg, Any]) -> Any:
    """A trend-aggregate RETURN item from exact aggregate values (ints, Fractions, numbers or None).

    Arithmetic follows the predicates' rules: None in, None out; ``/`` is true division (exact here, a float at
    output); division by zero is None.
    """
    if isinstance(expr, ast.TrendAggregate):
        return values[TrendAgg(expr.func, expr.var, expr.attr)]
    if isinstance(expr, ast.Number):
        return expr.value
    if isinstance(expr, ast.Neg):
        v = evaluate_return(expr.operand, values)
        return None if v is None else -v
    if isinstance(expr, ast.BinOp):
        left = evaluate_return(expr.left, values)
        right = evaluate_return(expr.right, values)
        if left is None or right is None:
            return None
        try:
            if expr.op == "+":
                return left + right
            if expr.op == "-":
                return left - right
            if expr.op == "*":
                return left * right
            if right == 0:
                return None
            if expr.op == "%":
                return left % right
            if isinstance(left, float) or isinstance(right, float):
                return left / right
            return Fraction(left) / Fraction(right)
        except (OverflowError, TypeError):
            return None
    raise TypeError(f"not a trend-aggregate expression: {type(expr).__name__}")  # pragma: no cover - checked


class _TrendOutput:
    """What the trend evaluators share: windows, results per (window, group) and the output records."""

    def __init__(self, spec: TrendSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.windows = spec.windows
        self.layout = Layout(spec.aggs, spec.state_vars)
        self.now = -math.inf
        self.first_sec: float | None = None
        self.last_sec: float | None = None
        self.matches = 0  # records emitted
        self.fed = 0
        self.cq: CompiledQuery

    def feed(self, ev: Event) -> list[Record]:
        raise NotImplementedError

    def feed_many(self, events: Iterable[Event]) -> list[Record]:
        """``feed`` each event in turn: the same records."""
        out: list[Record] = []
        feed = self.feed
        for ev in events:
            got = feed(ev)
            if got:
                out.extend(got)
        return out

    def horizon(self, last_t: float, umax: int) -> float:
        """The windows open at ``last_t`` started less than WITHIN before it (the NFA^b runtime's rule)."""
        return window_horizon(last_t, self.cq.window, umax)

    def set_output(self, *, increments: bool | None = None, lazy_ids: bool | None = None) -> None:
        """Nothing to set: one aggregate record per group and window."""

    # A trend window closes on any later event, so a trend evaluator is fed every event: it never misses one, and
    # the clock it is handed only counts (moving its time without closing the windows passed would lose them).
    ordered = True
    bounds = False

    @property
    def tick(self) -> float:
        return self.cq.tick

    def wants(self) -> frozenset[str] | None:
        return None

    def due(self) -> Due:
        return NEVER

    def clock(self) -> Clock:
        return Clock(self.now, START.now, START.umax, self.fed)

    def set_clock(self, clock: Clock) -> None:
        if clock.fed > self.fed:
            self.fed = clock.fed

    def stats(self) -> Stats:
        return Stats(self.fed, self.matches, self.runs_alive())

    def dropped(self) -> int:
        return 0  # a trend graph is not bounded (engine.runtime.limits bounds runs and enumerations)

    def runs_alive(self) -> int:
        raise NotImplementedError

    def _seen(self, ev: Event) -> None:
        if self.first_sec is None:
            self.first_sec = ev.lo
        self.last_sec = ev.hi

    def _bounds(self, wid: int) -> tuple[float, float]:
        w = self.windows
        if w.size is None:
            return (self.first_sec or 0.0, self.last_sec or 0.0)
        tick = self.spec.tick
        return round(w.start(wid) * tick, 9), round(w.end(wid) * tick, 9)

    def _records(self, wid: int, groups: dict[tuple[Any, ...], Any]) -> list[Record]:
        layout = self.layout
        out: list[Record] = []
        start, end = self._bounds(wid)
        for bound, agg in groups.items():
            if not layout.count(agg):
                continue
            values = {spec: layout.value(agg, spec) for spec in self.spec.aggs}
            out.append(
                {
                    "query": self.name,
                    "match": dict(zip(self.spec.attrs, bound, strict=True)),
                    "confidence": 1.0,
                    "start": start,
                    "end": end,
                    "return": {name: to_output(evaluate_return(expr, values)) for name, expr in self.spec.returns},
                }
            )
        self.matches += len(out)
        return out

    def _emit_closed(self, results: dict[int, dict[Any, Any]], t: float) -> list[Record]:
        """Pop and output every window of ``results`` that ends at or before tick ``t``, in window order."""
        out: list[Record] = []
        end = self.windows.end
        for wid in sorted(w for w in results if end(w) <= t):
            out.extend(self._records(wid, results.pop(wid)))
        return out


@register("greta", trends=True, strategies=("skip_till_any_match",))
class GretaMatcher(_TrendOutput):
    """GRETA over a trend-aggregate skip_till_any_match query (see the module docstring for the records).

    Two ways to run the same graph (:class:`engine.greta.graph.Graph`):

    - *incremental* (the paper's): one graph shared by all windows; every event is inserted as it arrives, with one
      aggregate per window it belongs to; a window's results are ready when it closes.  O(n^2 k) worst case.
    - *deferred*: when a transition has a single range predicate (the Fenwick fast path), a window's values must be
      known to rank them, so each window's graph is built when the window closes (results are only due then anyway)
      from the buffered events.  O(n log n) per window; events are buffered once for all the windows they fall in.

    ``fast=False`` disables the Fenwick path (the general path, for comparison); ``mode`` forces one way.
    """

    def __init__(self, cq: CompiledQuery, max_uncertainty: int = 0, *, fast: bool = True, mode: str = "auto") -> None:
        plan: GretaPlan = plan_greta(cq)
        super().__init__(plan.spec)
        self.cq = cq
        self.plan = plan
        self.template = plan.template
        self.relevant = frozenset(st.type for st in self.template.states) | frozenset(
            st.type for tr in self.template.transitions for neg in tr.negations for st in neg.states
        )
        if mode == "auto":
            mode = "deferred" if fast and plan.has_range_index else "incremental"
        if mode not in ("incremental", "deferred"):
            raise ValueError(f"unknown GRETA mode {mode!r}")
        self.mode = mode
        self.fast = fast
        self.batch: list[Event] = []
        self.batch_t: float = -math.inf
        if mode == "incremental":
            self.graph: Graph | None = Graph(self.template, self.layout, self.windows)
            self.closed_below: int | None = None
            self.expired_below: int | None = None
        else:
            self.graph = None
            self.buf_times: list[float] = []
            self.buf_events: list[Event] = []
            self.head = 0
            self.next_wid: int | None = None

    # ------------------------------------------------------------------ interface

    def feed(self, ev: Event) -> list[Record]:
        """Add one event (time order); return the records of the windows it closes."""
        t = ev.t
        if t < self.now:
            raise OutOfOrderError(f"event {ev.id} at tick {t} arrived after tick {self.now}")
        self.fed += 1
        out: list[Record] = []
        if t > self.now:
            if self.batch:
                self._run_batch()
            self.now = t
            out = self._close(t)
        if ev.type in self.relevant:
            self._seen(ev)
            self.batch.append(ev)
            self.batch_t = t
        return out

    def flush(self) -> list[Record]:
        """End of input: close every window."""
        if self.batch:
            self._run_batch()
        return self._close(math.inf)

    def runs_alive(self) -> int:
        """Vertices (incremental) or buffered events (deferred) held for the open windows."""
        if self.graph is not None:
            return self.graph.vertices() + len(self.batch)
        return len(self.buf_events) - self.head + len(self.batch)

    def advance(self, clock: Clock) -> list[Record]:
        """The clock moved on through events the query does not name: the windows it passed close."""
        t = clock.t
        if clock.fed > self.fed:
            self.fed = clock.fed
        if t <= self.now:
            return []
        if self.batch:
            self._run_batch()
        self.now = t
        return self._close(t)

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        return state.snapshot_greta(self, codec)

    def restore(self, snap: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        state.restore_greta(self, snap, codec)

    def set_limits(self, limits: Limits) -> None:
        """GRETA's graph grows polynomially and is not bounded (:mod:`engine.runtime.limits`)."""

    # ------------------------------------------------------------------ incremental

    def _run_batch(self) -> None:
        batch, self.batch = self.batch, []
        if self.graph is not None:
            self.graph.step(batch)
        else:
            self.buf_times.extend(ev.t for ev in batch)
            self.buf_events.extend(batch)

    def _close(self, t: float) -> list[Record]:
        if self.graph is None:
            return self._close_deferred(t)
        graph = self.graph
        out = self._emit_closed(graph.results, t)
        w = self.windows
        if w.size is None or t == math.inf:
            return out
        lowest_open = math.floor((t - w.size) / w.slide) + 1
        if self.closed_below is None or lowest_open > self.closed_below:
            graph.drop_windows(lowest_open)
            self.closed_below = lowest_open
            step = max(1, w.size // (w.slide * _EXPIRE_FRACTION))
            if self.expired_below is None or lowest_open - self.expired_below >= step:
                graph.expire(w.start(lowest_open))
                self.expired_below = lowest_open
        return out

    # ------------------------------------------------------------------ deferred

    def _close_deferred(self, t: float) -> list[Record]:
        out: list[Record] = []
        w = self.windows
        times, events = self.buf_times, self.buf_events
        while self.head < len(times):
            first = w.wids(times[self.head]).start
            wid = first if self.next_wid is None else max(self.next_wid, first)
            if w.end(wid) > t:
                break
            lo = bisect_left(times, w.start(wid), self.head)
            hi = bisect_left(times, w.end(wid), lo)
            if hi > lo:
                out.extend(self._run_window(wid, events[lo:hi]))
            self.next_wid = wid + 1
            if w.size is None:  # the one unbounded window: everything is consumed
                self.head = len(times)
                break
            self.head = bisect_left(times, w.start(self.next_wid), self.head)
        if self.head > 4096 and self.head * 2 > len(times):
            del times[: self.head]
            del events[: self.head]
            self.head = 0
        return out

    def _run_window(self, wid: int, events: list[Event]) -> list[Record]:
        graph = Graph(
            self.template,
            self.layout,
            _OneWindow(wid, self.windows.start(wid)),
            fast_events=events if self.fast else None,
        )
        for _t, tick_events in itertools.groupby(events, key=lambda e: e.t):
            graph.step(list(tick_events))
        return self._records(wid, graph.results.get(wid, {}))


class _OneWindow:
    """The window grid of a deferred graph: every event is in the one window being computed."""

    __slots__ = ("wid_tuple", "first")

    def __init__(self, wid: int, first: float) -> None:
        self.wid_tuple = (wid,)
        self.first = first

    def wids(self, t: float) -> tuple[int]:
        return self.wid_tuple

    def start(self, wid: int) -> float:
        return self.first


class _Capture(Matcher):
    """The NFA^b runtime, handing back each match's binding and group instead of a match record."""

    def _record(self, r: Any, returned: dict[str, Any]) -> Any:
        return (list(r.bind), r.eqv)


@register("enumerate", trends=True)
class TrendEnumerator(_TrendOutput):
    """Two-step trend aggregation: enumerate every match with the NFA^b runtime, then aggregate per window and group.

    Exponential under skip_till_any_match (each trend is built); the engine uses it only for trend queries GRETA
    cannot evaluate (see :func:`engine.plan.choose.choose`), and the tests and benchmarks use it as the baseline.
    Under the other strategies it aggregates over that strategy's matches.
    """

    def __init__(self, cq: CompiledQuery, max_uncertainty: int = 0) -> None:
        super().__init__(trend_spec(cq))
        self.cq = cq
        self.inner = _Capture(dataclasses.replace(cq, output="all"))
        self.kleene = [c.kleene for c in cq.components]
        self.results: dict[int, dict[tuple[Any, ...], Any]] = {}
        self.trends = 0

    def feed(self, ev: Event) -> list[Record]:
        t = ev.t
        out: list[Record] = []
        if t > self.now:
            out = self._emit_closed(self.results, t)
        captured = cast("list[Any]", self.inner.feed(ev))  # (binding, key) pairs; raises OutOfOrderError on time travel
        self.fed += 1
        self.now = t
        if ev.type in self.inner.relevant:
            self._seen(ev)
        for bind, eqv in captured:
            self._add(bind, eqv)
        return out

    def flush(self) -> list[Record]:
        for bind, eqv in cast(
            "list[Any]", self.inner.flush()
        ):  # pragma: no cover - the precise runtime holds nothing back
            self._add(bind, eqv)
        return self._emit_closed(self.results, math.inf)

    def runs_alive(self) -> int:
        return self.inner.runs_alive()

    def advance(self, clock: Clock) -> list[Record]:
        """The clock moved on through events the query does not name: the windows it passed close."""
        out = self._emit_closed(self.results, clock.t) if clock.t > self.now else []
        self.inner.advance(clock)
        if clock.fed > self.fed:
            self.fed = clock.fed
        if clock.t > self.now:
            self.now = clock.t
        return out

    def snapshot(self, codec: EventCodec | None = None) -> dict[str, Any]:
        return state.snapshot_enumerator(self, codec)

    def restore(self, snap: Mapping[str, Any], codec: EventCodec | None = None) -> None:
        state.restore_enumerator(self, snap, codec)

    def stats(self) -> Stats:
        inner = self.inner.stats()
        return Stats(self.fed, self.matches, inner.runs_alive, inner.shed, inner.dropped)

    def dropped(self) -> int:
        return self.inner.dropped()

    def set_limits(self, limits: Limits) -> None:
        """The enumeration's runs are bounded like the NFA^b runtime's."""
        self.inner.set_limits(limits)

    def _add(self, bind: list[Any], eqv: tuple[Any, ...]) -> None:
        layout = self.layout
        agg = layout.unit
        first: float | None = None
        last: float | None = None
        for s, (kleene, b) in enumerate(zip(self.kleene, bind, strict=True)):
            for ev in b.events() if kleene else (b,):
                if first is None:
                    first = ev.t
                last = ev.t
                deltas = layout.own(s, ev)
                if deltas:
                    agg = layout.apply(agg, deltas)
        self.trends += 1
        assert first is not None and last is not None  # a match binds at least one event
        w = self.windows
        if w.size is None:
            wids: range = range(0, 1)
        else:
            wids = range(math.floor((last - w.size) / w.slide) + 1, math.floor(first / w.slide) + 1)
        group = tuple(_hashable(v) for v in eqv)
        add = layout.add
        for wid in wids:
            groups = self.results.setdefault(wid, {})
            old = groups.get(group)
            groups[group] = agg if old is None else add(old, agg)
