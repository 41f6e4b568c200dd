"""How the conformance suite drives an evaluator: built as the registry says, fed a finite stream uninterrupted, fed
through a snapshot/restore at a given point, fed out of order under a watermark, and its records compared with the
brute-force references (``tests/reference.py``, ``tests/possible_worlds.py``, the trend oracle of
``tests/engine/test_greta``).

Everything here goes through :class:`engine.evaluator.Evaluator` only; ``via`` (:data:`VIAS`) says whether the
evaluator is checked bare or inside the composites the one driver (:class:`engine.evaluate.PackRunner`) builds.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from engine.evaluate import PackRunner
from engine.evaluator import Clock, Evaluator, EvaluatorKind
from engine.events import Event
from engine.language import ast
from engine.limits import Limits
from engine.plan.compiler import CompiledQuery
from engine.runtime.matcher import OutOfOrderError, sort_events
from engine.shedding import SheddingConfig
from tests.engine.test_engine_vs_reference import _fmt_sig, _same_returns
from tests.possible_worlds import possible_worlds
from tests.reference import reference_any, reference_nfa

TICK = 1.0


#: How an evaluator is built and fed: bare (``kind.cls(cq, umax)``), or as the one driver builds it for a pack
#: (:meth:`engine.evaluate.PackRunner.of`): its one-pass feeder (:class:`engine.onepass.PackFeeder`), or pSPICE's
#: wrapper over that feeder (:class:`engine.shedding.SheddingMatcher`, shedding on; no arrival time, so nothing is
#: shed and the records are the bare evaluator's).  Each is an :class:`Evaluator` and passes the same checks.
VIAS = ("evaluator", "pack", "shedder")
SHEDDING = SheddingConfig(enabled=True, min_observations=0, observe_every=1)


def build(kind: EvaluatorKind, cq: CompiledQuery, umax: int, via: str = "evaluator") -> Evaluator:
    if via == "evaluator":
        m: Any = kind.cls(cq, umax)
    else:
        runner = PackRunner.of(
            [cq], umax, kind=kind.name, limits=Limits(None, None), shedding=SHEDDING if via == "shedder" else None
        )
        m = runner.feeder if via == "pack" else runner.shedder
        assert m is not None and type(runner.matchers[0]) is kind.cls
    assert isinstance(m, Evaluator), f"{kind.name}: {type(m).__name__} does not implement the Evaluator protocol"
    return cast(Evaluator, m)


def widest(events: Sequence[Event]) -> int:
    return max((e.thi - e.tlo for e in events), default=0)


def fresh(events: Sequence[Event]) -> list[Event]:
    """Copies (an evaluator may keep references; each run gets its own objects, as a new process would)."""
    return [Event(e.type, e.ts, dict(e.attrs), id=e.id, seq=e.seq, lo=e.lo, hi=e.hi, tick=TICK) for e in events]


def run(
    kind: EvaluatorKind, cq: CompiledQuery, events: Sequence[Event], umax: int | None = None, via: str = "evaluator"
) -> list[dict]:
    """Uninterrupted: the stream in time order, then flush."""
    ordered = sort_events(fresh(events))
    m = build(kind, cq, widest(ordered) if umax is None else umax, via)
    out: list[dict] = []
    for ev in ordered:
        out.extend(m.feed(ev))
    out.extend(m.flush())
    return out


def run_restored(
    kind: EvaluatorKind, cq: CompiledQuery, events: Sequence[Event], cut: int, via: str = "evaluator"
) -> tuple[list[dict], str]:
    """The first ``cut`` events, a snapshot through JSON text, a new evaluator restored from it, the rest, flush.
    Returns the records and the restored evaluator's own snapshot at the end (as JSON text)."""
    ordered = sort_events(fresh(events))
    umax = widest(ordered)
    first = build(kind, cq, umax, via)
    out: list[dict] = []
    for ev in ordered[:cut]:
        out.extend(first.feed(ev))
    text = json.dumps(first.snapshot(), allow_nan=False)
    second = build(kind, cq, umax, via)
    second.restore(json.loads(text))
    again = json.dumps(second.snapshot(), allow_nan=False)
    assert json.loads(again) == json.loads(text), f"{kind.name}: restore then snapshot changed the state at {cut}"
    for ev in ordered[cut:]:
        out.extend(second.feed(ev))
    out.extend(second.flush())
    return out, json.dumps(second.snapshot(), sort_keys=True)


def final_snapshot(kind: EvaluatorKind, cq: CompiledQuery, events: Sequence[Event], via: str = "evaluator") -> str:
    ordered = sort_events(fresh(events))
    m = build(kind, cq, widest(ordered), via)
    for ev in ordered:
        m.feed(ev)
    m.flush()
    return json.dumps(m.snapshot(), sort_keys=True)


def arrival_order(events: Sequence[Event], lateness: int, seed: int) -> list[Event]:
    """The events as they might arrive: each at most ``lateness`` ticks after its time (ties in input order)."""
    rng = random.Random(seed)
    keyed = [(e.t + rng.randint(0, lateness), i, e) for i, e in enumerate(events)]
    return [e for _, _, e in sorted(keyed, key=lambda x: (x[0], x[1]))]


