"""A stream group is fed through the one driver (:class:`engine.evaluate.PackRunner`, issue 26): the pack's memory
bounds apply in the operator as in ``hcep match`` (same records, same drops, also when every micro-batch restores its
groups from their snapshots), and a group state written by the bare pack feeder the groups held before restores."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from tests.app.spark.helpers import assert_same_records, blowup_events
from tests.app.spark_stream.conftest import ROOT, stream_plan, write_events
from tests.app.spark_stream.simulate import run_batches

BLOWUP = ROOT / "tests" / "app" / "spark" / "data" / "blowup_pack.yaml"


def _match(path: Path) -> tuple[list[dict], dict[str, int]]:
    """``hcep match``'s records and its drop report (stderr) per query."""
    from app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["match", str(path), "--pack", str(BLOWUP)]) == 0
    found = re.search(r"dropped partial matches \([^)]*\): (.*?) \(--max-runs", err.getvalue())
    assert found, err.getvalue()
    drops = {name: int(n.replace(",", "")) for name, n in (p.split() for p in found.group(1).split(", "))}
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()], drops


@pytest.mark.parametrize(("restore_every_batch", "replay_max"), [(False, 64), (True, 64), (True, 0), (True, 7)])
def test_bounded_like_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_every_batch: bool, replay_max: int
) -> None:
    """The same records and drops with every group restored in every micro-batch: from its lines fed again (64:
    fewer than a group is fed here), from a snapshot each time (0), or from a snapshot and the lines since (7)."""
    from app.spark.stream import state

    monkeypatch.setattr(state, "REPLAY_MAX", replay_max)
    if restore_every_batch:  # no group kept restored by the worker: each micro-batch restores from the store
        monkeypatch.setattr(state, "LIVE_GROUPS", 0)
        state._LIVE.clear()
    events = blowup_events(3, 30, 8)
    want, want_drops = _match(write_events(events, tmp_path / "e.jsonl"))
    lines = [("f.jsonl", i, json.dumps(e)) for i, e in enumerate(events)]
    drops: dict[str, int] = {}
    got, dead = run_batches(
        stream_plan(BLOWUP, buckets=2), [lines[i : i + 10] for i in range(0, len(lines), 10)], drops=drops
    )
    assert not dead and want_drops["next"] == 3 * 10
    assert_same_records(got, want)
    assert drops == want_drops


def test_a_group_state_of_the_bare_feeder_restores(tmp_path: Path) -> None:
    """Checkpoints written before the runner hold a bare PackFeeder's snapshot: the runner reads it as its own."""
    from app.spark.stream.state import StreamGroup, compiled_for
    from engine.evaluate import PackFeeder, make_matcher, write_increments
    from engine.events import decoder_for

    plan = stream_plan(BLOWUP, buckets=1)
    compiled = compiled_for(plan)
    fam = plan.families[0]
    decode = decoder_for(plan.tick).event
    events = [decode(e, i + 1) for i, e in enumerate(blowup_events(1, 2, 3))]  # under the bounds
    half = len(events) // 2

    def bare() -> PackFeeder:  # how StreamGroup built its evaluators before
        matchers = [make_matcher(compiled[q], plan.umax) for q in fam.keyed]
        write_increments(matchers, True)
        return PackFeeder(matchers, plan.umax)

    whole = bare()
    want = [r for ev in events for r in whole.feed(ev)] + whole.flush()
    old = bare()
    for ev in events[:half]:
        old.feed(ev)
    blob = {"own": {}, "pend": [], "started": True, "lo": None, "hi": None, "idx": 0, "fed": None}
    group = StreamGroup(plan, fam, "job_0", compiled, {**blob, "first": {}, "chains": {}, "snap": old.snapshot()})
    got = [r for ev in events[half:] for _, r in group.runner.feed(ev)] + [r for _, r in group.runner.flush()]
    tail = [r for ev in events[half:] for r in old.feed(ev)] + old.flush()
    assert got == tail and want[-len(tail) :] == tail and len(tail) > 5


@pytest.mark.parametrize("command", ["batch", "stream"])
def test_a_bad_limits_setting_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """The bounds are read from the pack by every command now: a bad value is refused as ``hcep match`` refuses it."""
    from tests.app.spark.helpers import run_cli

    pack = tmp_path / "bad.yaml"
    pack.write_text(BLOWUP.read_text().replace("runs: null", "runs: -3"))
    events = write_events(blowup_events(1, 1, 1), tmp_path / "in" / "e.jsonl")
    out = ["--output", str(tmp_path / "o"), "--checkpoint", str(tmp_path / "c"), "--input", str(events.parent)]
    argv = [command, "--pack", str(pack), *([str(events)] if command == "batch" else out)]
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{pack}: settings.limits.runs must be an integer >= 1" in err
