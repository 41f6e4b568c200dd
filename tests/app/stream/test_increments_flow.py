"""``hcep run`` with a growing run (Q4, docs/semantics.md section 5), in memory: the store and the matches topic hold
the chain of increments, a crash in the middle of a chain continues it (the run's snapshot keeps its last record), the
store rebuilds every whole signature, and the alert annotations show the whole evidence."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from app.alerts.rules import EVIDENCE_IDS
from app.matching.judge import RUN_MAX_DELTA
from app.store import store_path
from app.stream.loop import Service
from app.stream.memory import MemorySink, MemorySource
from contracts.records import rebuild
from contracts.store import StoreReader
from engine.evaluate import PackRunner
from engine.events import event_from_json
from engine.language.packs import load_pack
from engine.runtime.matcher import sort_events
from tests.app.stream.flow import broker, chunks, config, drive, workload

PACK = """
pack: growing
tick: 0.1
queries:
  - name: Q4
    strategy: skip_till_next_match
    output: all
    query: |
      PATTERN SEQ(JobStart a, DataIO+ b[])
      WHERE   [job_id]
      WITHIN  1 day
      RETURN  a.job_id AS job_id, sum(b[].size) AS queued, b.len AS ios
alerts:
  - name: Queued
    query: Q4
    group_by: [job_id]
    value: ios
    tiers: {warning: 1}
    webhook: ops
"""


class Crash(BaseException):
    """kill -9 (no Exception: nothing in the service catches it)."""


def _service(pack_file: Path, data: Path, b: Any, sink: MemorySink) -> Service:
    cfg = config(data, pack=str(pack_file))
    return Service(
        cfg,
        load_pack(str(pack_file)),
        source=MemorySource(b, cfg.shared_topics, cfg.broadcast_topics, group=cfg.group),
        sink=sink,
    )


def _engine_records(pack_file: Path, events: list[dict[str, Any]], increments: bool) -> list[dict[str, Any]]:
    """What one uninterrupted hcep run produces (never flushed), by the engine alone."""
    pack = load_pack(str(pack_file))
    runner = PackRunner(pack, math.ceil(2 * RUN_MAX_DELTA / pack.tick) + 1, shedding=False, increments=increments)
    evs = sort_events(event_from_json(e, i, pack.tick) for i, e in enumerate(events))
    return [rec for ev in evs for _spec, rec in runner.feed(ev)]


@pytest.mark.parametrize("crash_at", [None, 10, 20])
def test_run_stores_and_publishes_chains(tmp_path: Path, crash_at: int | None) -> None:
    pack_file = tmp_path / "growing.yaml"
    pack_file.write_text(PACK)
    stream = workload(jobs=6, seed=7)
    events = [e for _t, e in stream]
    inc = _engine_records(pack_file, events, True)
    full = _engine_records(pack_file, events, False)
    assert any("extends" in r for r in inc) and len(inc) == len(full)

    b = broker()
    sink = MemorySink()
    data = tmp_path / "data"
    publish = chunks(b, stream, 6)
    if crash_at is not None:  # crash after `crash_at` events were fed live, mid-chain; a new process takes over
        svc = _service(pack_file, data, b, sink)
        fed = [0]
        real = svc._feed

        def feed(ev: Any, discard: bool) -> None:
            if not discard:
                fed[0] += 1
                if fed[0] == crash_at:
                    raise Crash
            real(ev, discard)

        svc._feed = feed  # type: ignore[method-assign]
        svc.start()
        with pytest.raises(Crash):
            drive(svc, publish)
        svc.crash()
    svc = _service(pack_file, data, b, sink)
    svc.start()
    try:
        drive(svc, publish)
        svc.finish()
    finally:
        svc.close()

    reader = StoreReader(store_path(str(data)))
    stored = {rid: rec for rid, rec, _at in reader.matches()}
    assert set(stored) == {r["id"] for r in inc}  # the same chains as one uninterrupted run
    assert sum(len(r["match"]["b"]) for r in stored.values()) == sum(len(r["match"]["b"]) for r in inc)
    for r, want in zip(inc, full, strict=True):
        got = reader.whole_record(r["id"])
        assert got is not None and got[1], r["id"]
        assert sorted(got[0]["match"]["b"]) == sorted(want["match"]["b"]) and got[0]["return"] == want["return"]
    published = {json.loads(v)["id"]: json.loads(v) for _k, v in sink.records}
    assert set(published) == set(stored)
    assert rebuild(inc) == [
        {k: v for k, v in r.items()} for r in rebuild([published[x["id"]] for x in inc])
    ]  # the topic carries the chain itself

    # The alert annotations show the whole signature's evidence: the first ids and how many there are in all.
    rows = reader.alert_transitions()
    assert rows
    whole_by_job = {}
    for r in full:
        whole_by_job[r["return"]["job_id"]] = r  # the latest record of each job
    for t in rows:
        evidence = json.loads(t.alert.annotations["evidence"])
        ids = evidence["match"]["b"]
        n = evidence["return"]["ios"]
        if n > EVIDENCE_IDS:
            assert ids[-1] == f"... {n - EVIDENCE_IDS} more" and len(ids) == EVIDENCE_IDS + 1
        else:
            assert len(ids) == n
        assert evidence["record_id"] in stored
