"""The crash-point test hook (``app/testhooks.py``): inert without ``HCEP_TEST_CRASH_AT``, a SIGKILL at the N-th pass
through the named point with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = "from app.testhooks import crash_point\nfor i in range(5):\n    crash_point('checkpoint', f'step {i}')\n"


def _run(env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "HCEP_TEST_CRASH_AT"} | env | {"PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=60)


def test_without_the_variable_nothing_happens() -> None:
    done = _run({})
    assert done.returncode == 0 and done.stderr == ""


def test_the_nth_pass_kills_the_process_and_says_where() -> None:
    done = _run({"HCEP_TEST_CRASH_AT": "checkpoint:3"})
    assert done.returncode == -signal.SIGKILL
    assert done.stderr == "HCEP_TEST_CRASH_AT: kill -9 at checkpoint:3 (step 2)\n"


def test_other_points_and_bad_values() -> None:
    assert _run({"HCEP_TEST_CRASH_AT": "feed:1"}).returncode == 0  # no such point passed: nothing
    bad = _run({"HCEP_TEST_CRASH_AT": "checkpoint"})
    assert bad.returncode == 1 and "expected NAME:N" in bad.stderr
