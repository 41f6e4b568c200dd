"""The dashboard's reader of Alertmanager: the open alerts of the real daemon with their state, most severe first;
an Alertmanager that is down is an empty frame saying why; ``hcep dashboard --alertmanager`` reaches the page."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from app.alerts.alertmanager import Alertmanager
from dashboards.backends import alertmanager as backend
from dashboards.config import DashboardConfig
from tests.alerts.conftest import Daemon, poll
from tests.alerts.helpers import job_id, make_alert
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
