"""Following files: growth, partial lines, rotation by rename and by copy-truncate, and restarts from the persisted
state with nothing lost and nothing repeated."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from collectors.hadoop.tail import Tailer


def _texts(lines: list) -> list[str]:
    return [line.text for line in lines if not line.replay]


def _write(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def test_growth_and_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "syslog"
    log.write_text("a\nb\npar")
    tailer = Tailer()
    tailer.watch(str(log))
    assert _texts(tailer.poll()) == ["a", "b"]
    assert tailer.poll() == []
    _write(log, "tial\nc\n")
    got = tailer.poll()
    assert _texts(got) == ["partial", "c"] and [g.lineno for g in got] == [3, 4]
    assert got[0].offset == 4
    tailer.close()


def test_rename_rotation_reads_the_old_file_to_its_end(tmp_path: Path) -> None:
    log = tmp_path / "syslog"
    log.write_text("1\n2\n")
    tailer = Tailer()
    tailer.watch(str(log))
    assert _texts(tailer.poll()) == ["1", "2"]
    _write(log, "3\n4")  # the writer's last line, then it rotates
    os.rename(log, tmp_path / "syslog.1")
    assert _texts(tailer.poll()) == ["3"]  # renamed away, no new file yet: keep reading the old one
    log.write_text("5\n")
    got = tailer.poll()
    assert _texts(got) == ["4", "5"]
    assert got[0].source == str(log) and got[1].source == f"{log}~1" and got[1].lineno == 1
    tailer.close()


def test_copytruncate(tmp_path: Path) -> None:
    log = tmp_path / "syslog"
    log.write_text("1\n2\n")
    tailer = Tailer()
    tailer.watch(str(log))
    tailer.poll()
    shutil.copy(log, tmp_path / "syslog.1")
    with open(log, "r+") as handle:
        handle.truncate(0)
    _write(log, "3\n")
    assert _texts(tailer.poll()) == ["3"]
    # truncated and already regrown past the old position: noticed by the changed first line
    shutil.copy(log, tmp_path / "syslog.2")
    with open(log, "r+") as handle:
        handle.truncate(0)
    _write(log, "four\nfive\nsix\n")
    got = tailer.poll()
    assert _texts(got) == ["four", "five", "six"] and got[0].source == f"{log}~2"
    tailer.close()


def test_restart_resumes_without_loss_or_repeat(tmp_path: Path) -> None:
    log, state = tmp_path / "syslog", tmp_path / "state.json"
    log.write_text("".join(f"line {i}\n" for i in range(5)))
    seen: list[str] = []
    first = Tailer(str(state))
    first.watch(str(log))
    seen += _texts(first.poll())
    first.commit()
    _write(log, "line 5\nline 6\nhalf")
    seen += _texts(first.poll())
    # crash before committing the last batch: those lines must come again, the committed ones must not
    first.close()
    _write(log, " line\n")
    second = Tailer(str(state))
    second.watch(str(log))
    got = second.poll()
    assert [g.text for g in got if g.replay] == [f"line {i}" for i in range(5)]  # for parser state only
    fresh = _texts(got)
    assert fresh == ["line 5", "line 6", "half line"]
    second.commit()
    second.close()
    third = Tailer(str(state))
    third.watch(str(log))
    assert _texts(third.poll()) == []
    data = json.loads(state.read_text())
    assert data["files"][str(log)]["offset"] == log.stat().st_size
    third.close()


def test_restart_after_rotation_while_down(tmp_path: Path) -> None:
    log, state = tmp_path / "syslog", tmp_path / "state.json"
    log.write_text("a\nb\n")
    tailer = Tailer(str(state), replay=False)
    tailer.watch(str(log))
    assert _texts(tailer.poll()) == ["a", "b"]
    tailer.commit()
    tailer.close()
    _write(log, "c\n")
    os.rename(log, tmp_path / "syslog.1")
    log.write_text("d\n")
    again = Tailer(str(state), replay=False)
    again.watch(str(log))
    got = again.poll()
    assert _texts(got) == ["c", "d"]
    assert got[0].lineno == 3 and got[0].source == str(log) and got[1].source == f"{log}~1"
    again.commit()
    again.close()


def test_state_file_is_written_atomically(tmp_path: Path) -> None:
    log, state = tmp_path / "syslog", tmp_path / "sub" / "state.json"
    log.write_text("x\n")
    tailer = Tailer(str(state))
    tailer.watch(str(log))
    tailer.poll()
    tailer.commit()
    assert json.loads(state.read_text())["version"] == 1
    assert [p.name for p in state.parent.iterdir()] == ["state.json"]  # no temp file left behind
    tailer.close()
