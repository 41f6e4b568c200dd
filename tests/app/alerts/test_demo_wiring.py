"""The live demo's Alertmanager, without the rest of the demo: started (and reused, and stopped) through
``app.demo.services`` and the deploy scripts, notifying the demo's webhook receiver on its own path, next to hcep
run's webhook alerts."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from app.alerts.alertmanager import Alertmanager
from app.cli import main
from app.demo import services
from app.demo.receiver import Receiver
from tests.app.alerts.conftest import poll
from tests.app.alerts.helpers import job_id, make_alert
from tests.conftest import free_port


def test_the_demo_starts_alertmanager_notifying_its_receiver(tmp_path: Path) -> None:
    said: list[str] = []
    receiver = Receiver(tmp_path / "alerts.jsonl", said.append)
    receiver.start()
    port = free_port()

    def service() -> services.Service:
        return services.alertmanager(
            tmp_path / "alertmanager",
            port,
            receiver.alertmanager_url,
            tmp_path / "logs" / "alertmanager.log",
            owner_pid=os.getpid(),
        )

    manager = service()
    try:
        assert manager.start(timeout=120) is True  # this call started it ...
        again = service()
        assert again.start(timeout=60) is False and not again.started  # ... a second one reuses it
        url = manager.info["ALERTMANAGER_URL"]
        assert url == f"http://127.0.0.1:{port}" and manager.info["RECEIVER_URL"] == receiver.alertmanager_url

        job = job_id()
        client = Alertmanager(url)
        client.post_alerts([make_alert(job, "SkewedMappers").to_json(), make_alert(job, "HeldMapOutput").to_json()])
        notes = tmp_path / "alertmanager.jsonl"

        def notified() -> list[dict]:
            return [json.loads(line) for line in notes.read_text().splitlines()] if notes.exists() else []

        # Each notification carries the group's whole state.  Both alerts usually make the first one (group_wait
        # 1 s), but under load Alertmanager can flush the group after taking only one: the next flush (group_interval
        # 2 s) has both.
        poll(lambda: any(len(n["alerts"]) == 2 for n in notified()), 15, "a notification of both alerts")
        assert all(n["groupLabels"] == {"job_id": job} for n in notified())  # app_id, which the alerts lack, left out
        assert said and all(line.startswith(f"  Alertmanager notified firing job_id={job}: ") for line in said)
        assert any(f"job_id={job}: 2 alert(s)" in line for line in said)
        client.close()

        # hcep run's webhook alerts still arrive on the receiver's own URL, counted as before.
        body = json.dumps(
            {
                "alerts": [
                    {
                        "labels": {"alert_id": "a1", "query": "Q3", "severity": "warning"},
                        "annotations": {"summary": "slow pull"},
                    }
                ]
            }
        ).encode()
        with urllib.request.urlopen(urllib.request.Request(receiver.url, data=body, method="POST"), timeout=5):
            pass
        assert receiver.totals() == {"warning": 1} and receiver.notifications == 1
        assert "manager" in (tmp_path / "logs" / "alertmanager.log").read_text()
    finally:
        manager.stop()
        receiver.stop()
    assert not manager.running()


def test_the_demo_takes_an_alertmanager_port(capsys: object) -> None:
    assert main(["demo", "--kafka-port", "9093", "--alertmanager-port", "9093", "--duration", "1"]) == 2
    assert "every port must differ" in capsys.readouterr().err  # type: ignore[attr-defined]
