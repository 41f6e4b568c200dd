"""``hcep match`` runs with the cyclic garbage collector off (``app.matching.read.frozen``): that is sound only while
matching makes no cyclic garbage -- everything it drops is freed by reference counting.  Checked on the recorded
simulated cluster with the Hadoop pack, its records and its alerts, while the evaluators are still alive (their
own teardown at the end may leave cycles: the command ends there)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from app.matching.judge import judge
from app.matching.packs import load_pack
from app.matching.read import built_types, frozen, read_events
from engine.evaluate import StreamedMatch
from engine.events import Event
from engine.limits import Limits
from engine.plan.compiler import compile_spec
from tests.differential.outputs import HADOOP, events_file


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return events_file("simulated", tmp_path_factory.mktemp("gc"))


def _cycles_left(items: Iterator[object]) -> tuple[int, int]:
    """(items, objects a full collection finds unreachable) after iterating ``items`` with the collector off."""
    was = gc.get_debug()
    try:
        with frozen():
            n = sum(1 for _ in items)
            gc.set_debug(gc.DEBUG_SAVEALL)
            found = gc.collect()
    finally:
        gc.set_debug(was)
        gc.garbage.clear()
        gc.unfreeze()  # (the command leaves its objects frozen: it ends there; this test process goes on)
    return n, found


def test_matching_the_pack_makes_no_cyclic_garbage(trace: Path) -> None:
    pack = load_pack(HADOOP)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    events = read_events(trace, float(pack.tick), 7.5, built_types(cqs))
    matched = StreamedMatch(cqs, cast("list[Event]", events), increments=True)  # Stamps pass too
    it = iter(matched)
    n, found = _cycles_left(it)
    assert n > 100 and matched.runner is not None  # the evaluators are alive during the collection
    assert found == 0
    assert gc.isenabled()  # the collector is back on after the block


def test_judging_the_pack_makes_no_cyclic_garbage(trace: Path) -> None:
    pack = load_pack(HADOOP)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    events = read_events(trace, float(pack.tick), 7.5, built_types(cqs))
    alerts = judge(pack, events, 7.5, Limits())
    first = next(alerts)  # the judge's setup (its classes, its runner) is made before the collector is off
    n, found = _cycles_left(alerts)
    assert first is not None and n > 0
    assert found == 0
