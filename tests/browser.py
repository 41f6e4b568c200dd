"""What the browser tests share: Debian's Chromium (never a browser Playwright downloads), its headless flags, the
CI switch (under ``CI=true`` a missing browser is an install bug and fails instead of skipping), where the
screenshots go (``$HCEP_SCREENSHOTS`` or a pytest tmp dir) and a running ``hcep dashboard`` to point them at."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
CHROMIUM = os.environ.get("HCEP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def screenshot_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """``$HCEP_SCREENSHOTS`` if set, else a fresh pytest tmp dir called ``name``."""
    where = os.environ.get("HCEP_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp(name)
    path.mkdir(parents=True, exist_ok=True)
    return path


def require_browser() -> None:
    """Skip without Chromium or the playwright package -- fail instead under ``CI=true``."""
    problems = []
    if not Path(CHROMIUM).exists():
        problems.append(f"{CHROMIUM} not found (bash deploy/dashboard/install.sh installs Debian's chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the playwright Python package is not installed")
    if problems:
        if CI:
            pytest.fail("browser tests under CI: " + "; ".join(problems))
        pytest.skip("; ".join(problems))


@contextlib.contextmanager
def served_dashboard(args: list[str], *, check_exit: bool = True) -> Iterator[str]:
    """``hcep dashboard ARGS --port 0`` (no ``HCEP_DASHBOARD_*`` from the caller's environment): its URL, read from
    the first line it prints, until the block ends; then SIGTERM, and with ``check_exit`` a clean exit is asserted."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCEP_DASHBOARD_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "dashboard", *args, "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)  # type: ignore
    reader.start()
    reader.join(120)
    url = lines[0].strip() if lines else ""
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        pytest.fail(f"hcep dashboard did not print its URL: {url!r} {proc.stderr.read() if proc.stderr else ''}")
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        if check_exit:
            assert code == 0, f"hcep dashboard exited {code} on SIGTERM"
