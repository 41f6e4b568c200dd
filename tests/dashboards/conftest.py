"""Fixtures of the dashboard tests: the fixture data dir (made once per session by running the Hadoop pack)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.browser import CI
from tests.dashboards import fixture

MISSING = [m for m in ("streamlit", "altair", "pandas", "pyarrow") if importlib.util.find_spec(m) is None]
if MISSING:
    # Under CI a missing dependency is an install bug: fail loudly instead of skipping the dashboard's tests.
    if CI:
        raise RuntimeError(f"dashboard tests: missing Python packages {MISSING} (pyproject / deploy/install.sh)")
    collect_ignore_glob = ["test_*.py"]  # outside CI: not installed here, nothing to test


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fixture.build(tmp_path_factory.mktemp("dashboard-data"))


@pytest.fixture
def dashboard_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path, tmp_path: Path) -> Path:
    """The environment `hcep dashboard` would give the app: the fixture data, no auto-refresh, a fresh ack file."""
    for name in ("STORE", "ARCHIVE", "LOGS", "PACK"):
        monkeypatch.delenv(f"HCEP_DASHBOARD_{name}", raising=False)
    monkeypatch.setenv("HCEP_DASHBOARD_DATA", str(data_dir))
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
    acks = tmp_path / "acks.json"
    monkeypatch.setenv("HCEP_DASHBOARD_ACKS", str(acks))
    return acks
