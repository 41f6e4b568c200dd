"""The webhook outbox delivers each alert transition exactly once to a receiver that drops what it has seen (issue 26
item 6): a POST's transitions are fixed in the store before its first try, so a POST cut by a crash between the
receiver's 2xx and the outbox mark, or failed, goes out again with the same entries under the same
``Idempotency-Key``; every entry carries its transition id in ``annotations.transition_id``.

The receiver is a real HTTP server on loopback and the sender posts through :func:`app.alerts.webhook.post`; the
crash is a ``BaseException`` raised right after the receiver answered (what a kill -9 there leaves: the POST
received, the store unmarked), after which a new sender over a new connection to the same store takes over, as a
restarted process does.  The process-level kill -9 runs in ``tests/pipeline/test_faults.py``.
"""

from __future__ import annotations

import http.server
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.alerts.webhook import AlertSender, Webhook, post
from app.store import SCHEMA_VERSION, AlertRow, Batch, Store
from contracts.alerts import Alert, carried_transition_id, post_key, transition_id
from contracts.schema import MIGRATIONS, SCHEMA


@dataclass
class Hook:
    """A webhook receiver: every POST's ``Idempotency-Key`` and entries; answers 503 while ``fail`` is set."""

    url: str = ""
    posts: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    fail: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keys(self) -> list[str]:
        with self.lock:
            return [k for k, _ in self.posts]

    def ids(self, key: str | None = None) -> list[str]:
        """The transition ids the entries carry (of one POST key, or of all), repeats included."""
        with self.lock:
            return [str(carried_transition_id(a)) for k, al in self.posts if key in (None, k) for a in al]


@pytest.fixture
def hook() -> Iterator[Hook]:
    rec = Hook()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if rec.fail:
                self.send_response(503)
                self.end_headers()
                return
            with rec.lock:
                rec.posts.append((self.headers["Idempotency-Key"], body["alerts"]))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/alerts"
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


class Killed(BaseException):
    """What a kill -9 does to the sender: nothing after it runs (no ``except Exception`` catches it)."""


def _transitions(store: Store, first: int, n: int, owner: str = "p1") -> list[str]:
    """Commit ``n`` firing transitions (jobs ``first``..) for webhook ``ops``; their outbox ids."""
    rows = [
        AlertRow.of(
            Alert({"alertname": "MapDataSkew", "severity": "warning", "job_id": f"job_{i}"}, {"summary": "s"}, 1e9 + i),
            "ops",
            "pending",
            1.0 + i,
            owner,
        )
        for i in range(first, first + n)
    ]
    store.commit(Batch([], rows, [], [], None))
    return [r.id for r in rows]


def _sender(path: str, url: str, *, owner: str = "p1", batch: int = 50, kill_after: int = 0) -> AlertSender:
    """A sender posting through :func:`post`; with ``kill_after`` it dies right after that many 2xx answers."""
    answered = [0]

    def deliver(
        hook: Webhook, alerts: list[dict[str, Any]], timeout: float = 5.0, ids: list[str] | None = None
    ) -> None:
        post(hook, alerts, timeout=timeout, ids=ids)
        answered[0] += 1
        if answered[0] == kill_after:
            raise Killed

    return AlertSender(path, owner, {"ops": Webhook("ops", url)}, batch=batch, base_delay=0.01, deliver=deliver)


def _pending(store: Store) -> int:
    return store.counts()["alerts_pending"]


