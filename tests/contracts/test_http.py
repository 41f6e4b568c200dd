"""contracts.http: one short, readable cause for a failed request, for the service log and the dashboard alike."""

from __future__ import annotations

import socket

import pytest
import requests

from contracts.http import failure_reason


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_named_as_such() -> None:
    with pytest.raises(requests.RequestException) as caught:
        requests.get(f"http://127.0.0.1:{_free_port()}/", timeout=2)
    assert failure_reason(caught.value) == "connection refused"


def test_a_timeout_and_other_errors() -> None:
    assert failure_reason(requests.Timeout("read timed out after 1.5 s\nmore")) == "timed out"
    assert failure_reason(requests.RequestException("first line\nsecond line")) == "first line"
    assert failure_reason(requests.RequestException("x" * 500)) == "x" * 200
    assert failure_reason(requests.RequestException()) == "RequestException"
