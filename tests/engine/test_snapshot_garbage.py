"""Snapshots leave no reference cycles behind: ``hcep stream`` snapshots every group a batch touches, and its Python
workers keep their objects frozen out of the collector between full collections (``app.spark.stream.state``), so a
cycle per snapshot was garbage held for 64 calls and a full collection of a million-object heap to find it (issue 28,
cut 8: the compiled NFA^b snapshot's nested functions were such a cycle).  Runs compiled or pure, as installed."""

from __future__ import annotations

import gc
import json
import math
from collections import Counter
from pathlib import Path

from engine.evaluate import PackRunner
from engine.events import event_from_json
from engine.language.packs import load_pack
from engine.runtime.matcher import sort_events

ROOT = Path(__file__).resolve().parents[2]


def test_snapshots_make_no_cyclic_garbage() -> None:
    pack = load_pack(ROOT / "queries" / "hadoop.yaml")
    runner = PackRunner(pack, math.ceil(2 * 7.5 / pack.tick) + 1, shedding=False)
    lines = (ROOT / "queries/samples/hadoop_sample.jsonl").read_text().splitlines()
    events = sort_events(
        event_from_json(json.loads(line), i, tick=pack.tick) for i, line in enumerate(lines) if line.strip()
    )
    gc.collect()
    flags = gc.get_debug()
    gc.disable()
    try:
        for ev in events:
            runner.feed(ev)
            runner.snapshot()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = Counter(type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        gc.enable()
    ours = {name: n for name, n in found.items() if name.startswith(("engine.", "contracts."))}
    assert not ours, f"snapshots left reference cycles: {ours}"
    assert sum(found.values()) < len(events), found.most_common(5)
