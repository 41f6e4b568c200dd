"""Helpers shared by the Ganglia tests (importable as ``tests.collectors.ganglia.helpers``; the fixtures are in
conftest.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data"


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(ok: bool, reason: str) -> None:
    """Skip when ``ok`` is false, or fail under CI: there the environment must provide it."""
    if ok:
        return
    if under_ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping: run deploy/ganglia/install.sh)")
    pytest.skip(f"{reason}: run 'bash deploy/ganglia/install.sh'")


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.25, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or predicate}")
        time.sleep(interval)


@dataclass(frozen=True)
class Ganglia:
    """The running daemons: endpoints, PIDs and directories."""

    gmond: str  # "127.0.0.1:PORT": gmond XML (TCP) and its metric channel (UDP, for gmetric)
    gmetad: str  # gmetad XML port
    interactive: str  # gmetad interactive port
    gmond_pid: int
    gmetad_pid: int
    run_dir: Path
    rrd_rootdir: Path
    cluster: str
