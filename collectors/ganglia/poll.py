"""Fetch one XML dump from gmond (TCP 8649), gmetad's XML port (8651) or its interactive port (8652).

gmond and gmetad's XML port write the whole document on connect and close; the interactive port first wants one
request line (``/`` for everything, ``/CLUSTER`` for one cluster).  Every step has a timeout, and the size is capped,
because a stuck or runaway daemon must not hang or exhaust the collector.
"""

from __future__ import annotations

import socket
import time

DEFAULT_GMOND_PORT = 8649
DEFAULT_GMETAD_PORT = 8651
DEFAULT_INTERACTIVE_PORT = 8652

#: A 1,000-host cluster's gmond dump is about 30 MB; anything past this is refused.
MAX_BYTES = 256 * 1024 * 1024


class PollError(OSError):
    """The daemon could not be reached or did not send a complete dump in time; the message says which."""


def parse_address(text: str, default_port: int = DEFAULT_GMOND_PORT) -> tuple[str, int]:
    """``"host:port"``, ``"host"``, ``"[::1]:8649"`` or ``":8649"`` (127.0.0.1) -> ``(host, port)``; ValueError."""
    text = text.strip()
    if not text:
        raise ValueError("empty address")
    host, port_text = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"bad address {text!r}: unclosed '['")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"bad address {text!r}")
            port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    host = host or "127.0.0.1"
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port in {text!r}")
    return host, int(port_text)


def poll(
    address: str | tuple[str, int],
    *,
    timeout: float = 5.0,
    deadline: float = 30.0,
    request: str | None = None,
    max_bytes: int = MAX_BYTES,
) -> bytes:
    """Connect, optionally send ``request`` (interactive port), and read until the daemon closes the connection.

    ``timeout`` bounds the connect and each silent wait; ``deadline`` the whole poll.  Raises :class:`PollError`.
    """
    host, port = parse_address(address) if isinstance(address, str) else address
    label = f"{host}:{port}"
    started = time.monotonic()
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as err:
        raise PollError(f"{label}: cannot connect: {err.strerror or err}") from None
    chunks: list[bytes] = []
    size = 0
    with sock:
        try:
            if request is not None:
                sock.sendall(request.encode("utf-8") + (b"" if request.endswith("\n") else b"\n"))
            while True:
                left = deadline - (time.monotonic() - started)
                if left <= 0:
                    raise PollError(f"{label}: no complete document within {deadline:g} s ({size} bytes read)")
                sock.settimeout(min(timeout, left))
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise PollError(f"{label}: document larger than {max_bytes} bytes")
                chunks.append(chunk)
        except TimeoutError:
            if time.monotonic() - started >= deadline:
                raise PollError(f"{label}: no complete document within {deadline:g} s ({size} bytes read)") from None
            raise PollError(f"{label}: timed out after {size} bytes") from None
        except PollError:
            raise
        except OSError as err:
            raise PollError(f"{label}: {err.strerror or err}") from None
    return b"".join(chunks)
