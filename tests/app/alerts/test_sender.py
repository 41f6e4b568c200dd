"""AlertmanagerSender: its rounds driven by hand on a fake clock (latest state wins, keep-alive endsAt, re-sends,
retention, back-off, batching), and end to end against the real Alertmanager, which it keeps informed across a
restart and which resolves its alerts by itself once the sender is gone."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from app.alerts.alertmanager import KEEPALIVE_INTERVALS, Alertmanager, AlertmanagerError, AlertmanagerSender
from contracts.alerts import Alert, parse_rfc3339
from tests.app.alerts.conftest import Daemon, poll
from tests.app.alerts.helpers import job_id, make_alert


class FakeClient:
    """Records what would be posted; fails (retryably, or with a 400) while told to; can hold a POST."""

    url = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.posts: list[list[dict[str, Any]]] = []
        self.fail: int | None = None  # None: answer 200; else raise with this status (0: no answer at all)
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        self.entered.set()
        self.hold.wait(10)
        if self.fail is not None:
            raise AlertmanagerError("fake: down" if not self.fail else f"fake: HTTP {self.fail}", self.fail or None)
        self.posts.append(alerts)

    def close(self) -> None:
        pass

    def names(self, post: int = -1) -> list[str]:
        return sorted(a["labels"]["alertname"] for a in self.posts[post])


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _sender(fake: FakeClient, clock: Clock, results: Counter | None = None, **kw: Any) -> AlertmanagerSender:
    counts = results if results is not None else Counter()
    return AlertmanagerSender(fake, clock=clock, on_result=lambda status, n: counts.update({status: n}), **kw)  # type: ignore[arg-type]


def test_the_latest_transition_of_an_alert_wins() -> None:
    sender = _sender(FakeClient(), Clock())
    job = job_id()
    first = make_alert(job, at=5.0, summary="first")
    sender.submit([first, make_alert(job, at=3.0, summary="older, late")])
    assert sender.known()[first.fingerprint].annotations["summary"] == "first"
    newer = make_alert(job, at=6.0, summary="newer")
    sender.submit([newer])
    assert sender.known() == {first.fingerprint: newer} and sender.pending() == 1
    resolved = newer.resolved(7.0)
    sender.submit([resolved, make_alert(job, "Other", at=7.0)])
    assert sender.known()[first.fingerprint] == resolved and sender.pending() == 2


def test_firing_alerts_are_resent_with_a_wall_clock_keepalive() -> None:
    fake, clock = FakeClient(), Clock()
    sender = _sender(fake, clock, resend_interval=60.0)
    a = make_alert(job_id(), starts=clock.now - 3600)  # event time: an hour ago (a replay, a lagging stream)
    sender.submit([a])
    assert sender._round() == pytest.approx(60.0)
    assert len(fake.posts) == 1 and sender.pending() == 0
    posted = fake.posts[0][0]
    assert parse_rfc3339(posted["startsAt"]) == pytest.approx(a.starts_at, abs=1e-3)
    assert parse_rfc3339(posted["endsAt"]) == pytest.approx(clock.now + KEEPALIVE_INTERVALS * 60.0, abs=1e-3)
    clock.now += 30
    assert sender._round() == pytest.approx(30.0) and len(fake.posts) == 1  # not due yet
    clock.now += 30
    sender._round()
    assert len(fake.posts) == 2  # re-sent, keep-alive moved on with the wall clock
    assert parse_rfc3339(fake.posts[1][0]["endsAt"]) == pytest.approx(clock.now + 240.0, abs=1e-3)
    # An event clock ahead of this host's never makes endsAt < startsAt (Alertmanager would reject it).
    ahead = make_alert(job_id(), starts=clock.now + 1000)
    assert parse_rfc3339(sender._postable(ahead, clock.now)["endsAt"]) == pytest.approx(ahead.starts_at + 240.0)


def test_resolved_alerts_are_resent_for_the_retention_then_forgotten() -> None:
    fake, clock = FakeClient(), Clock()
    sender = _sender(fake, clock, resend_interval=10.0, resolved_retention=25.0)
    a = make_alert(job_id(), starts=clock.now - 100, at=1.0)
    sender.submit([a])
    sender._round()
    clock.now += 1
    sender.submit([a.resolved(clock.now - 50)])  # resolved in event time, decided now
    sender._round()
    assert len(fake.posts) == 2  # promptly, not at the next re-send
    assert parse_rfc3339(fake.posts[1][0]["endsAt"]) == pytest.approx(clock.now - 50, abs=1e-3)
    for _ in range(4):
        clock.now += 10
        sender._round()
    assert len(fake.posts) == 4  # re-sent at +10 and +20 after the resolution, forgotten at +25
    assert all("endsAt" in p[0] and parse_rfc3339(p[0]["endsAt"]) < clock.now for p in fake.posts[1:])
    assert sender.known() == {}


def test_resends_gather_into_few_requests_in_batches() -> None:
    fake, clock = FakeClient(), Clock()
    sender = _sender(fake, clock, resend_interval=60.0, batch=10)
    job = job_id()
    sender.submit([make_alert(job, f"Rule{i:02d}") for i in range(12)])
    sender._round()
    assert [len(p) for p in fake.posts] == [10, 2]
    clock.now += 20
    sender.submit([make_alert(job, "Late")])
    sender._round()
    assert [len(p) for p in fake.posts[2:]] == [1]
    clock.now += 40  # the first twelve are due; "Late" (due in 20 s, within half an interval) goes along
    sender._round()
    assert [len(p) for p in fake.posts[3:]] == [10, 3]


def test_back_off_while_down_keeps_the_latest_state() -> None:
    fake, clock, results = FakeClient(), Clock(), Counter()
    sender = _sender(fake, clock, results, base_delay=1.0, max_delay=8.0)
    job = job_id()
    fake.fail = 0
    sender.submit([make_alert(job, at=1.0, summary="v1")])
    delays = []
    for _ in range(6):
        delays.append(sender._round())
        assert sender._round() == pytest.approx(delays[-1])  # within the back-off: no new try
        clock.now += delays[-1]
    assert results["failed"] == 6 and not fake.posts and sender.failures == 6
    assert 0.5 <= delays[0] <= 1.0 and all(d <= 8.0 for d in delays) and max(delays[3:]) >= 4.0  # doubling, capped
    sender.submit([make_alert(job, at=2.0, summary="v2")])  # meanwhile: a newer state of the same alert
    fake.fail = None
    sender._round()
    assert [a["annotations"]["summary"] for p in fake.posts for a in p] == ["v2"]  # only the latest goes out
    assert results["delivered"] == 1 and sender.failures == 0 and sender.pending() == 0


def test_a_rejected_batch_is_not_retried_in_a_loop() -> None:
    fake, clock, results = FakeClient(), Clock(), Counter()
    sender = _sender(fake, clock, results, resend_interval=60.0)
    fake.fail = 400
    sender.submit([make_alert(job_id())])
    assert sender._round() == pytest.approx(60.0)  # waits for the next re-send, no back-off
    assert results == Counter({"rejected": 1}) and sender.pending() == 0 and sender.failures == 0


def test_submit_never_waits_for_the_network() -> None:
    fake = FakeClient()
    fake.hold.clear()  # every POST hangs until released
    sender = AlertmanagerSender(fake, linger=0.0)  # type: ignore[arg-type]
    sender.start()
    try:
        job = job_id()
        sender.submit([make_alert(job, "A")])
        assert fake.entered.wait(5)  # the thread is inside a POST that does not return
        started = time.monotonic()
        sender.submit([make_alert(job, "B")])
        assert time.monotonic() - started < 0.05
        fake.hold.set()
        assert sender.drain(5)
        assert [n for p in fake.posts for n in sorted(a["labels"]["alertname"] for a in p)] == ["A", "B"]
    finally:
        sender.stop()
    assert not sender.is_alive()


def test_an_error_in_a_round_does_not_end_delivery() -> None:
    fake, calls = FakeClient(), []

    def on_result(status: str, n: int) -> None:
        calls.append(status)
        if len(calls) == 1:
            raise RuntimeError("a broken metrics callback")

    sender = AlertmanagerSender(fake, max_delay=0.1, linger=0.0, on_result=on_result)  # type: ignore[arg-type]
    sender.start()
    try:
        job = job_id()
        sender.submit([make_alert(job, "A")])
        poll(lambda: calls, 5, "the first round")
        sender.submit([make_alert(job, "B")])
        assert sender.drain(5) and sender.is_alive() and calls == ["delivered", "delivered"]
    finally:
        sender.stop()


def test_finish_delivers_then_stops_and_counts_what_is_left() -> None:
    fake = FakeClient()
    sender = AlertmanagerSender(fake, max_delay=0.1, linger=0.0)  # type: ignore[arg-type]
    sender.start()
    job = job_id()
    sender.submit([make_alert(job, "A"), make_alert(job, "B")])
    assert sender.finish(5) == 0 and not sender.is_alive()
    assert sorted(a["labels"]["alertname"] for p in fake.posts for a in p) == ["A", "B"]

    down = FakeClient()
    down.fail = 0  # no answer at all
    sender = AlertmanagerSender(down, max_delay=0.1, linger=0.0)  # type: ignore[arg-type]
    sender.start()
    sender.submit([make_alert(job, "C")])
    assert sender.finish(0.3) == 1 and not sender.is_alive()


# ------------------------------------------------------------------------------------------ the real Alertmanager
def test_the_sender_keeps_alertmanager_informed_across_a_restart(alertmanager: Daemon, client: Alertmanager) -> None:
    """Firing alerts are re-sent (their endsAt moves on); Alertmanager stopped: transitions keep being taken,
    deliveries fail with back-off; started again (empty: it keeps alerts in memory), it gets the whole latest state;
    a resolve removes one alert; once the sender stops, Alertmanager resolves the rest by itself at their endsAt."""
    results: Counter[str] = Counter()
    lock = threading.Lock()

    def on_result(status: str, n: int) -> None:
        with lock:
            results[status] += n

    resend = 0.5
    sender = AlertmanagerSender(
        alertmanager.url, resend_interval=resend, base_delay=0.1, max_delay=0.5, on_result=on_result
    )
    sender.start()
    job = job_id()

    def names() -> set[str]:
        return {a["labels"]["alertname"] for a in client.alerts(filter={"job_id": job})}

    try:
        skew = make_alert(job, "SkewedMappers", at=1.0)
        sender.submit([skew])
        listed = poll(lambda: client.alerts(filter={"job_id": job}), 10, "the first alert")
        ends = parse_rfc3339(listed[0]["endsAt"])
        assert time.time() < ends <= time.time() + KEEPALIVE_INTERVALS * resend + 0.5
        poll(lambda: parse_rfc3339(client.alerts(filter={"job_id": job})[0]["endsAt"]) > ends, 10, "a re-send")

        alertmanager.stop()
        pull = make_alert(job, "StragglingPull", task=f"task_{job}_r_000003", at=2.0)
        started = time.monotonic()
        sender.submit([pull])
        assert time.monotonic() - started < 0.05
        poll(lambda: results["failed"] > 0, 10, "a failed delivery")
        assert sender.is_alive() and sender.pending() == 1 and sender.last_error
        assert not sender.drain(0.3)

        alertmanager.start()
        poll(lambda: names() == {"SkewedMappers", "StragglingPull"}, 15, "the whole state after the restart")
        assert sender.drain(5) and sender.failures == 0

        sender.submit([skew.resolved(time.time() - 0.5)])
        poll(lambda: names() == {"StragglingPull"}, 10, "the resolved alert to leave")
    finally:
        sender.stop()
    assert not sender.is_alive()
    # hcep is gone: no more keep-alives, so Alertmanager resolves the firing alert at its endsAt by itself.
    poll(lambda: not names(), KEEPALIVE_INTERVALS * resend + 10, "Alertmanager to resolve the orphaned alert")
    assert results["delivered"] >= 4


def test_alerts_from_the_rule_engine_shape_are_accepted(client: Alertmanager) -> None:
    """Alert.to_json() as the rule engine emits it, through the sender's keep-alive, is valid for Alertmanager."""
    fake, clock = FakeClient(), Clock(time.time())
    sender = _sender(fake, clock)
    alert = Alert(
        {
            "alertname": "HeldMapOutput",
            "severity": "critical",
            "tier": "severe",
            "pack": "hadoop",
            "query": "Q4",
            "job_id": job_id(),
        },
        {"summary": "s", "description": "d", "confidence": "1.0", "evidence": '{"records": ["r1"]}'},
        time.time() - 5,
        generator_url="http://127.0.0.1:8501/alerts",
    )
    client.post_alerts([sender._postable(alert, clock.now)])
    got = poll(lambda: client.alerts(filter={"job_id": alert.labels["job_id"]}), 10, "the alert")[0]
    # Alertmanager keeps the transition id the sender adds, so its receivers can drop a transition seen before.
    assert got["labels"] == alert.labels
    assert got["annotations"] == {**alert.annotations, "transition_id": alert.transition_id}
    assert got["generatorURL"] == alert.generator_url