def test_every_entry_carries_its_transition_id_and_the_key_names_the_post(hook: Hook, tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    ids = _transitions(store, 0, 3)
    assert _sender(store.path, hook.url)._round(store)
    assert _pending(store) == 0
    [(key, entries)] = hook.posts
    # The id an entry carries is the one its labels and times give (a receiver may compute or read it).
    assert [carried_transition_id(a) for a in entries] == [transition_id(a) for a in entries] == ids
    assert key == post_key(ids) == post_key(reversed(ids))
    assert post_key(ids[:1]) == ids[0]  # one entry: the key is its transition id


def test_a_post_cut_between_the_2xx_and_the_mark_goes_out_again_whole_under_its_key(hook: Hook, tmp_path: Path) -> None:
    """The issue's case: after the crash, new transitions are due too; the old composition by due rows would have
    sent the cut POST's transitions again inside a larger POST under a new key."""
    path = str(tmp_path / "s.sqlite")
    store = Store(path)
    first = _transitions(store, 0, 3)
    with pytest.raises(Killed):
        _sender(path, hook.url, kill_after=1)._round(store)
    store.close()
    store = Store(path)  # the restarted process
    second = _transitions(store, 10, 2)  # committed meanwhile: due at once
    assert _sender(path, hook.url)._round(store)
    assert _pending(store) == 0
    keys = hook.keys()
    assert keys == [post_key(first), post_key(first), post_key(second)]
    assert hook.ids(keys[0]) == first * 2 and hook.ids(keys[2]) == second  # the same entries, again
    # A receiver that drops repeated keys, or repeated transition ids, sees every transition once.
    by_key = [str(carried_transition_id(a)) for i, (k, al) in enumerate(hook.posts) if k not in keys[:i] for a in al]
    assert sorted(by_key) == sorted(set(hook.ids())) == sorted(first + second)


def test_a_failed_post_is_retried_with_the_same_transitions(hook: Hook, tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    store = Store(path)
    first = _transitions(store, 0, 2)
    hook.fail = True
    sender = _sender(path, hook.url)
    sender._round(store)
    assert hook.posts == [] and _pending(store) == 2
    second = _transitions(store, 5, 2)
    hook.fail = False
    sender.down.clear()  # the back-off over (its length is not what this test is about)
    store.db.execute("UPDATE alerts SET next_at = 0")
    sender._round(store)
    assert hook.keys() == [post_key(first), post_key(second)] and _pending(store) == 0


def test_posts_of_at_most_batch_transitions_none_in_two(hook: Hook, tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    store = Store(path)
    ids = _transitions(store, 0, 5)
    _sender(path, hook.url, batch=2)._round(store)
    assert [len(a) for _, a in hook.posts] == [2, 2, 1]
    assert sorted(hook.ids()) == sorted(ids) and len(set(hook.keys())) == 3
    posts = dict(store.db.execute("SELECT id, post FROM alerts").fetchall())
    assert {posts[i] for i in hook.ids(hook.keys()[0])} == {hook.keys()[0]}


def test_an_adopted_post_keeps_its_key(hook: Hook, tmp_path: Path) -> None:
    """A process dies after the 2xx for good; another one sharing the store adopts its outbox: the same POST."""
    path = str(tmp_path / "s.sqlite")
    store = Store(path)
    ids = _transitions(store, 0, 3, owner="p1")
    with pytest.raises(Killed):
        _sender(path, hook.url, owner="p1", kill_after=1)._round(store)
    store.db.execute("UPDATE senders SET heartbeat_at = 0 WHERE owner = 'p1'")  # silent for long
    adopter = _sender(path, hook.url, owner="p2")
    adopter.orphan_after = 1.0
    adopter._round(store)
    assert hook.keys() == [post_key(ids)] * 2 and _pending(store) == 0


def _old_store(path: Path, version: int) -> None:
    """A store of schema ``version`` (< 4) with one pending transition, as an older hcep left it."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    for step in range(1, version):
        for table, column, kind in MIGRATIONS[step]:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    row = AlertRow.of(Alert({"alertname": "Old", "severity": "info"}, {"summary": "s"}, 1e9), "ops", "pending", 1, "p1")
    cols = "id, query, webhook, severity, alert, status, next_at, created_at, owner"
    db.execute(f"INSERT INTO alerts ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row[:9])
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_store_opens_and_its_pending_transitions_go_out(hook: Hook, tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    _old_store(path, version)
    store = Store(str(path))
    assert store.schema_version() == SCHEMA_VERSION == 4
    assert "post" in {r[1] for r in store.db.execute("PRAGMA table_info(alerts)")}
    _sender(str(path), hook.url)._round(store)
    [(key, [entry])] = hook.posts
    assert key == carried_transition_id(entry) == transition_id(entry) and _pending(store) == 0
