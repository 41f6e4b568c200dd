"""The client's failures are one clean AlertmanagerError each (method, URL, reason; retryable or not): a closed
port, a server that never answers, an HTTP error, an answer that is not Alertmanager's API, and the real
Alertmanager refusing an invalid alert."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from app.alerts.alertmanager import Alertmanager, AlertmanagerError, AlertmanagerSender
from tests.app.alerts.conftest import poll
from tests.app.alerts.helpers import job_id, make_alert
from tests.conftest import free_port

#: What the junk server answers, by method and path: (status, content type, body).
JUNK = {
    ("GET", "/-/ready"): (503, "text/plain", "not ready"),
    ("GET", "/api/v2/alerts"): (200, "text/html", "<html><body>It works!</body></html>"),
    ("GET", "/api/v2/alerts/groups"): (200, "application/json", '{"not": "a list"}'),
    ("POST", "/api/v2/silences"): (200, "application/json", "{}"),
    ("POST", "/api/v2/alerts"): (500, "text/plain", "internal\n  error"),
    ("DELETE", "/api/v2/silence/abc"): (404, "application/json", '"silence not found"'),
}


@pytest.fixture(scope="module")
def junk() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            status, kind, body = JUNK.get((self.command, self.path.split("?")[0]), (404, "text/plain", "no"))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _answer  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_closed_port() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = Alertmanager(url, timeout=2)
    assert client.ready() is False
    with pytest.raises(AlertmanagerError) as err:
        client.post_alerts([make_alert(job_id()).to_json()])
    assert str(err.value) == f"POST {url}/api/v2/alerts: cannot reach Alertmanager (connection refused)"
    assert err.value.status is None and err.value.retryable
    with pytest.raises(AlertmanagerError, match=r"^GET .*/api/v2/alerts: cannot reach Alertmanager"):
        client.alerts()
    client.post_alerts([])  # nothing to send: no request at all


def test_a_server_that_never_answers() -> None:
    with socket.socket() as listener:  # accepts connections (the backlog) but never reads or answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        client = Alertmanager(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.3)
        started = time.monotonic()
        with pytest.raises(AlertmanagerError, match=r"cannot reach Alertmanager \(timed out\)$"):
            client.groups()
        assert time.monotonic() - started < 3
        assert client.ready() is False


def test_junk_answers(junk: str) -> None:
    client = Alertmanager(junk)
    assert client.ready() is False  # 503
    with pytest.raises(AlertmanagerError, match=r"answer is not JSON, so not Alertmanager's v2 API: '<html>"):
        client.alerts()
    with pytest.raises(AlertmanagerError, match=r"expected a JSON list, got dict: not Alertmanager's v2 API"):
        client.groups()
    with pytest.raises(AlertmanagerError, match=r"no silenceID in the answer"):
        client.create_silence({"job_id": "j"})
    with pytest.raises(AlertmanagerError) as err:
        client.post_alerts([make_alert(job_id()).to_json()])
    assert str(err.value) == f"POST {junk}/api/v2/alerts: HTTP 500: internal error"
    assert err.value.status == 500 and err.value.retryable
    with pytest.raises(AlertmanagerError) as err:
        client.expire_silence("abc")
    assert err.value.status == 404 and not err.value.retryable and "silence not found" in str(err.value)


def test_bad_arguments_are_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="must be http"):
        Alertmanager("127.0.0.1:9093")
    client = Alertmanager("http://127.0.0.1:1")
    with pytest.raises(ValueError, match="at least one matcher"):
        client.create_silence({})
    with pytest.raises(ValueError, match="not a silence id"):
        client.expire_silence("../status")


def test_the_real_alertmanager_refuses_an_invalid_alert(client: Alertmanager) -> None:
    job = job_id()
    bad = make_alert(job).to_json()
    bad["labels"]["bad-name"] = "x"  # not a Prometheus label name
    good = make_alert(job, "Fine").to_json()
    with pytest.raises(AlertmanagerError) as err:
        client.post_alerts([bad, good])
    assert err.value.status == 400 and not err.value.retryable
    assert "bad-name" in str(err.value) and str(err.value).startswith(f"POST {client.url}/api/v2/alerts: HTTP 400")
    # Alertmanager keeps the valid ones of a batch.
    assert [a["labels"]["alertname"] for a in client.alerts(filter={"job_id": job})] == ["Fine"]


def test_the_sender_against_a_closed_port_keeps_trying() -> None:
    results: Counter[str] = Counter()
    sender = AlertmanagerSender(
        f"http://127.0.0.1:{free_port()}",
        base_delay=0.05,
        max_delay=0.2,
        on_result=lambda status, n: results.update({status: n}),
    )
    sender.start()
    try:
        sender.submit([make_alert(job_id())])
        poll(lambda: sender.failures >= 3, 10, "three failed rounds")
        assert "connection refused" in sender.last_error
        assert sender.is_alive() and sender.pending() == 1 and results["failed"] >= 3 and not results["delivered"]
    finally:
        sender.stop()
