"""A whole pack (``engine.evaluate.PackRunner``: its evaluators over one event table and the one-pass clock) restored
from a snapshot after every event of the shipped traces continues exactly as the uninterrupted runner: the same
records, in the same order, with the same confidences.  The trends pack runs GRETA; the Hadoop pack every other
evaluator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from engine.evaluate import PackRunner
from engine.events import event_from_json
from engine.language.packs import load_pack
from engine.runtime.matcher import sort_events

ROOT = Path(__file__).resolve().parents[2]
TRACES = [
    ("hadoop.yaml", "queries/samples/hadoop_sample.jsonl"),
    ("hadoop.yaml", "tests/data/hadoop_handcheck.jsonl"),
    ("trends.yaml", "queries/samples/hadoop_sample.jsonl"),
]


def _events(path: str, tick: float) -> list:
    lines = (ROOT / path).read_text().splitlines()
    return sort_events(event_from_json(json.loads(line), i, tick=tick) for i, line in enumerate(lines) if line.strip())


def _runner(pack_file: str) -> PackRunner:
    pack = load_pack(ROOT / "queries" / pack_file)
    return PackRunner(pack, math.ceil(2 * 7.5 / pack.tick) + 1, shedding=False)


def _text(pairs: list) -> list[str]:
    return [json.dumps(r, sort_keys=True) for _spec, r in pairs]


@pytest.mark.parametrize(("pack_file", "trace"), TRACES)
def test_a_pack_restored_after_any_event_continues_exactly(pack_file: str, trace: str) -> None:
    runner = _runner(pack_file)
    events = _events(trace, runner.tick)
    whole = [p for ev in events for p in runner.feed(ev)] + runner.flush()
    assert whole, "the trace should produce records"
    for cut in range(len(events) + 1):
        first = _runner(pack_file)
        got = [p for ev in _events(trace, first.tick)[:cut] for p in first.feed(ev)]
        state = json.loads(json.dumps(first.snapshot(), allow_nan=False))
        second = _runner(pack_file)
        second.restore(state)
        got += [p for ev in _events(trace, second.tick)[cut:] for p in second.feed(ev)] + second.flush()
        assert _text(got) == _text(whole), f"{pack_file} over {trace}: restored after {cut} events"


def test_an_event_wakes_no_evaluator_that_holds_nothing() -> None:
    """Feeding a new pack one event hands the clock only to the evaluators that want its type: the imprecise
    evaluators that hold nothing are not due (a first prune of empty buffers changes nothing), so the stream's new
    groups, a few events each, do not wake every query of their pack (issue 28, cut 9).  The records are the
    restored-runner test's above, and the conformance suite's."""
    runner = _runner("hadoop.yaml")
    events = _events("queries/samples/hadoop_sample.jsonl", runner.tick)
    for ev in events[:3]:
        runner.feed(ev)
    fed_types = {ev.type for ev in events[:3]}
    for m, synced in zip(runner.matchers, runner.feeder.synced, strict=True):
        wants = m.wants()
        reached = wants is None or bool(wants & fed_types)
        assert (synced != -1) == reached, (m.name, sorted(fed_types))
