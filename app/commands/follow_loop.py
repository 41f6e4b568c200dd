"""The ``--follow`` loop of ``hcep collect hadoop`` and ``hcep collect spark``.

Both collectors tail growing files and must hand on the same promise: a batch's events are flushed to the output
file and the publisher *before* the read positions are committed (at-least-once), new files are looked for now and
then rather than on every poll, SIGTERM and Ctrl-C end the loop with a last flush and commit, and a failed publish
ends it *without* committing (the next start reads the batch again).  Keeping that promise in one place is why this
module exists; the collectors supply only what differs: how to scan, what one poll emits, how positions are kept.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import IO, Any


class _Stop:
    """Set by SIGTERM: the loop ends after the batch in hand (a class attribute: a signal handler cannot rebind)."""

    flag = False


def follow(
    *,
    poll_seconds: float,
    max_polls: int | None,
    rescan_seconds: float,
    scan: Callable[[], None],
    step: Callable[[], None],
    commit: Callable[[], None],
    close: Callable[[], None],
    out: IO[str] | None,
    publisher: Any,
    deadletter: Any,
) -> int:
    """Poll until SIGTERM, Ctrl-C or ``max_polls``: ``scan`` every ``rescan_seconds`` at most, ``step`` (read what
    is new and emit it) every ``poll_seconds``, then flush ``out``, ``publisher`` and ``deadletter`` and only then
    ``commit``.  ``close`` runs however the loop ends; a :class:`app.publish.PublishError` propagates after it."""
    from app.publish import PublishError

    def stop(_signum: int, _frame: Any) -> None:
        _Stop.flag = True

    def flush() -> None:
        if out is not None:
            out.flush()
        if publisher is not None:
            publisher.flush()  # raises PublishError: then the positions are not committed

    _Stop.flag = False
    previous = signal.signal(signal.SIGTERM, stop)
    polls = 0
    next_scan = 0.0
    failed = False  # a publish failed: the positions must not be committed
    try:
        while not _Stop.flag:
            now = time.monotonic()
            if now >= next_scan:
                scan()
                next_scan = now + max(rescan_seconds, poll_seconds)
            step()
            flush()
            deadletter.flush()
            commit()  # only after the batch's events are out (at-least-once)
            polls += 1
            if max_polls is not None and polls >= max_polls:
                break
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        pass
    except PublishError:
        failed = True
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        try:
            if not failed:
                flush()
                commit()
        finally:
            close()
    return 0
