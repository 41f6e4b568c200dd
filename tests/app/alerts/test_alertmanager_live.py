"""The real Alertmanager behind the deploy scripts: grouping by job, silences, resolution, and the scripts' own
promises (idempotent start, loopback only, status)."""

from __future__ import annotations

import shutil
import subprocess
import time

import yaml

from app.alerts.alertmanager import Alertmanager
from contracts.alerts import parse_rfc3339
from tests.app.alerts.conftest import GROUP_WAIT, Daemon, Receiver, poll
from tests.app.alerts.helpers import job_id, make_alert

#: A notification is due GROUP_WAIT after a group's first alert; allow a loaded machine plenty more.
NOTIFY_TIMEOUT = GROUP_WAIT + 15


def _active(client: Alertmanager, job: str) -> list[dict]:
    return client.alerts(filter={"job_id": job})


def test_grouping_merges_the_alerts_of_one_job(client: Alertmanager, receiver: Receiver) -> None:
    """Two rules firing on one job (and a task of it) make one group, whose notification carries both alerts;
    another job is a group of its own."""
    job, other = job_id(), job_id()
    alerts = [
        make_alert(job, "SkewedMappers"),
        make_alert(job, "StragglingPull", task=f"task_{job}_r_000001"),
        make_alert(other, "SkewedMappers"),
    ]
    client.post_alerts([a.to_json() for a in alerts])

    def job_groups() -> list[dict] | None:
        # Alertmanager's dispatcher takes posted alerts one at a time, so under load the group can be listed before
        # its second alert joins it: wait until both have been dispatched (or the deadline shows they never are).
        found = [g for g in client.groups() if g["labels"].get("job_id") == job]
        return found if sum(len(g["alerts"]) for g in found) >= 2 else None

    groups = poll(job_groups, 30, "the job's group with both alerts")
    assert len(groups) == 1
    assert sorted(a["labels"]["alertname"] for a in groups[0]["alerts"]) == ["SkewedMappers", "StragglingPull"]
    assert groups[0]["receiver"]["name"] == "hcep"
    assert not any(a["labels"].get("job_id") == other for a in groups[0]["alerts"])

    # One notification carries the group's whole state, so both alerts come in one.  Usually the first has both,
    # but under load Alertmanager can flush the group (group_wait) after taking only one: the next flush
    # (group_interval) then carries both.  Never a notification of the job without the job's group labels.
    def both() -> dict | None:
        return next(
            (
                n
                for n in receiver.about(job)
                if sorted(a["labels"]["alertname"] for a in n["alerts"]) == ["SkewedMappers", "StragglingPull"]
            ),
            None,
        )

    note = poll(both, NOTIFY_TIMEOUT, "the job's notification of both alerts")
    assert all(n["groupLabels"] == {"job_id": job} for n in receiver.about(job))
    assert note["status"] == "firing" and note["groupLabels"].get("job_id") == job
    assert note["commonLabels"]["job_id"] == job and "alertname" not in note["commonLabels"]
    assert note["alerts"][0]["annotations"]["confidence"] == "0.875"
    others = poll(lambda: receiver.about(other), NOTIFY_TIMEOUT, "the other job's notification")
    assert [a["labels"]["job_id"] for n in others for a in n["alerts"]] == [other]


