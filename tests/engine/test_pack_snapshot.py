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


def test_evaluators_never_reached_are_written_as_none_and_stay_so_through_restores() -> None:
    """An evaluator the stream has not reached is written as None (a Spark group of a few events reaches few of the
    pack's queries); restored and written again without events, it is still None, and the rest are still written."""
    runner = _runner("hadoop.yaml")
    assert all(s is None for s in runner.snapshot()["evaluators"])
    events = _events("queries/samples/hadoop_sample.jsonl", runner.tick)
    first_type = events[0].type
    runner.feed(events[0])
    snaps = runner.snapshot()["evaluators"]
    reached = [m.name for m, s in zip(runner.matchers, snaps, strict=True) if s is not None]
    wanting = [m.name for m in runner.matchers if m.wants() is None or first_type in (m.wants() or ())]
    assert reached == wanting and 0 < len(reached) < len(snaps)
    again = _runner("hadoop.yaml")
    again.restore(json.loads(json.dumps(runner.snapshot())))
    assert [s is None for s in again.snapshot()["evaluators"]] == [s is None for s in snaps]


def test_a_snapshot_with_untouched_evaluators_does_not_restore_into_a_used_pack() -> None:
    """None means "as built": it cannot put back the state of an evaluator that was fed since."""
    events = _events("queries/samples/hadoop_sample.jsonl", 0.1)
    used = _runner("hadoop.yaml")
    for ev in events:
        used.feed(ev)
    with pytest.raises(ValueError, match="freshly built pack"):
        used.restore(_runner("hadoop.yaml").snapshot())
