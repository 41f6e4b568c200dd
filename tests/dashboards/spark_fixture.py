"""The Spark view's test data: the real event logs of the Spark pack's tests (``tests/queries/spark_pack/data``:
planted skew, a slowed task, spill, GC pressure, a stalled shuffle fetch, a lost executor, clean jobs) collected as
``hcep collect spark`` does, with the records and alerts of the pack's test copy as ``hcep match`` and
``hcep match --alerts`` print them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.queries.spark_pack.conftest import SMALL, collected, manifest

#: What the view must show: the slowed task's stage of the local application, and the spilling one.
LOCAL = "local"
CLUSTER = "cluster"


def planted_stage(name: str, group: str, pick: str = "max") -> int:
    """The stage id of a planted job group (the last stage of its job: the reduce side)."""
    stages = [int(s) for s in manifest(name)["groups"][group]["stages"]]
    return max(stages) if pick == "max" else min(stages)


def build(out: Path) -> Path:
    """Write ``spark_events.jsonl``, ``spark_matches.jsonl`` and ``alerts.jsonl`` into ``out``."""
    from app.matching.judge import judge
    from app.matching.packs import compiled_queries, load_pack
    from app.matching.read import read_events
    from engine import match_events

    out.mkdir(parents=True, exist_ok=True)
    events = out / "spark_events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for name in (LOCAL, CLUSTER) for e in collected(name)))
    args = argparse.Namespace(
        pack=str(SMALL), query=None, query_text=None, strategy=None, output=None, confidence=None, tick=None
    )
    compiled, tick = compiled_queries(args)
    parsed = read_events(events, tick)
    with (out / "spark_matches.jsonl").open("w") as dst:
        dst.writelines(json.dumps(r) + "\n" for r in match_events(compiled, parsed))
    with (out / "alerts.jsonl").open("w") as dst:
        dst.writelines(json.dumps(a.to_json()) + "\n" for a in judge(load_pack(SMALL), parsed))
    return out
