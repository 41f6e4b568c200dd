"""GRETA: event trend aggregation without enumerating trends (Poppe et al., VLDB 2017; digest-greta.md).

Under skip_till_any_match a Kleene pattern matches exponentially many trends.  When a query only wants aggregates
over them -- ``RETURN COUNT(*), SUM(b.cpu)`` -- GRETA computes those in polynomial time and space by propagating
aggregates along a graph with one vertex per event, never building a trend.

- :mod:`engine.plan.trends`      -- trend query -> template (states, transitions, negations); eligibility; explain
- :mod:`engine.plan.trend_template` -- the template and the window grid (planning is the planner's, below GRETA)
- :mod:`engine.greta.graph`      -- the runtime graph: propagation, groups, negation, windows
- :mod:`engine.greta.aggregates` -- exact aggregate vectors (COUNT(*), COUNT(v), SUM, MIN, MAX, AVG)
- :mod:`engine.greta.fenwick`    -- the single-range-predicate fast path
- :mod:`engine.greta.matcher`    -- :class:`GretaMatcher` and the two-step :class:`TrendEnumerator` (records)
- :mod:`engine.greta.state`      -- their snapshots
"""

from engine.greta.aggregates import Layout
from engine.greta.graph import Graph
from engine.greta.matcher import GretaMatcher, TrendEnumerator
from engine.plan.trend_template import State, Template, Transition, TrendAgg, Windows
from engine.plan.trends import GretaPlan, NotGreta, plan_greta, trend_spec

__all__ = [
    "GretaMatcher",
    "TrendEnumerator",
    "GretaPlan",
    "NotGreta",
    "plan_greta",
    "trend_spec",
    "Graph",
    "Layout",
    "TrendAgg",
    "State",
    "Template",
    "Transition",
    "Windows",
]
