"""Alerts to webhooks: Alertmanager v4 payloads from a durable outbox, signed, retried with backoff.

Why this shape: receivers that already take Alertmanager's webhook (``version: "4"``) take ours unchanged; the outbox
is the ``alerts`` table of :mod:`app.store`, written in the checkpoint transaction, so an alert transition exists for
delivery exactly when the records that caused it are committed, and survives restarts and receivers being down.
Each payload entry is one transition of one alert (:class:`contracts.alerts.Alert`: firing, or resolved with its
``endsAt``) and carries its transition id in ``annotations.transition_id``.

Exactly once per transition, for a receiver that drops what it has seen: the outbox fixes which transitions a POST
carries, durably, before its first try (:meth:`app.store.Store.due_posts`), and every later try of that POST -- after
a failure, or after a kill -9 between the receiver's 2xx and the outbox mark -- carries the same entries under the
same ``Idempotency-Key`` (:func:`contracts.alerts.post_key`: the transition id for one entry, else a hash of the
ids).  So no transition ever travels under two keys: dropping repeated keys, or the same ``transition_id``, shows
each transition once.  The kill points ``delivery`` (:mod:`app.testhooks`) lie before each POST and between its 2xx
and the mark.

The signature header ``X-Hcep-Signature: sha256=<hex>`` is the HMAC-SHA256 of the request body with the secret from
the environment variable named by the webhook's ``secret_env`` (default ``HCEP_WEBHOOK_SECRET``); no secret, no header.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from app.testhooks import crash_point
from contracts.alerts import carried_transition_id, post_key, transition_id, with_transition_id

log = logging.getLogger(__name__)

DEFAULT_SECRET_ENV = "HCEP_WEBHOOK_SECRET"
SIGNATURE_HEADER = "X-Hcep-Signature"
ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class Webhook:
    name: str
    url: str
    secret_env: str = DEFAULT_SECRET_ENV

    def secret(self) -> str | None:
        return os.environ.get(self.secret_env) or None


def parse_webhooks(spec: Any) -> dict[str, Webhook]:
    """``{name: url}`` or ``{name: {url, secret_env}}`` (pack ``settings.webhooks`` or the config file)."""
    out: dict[str, Webhook] = {}
    if not spec:
        return out
    if not isinstance(spec, dict):
        raise ValueError("webhooks must be a mapping of name to URL or {url, secret_env}")
    for name, value in spec.items():
        if isinstance(value, str):
            out[str(name)] = Webhook(str(name), value)
        elif isinstance(value, dict) and isinstance(value.get("url"), str):
            out[str(name)] = Webhook(str(name), value["url"], str(value.get("secret_env") or DEFAULT_SECRET_ENV))
        else:
            raise ValueError(f"webhook {name!r}: give a URL or {{url, secret_env}}")
    for hook in out.values():
        if not hook.url.startswith(("http://", "https://")):
            raise ValueError(f"webhook {hook.name!r}: not an http(s) URL: {hook.url!r}")
    return out


class DeliveryError(OSError):
    """A POST that did not get a 2xx answer: the receiver is down, refused, or answered something malformed."""


def sign(body: bytes, secret: str) -> str:
    """The value of the signature header for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(body: bytes, secret: str, header: str | None) -> bool:
    """For receivers (and tests): does ``header`` sign ``body`` with ``secret``?"""
    return header is not None and hmac.compare_digest(sign(body, secret), header)


def payload(alerts: list[dict[str, Any]], receiver: str) -> dict[str, Any]:
    """Alertmanager webhook payload, version 4 (``status`` firing when any entry fires)."""
    common_labels = dict(alerts[0]["labels"]) if alerts else {}
    for a in alerts[1:]:
        common_labels = {k: v for k, v in common_labels.items() if a["labels"].get(k) == v}
    group_labels = {k: common_labels[k] for k in ("alertname",) if k in common_labels}
    return {
        "version": "4",
        "groupKey": "{}:" + json.dumps(group_labels, sort_keys=True),
        "truncatedAlerts": 0,
        "status": "firing" if any(a.get("status", "firing") == "firing" for a in alerts) else "resolved",
        "receiver": receiver,
        "groupLabels": group_labels,
        "commonLabels": common_labels,
        "commonAnnotations": {},
        "externalURL": "",
        "alerts": alerts,
    }


def post(hook: Webhook, alerts: list[dict[str, Any]], timeout: float = 5.0, ids: list[str] | None = None) -> None:
    """POST one payload; raise on anything but a 2xx answer.  ``ids``: the outbox ids of ``alerts`` (their transition
    ids; by default the ids the entries carry, or compute); each entry goes out with ``annotations.transition_id``,
    the POST with ``Idempotency-Key`` = :func:`contracts.alerts.post_key` of the ids."""
    if ids is None:
        ids = [carried_transition_id(a) or transition_id(a) for a in alerts]
    if len(ids) != len(alerts):
        raise ValueError(f"{len(alerts)} alert(s) but {len(ids)} id(s)")
    entries = [with_transition_id(a, tid) for a, tid in zip(alerts, ids, strict=True)]
    body = json.dumps(payload(entries, hook.name), separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "hcep", "Idempotency-Key": post_key(ids)}
    secret = hook.secret()
    if secret:
        headers[SIGNATURE_HEADER] = sign(body, secret)
    # stream=True: the body is never read, so a receiver answering gigabytes costs nothing.  A malformed answer (a bad
    # status line, an unknown protocol; found by fuzzing) is a failed delivery like any other, retried with back-off.
    try:
        with requests.post(
            hook.url, data=body, headers=headers, timeout=timeout, allow_redirects=False, stream=True
        ) as resp:
            if not 200 <= resp.status_code < 300:
                raise DeliveryError(f"HTTP {resp.status_code} {resp.reason or ''}".strip())
    except requests.RequestException as err:
        raise DeliveryError(f"{type(err).__name__}: {err}") from None


