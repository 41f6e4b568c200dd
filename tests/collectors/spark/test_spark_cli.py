"""``hcep collect spark``: the command line (help, bad arguments exit 2 in one line), batch output sorted by time,
``--follow`` with ``--state``, and publishing to a real Kafka broker keyed by ``app_id``."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from app.cli import main
from tests.collectors.spark.conftest import LOGS, fixture, run_collect


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_help_names_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["collect", "spark", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "LOGDIR",
        "--follow",
        "--out",
        "--bootstrap",
        "--kafka",
        "--topic",
        "--state",
        "--deadletter",
        "--delta",
        "--poll",
        "--pack",
        "--progress",
        "--history-server",
        "--strict",
    ):
        assert option in text, option


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/no/such/dir"], "no such directory"),
        ([str(LOGS), "--topic", "t"], "--topic needs --bootstrap"),
        ([str(LOGS), "--state", "s.json"], "--state needs --follow"),
        ([str(LOGS / ".." / "manifest.json")], "not a Spark event log"),
        ([str(LOGS), "--delta", "-1"], "--delta"),
        ([str(LOGS), "--delta", "nan"], "--delta"),
        ([str(LOGS), "--poll", "0"], "--poll"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["collect", "spark", *argv])
    except SystemExit as done:  # argparse's own errors
        code = done.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err


def test_bad_state_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.json"
    state.write_text("{not json")
    assert main(["collect", "spark", str(LOGS), "--follow", "--state", str(state), "--max-polls", "1"]) == 2
    assert "unreadable state file" in capsys.readouterr().err


def test_batch_writes_every_event_sorted_by_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "events.jsonl"
    assert main(["collect", "spark", str(LOGS), "--out", str(out), "--no-progress"]) == 0
    events = _events(out)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    collected, _, _ = run_collect(LOGS)
    assert sorted(e["id"] for e in events) == sorted(e["id"] for e in collected)
    err = capsys.readouterr().err.strip()
    assert err.startswith("collect spark: 7 logs (1 unfinished), 8 files (0 skipped)") and "0 dead-lettered" in err


def test_delta_option_sets_every_event(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    assert main(["collect", "spark", str(LOGS / fixture("lzf")["path"]), "--out", str(out), "--delta", "0.05"]) == 0
    assert {e["delta"] for e in _events(out)} == {0.05}


def test_follow_with_state_resumes_without_repeating(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    shutil.copy(LOGS / fixture("plain")["path"], logdir)
    out, state = tmp_path / "events.jsonl", tmp_path / "state.json"
    base = ["collect", "spark", str(logdir), "--follow", "--out", str(out), "--state", str(state), "--poll", "0.01"]
    assert main([*base, "--max-polls", "2"]) == 0
    first = _events(out)
    shutil.copy(LOGS / fixture("snappy")["path"], logdir)  # a second application's log appears
    assert main([*base, "--max-polls", "2"]) == 0
    both = _events(out)
    expected = run_collect(LOGS / fixture("plain")["path"])[0] + run_collect(LOGS / fixture("snappy")["path"])[0]
    assert both[: len(first)] == first and both == expected
    assert set(json.loads(state.read_text())["logs"]) == {fixture("plain")["path"], fixture("snappy")["path"]}


def test_publishes_to_kafka_keyed_by_app(kafka_broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app import kafka_io

    topic = "hcep.test.spark.collect"
    copy = tmp_path / "events.jsonl"
    code = main(
        [
            "collect",
            "spark",
            str(LOGS),
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic",
            topic,
            "--out",
            str(copy),
            "--pack",
            "1",
        ]
    )
    assert code == 0, capsys.readouterr().err
    records = kafka_io.read_all(kafka_broker.bootstrap, topic, timeout=30)
    written = _events(copy)
    got = [json.loads(r.value) for r in records]
    assert sorted(e["id"] for e in got) == sorted(e["id"] for e in written)
    partitions: dict[str, set[int]] = defaultdict(set)
    by_partition: dict[int, list[dict]] = defaultdict(list)
    for record, event in zip(records, got, strict=True):
        assert record.key == event["app_id"].encode()
        partitions[event["app_id"]].add(record.partition)
        by_partition[record.partition].append((record.offset, event))
    assert all(len(parts) == 1 for parts in partitions.values())  # an application stays in one partition
    for items in by_partition.values():  # in the collector's order within it
        ordered = [e["id"] for _, e in sorted(items, key=lambda x: x[0])]
        assert ordered == [e["id"] for e in written if e["id"] in set(ordered)]
    # --kafka is the same option; by default up to 50 events of a partition share a message, as JSON lines
    assert (
        main(
            [
                "collect",
                "spark",
                str(LOGS / fixture("lz4")["path"]),
                "--kafka",
                kafka_broker.bootstrap,
                "--topic",
                topic + ".2",
            ]
        )
        == 0
    )
    packed = kafka_io.read_all(kafka_broker.bootstrap, topic + ".2", timeout=30)
    lines = [json.loads(line) for r in packed for line in r.value.decode().splitlines()]
    assert [e["id"] for e in lines] == [e["id"] for e in _events_sorted(LOGS / fixture("lz4")["path"])]


def _events_sorted(path: Path) -> list[dict]:
    return sorted(run_collect(path)[0], key=lambda e: e["ts"])
