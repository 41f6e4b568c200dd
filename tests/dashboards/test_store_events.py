"""The dashboard reads the cluster load series that ``hcep run`` keeps in its store's ``events`` table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboards.config import DashboardConfig
from dashboards.source import DashboardData
from tests.dashboards.fixture import PACK, SAMPLE


def test_store_events_feed_the_load_overview(tmp_path: Path) -> None:
    store_mod = pytest.importorskip("app.store")
    events = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    load = [e for e in events if e["type"] in ("LoadStd", "Balance", "Imbalance")]
    assert load
    store = store_mod.Store(str(tmp_path / "hcep.sqlite"))
    rows = [(e.get("id") or f"x{i}", e["type"], e["ts"], e.get("host"), json.dumps(e), "0") for i, e in enumerate(load)]
    store.commit(store_mod.Batch([], [], [], [], None, rows))
    store.close()

    data = DashboardData(DashboardConfig(store=tmp_path / "hcep.sqlite", pack=PACK))
    got = data.load()
    assert len(got) == len(load) and set(got["type"]) == {e["type"] for e in load}
    assert list(got["ts"]) == sorted(e["ts"] for e in load)
    assert {"val", "lo", "hi"} <= set(got.columns)
    first = got.iloc[0]
    assert first["hi"] - first["lo"] == pytest.approx(2 * load[0].get("delta", 0.0))
    assert data.newest() == max(e["ts"] for e in load)


def test_a_store_without_an_events_table_still_loads(tmp_path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(tmp_path / "hcep.sqlite")
    db.execute("CREATE TABLE matches (id TEXT PRIMARY KEY, record TEXT, emitted_at REAL)")
    db.commit()
    db.close()
    data = DashboardData(DashboardConfig(store=tmp_path / "hcep.sqlite", pack=PACK))
    assert data.load().empty