def backoff(attempts: int, base: float, cap: float) -> float:
    """Seconds before the next try after ``attempts`` failures: exponential, capped, with jitter."""
    return float(min(cap, base * (2 ** max(0, attempts - 1))) * (0.5 + random.random() / 2))


class AlertSender(threading.Thread):
    """Delivers the outbox rows of one owner (this process) until stopped; never gives up on an alert.

    Processes sharing a store also adopt the rows of an owner whose heartbeat stopped ``orphan_after`` seconds ago.
    """

    def __init__(
        self,
        store_path: str,
        owner: str,
        webhooks: dict[str, Webhook],
        *,
        batch: int = 50,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        timeout: float = 5.0,
        orphan_after: float = 30.0,
        on_result: Callable[[str, int], None] | None = None,
        deliver: Callable[..., None] | None = None,
    ) -> None:
        super().__init__(name="hcep-alerts", daemon=True)
        self.store_path = store_path
        self.owner = owner
        self.webhooks = webhooks
        self.batch = batch
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.orphan_after = orphan_after
        self.last_heartbeat = 0.0
        self.on_result = on_result or (lambda status, n: None)
        #: ``deliver(hook, alerts, timeout=, ids=)``: :func:`post`, or an in-memory receiver in tests
        self.deliver = deliver or post
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.down: dict[str, tuple[int, float]] = {}  # webhook -> (consecutive failures, retry not before)
        self._unmarked: list[str] = []  # outbox ids delivered but not yet marked (the store was full)

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds until no committed alert is due (a clean stop delivers what it can)."""
        from app.store import Store

        store = Store(self.store_path)
        try:
            deadline = time.monotonic() + timeout
            self.wake.set()
            while time.monotonic() < deadline and self.is_alive():
                if not store.due_alerts(self.owner, time.time(), limit=1):
                    return
                time.sleep(0.05)
        finally:
            store.close()

    def run(self) -> None:
        from app.store import Store, unwritable

        store = Store(self.store_path)
        blocked = 0  # rounds failed in a row because the store cannot be written
        try:
            while not self.stopping.is_set():
                try:
                    sent_any = self._round(store)
                except (sqlite3.Error, OSError) as err:  # a full disk: the outbox waits, this thread stays
                    cause = unwritable(err)
                    if cause is None:
                        raise
                    blocked += 1
                    self.on_result("store_error", 1)
                    if blocked == 1:
                        log.error(
                            "store %s: the alert outbox cannot be written (%s: %s); delivery waits for it (an alert "
                            "already delivered is marked then, not sent again)",
                            self.store_path,
                            cause,
                            err,
                        )
                    self.wake.wait(min(self.max_delay, 2.0))
                    self.wake.clear()
                    continue
                if blocked:
                    log.warning("store %s: the alert outbox is writable again", self.store_path)
                    blocked = 0
                if sent_any:
                    continue
                nxt = store.next_due(self.owner)
                wait = 1.0 if nxt is None else min(1.0, max(0.0, nxt - time.time()))
                self.wake.wait(wait)
                self.wake.clear()
        finally:
            store.close()

    def _round(self, store: Any) -> bool:
        if self._unmarked:  # delivered while the store could not record it: record it before anything else
            store.mark_delivered(self._unmarked, time.time())
            self._unmarked = []
        now = time.time()
        if now - self.last_heartbeat >= 1.0:
            store.heartbeat(self.owner, now)
            self.last_heartbeat = now
            adopted = store.adopt_orphans(self.owner, now, self.orphan_after)
            if adopted:
                log.warning(
                    "adopted %d undelivered alert(s) of a process silent for %.0f s", adopted, self.orphan_after
                )
        posts = store.due_posts(self.owner, time.time(), self.batch, limit=self.batch * 4)
        progressed = False
        for post_ in posts:
            name, ids = post_.webhook, [tid for tid, _ in post_.rows]
            failures, not_before = self.down.get(name, (0, 0.0))
            if time.time() < not_before:
                continue  # this receiver failed recently: its POSTs wait for its back-off
            hook = self.webhooks.get(name)
            if hook is None:  # configured away since the alert was queued: keep it, try again later
                store.mark_failed(ids, f"no URL for webhook {name!r}", [time.time() + self.max_delay] * len(ids))
                continue
            entries = [with_transition_id(json.loads(alert), tid) for tid, alert in post_.rows]
            crash_point("delivery", "before the POST")
            try:
                self.deliver(hook, entries, timeout=self.timeout, ids=ids)
            except (requests.RequestException, OSError, ValueError) as err:
                tries = max(store.attempts(ids).values(), default=0) + 1
                now = time.time()
                # One next try for the whole POST: its transitions stay together, under its key.
                store.mark_failed(ids, str(err), [now + backoff(tries, self.base_delay, self.max_delay)] * len(ids))
                self.down[name] = (failures + 1, now + backoff(failures + 1, self.base_delay, self.max_delay))
                self.on_result("failed", len(ids))
                if failures == 0:
                    log.warning(
                        "webhook %s: %d alert(s) not delivered (%s); retrying with back-off", name, len(ids), err
                    )
                continue  # this receiver is down: its other POSTs wait for the next round
            crash_point("delivery", "after the receiver's 2xx, before the outbox mark")
            if failures:
                log.info("webhook %s: delivering again", name)
            self.down.pop(name, None)
            self.on_result("delivered", len(ids))
            try:
                store.mark_delivered(ids, time.time())
            except (sqlite3.Error, OSError):
                self._unmarked.extend(ids)  # marked by the next round that can write: never sent twice
                raise
            progressed = True
        return progressed
