"""The shedding wrapper's snapshot/restore (issue 26: in no test before): a wrapper that has shed, snapshotted through
JSON and restored into a fresh one, holds the same runs and counters and continues with the same records as the one
that was not interrupted (fed without arrival times from there, so neither sheds again)."""

from __future__ import annotations

import json
import random

from engine.evaluate import make_matcher
from engine.events import Event
from engine.language.parser import parse_query
from engine.onepass import PackFeeder
from engine.plan.compiler import compile_query
from engine.shedding import SheddingConfig, SheddingMatcher

TICK = 0.01
QUERIES = (
    ("S", "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND c.v > 2 * avg(b[].v) WITHIN 60 s", "skip_till_next_match"),
    ("N", "PATTERN SEQ(A a, !D d, C c) WHERE [k] WITHIN 60 s", "skip_till_next_match"),
    ("I", "PATTERN SEQ(A a, C c) WHERE [k] WITHIN 2 s", "skip_till_any_match"),
)


def _events(n: int) -> list[Event]:
    rng = random.Random(11)
    out = []
    for i in range(n):
        etype = rng.choice("AABBBBBBCDE")
        v = rng.uniform(1, 10) if etype != "C" else rng.uniform(5, 40)
        out.append(Event(etype, i * TICK, {"k": rng.randrange(4), "v": v}, id=f"e{i}", seq=i + 1, tick=TICK))
    return out


def _shedder(schedule: dict[int, list[tuple[str, int]]] | None = None) -> SheddingMatcher:
    cqs = [compile_query(parse_query(q, name), strategy=s, tick=TICK) for name, q, s in QUERIES]
    matchers = [make_matcher(cq) for cq in cqs]
    config = SheddingConfig(enabled=True, policy="random_runs", min_observations=0, observe_every=1, seed=3)
    return SheddingMatcher(matchers, config, feeder=PackFeeder(matchers), schedule=schedule, sync_rebuild=True)


def test_a_shedder_restored_from_its_snapshot_continues_as_the_original() -> None:
    events = _events(900)
    cut = 500
    # Forced amounts (arrival given, so the schedule applies): runs shed at fixed events before the cut.
    schedule = {i: [("global", 3)] for i in range(50, cut, 40)}
    first = _shedder(schedule)
    head = [r for ev in events[:cut] for r in first.feed(ev, arrival=0.0, now=0.0)]
    assert first.shed_runs > 0 and first.shed_calls > 0  # it has shed: its counters are state to carry over
    text = json.dumps(first.snapshot(), allow_nan=False)
    second = _shedder()
    second.restore(json.loads(text))
    assert json.loads(json.dumps(second.snapshot(), allow_nan=False)) == json.loads(text)
    assert (second.shed_runs, second.shed_calls, second.shed_events, second.events) == (
        first.shed_runs,
        first.shed_calls,
        first.shed_events,
        first.events,
    )
    assert second.runs_alive() == first.runs_alive() and second.stats() == first.stats()
    tail_first = first.feed_many(events[cut:]) + first.flush()
    tail_second = second.feed_many(events[cut:]) + second.flush()
    assert tail_second == tail_first
    assert head or tail_first  # the comparison covers records
    assert first.shed_runs == second.shed_runs  # no arrival after the cut: nothing more shed on either side
