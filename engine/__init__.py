"""hcep's CEP engine: SASE+ pattern queries over events with (imprecise) timestamps.  A pure library: no I/O.

The public surface:

- :func:`engine.language.parser.parse_query` -- query text -> checked :class:`engine.language.ast.Query`
- :func:`engine.language.packs.load_pack` / ``parse_pack`` -- YAML query pack -> :class:`engine.language.packs.Pack`
- :func:`compile_query` -- parsed query + options -> :class:`CompiledQuery` (the NFA^b plan)
- :class:`Matcher` -- the NFA^b runtime: feed events in time order, get match records (docs/semantics.md section 5)
- :func:`make_matcher` -- the evaluator a compiled query gets (:mod:`engine.evaluate`; the contract every evaluator
  implements: :mod:`engine.evaluator`)
- :func:`match_events` -- sort a finite list of events and match them all
"""

from typing import Any

import contracts  # noqa: F401  (first: it installs the compiled hot path, if built and current)
from engine.events import DEFAULT_TICK, Event, EventError, event_from_json
from engine.language.ast import QueryError

__all__ = [
    "DEFAULT_TICK",
    "Event",
    "EventError",
    "event_from_json",
    "QueryError",
    "compile_query",
    "CompiledQuery",
    "Matcher",
    "match_events",
    "make_matcher",
]


def __getattr__(name: str) -> Any:
    # The planner and runtime are imported lazily so that `import engine` (and `hcep --help`) stays cheap.
    if name in ("compile_query", "CompiledQuery"):
        from engine.plan import compiler

        return getattr(compiler, name)
    if name == "Matcher":
        from engine.runtime import matcher

        return matcher.Matcher
    if name in ("match_events", "make_matcher"):
        from engine import evaluate

        return getattr(evaluate, name)
    raise AttributeError(name)
