"""Running ``hcep collect spark --follow`` beside a live application, and the one ``local-cluster`` application
that loses an executor (``lost_executor_app.py``), shared by the collector's and the Spark pack's live tests
(``tests/conftest.py::lost_executor_run``: one such application per test run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def collector(logdir: Path, out: Path, *extra: str) -> subprocess.Popen:
    """``hcep collect spark LOGDIR --follow --out OUT`` as a child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [
        sys.executable,
        "-m",
        "app.cli",
        "collect",
        "spark",
        str(logdir),
        "--follow",
        "--out",
        str(out),
        "--poll",
        "0.2",
        *extra,
    ]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> str:
    """SIGTERM the collector; its stderr (the summary line)."""
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


def read(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.endswith("}")]


def wait(what: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            pytest.fail(message)
        time.sleep(0.2)


@dataclass(frozen=True)
class LostExecutorRun:
    """The followed run of ``lost_executor_app.py``: its log dir, what the collector wrote and said, and what Spark
    counted (``planted.accounting`` plus ``app_id``, ``result`` and ``killed``)."""

    logdir: Path
    out: Path
    err: str
    counted: dict[str, Any]


def run_lost_executor(base: Path) -> LostExecutorRun:
    """Follow the log dir with the collector while the application runs, until the collector has seen it finish."""
    logdir = base / "logs"
    logdir.mkdir()
    out, state, counted_path = base / "events.jsonl", base / "state.json", base / "accounting.json"
    proc = collector(logdir, out, "--state", str(state))
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        app_run = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("lost_executor_app.py")), str(logdir), str(counted_path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert app_run.returncode == 0, app_run.stderr[-3000:]

        def finished() -> bool:
            logs = json.loads(state.read_text())["logs"] if state.exists() else {}
            return bool(logs) and all(v.get("done") for v in logs.values())

        wait(finished, 30, "the collector did not see the application finish")
    finally:
        err = stop(proc)
    return LostExecutorRun(logdir, out, err, json.loads(counted_path.read_text()))
