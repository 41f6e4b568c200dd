"""The stateful operator's logic (router + buckets) without Spark, micro-batch by micro-batch under Spark's
watermark rule: the records of ``hcep match``, late events dead-lettered once, quiet groups expired."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import GANGLIA, ROOT, match, stream_plan, write_events
from tests.app.spark_stream.simulate import run_batches


def _batches(events: list[dict], n: int, name: str = "f.jsonl") -> list[list[tuple[str, int, str]]]:
    lines = [(name, i, json.dumps(e)) for i, e in enumerate(events)]
    size = max(len(lines) // n, 1)
    return [lines[i : i + size] for i in range(0, len(lines), size)]


@pytest.mark.parametrize("n", [1, 9, 40])
def test_sample_equals_match(sample_events: list[dict], tmp_path: Path, n: int) -> None:
    want = match(write_events(sample_events, tmp_path / "s.jsonl"))
    got, dead = run_batches(stream_plan(), _batches(sample_events, n))
    assert want and not dead
    assert_same_records(got, want)


def test_simulated_cluster_equals_match(cluster_events: list[dict], tmp_path: Path) -> None:
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    got, dead = run_batches(stream_plan(buckets=4), _batches(cluster_events, 10))
    assert len(want) > 100 and not dead
    assert_same_records(got, want)


def test_declared_keyless_types(cluster_events: list[dict], tmp_path: Path) -> None:
    """With the Ganglia types declared keyless, keyless events reach a group only where its patterns can place them:
    the same records; an event that breaks the declaration (a reducer without its task) is dead-lettered."""
    broken = dict(next(e for e in cluster_events if e["type"] == "ReducerEnd"), id="broken")
    del broken["task_id"]
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    plan = stream_plan(buckets=4, keyless=GANGLIA)
    # Q6 places LoadStd between a reducer's start and end; HungFetch up to its 2-minute window after a fetch's start
    before, after = plan.families[1].margin("LoadStd")
    assert before == 0 and after >= 900
    batches = _batches(cluster_events, 10)
    batches[3] = [*batches[3], ("broken.jsonl", 0, json.dumps(broken))]
    got, dead = run_batches(plan, batches)
    assert [d[13].split(":")[0] for d in dead] == ["undeclared_keyless"]
    assert_same_records(got, want)


@pytest.mark.parametrize("replay_max", [0, 5, 1_000_000])
def test_groups_restored_from_their_lines(
    cluster_events: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_max: int
) -> None:
    """Every group restored from the store in every micro-batch (none kept by the worker), the Ganglia types keyless
    (fed to many groups): the records of ``hcep match`` whether a group's runner is stored as its lines alone (never
    snapshotted), a snapshot and the lines since, or a snapshot each time it is written."""
    from app.spark.stream import state
    from engine.evaluate import PackRunner

    monkeypatch.setattr(state, "REPLAY_MAX", replay_max)
    monkeypatch.setattr(state, "LIVE_GROUPS", 0)
    state._LIVE.clear()
    snapshots, replayed = [0], [0]
    snapshot, feed = PackRunner.snapshot, state.StreamGroup._replayed

    def counted(self: PackRunner) -> dict:
        snapshots[0] += 1
        return snapshot(self)

    def replaying(self: state.StreamGroup, base: bytes | None, replay: list) -> None:
        replayed[0] += len(replay)
        feed(self, base, replay)

    monkeypatch.setattr(PackRunner, "snapshot", counted)
    monkeypatch.setattr(state.StreamGroup, "_replayed", replaying)
    want = match(write_events(cluster_events, tmp_path / "c.jsonl"))
    got, dead = run_batches(stream_plan(buckets=4, keyless=GANGLIA), _batches(cluster_events, 12))
    assert len(want) > 100 and not dead
    assert_same_records(got, want)
    assert replayed[0] > 0 if replay_max else replayed[0] == 0
    assert snapshots[0] == 0 if replay_max == 1_000_000 else snapshots[0] > 0


def test_out_of_order_within_the_bound(cluster_events: list[dict], tmp_path: Path) -> None:
    """Lines shuffled within 8 s (less than the watermark's 9.5 s delay): nothing late, the same records."""
    rng = random.Random(5)
    jittered = sorted(cluster_events, key=lambda e: e["ts"] + rng.uniform(0, 8))
    want = match(write_events(jittered, tmp_path / "c.jsonl"))  # ties of one tick: in input order, as here
    got, dead = run_batches(stream_plan(), _batches(jittered, 12))
    assert not dead
    assert_same_records(got, want)


def test_late_events_are_dead_lettered_once(sample_events: list[dict], tmp_path: Path) -> None:
    """A batch of events far behind the watermark: each dead-lettered once (keyless ones are copied to every bucket
    but counted once), none fed; the records are those of the input without them."""
    on_time, late = sample_events[: len(sample_events) // 2], sample_events[len(sample_events) // 2 :]
    early = [dict(e, id=f"late-{e['id']}", ts=e["ts"] - 100_000) for e in late[:20]]
    batches = _batches(on_time, 3) + [[("late.jsonl", i, json.dumps(e)) for i, e in enumerate(early)]]
    batches += _batches(late, 3, "rest.jsonl")
    got, dead = run_batches(stream_plan(buckets=4), batches)
    assert sorted(json.loads(d[16])["id"] for d in dead) == sorted(e["id"] for e in early)
    assert {d[13] for d in dead} == {"late"}
    assert_same_records(got, match(write_events(on_time + late, tmp_path / "s.jsonl")))


def test_quiet_groups_are_expired(cluster_events: list[dict]) -> None:
    """Without an end of input, what stays in state are the groups still within reach of the watermark."""
    from app.spark.stream.state import Bucket, compiled_for, unpack_blob
    from tests.app.spark_stream import simulate

    plan = stream_plan(buckets=2)
    kept: list = []
    original = Bucket.save

    def spy(self: Bucket) -> None:
        original(self)
        kept.append((self.number, dict(self.index)))

    Bucket.save = spy  # type: ignore[method-assign]
    try:
        simulate.run_batches(plan, _batches(cluster_events, 12), end=False)
    finally:
        Bucket.save = original  # type: ignore[method-assign]
    last = {}
    for number, index in kept:
        last[number] = index
    tasks = {e["task_id"] for e in cluster_events if "task_id" in e}
    alive = sum(1 for index in last.values() for key in index if key.startswith("1|"))
    assert 0 < alive < len(tasks) / 4, (alive, len(tasks))
    assert compiled_for(plan) and unpack_blob  # imported names in use


def test_edge_pack_with_the_safe_cut(tmp_path: Path) -> None:
    """Keyless-only matches, negations across partitions, contiguity strategies, unpartitioned queries: the records
    of hcep match, but for a distinct value that several groups share (not merged across groups: README)."""
    from app.spark.tracegen import TraceConfig, trace

    sample = (ROOT / "queries" / "samples" / "hadoop_sample.jsonl").read_text().splitlines()
    events = list(trace(TraceConfig(jobs=25, seed=3))) + [json.loads(x) for x in sample if x.strip()]
    for i, e in enumerate(events):
        e.setdefault("id", str(i))
    events.sort(key=lambda e: e["ts"])
    pack = ROOT / "tests" / "app" / "spark" / "data" / "edge_pack.yaml"
    want = [r for r in match(write_events(events, tmp_path / "e.jsonl"), pack) if r["query"] != "host_of_rising_load"]
    got, dead = run_batches(stream_plan(pack, cut="safe"), _batches(events, 10))
    got = [r for r in got if r["query"] != "host_of_rising_load"]
    assert not dead
    assert_same_records(got, want)
    assert {r["query"] for r in want} >= {"keyless_only", "cancelled_by_any_reducer", "strict_pair", "no_key"}
