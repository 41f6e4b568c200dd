"""The shared ``--follow`` loop: outputs are flushed before positions are committed, a failed publish commits
nothing, SIGTERM ends the loop cleanly, and ``close`` runs however it ends."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from app.commands.follow_loop import follow
from app.publish import PublishError


class Log:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, name: str) -> Any:
        return lambda *_: self.calls.append(name)


class Sink:
    def __init__(self, log: Log, name: str, fail_at: int | None = None) -> None:
        self.log, self.name, self.fail_at, self.n = log, name, fail_at, 0

    def flush(self) -> None:
        self.n += 1
        if self.fail_at is not None and self.n >= self.fail_at:
            raise PublishError("broker gone")
        self.log.calls.append(self.name)


def run(log: Log, *, max_polls: int | None = 2, step: Any = None, publisher: Any = None) -> int:
    return follow(
        poll_seconds=0.0,
        max_polls=max_polls,
        rescan_seconds=3600.0,
        scan=log("scan"),
        step=step or log("step"),
        commit=log("commit"),
        close=log("close"),
        out=None,
        publisher=publisher if publisher is not None else Sink(log, "publish"),
        deadletter=Sink(log, "deadletter"),
    )


def test_each_batch_is_out_before_its_positions_are_committed() -> None:
    log = Log()
    assert run(log) == 0
    assert log.calls == [
        "scan",  # once: the next scan is an hour away
        *["step", "publish", "deadletter", "commit"] * 2,
        "publish",  # the last flush and commit of a clean end
        "commit",
        "close",
    ]


def test_a_failed_publish_commits_nothing_and_still_closes() -> None:
    log = Log()
    with pytest.raises(PublishError):
        run(log, publisher=Sink(log, "publish", fail_at=2))
    assert log.calls == ["scan", "step", "publish", "deadletter", "commit", "step", "close"]


def test_sigterm_ends_the_loop_after_the_batch_in_hand() -> None:
    log = Log()
    steps = []

    def step() -> None:
        steps.append(1)
        if len(steps) == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    assert run(log, max_polls=None, step=step) == 0
    assert len(steps) == 3
    assert log.calls[-3:] == ["publish", "commit", "close"]
    assert signal.getsignal(signal.SIGTERM) is before  # the caller's handler is back
