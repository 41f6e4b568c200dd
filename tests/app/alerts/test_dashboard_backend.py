"""The dashboard's reader of Alertmanager: the open alerts of the real daemon with their state, most severe first;
an Alertmanager that is down is an empty frame saying why; ``hcep dashboard --alertmanager`` reaches the page."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from app.alerts.alertmanager import Alertmanager
from dashboards.backends import alertmanager as backend
from dashboards.config import DashboardConfig
from tests.app.alerts.conftest import Daemon, poll
from tests.app.alerts.helpers import job_id, make_alert
from tests.conftest import ROOT, free_port


def test_current_alerts_with_their_state(alertmanager: Daemon, client: Alertmanager) -> None:
    job = job_id()
    task = f"task_{job}_r_000002"
    now = time.time()
    posted = [
        make_alert(job, "SkewedMappers", severity="warning", starts=now - 20),
        make_alert(job, "StragglingPull", task=task, severity="critical", starts=now - 10),
        make_alert(job, "HeldMapOutput", severity="info", starts=now - 30),
    ]
    silence = client.create_silence({"alertname": "HeldMapOutput", "job_id": job}, duration=300)
    try:
        client.post_alerts([a.to_json() for a in posted])

        def read() -> list[pd.DataFrame]:
            got = backend.current_alerts(alertmanager.url, filter={"job_id": job})
            return [got] if len(got) == 3 and "suppressed" in set(got["state"]) else []

        frame = poll(read, 10, "three alerts, one suppressed")[0]
        unsilenced = backend.current_alerts(alertmanager.url, silenced=False, filter={"job_id": job})
        assert list(unsilenced["alertname"]) == ["StragglingPull", "SkewedMappers"]
    finally:
        client.expire_silence(silence)
    assert frame.attrs["error"] is None
    assert list(frame["alertname"]) == ["StragglingPull", "SkewedMappers", "HeldMapOutput"]  # critical first
    first = frame.iloc[0]
    assert first["severity"] == "critical" and first["job_id"] == job and first["task_id"] == task
    assert first["summary"] == f"StragglingPull in {job}" and first["confidence"] == 0.875
    assert abs(first["startsAt"] - posted[1].starts_at) < 0.001 and first["state"] == "active"
    assert first["evidence"] == {"query": "Q1"} and len(first["fingerprint"]) == 16
    held = frame.iloc[2]
    assert held["state"] == "suppressed" and held["silenced_by"] == [silence] and held["inhibited_by"] == []
    assert list(frame.columns) == backend.COLUMNS


def test_an_alertmanager_that_is_down_is_an_empty_frame() -> None:
    frame = backend.current_alerts(f"http://127.0.0.1:{free_port()}", timeout=1.0)
    assert frame.empty and list(frame.columns) == backend.COLUMNS
    assert "cannot reach Alertmanager (connection refused)" in frame.attrs["error"]
    assert "must be http" in backend.current_alerts("127.0.0.1:9093").attrs["error"]


def test_hcep_dashboard_takes_the_alertmanager_url(tmp_path: Path) -> None:
    config = DashboardConfig(data_dir=tmp_path, alertmanager="http://127.0.0.1:9093")
    assert DashboardConfig.from_env(config.to_env()).alertmanager == "http://127.0.0.1:9093"
    assert DashboardConfig.from_env({}).alertmanager is None
    bad = subprocess.run(
        [sys.executable, "-m", "app.cli", "dashboard", "--data", str(tmp_path), "--alertmanager", "127.0.0.1:9093"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert bad.returncode == 2 and "--alertmanager 127.0.0.1:9093: give an http(s):// URL" in bad.stderr


def test_the_alerts_view_shows_alertmanagers_state_beside_each_alert(
    alertmanager: Daemon, client: Alertmanager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's open alerts with what Alertmanager says of each (active, silenced, or not there), and an alert
    only Alertmanager holds listed too."""
    from streamlit.testing.v1 import AppTest

    from app.store import Batch, Store

    job = job_id()
    now = time.time()
    pull = make_alert(job, "HungFetch", task=f"task_{job}_r_000001", severity="warning", starts=now - 60)
    skew = make_alert(job, "MapDataSkew", severity="critical", starts=now - 50)
    unsent = make_alert(job, "ReduceDataSkew", severity="warning", starts=now - 40)
    elsewhere = make_alert(job, "HeldMapOutput", severity="critical", starts=now - 30)
    store = Store(str(tmp_path / "hcep.sqlite"))
    rows = [
        (
            a.transition_id,
            a.labels["alertname"],
            "ops",
            a.severity,
            json.dumps(a.to_webhook()),
            "delivered",
            now,
            now,
            "t",
            a.fingerprint,
            a.status,
            a.starts_at,
            a.ends_at,
        )
        for a in (pull, skew, unsent)
    ]
    store.commit(Batch([], rows, [], [], None))
    store.close()
    silence = client.create_silence({"alertname": "MapDataSkew", "job_id": job}, duration=300)
    try:
        client.post_alerts([a.to_json() for a in (pull, skew, elsewhere)])
        poll(lambda: len(backend.current_alerts(alertmanager.url, filter={"job_id": job})) == 3, 10, "3 alerts")
        monkeypatch.setenv("HCEP_DASHBOARD_STORE", str(tmp_path / "hcep.sqlite"))
        monkeypatch.setenv("HCEP_DASHBOARD_ALERTMANAGER", alertmanager.url)
        monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
        monkeypatch.setenv("HCEP_DASHBOARD_ACKS", str(tmp_path / "acks.json"))
        for name in ("DATA", "ARCHIVE", "LOGS", "PACK"):
            monkeypatch.delenv(f"HCEP_DASHBOARD_{name}", raising=False)
        at = AppTest.from_file(str(ROOT / "dashboards" / "webapp" / "hcep_ops.py"), default_timeout=60)
        at.query_params["job"] = job
        at.run()
        at.switch_page("views/alerts.py").run()
    finally:
        client.expire_silence(silence)
    assert not at.exception, [e.value for e in at.exception]
    captions = [c.value for c in at.caption]
    text = "\n".join(m.value for m in at.markdown)

    assert any(f"Alertmanager {alertmanager.url}:" in c and "silenced" in c for c in captions)
    entries = _entries(at)
    assert entries["HungFetch"].endswith("Alertmanager: active · source store (delivered)"), entries
    assert "Alertmanager: silenced" in entries["MapDataSkew"]
    assert "Alertmanager: not in Alertmanager" in entries["ReduceDataSkew"]
    assert "source alertmanager" in entries["HeldMapOutput"] and "**HeldMapOutput**" in text


def _entries(at: object) -> dict[str, str]:
    """Each alert line's rule -> the caption that follows it (confidence, since, Alertmanager's state, source)."""
    out: dict[str, str] = {}
    rule = None
    for element in at.main:  # type: ignore[attr-defined]
        for node in _walk(element):
            kind = getattr(node, "type", "")
            value = getattr(node, "value", None)
            if kind == "markdown" and isinstance(value, str) and "**" in value and " · `" in value:
                rule = value.split("**")[1]
            elif kind == "caption" and rule and isinstance(value, str) and value.startswith("confidence"):
                out[rule] = value
                rule = None
    return out


def _walk(node: object) -> list[object]:
    children = getattr(node, "children", None)
    if not children:
        return [node]
    items = children.values() if isinstance(children, dict) else children
    return [n for child in items for n in _walk(child)]