def test_a_silence_suppresses_and_is_not_notified(client: Alertmanager, receiver: Receiver) -> None:
    """A silence on one rule of a job: that alert is 'suppressed' (silencedBy the silence) and left out of the job's
    notification, which carries only the job's other alert; expiring the silence makes it active again."""
    job = job_id()
    silence = client.create_silence(
        {"alertname": "SkewedMappers", "job_id": job}, duration=600, comment="test: known skew"
    )
    try:
        assert any(s["id"] == silence and s["status"]["state"] == "active" for s in client.silences())
        client.post_alerts([make_alert(job, "SkewedMappers").to_json(), make_alert(job, "HeldMapOutput").to_json()])

        def states() -> dict[str, dict] | None:
            found = {a["labels"]["alertname"]: a["status"] for a in _active(client, job)}
            return found if found.get("SkewedMappers", {}).get("state") == "suppressed" and len(found) == 2 else None

        status = poll(states, 10, "the silenced alert to be suppressed")
        assert status["SkewedMappers"]["silencedBy"] == [silence]
        assert status["HeldMapOutput"]["state"] == "active"
        # active=false lists only the suppressed one; silenced=false hides it.
        assert [a["labels"]["alertname"] for a in client.alerts(active=False, filter={"job_id": job})] == [
            "SkewedMappers"
        ]
        assert [a["labels"]["alertname"] for a in client.alerts(silenced=False, filter={"job_id": job})] == [
            "HeldMapOutput"
        ]

        notes = poll(lambda: receiver.about(job), NOTIFY_TIMEOUT, "the job's notification")
        assert [a["labels"]["alertname"] for n in notes for a in n["alerts"]] == ["HeldMapOutput"]
    finally:
        client.expire_silence(silence)
    assert any(s["id"] == silence and s["status"]["state"] == "expired" for s in client.silences())
    poll(
        lambda: {a["status"]["state"] for a in _active(client, job)} == {"active"},
        10,
        "the alert to be active once the silence expired",
    )


def test_a_resolved_alert_leaves_the_active_list(client: Alertmanager, receiver: Receiver) -> None:
    """Posting the alert again with endsAt in the past resolves it: gone from GET /api/v2/alerts, and the receiver
    is told (send_resolved)."""
    job = job_id()
    firing = make_alert(job, "HeldMapOutput", starts=time.time() - 60)
    client.post_alerts([firing.to_json()])
    listed = poll(lambda: _active(client, job), 10, "the firing alert")
    assert listed[0]["status"]["state"] == "active"
    assert abs(parse_rfc3339(listed[0]["startsAt"]) - firing.starts_at) < 0.001  # Alertmanager keeps ms
    poll(lambda: receiver.about(job), NOTIFY_TIMEOUT, "the firing notification")

    resolved = firing.resolved(time.time() - 1)
    assert "endsAt" in resolved.to_json() and resolved.ends_at < time.time()
    client.post_alerts([resolved.to_json()])
    poll(lambda: not _active(client, job), 10, "the resolved alert to leave the active list")

    def resolved_note() -> list[dict]:
        return [n for n in receiver.about(job) if n["status"] == "resolved"]

    note = poll(resolved_note, NOTIFY_TIMEOUT, "the resolved notification")[0]
    assert note["alerts"][0]["status"] == "resolved"
    assert abs(parse_rfc3339(note["alerts"][0]["endsAt"]) - resolved.ends_at) < 0.01


def test_the_scripts_are_idempotent_and_loopback_only(alertmanager: Daemon, client: Alertmanager) -> None:
    before = alertmanager.status()
    assert before.returncode == 0 and "ALERTMANAGER=running" in before.stdout
    pid = before.stdout.split("pid=")[1].split()[0]
    again = alertmanager.start()  # already running: left alone, same process
    assert f"ALERTMANAGER_PID={pid}" in again.stdout and "already running" in again.stderr
    assert client.ready()
    status = client.status()
    assert status["cluster"]["status"] == "disabled"  # no HA listener
    config = yaml.safe_load(status["config"]["original"])
    assert config["route"]["group_by"] == ["job_id", "app_id"]
    assert config["receivers"][0]["webhook_configs"][0]["url"] == alertmanager.receiver_url
    if shutil.which("ss"):
        listening = subprocess.run(["ss", "-H", "-ltunp"], capture_output=True, text=True, check=False).stdout
        ours = [line.split()[4] for line in listening.splitlines() if f"pid={pid}," in line]
        assert ours == [f"127.0.0.1:{alertmanager.port}"], ours
