"""Following logs as Spark writes them, replayed byte by byte from the real fixtures: only complete lines are read (a
half-written line or compressed block waits), the rename from ``.inprogress`` keeps the ids, a rolling log moves
from file to file, and a restart from the state file neither loses nor repeats an event."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark.collect import Follower
from tests.collectors.spark.conftest import LOGS, fixture, run_collect


def _poll(follower: Follower) -> list[dict[str, Any]]:
    follower.scan()
    return list(follower.poll())


def _grow(path: Path, data: bytes, rng: random.Random, follower: Follower, out: list[dict[str, Any]]) -> None:
    """Append ``data`` to ``path`` in random pieces (cutting lines and blocks), polling after each."""
    pos = 0
    with open(path, "ab") as handle:
        while pos < len(data):
            step = rng.choice((1, 50, 900, 5000, 40000))
            handle.write(data[pos : pos + step])
            handle.flush()
            pos += step
            out.extend(_poll(follower))


@pytest.mark.parametrize("name", ["plain", "zstd", "lz4", "snappy", "lzf"])
def test_single_file_followed_through_the_rename(tmp_path: Path, name: str) -> None:
    entry = fixture(name)
    data = (LOGS / entry["path"]).read_bytes()
    final = tmp_path / entry["path"]
    growing = tmp_path / (entry["path"] + ".inprogress")
    growing.touch()
    dead = DeadLetterSink.memory()
    follower = Follower(str(tmp_path), deadletter=dead)
    out: list[dict[str, Any]] = []
    _grow(growing, data, random.Random(name), follower, out)
    assert follower.unfinished() == 1  # complete only once renamed
    growing.rename(final)  # what Spark does when the application stops
    out.extend(_poll(follower))
    assert follower.unfinished() == 0 and dead.count == 0 and follower.summary.stats.partial == 0
    expected, _, _ = run_collect(LOGS / entry["path"])
    assert out == expected  # same events, same ids, same order as reading the finished log


def test_rolling_log_followed_file_by_file(tmp_path: Path) -> None:
    entry = fixture("rolling")
    src = LOGS / entry["path"]
    app = entry["path"][len("eventlog_v2_") :]
    target = tmp_path / entry["path"]
    target.mkdir()
    status = target / f"appstatus_{app}.inprogress"
    status.touch()
    dead = DeadLetterSink.memory()
    follower = Follower(str(tmp_path), deadletter=dead)
    out: list[dict[str, Any]] = []
    rng = random.Random(7)
    for file in sorted(src.glob("events_*"), key=lambda p: int(p.name.split("_")[1])):
        (target / file.name).touch()
        _grow(target / file.name, file.read_bytes(), rng, follower, out)
    assert follower.unfinished() == 1  # the app status still says in progress
    status.rename(target / f"appstatus_{app}")
    out.extend(_poll(follower))
    assert follower.unfinished() == 0 and dead.count == 0
    expected, _, _ = run_collect(src)
    assert out == expected


def test_restart_from_state_neither_loses_nor_repeats(tmp_path: Path) -> None:
    entry = fixture("zstd")
    data = (LOGS / entry["path"]).read_bytes()
    logdir = tmp_path / "logs"
    logdir.mkdir()
    growing = logdir / (entry["path"] + ".inprogress")
    state = tmp_path / "state.json"
    out: list[dict[str, Any]] = []
    rng = random.Random(3)
    cuts = sorted(rng.sample(range(1, len(data)), 3)) + [len(data)]
    pos = 0
    for cut in cuts:  # a new collector process for each piece, as after a crash or a restart
        with open(growing, "ab") as handle:
            handle.write(data[pos:cut])
        pos = cut
        follower = Follower(str(logdir), state_path=str(state), deadletter=DeadLetterSink.memory())
        out.extend(_poll(follower))
        follower.commit()
        follower.close()
    growing.rename(logdir / entry["path"])
    follower = Follower(str(logdir), state_path=str(state))
    out.extend(_poll(follower))
    follower.commit()
    expected, _, _ = run_collect(LOGS / entry["path"])
    assert out == expected
    saved = json.loads(state.read_text())["logs"]
    assert saved == {entry["path"]: {"done": True}}
    again = Follower(str(logdir), state_path=str(state))  # a finished log is not read again
    assert _poll(again) == [] and again.finished == {entry["path"]}


def test_new_logs_are_picked_up_and_stray_files_skipped(tmp_path: Path) -> None:
    follower = Follower(str(tmp_path), deadletter=DeadLetterSink.memory())
    assert _poll(follower) == []
    (tmp_path / "notes.txt").write_text("not a log\n")
    (tmp_path / ".hidden.crc").write_bytes(b"\x00")
    entry = fixture("lz4")
    (tmp_path / entry["path"]).write_bytes((LOGS / entry["path"]).read_bytes())
    out = _poll(follower)
    assert out == run_collect(LOGS / entry["path"])[0]
    assert follower.summary.skipped == 1 and follower.unfinished() == 0


def test_truncated_finished_log_is_dead_lettered(tmp_path: Path) -> None:
    """A finished (renamed) compressed log that ends inside a block lost data: reported, not silently dropped."""
    entry = fixture("snappy")
    data = (LOGS / entry["path"]).read_bytes()
    (tmp_path / entry["path"]).write_bytes(data[: len(data) - 1000])
    events, summary, dead = run_collect(tmp_path)
    assert dead.count == 1 and "truncated event log" in dead.records[0]["reason"]
    assert dead.records[0]["location"].startswith(str(tmp_path / entry["path"]) + "@")
    assert events and summary.stats.dead == 1
