"""``hcep match`` runs with the cyclic garbage collector off (``app.matching.read.frozen``) and freezes what matching
made before turning it back on: that is sound only while matching makes no cyclic garbage -- everything it drops is
freed by reference counting, while it runs and once the evaluators themselves are dropped.  Checked on the recorded
simulated cluster with the Hadoop pack, its records and its alerts."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.matching.judge import judge
from app.matching.packs import load_pack
from app.matching.read import built_types, frozen, read_events
from engine.evaluate import StreamedMatch
from engine.limits import Limits
from engine.plan.compiler import compile_spec
from tests.differential.outputs import HADOOP, events_file


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return events_file("simulated", tmp_path_factory.mktemp("gc"))


def _cycles_left(held: list[Iterator[Any]]) -> tuple[int, int, int]:
    """(items of the iterator ``held[0]``, objects a full collection finds unreachable after iterating it with the
    collector off, and then once ``held`` -- the only references to it and its evaluators -- is emptied)."""
    was = gc.get_debug()
    try:
        with frozen():
            n = sum(1 for _ in held[0])
            gc.set_debug(gc.DEBUG_SAVEALL)
            found = gc.collect()
            held.clear()
            after = gc.collect()
    finally:
        gc.set_debug(was)
        gc.garbage.clear()
        gc.unfreeze()  # (the command leaves its objects frozen: it ends there; this test process goes on)
    return n, found, after


def test_matching_the_pack_makes_no_cyclic_garbage(trace: Path) -> None:
    pack = load_pack(HADOOP)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    events = read_events(trace, float(pack.tick), 7.5, built_types(cqs))
    matched = StreamedMatch(cqs, events, increments=True)  # Stamps (Events) pass too
    held = [iter(matched)]
    del matched  # the iterator holds it
    n, found, after = _cycles_left(held)
    assert n > 100
    assert found == 0  # while the evaluators are alive
    assert after == 0  # and once they are dropped
    assert gc.isenabled()  # the collector is back on after the block


def test_judging_the_pack_makes_no_cyclic_garbage(trace: Path) -> None:
    pack = load_pack(HADOOP)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    events = read_events(trace, float(pack.tick), 7.5, built_types(cqs))
    alerts = judge(pack, events, 7.5, Limits())
    first = next(alerts)  # the judge's setup (its classes, its runner) is made before the collector is off
    held = [alerts]
    del alerts
    n, found, after = _cycles_left(held)
    assert first is not None and n > 0
    assert found == 0
    assert after == 0
