"""``hcep collect hadoop``: batch (sorted, deduplicated, summary) and follow (restart without loss or repeat)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from app.cli import CommandError
from app.commands import collect_hadoop
from tests.collectors.hadoop_testkit import sample


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    collect_hadoop.configure(parser)
    return collect_hadoop.run(parser.parse_args(argv))


def _events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_batch_sorted_deduplicated_with_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "events.jsonl"
    dead = tmp_path / "dead.jsonl"
    assert _run([str(sample("jhist").parent), "--out", str(out), "--deadletter", str(dead)]) == 0
    events = _events(out.read_text())
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    attempts = [e["attempt_id"] for e in events if e["type"] == "Mapper"]
    assert len(attempts) == len(set(attempts)) == 5  # the AM log's copies were dropped
    types = {e["type"] for e in events}
    assert types == {"JobStart", "JobEnd", "Mapper", "Reducer", "ReducerStart", "ReducerEnd", "DataPull", "DataIO"} | {
        "MapStart",
        "JobInput",
        "ReduceSlowstart",
        "SchedulerStats",
        "FetchStart",
        "ShuffleDone",
    }
    assert sum(e["size"] for e in events if e["type"] == "DataIO") == 0  # all map output was fetched
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("collect hadoop: 3 files") and "15 duplicates dropped" in err and "0 dead-lettered" in err
    assert dead.read_text() == ""


def test_batch_to_stdout_with_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([str(sample("am_syslog")), "--tz", "Europe/Paris", "--delta", "1.5", "--no-progress"]) == 0
    events = _events(capsys.readouterr().out)
    assert events and {e["delta"] for e in events} == {1.5}
    assert next(e for e in events if e["type"] == "JobStart")["ts"] == 1700000103.456 - 3600


def test_bad_arguments() -> None:
    with pytest.raises(CommandError, match="time zone"):
        _run([str(sample("am_syslog")), "--tz", "Mars/Olympus"])
    with pytest.raises(CommandError, match="no such file"):
        _run(["/nonexistent/path"])


def test_dead_letters_go_to_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "syslog"
    text = sample("reduce_syslog").read_text().replace("2023-11-14 22:15:14,717", "2023-11-14 22:15:1x,717")
    log.write_text(text)
    dead = tmp_path / "dead.jsonl"
    assert _run([str(log), "--out", str(tmp_path / "o.jsonl"), "--deadletter", str(dead)]) == 0
    records = [json.loads(line) for line in dead.read_text().splitlines()]
    assert len(records) == 2  # the "Read" and the "closeInMemoryFile" lines of that millisecond
    assert all(r["location"].startswith(f"{log}:") and "1x,717" in r["raw"] for r in records)
    assert "2 dead-lettered" in capsys.readouterr().err
    pulls = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert sum(1 for e in pulls if e["type"] == "DataPull" and e.get("partial")) == 1  # ended by "freed by"


def test_follow_restarts_without_loss_or_repeat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    (logs / "am").mkdir(parents=True)
    am_lines = sample("am_syslog").read_text().splitlines(keepends=True)
    am = logs / "am" / "syslog"
    am.write_text("".join(am_lines[:70]))
    out, state = tmp_path / "events.jsonl", tmp_path / "state.json"
    follow = [str(logs), "--follow", "--out", str(out), "--state", str(state), "--poll", "0", "--max-polls", "1"]
    assert _run(follow) == 0
    first = _events(out.read_text())
    assert first and all(e["ts"] < 1700000112 for e in first)
    # more lines arrive, and a reduce task's log appears, while the collector is down
    am.write_text("".join(am_lines))
    shutil.copy(sample("reduce_syslog"), logs / "reduce_syslog")
    assert _run(follow) == 0
    assert _run(follow) == 0  # nothing new: nothing written
    followed = _events(out.read_text())
    ids = [e["id"] for e in followed]
    assert len(ids) == len(set(ids))
    _run([str(logs), "--out", str(tmp_path / "batch.jsonl")])
    batch = _events((tmp_path / "batch.jsonl").read_text())
    assert sorted(ids) == sorted(e["id"] for e in batch)
    assert "collect hadoop:" in capsys.readouterr().err