def run_watermarked(
    kind: EvaluatorKind, cq: CompiledQuery, events: Sequence[Event], lateness: int, seed: int, via: str = "evaluator"
) -> list[dict]:
    """Out-of-order arrival under a watermark (the newest time seen less ``lateness``).

    An evaluator that needs time order gets the events from a reorder buffer, released in (t, seq) order once the
    watermark passes them, and its clock advanced to each new watermark; the others take the arrival order as it
    comes, with an uncertainty bound widened by the lateness, and are advanced to the watermark too."""
    arriving = arrival_order(fresh(events), lateness, seed)
    umax = widest(arriving) + lateness
    m = build(kind, cq, umax, via)
    out: list[dict] = []
    held: list[Event] = []
    newest = -math.inf
    fed = 0
    for ev in arriving:
        newest = max(newest, ev.t)
        mark = newest - lateness
        if kind.ordered:
            held.append(ev)
            ready = sorted((e for e in held if e.t < mark), key=lambda e: (e.t, e.seq))
            held = [e for e in held if e.t >= mark]
            for e in ready:
                out.extend(m.feed(e))
                fed += 1
            out.extend(m.advance(Clock(mark, mark, 0, fed)))
        else:
            out.extend(m.feed(ev))
            fed += 1
            # every unseen event has t >= mark, so starts at or after mark - widest = now - umax
            out.extend(m.advance(Clock(mark, mark + lateness, umax, fed)))
    for e in sorted(held, key=lambda e: (e.t, e.seq)):
        out.extend(m.feed(e))
    out.extend(m.flush())
    return out


def refuses_time_travel(
    kind: EvaluatorKind, cq: CompiledQuery, events: Sequence[Event], via: str = "evaluator"
) -> bool:
    """An evaluator that needs time order raises :class:`OutOfOrderError` on an older event, never a wrong answer."""
    ordered = sort_events(fresh(events))
    if len(ordered) < 2 or ordered[0].t == ordered[-1].t:
        return True
    m = build(kind, cq, widest(ordered), via)
    m.feed(ordered[-1])
    try:
        m.feed(ordered[0])
    except OutOfOrderError:
        return True
    return False


# ------------------------------------------------------------------------------------------------ comparisons


def canonical(records: list[dict]) -> list[str]:
    return [json.dumps(r, sort_keys=True, default=list) for r in records]


def check_matches(records: list[dict], query: ast.Query, events: Sequence[Event], strategy: str, context: str) -> None:
    """Per-match records against the reference: a set of signatures under skip_till_any_match (no repeats), a
    multiset under the NFA strategies; RETURN values agree; precise events give confidence 1."""
    positives = [c.var for c in query.components if not c.negated]
    by_id = {e.id: e for e in events}
    got: list[tuple[Any, dict[str, Any]]] = []
    for rec in records:
        assert set(rec["match"]) == set(positives), f"{context}record binds {sorted(rec['match'])}: {rec}"
        sig = tuple(
            (v, tuple(sorted((str(i) for i in rec["match"][v]), key=lambda i: (by_id[i].t, by_id[i].seq))))
            for v in positives
        )
        got.append((sig, rec.get("return", {})))
        if all(e.lo == e.hi for e in events):
            assert math.isclose(rec["confidence"], 1.0), f"{context}precise match with confidence != 1: {rec}"
    if strategy == "skip_till_any_match":
        expected: dict[Any, Any] = reference_any(query, events)
        counts = Counter(s for s, _ in got)
        dups = [_fmt_sig(s) for s, n in counts.items() if n > 1]
        assert not dups, f"{context}duplicate signatures: {dups}"
        missing = [_fmt_sig(s) for s in expected if s not in counts]
        extra = [_fmt_sig(s) for s in counts if s not in expected]
        assert not missing and not extra, f"{context}missing: {missing}\nextra: {extra}"
    else:
        ref = reference_nfa(query, events, strategy)
        want, have = Counter(s for s, _ in ref), Counter(s for s, _ in got)
        assert want == have, f"{context}missing: {list((want - have).items())}\nextra: {list((have - want).items())}"
        expected = dict(ref)
    for sig, ret in got:
        assert _same_returns(ret, expected[sig]), f"{context}RETURN of {_fmt_sig(sig)}: {ret} vs {expected[sig]}"


def check_worlds(
    records: list[dict], query: ast.Query, events: Sequence[Event], threshold: float, context: str
) -> None:
    """Records with exact confidences and time ranges against the possible-worlds oracle."""
    expected = {
        k: v
        for k, v in possible_worlds(query, events, TICK).items()
        if v.confidence > 1e-12 and v.confidence >= threshold - 1e-12
    }
    got = {}
    for r in records:
        key = tuple((var, tuple(sorted(ids))) for var, ids in r["match"].items())
        assert key not in got, f"{context}duplicate signature {key}"
        got[key] = r
    assert set(got) == set(expected), f"{context}got {sorted(got)}\nexpected {sorted(expected)}"
    for key, rec in got.items():
        want = expected[key]
        assert math.isclose(rec["confidence"], want.confidence, abs_tol=1e-9), f"{context}{key}: {rec} vs {want}"
        assert rec["start"] == want.first_tick * TICK and rec["end"] == want.last_tick * TICK, f"{context}{rec}"


def trend_records(records: list[dict]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Trend records by (start, end, group); each appears once."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        key = (r["start"], r["end"], tuple(sorted(r["match"].items(), key=repr)))
        assert key not in out, f"duplicate record {r}"
        assert r["confidence"] == 1.0
        out[key] = r["return"]
    return out
