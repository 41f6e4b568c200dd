"""poll.py against small loopback servers that misbehave (silent, endless, oversized), and address parsing."""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest

from app.cli import CommandError
from app.commands import collect_ganglia
from collectors.ganglia.poll import PollError, parse_address, poll


@contextmanager
def server(handle: Callable[[socket.socket], None]) -> Iterator[tuple[str, int]]:
    """A one-connection-at-a-time TCP server on 127.0.0.1 running ``handle`` per connection (bounded: 10 s)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn, suppress(OSError):
                handle(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_reads_until_close_and_sends_request() -> None:
    seen: list[bytes] = []

    def handle(conn: socket.socket) -> None:
        conn.settimeout(2)
        seen.append(conn.recv(100))
        conn.sendall(b"<GANGLIA_XML/>" * 1000)

    with server(handle) as addr:
        assert poll(addr, request="/c") == b"<GANGLIA_XML/>" * 1000
    assert seen == [b"/c\n"]


def test_silent_server_times_out() -> None:
    with server(lambda conn: time.sleep(1.5)) as addr:
        started = time.monotonic()
        with pytest.raises(PollError, match="timed out"):
            poll(addr, timeout=0.3)
        assert time.monotonic() - started < 1.4


def test_trickling_server_hits_the_deadline() -> None:
    def handle(conn: socket.socket) -> None:
        for _ in range(30):
            conn.sendall(b"<")
            time.sleep(0.1)

    with server(handle) as addr, pytest.raises(PollError, match="no complete document within"):
        poll(addr, timeout=1, deadline=0.5)


def test_oversized_document_is_refused() -> None:
    with server(lambda conn: conn.sendall(b"x" * 5000)) as addr, pytest.raises(PollError, match="larger than"):
        poll(addr, max_bytes=1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8651", ("127.0.0.1", 8651)),
        ("localhost", ("localhost", 8649)),
        (":9000", ("127.0.0.1", 9000)),
        ("[::1]:8649", ("::1", 8649)),
        ("[::1]", ("::1", 8649)),
    ],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "h:0", "h:70000", "h:x", "[::1", "[::1]x"])
def test_parse_address_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_address(text)


def _collect(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    collect_ganglia.configure(parser)
    return collect_ganglia.run(parser.parse_args(list(argv)))


def test_collect_dead_letters_a_bad_dump_and_goes_on(tmp_path, capsys) -> None:
    good = (
        b'<GANGLIA_XML><CLUSTER NAME="c" LOCALTIME="7"><HOST NAME="h" REPORTED="7">'
        b'<METRIC NAME="load_one" VAL="2" TYPE="float"/></HOST></CLUSTER></GANGLIA_XML>'
    )
    dumps = iter([b"<GANGLIA_XML><HOST", good])
    dead, out = tmp_path / "dead.jsonl", tmp_path / "out.jsonl"
    with server(lambda conn: conn.sendall(next(dumps))) as (host, port):
        args = ["--gmond", f"{host}:{port}", "--out", str(out), "--deadletter", str(dead), "--interval", "0.05"]
        assert _collect(*args, "--rounds", "2") == 0
    (record,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert record["source"] == "ganglia-xml" and "not well-formed" in record["reason"]
    assert record["location"] == f"{host}:{port}" and record["raw"] == "<GANGLIA_XML><HOST"
    assert [json.loads(line)["type"] for line in out.read_text().splitlines()] == ["Metric", "LoadStd", "Balance"]
    err = capsys.readouterr().err
    assert "bad document: not well-formed" in err and "2 polls, 3 events, 1 dead-lettered" in err


def test_collect_once_fails_on_bad_or_missing_dump(tmp_path) -> None:
    with server(lambda conn: conn.sendall(b"junk")) as (host, port):
        assert _collect("--gmond", f"{host}:{port}", "--once", "--out", str(tmp_path / "o")) == 1
    assert _collect("--gmond", "127.0.0.1:1", "--once", "--timeout", "1", "--out", str(tmp_path / "o")) == 1
    with pytest.raises(CommandError, match="--gmond"):
        _collect("--gmond", "h:x", "--once")
