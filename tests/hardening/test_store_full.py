"""A full store (issue 18): SQLite rolls a failed checkpoint back by itself on SQLITE_FULL, so the store's own
ROLLBACK must not raise over the real error; :func:`app.store.unwritable` tells a full disk from a bug.  The real
disk-full run (a filled tmpfs under ``hcep run``) is ``tests/pipeline/test_faults.py``."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from app.store import Batch, CheckpointRow, MatchRow, OffsetRow, Post, Store, unwritable


def _batch(n: int, seq: int) -> Batch:
    matches = [MatchRow(f"m{seq}-{i}", "Q", "p", None, 0.0, 1.0, "x" * 2000, 0.0, "0") for i in range(n)]
    offsets = [OffsetRow("g/0", "t", 0, seq * 10, 0, None, "0", seq)]
    return Batch(matches, [], [], offsets, CheckpointRow("i/0", seq, None, None, [["t", 0]]))


def test_a_checkpoint_on_a_full_store_rolls_back_whole_and_says_so(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    store.commit(_batch(5, 1))
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own "disk full"
    with pytest.raises(sqlite3.OperationalError) as err:
        store.commit(_batch(200, 2))
    assert "full" in str(err.value), err.value  # the cause, not "cannot rollback - no transaction is active"
    assert unwritable(err.value) == "disk full"
    assert not store.db.in_transaction
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert store.db.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == 5  # nothing of checkpoint 2
    assert store.checkpoint("i/0").seq == 1 and store.offset("g/0", "t", 0).position == 10
    store.db.execute("PRAGMA max_page_count = 1073741823")  # space again: the same checkpoint goes in
    store.commit(_batch(200, 2))
    assert store.db.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == 205
    assert store.checkpoint("i/0").seq == 2
    store.close()


def test_unwritable_names_space_and_io_and_nothing_else() -> None:
    assert unwritable(OSError(errno.ENOSPC, "No space left on device")) == "disk full"
    assert unwritable(OSError(errno.EDQUOT, "Disk quota exceeded")) == "quota exceeded"
    assert unwritable(OSError(errno.EACCES, "Permission denied")) is None
    assert unwritable(sqlite3.OperationalError("no such table: x")) is None
    assert unwritable(ValueError("x")) is None


class _FullOnce:
    """The outbox calls of AlertSender, over one due alert; ``mark_delivered`` fails once as a full disk does."""

    def __init__(self) -> None:
        self.delivered: list[str] = []
        self.full = True

    def heartbeat(self, owner: str, now: float) -> None:
        pass

    def adopt_orphans(self, owner: str, now: float, silent_for: float) -> int:
        return 0

    def due_posts(self, owner: str, now: float, batch: int, limit: int = 200) -> list[Post]:
        return [] if self.delivered else [Post("a1", "ops", [("a1", '{"labels": {"alertname": "Q1"}}')])]

    def mark_delivered(self, ids: list[str], now: float) -> None:
        if self.full:
            self.full = False
            raise sqlite3.OperationalError("database or disk is full")
        self.delivered.extend(ids)


def test_an_alert_delivered_while_the_outbox_is_full_is_marked_later_not_sent_again() -> None:
    from app.alerts.webhook import AlertSender, Webhook

    posts: list[list[str] | None] = []
    sender = AlertSender(
        "unused.sqlite",
        "me",
        {"ops": Webhook("ops", "http://127.0.0.1:1/x")},
        deliver=lambda hook, alerts, timeout=5.0, ids=None: posts.append(ids),
    )
    store = _FullOnce()
    with pytest.raises(sqlite3.OperationalError):
        sender._round(store)  # POSTed, then the mark failed: run() waits and calls again
    assert posts == [["a1"]] and store.delivered == []
    sender._round(store)
    assert store.delivered == ["a1"] and posts == [["a1"]]  # marked, not POSTed a second time
