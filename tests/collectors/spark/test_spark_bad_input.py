"""Malformed lines are dead-lettered (file and line, a reason naming the field) and counted; unknown listener events
are skipped and counted by name; everything else flows on unchanged.  A real log with damage planted into a copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark import events as ev
from collectors.spark.listener import ListenerParser
from tests.collectors.spark.conftest import LOGS, fixture, run_collect


def _without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


def _task_end(lines: list[str]) -> dict[str, Any]:
    return next(json.loads(line) for line in lines if '"SparkListenerTaskEnd"' in line)


def _bad_lines(lines: list[str]) -> list[tuple[str, str]]:
    """(line, what its dead letter's reason must say)."""
    task = _task_end(lines)
    no_info = {k: v for k, v in task.items() if k != "Task Info"}
    str_id = json.loads(json.dumps(task))
    str_id["Task Info"]["Task ID"] = "seven"
    nan = json.dumps(task).replace('"Executor Run Time":', '"Executor Run Time":NaN,"x":', 1)
    inf = json.dumps(task).replace('"Launch Time":', '"Launch Time":1e400,"y":', 1)
    bool_stage = dict(task, **{"Stage ID": True})
    return [
        ('{"Event":"SparkListenerTaskEnd","Stage ID":', "not JSON"),
        ("[1, 2, 3]", "not a JSON object"),
        ('{"event": "lowercase key"}', "no 'Event'"),
        (json.dumps(no_info), "missing 'Task Info'"),
        (json.dumps(str_id), "'Task Info'.'Task ID' must be an integer"),
        (nan, "non-finite number NaN"),
        (inf, "'Task Info'.'Launch Time' must be a finite number"),
        (json.dumps(bool_stage), "'Stage ID' must be an integer"),
        (
            '{"Event":"SparkListenerJobEnd","Job ID":9,"Completion Time":"yesterday","Job Result":{}}',
            "'Completion Time' must be a finite number",
        ),
        ("\x00\xff garbage", "not JSON"),
    ]


def test_bad_lines_are_dead_lettered_and_the_rest_flows(tmp_path: Path) -> None:
    original = (LOGS / fixture("plain")["path"]).read_text().splitlines()
    bad = _bad_lines(original)
    damaged = list(original)
    where: list[int] = []
    for i, (line, _) in enumerate(bad):  # spread over the log, after the application start
        at = 8 + i * (len(original) - 10) // len(bad) + i
        damaged.insert(at, line)
        where.append(at + 1)
    damaged.insert(20, '{"Event":"org.example.MyListenerEvent","payload":1}')
    damaged.insert(21, '{"Event":"org.example.MyListenerEvent","payload":2}')
    where = [w + (2 if w > 20 else 0) for w in where]
    path = tmp_path / fixture("plain")["path"]
    path.write_text("\n".join(damaged) + "\n")

    events, summary, dead = run_collect(path)
    clean, clean_summary, _ = run_collect(LOGS / fixture("plain")["path"])
    assert _without_ids(events) == _without_ids(clean)  # the good lines give exactly what they gave before
    assert dead.count == summary.stats.dead == len(bad)
    assert summary.stats.unknown == 2 and summary.stats.unknown_kinds == {"org.example.MyListenerEvent": 2}
    s = summary.stats
    assert s.lines == s.used + s.ignored + s.unknown + s.dead + s.partial == len(damaged)
    assert [r["location"] for r in dead.records] == [f"{path}:{n}" for n in sorted(where)]
    for record, (line, reason) in zip(dead.records, [bad[where.index(n)] for n in sorted(where)], strict=True):
        assert reason in record["reason"], (record["reason"], reason)
        assert record["source"] == str(path) and record["raw"] == line
    assert clean_summary.stats.dead == 0


def test_deadletter_file_and_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    logdir = tmp_path / "logs"
    logdir.mkdir()
    src = (LOGS / fixture("plain")["path"]).read_text()
    (logdir / "local-1").write_text(
        src.replace('"SparkListenerJobEnd","Job ID":0', '"SparkListenerJobEnd","Job ID":"0"')
    )
    sink = tmp_path / "dead.jsonl"
    assert main(["collect", "spark", str(logdir), "--out", str(tmp_path / "ev.jsonl"), "--deadletter", str(sink)]) == 0
    (record,) = [json.loads(line) for line in sink.read_text().splitlines()]
    assert record["location"].startswith(f"{logdir / 'local-1'}:") and "'Job ID' must be an integer" in record["reason"]
    assert "1 dead-lettered" in capsys.readouterr().err


def test_parser_never_raises_on_random_damage() -> None:
    """Cut, doubled and byte-flipped variants of every line of a real log: each lands in exactly one bucket."""
    lines = (LOGS / fixture("plain")["path"]).read_text().splitlines()
    parser = ListenerParser("x", "x", "app-x", deadletter=DeadLetterSink.memory())
    n = 0
    for line in lines:
        for variant in (line[: len(line) // 2], line + line, line.replace('"', "'", 1), line.replace(":", ",", 3)):
            n += 1
            for event in parser.feed(variant, n):
                assert event["type"] in ev.TYPES
    s = parser.stats
    assert s.lines == n == s.used + s.ignored + s.unknown + s.dead
