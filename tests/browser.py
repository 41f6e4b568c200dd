"""What the browser tests share: Debian's Chromium (never a browser Playwright downloads), its headless flags, the
CI switch (under ``CI=true`` a missing browser is an install bug and fails instead of skipping) and where the
screenshots go (``$HCEP_SCREENSHOTS`` or a pytest tmp dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
