"""Alerts to Prometheus Alertmanager: a small client of its v2 API, and the sender ``hcep run`` delivers through.

Why a sender of its own (not the webhook outbox): Alertmanager keeps alerts only in memory and expects its clients to
re-send every firing alert periodically, each with an ``endsAt`` a few intervals ahead, so that an alert whose source
died resolves by itself; Prometheus does exactly that (``resend_delay`` 1 min, ``endsAt`` = now + 4 x interval).
The sender keeps the latest state of each alert (by fingerprint) and re-posts it, which also restores Alertmanager's
state after a restart.  ``starts_at``/``ends_at`` are event time (the rule engine's clock); only the keep-alive
``endsAt`` of a firing alert is wall-clock time, since it is about this process being alive.  Every alert posted
carries the id of the transition it states in ``annotations.transition_id`` (as the webhook outbox's entries do).

HTTP goes through ``requests`` (the design card's client) with (connect, read) timeouts; every failure surfaces as
:class:`AlertmanagerError` with the method, the URL and the reason in one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import requests

from app.alerts.webhook import backoff
from contracts.alerts import Alert, rfc3339, with_transition_id
from contracts.http import failure_reason

log = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:9093"
#: Seconds between re-sends of a firing alert (Prometheus' ``--rules.alert.resend-delay`` default).
RESEND_INTERVAL = 60.0
#: A firing alert's ``endsAt`` is this many resend intervals ahead (Prometheus uses 4).
KEEPALIVE_INTERVALS = 4
#: Seconds a resolved alert keeps being re-sent before it is forgotten (Prometheus' ``resolvedRetention``).
RESOLVED_RETENTION = 15 * 60.0
#: Alerts per POST (Prometheus' notifier batches 64).
BATCH = 64

Matchers = Mapping[str, str] | Sequence[str] | None


class AlertmanagerError(Exception):
    """Alertmanager could not be reached, or answered with an error or with something that is not its API.

    ``status`` is the HTTP status when there was an answer; ``retryable`` is False for a 4xx (the request itself is
    wrong: sending it again gives the same answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status >= 500 or self.status in (408, 429)


def _malformed(err: requests.RequestException) -> bool:
    """Did the server answer, with a broken status line, head or body (rather than not answer)?"""
    if isinstance(err, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)):
        return True
    text = str(err)
    return any(
        k in text for k in ("BadStatusLine", "IncompleteRead", "LineTooLong", "UnknownProtocol", "InvalidHeader")
    )


def _matchers(filter: Matchers) -> list[str]:  # noqa: A002 - Alertmanager's parameter name
    """``{"job_id": "j1"}`` -> ``['job_id="j1"']``; strings are passed on as Alertmanager matchers."""
    if filter is None:
        return []
    if isinstance(filter, Mapping):
        return [f'{name}="{_escape(str(value))}"' for name, value in filter.items()]
    if isinstance(filter, str):
        return [filter]
    return [str(m) for m in filter]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _flag(value: bool) -> str:
    return "true" if value else "false"


class Alertmanager:
    """A client of one Alertmanager's v2 API (``url`` is its base, e.g. ``http://127.0.0.1:9093``, with its route
    prefix if it has one).  Not for concurrent use from several threads (one ``requests`` session)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        timeout: float = 5.0,
        connect_timeout: float = 2.0,
        session: requests.Session | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"Alertmanager URL must be http(s)://HOST:PORT, got {url!r}")
        self.url = url.rstrip("/")
        self.timeout = (connect_timeout, timeout)
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "hcep")

    def __repr__(self) -> str:
        return f"Alertmanager({self.url!r})"

    def close(self) -> None:
        self.session.close()

    # ------------------------------------------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, *, params: Any = None, body: Any = None) -> requests.Response:
        url = self.url + path
        try:
            resp = self.session.request(method, url, params=params, json=body, timeout=self.timeout)
        except requests.RequestException as err:
            if _malformed(err):  # it answered, with something that is not HTTP (found by fuzzing)
                raise AlertmanagerError(f"{method} {url}: a malformed answer ({failure_reason(err)})") from None
            raise AlertmanagerError(f"{method} {url}: cannot reach Alertmanager ({failure_reason(err)})") from None
        except ValueError as err:  # a malformed answer requests does not wrap (a redirect to undecodable bytes)
            text = str(err).splitlines()[0][:200] if str(err) else ""
            raise AlertmanagerError(f"{method} {url}: a malformed answer ({type(err).__name__}: {text})") from None
        if not 200 <= resp.status_code < 300:
            detail = " ".join(resp.text.split())[:300] or resp.reason or "no body"
            raise AlertmanagerError(f"{method} {url}: HTTP {resp.status_code}: {detail}", resp.status_code)
        return resp

    def _json(self, method: str, path: str, kind: type, **kw: Any) -> Any:
        resp = self._request(method, path, **kw)
        try:
            data = resp.json()
        except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser goes
            snippet = " ".join(resp.text.split())[:120]
            raise AlertmanagerError(
                f"{method} {self.url}{path}: the answer is not JSON, so not Alertmanager's v2 API: {snippet!r}",
                resp.status_code,
            ) from None
        if not isinstance(data, kind):
            raise AlertmanagerError(
                f"{method} {self.url}{path}: expected a JSON {kind.__name__}, got "
                f"{type(data).__name__}: not Alertmanager's v2 API",
                resp.status_code,
            )
        return data

    # ------------------------------------------------------------------------------------------------------- API
    def ready(self) -> bool:
        """Does ``GET /-/ready`` answer 200?  False (never an exception) when it does not answer or not 200."""
        try:
            self._request("GET", "/-/ready")
        except AlertmanagerError:
            return False
        return True

    def status(self) -> dict[str, Any]:
        """``GET /api/v2/status``: version, uptime, cluster state and the loaded config."""
        return cast("dict[str, Any]", self._json("GET", "/api/v2/status", dict))

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """``POST /api/v2/alerts`` of PostableAlerts (:meth:`contracts.alerts.Alert.to_json`).  A 400 means some
        alert was invalid (Alertmanager still takes the valid ones): it raises with Alertmanager's reasons."""
        if alerts:
            self._request("POST", "/api/v2/alerts", body=alerts)

    def _selection(
        self,
        active: bool,
        silenced: bool,
        inhibited: bool,
        unprocessed: bool | None,
        filter: Matchers,
        receiver: str | None,
    ) -> dict[str, Any]:  # noqa: A002
        params: dict[str, Any] = {"active": _flag(active), "silenced": _flag(silenced), "inhibited": _flag(inhibited)}
        if unprocessed is not None:
            params["unprocessed"] = _flag(unprocessed)
        if filter:
            params["filter"] = _matchers(filter)
        if receiver:
            params["receiver"] = receiver
        return params

    def alerts(
        self,
        *,
        active: bool = True,
        silenced: bool = True,
        inhibited: bool = True,
        unprocessed: bool = True,
        filter: Matchers = None,  # noqa: A002 - Alertmanager's parameter name
        receiver: str | None = None,
    ) -> list[dict[str, Any]]:
        """``GET /api/v2/alerts``: GettableAlerts (``labels``, ``annotations``, ``startsAt``, ``endsAt``,
        ``fingerprint``, ``status.state`` in ``active|suppressed|unprocessed``, ``status.silencedBy``...).
        ``filter`` is ``{label: value}`` (equality) or Alertmanager matcher strings such as ``'severity=~"warn.*"'``.
        Resolved alerts are never listed."""
        params = self._selection(active, silenced, inhibited, unprocessed, filter, receiver)
        return cast("list[dict[str, Any]]", self._json("GET", "/api/v2/alerts", list, params=params))

    def groups(
        self,
        *,
        active: bool = True,
        silenced: bool = True,
        inhibited: bool = True,
        filter: Matchers = None,
        receiver: str | None = None,
    ) -> list[dict[str, Any]]:  # noqa: A002
        """``GET /api/v2/alerts/groups``: the route's groups (``labels`` = the ``group_by`` values, ``receiver``,
        ``alerts``)."""
        params = self._selection(active, silenced, inhibited, None, filter, receiver)
        return cast("list[dict[str, Any]]", self._json("GET", "/api/v2/alerts/groups", list, params=params))

    def silences(self, filter: Matchers = None) -> list[dict[str, Any]]:  # noqa: A002
        """``GET /api/v2/silences`` (all states: active, pending, expired)."""
        params = {"filter": _matchers(filter)} if filter else None
        return cast("list[dict[str, Any]]", self._json("GET", "/api/v2/silences", list, params=params))

    def create_silence(
        self,
        matchers: Mapping[str, str] | Sequence[Mapping[str, Any]],
        *,
        duration: float = 3600.0,
        starts_at: float | None = None,
        ends_at: float | None = None,
        created_by: str = "hcep",
        comment: str = "silenced by hcep",
    ) -> str:
        """``POST /api/v2/silences``; the new silence's id.  ``matchers`` is ``{label: value}`` (equality) or
        Alertmanager's matcher objects (``name``, ``value``, ``isRegex``, ``isEqual``).  Times are epoch seconds
        (wall clock); by default from now for ``duration`` seconds."""
        if isinstance(matchers, Mapping):
            items = [{"name": k, "value": str(v), "isRegex": False, "isEqual": True} for k, v in matchers.items()]
        else:
            items = [{"isRegex": False, "isEqual": True, **dict(m)} for m in matchers]
        if not items:
            raise ValueError("a silence needs at least one matcher")
        start = time.time() if starts_at is None else starts_at
        end = start + duration if ends_at is None else ends_at
        body = {
            "matchers": items,
            "startsAt": rfc3339(start),
            "endsAt": rfc3339(end),
            "createdBy": created_by,
            "comment": comment,
        }
        data = self._json("POST", "/api/v2/silences", dict, body=body)
        if not isinstance(data.get("silenceID"), str):
            raise AlertmanagerError(f"POST {self.url}/api/v2/silences: no silenceID in the answer: {data!r:.120}")
        return str(data["silenceID"])

    def expire_silence(self, silence_id: str) -> None:
        """``DELETE /api/v2/silence/{id}``: the silence ends now (it stays listed as expired)."""
        if not silence_id or "/" in silence_id:
            raise ValueError(f"not a silence id: {silence_id!r}")
        self._request("DELETE", f"/api/v2/silence/{silence_id}")


# ---------------------------------------------------------------------------------------------------------- sender
@dataclass
class _Entry:
    alert: Alert
    version: int = 0  #: bumped by every transition taken; a send clears ``dirty`` only for the version it sent
    dirty: bool = True  #: a transition not yet delivered
    sent_at: float | None = None  #: wall clock of the last successful POST carrying this alert
    resolved_since: float | None = None  #: wall clock when its resolution was taken (the retention clock)


class AlertmanagerSender(threading.Thread):
    """Delivers alert transitions to Alertmanager and keeps them alive there, from a thread of its own.

    - :meth:`submit` takes transitions and returns at once; the latest transition of each alert (fingerprint) wins,
      an older one (smaller ``at``) arriving late is ignored.
    - New transitions are posted promptly, batched (``batch`` alerts a POST, after ``linger`` seconds to gather a
      burst).
    - Every ``resend_interval`` seconds each firing alert is posted again with ``endsAt`` = now (wall clock) + 4 x
      ``resend_interval``, so Alertmanager resolves it by itself if this process dies.  Resolved alerts are posted
      with their own ``endsAt`` and re-sent likewise for ``resolved_retention`` seconds (so an Alertmanager that
      restarted or missed the first POST still learns it), then forgotten.  A round re-sends everything due within
      half an interval, so re-sends gather into few requests.
    - While Alertmanager is down, rounds back off exponentially (``base_delay`` doubling up to ``max_delay``, with
      jitter); the state keeps being updated meanwhile, and the latest is what goes out once it answers.
    - ``on_result(status, n)``: ``delivered`` / ``failed`` (to be retried) / ``rejected`` (Alertmanager answered 4xx,
      e.g. an invalid label; it is not retried before its next re-send), with the number of alerts.
    """

    def __init__(
        self,
        client: Alertmanager | str,
        *,
        resend_interval: float = RESEND_INTERVAL,
        resolved_retention: float = RESOLVED_RETENTION,
        batch: int = BATCH,
        linger: float = 0.05,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        on_result: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(name="hcep-alertmanager", daemon=True)
        if resend_interval <= 0 or batch < 1 or max_delay <= 0 or base_delay <= 0:
            raise ValueError("resend_interval, batch, base_delay and max_delay must be positive")
        self.client = Alertmanager(client) if isinstance(client, str) else client
        self.resend_interval = resend_interval
        self.resolved_retention = resolved_retention
        self.batch = batch
        self.linger = linger
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.on_result = on_result or (lambda status, n: None)
        self.clock = clock
        self.failures = 0  #: consecutive failed rounds (0 while Alertmanager answers)
        self.last_error = ""
        self._retry_at = 0.0
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()

    # ------------------------------------------------------------------------------------------- the caller's side
    def submit(self, alerts: Iterable[Alert]) -> None:
        """Take transitions (never blocks on the network)."""
        now = self.clock()
        taken = False
        with self._lock:
            for alert in alerts:
                fp = alert.fingerprint
                entry = self._entries.get(fp)
                if entry is not None and alert.at < entry.alert.at:
                    continue  # an older transition than the one we have
                if entry is None:
                    entry = self._entries[fp] = _Entry(alert)
                else:
                    if entry.alert == alert and not entry.dirty:
                        continue  # the same transition again: nothing new to tell
                    entry.alert, entry.version, entry.dirty = alert, entry.version + 1, True
                entry.resolved_since = None if alert.ends_at is None else (entry.resolved_since or now)
                taken = True
        if taken:
            self._wake.set()

    def pending(self) -> int:
        """Transitions taken but not yet delivered."""
        with self._lock:
            return sum(1 for e in self._entries.values() if e.dirty)

    def known(self) -> dict[str, Alert]:
        """The latest state of every alert still kept (firing, or resolved within the retention)."""
        with self._lock:
            return {fp: e.alert for fp, e in self._entries.items()}

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the thread (what is undelivered stays undelivered: :meth:`drain` first for a clean stop)."""
        self._stopping.set()
        self._wake.set()
        if timeout is not None and self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until every transition taken is delivered (an ongoing back-off is cut
        short for one more try); True when nothing is pending."""
        deadline = time.monotonic() + timeout
        self._retry_at = 0.0
        self._wake.set()
        while self.pending():
            if time.monotonic() >= deadline or not self.is_alive():
                return False
            time.sleep(0.02)
        return True

    def finish(self, timeout: float) -> int:
        """A clean stop: deliver what was taken (up to ``timeout`` seconds), then stop the thread; the number of
        transitions left undelivered."""
        self.drain(timeout)
        left = self.pending()
        self.stop()
        return left

    # ------------------------------------------------------------------------------------------------- the thread
    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                try:
                    wait = self._round()
                except Exception:  # a bug must not end delivery for good: log it, try again after the cap
                    log.exception("Alertmanager sender: unexpected error; next round in %.0f s", self.max_delay)
                    wait = self.max_delay
                if wait > 0:
                    woke = self._wake.wait(wait)
                    if woke and self.linger > 0 and not self._stopping.is_set():
                        self._stopping.wait(self.linger)  # gather the rest of a burst of submits into one POST
        finally:
            self.client.close()

    def _postable(self, alert: Alert, now: float) -> dict[str, Any]:
        # annotations.transition_id: the transition this state comes from, which Alertmanager passes on to its
        # receivers (a re-send of the same state carries the same id; the keep-alive endsAt below does not change it).
        body = with_transition_id(alert.to_json(), alert.transition_id)
        if alert.ends_at is None:
            # Keep-alive: wall clock, never before startsAt (an event clock ahead of this host's would make the
            # alert invalid: Alertmanager rejects endsAt < startsAt).
            body["endsAt"] = rfc3339(max(now, alert.starts_at) + KEEPALIVE_INTERVALS * self.resend_interval)
        elif alert.ends_at < alert.starts_at:
            body["endsAt"] = body["startsAt"]
        return body

    def _due(self, now: float) -> list[tuple[str, int, Alert]]:
        """The alerts to post now (fingerprint, version, state); forgets resolved alerts past their retention."""
        due: list[tuple[str, int, Alert]] = []
        with self._lock:
            for fp, e in list(self._entries.items()):
                if not e.dirty and e.resolved_since is not None and now - e.resolved_since >= self.resolved_retention:
                    del self._entries[fp]
                elif e.dirty or e.sent_at is None or e.sent_at + self.resend_interval <= now:
                    due.append((fp, e.version, e.alert))
            if due:  # a round goes out anyway: re-sends due within half an interval go along
                horizon = now + self.resend_interval / 2
                due += [
                    (fp, e.version, e.alert)
                    for fp, e in self._entries.items()
                    if not e.dirty and e.sent_at is not None and now < e.sent_at + self.resend_interval <= horizon
                ]
        return due

    def _next_wait(self, now: float) -> float:
        """Seconds until something is due: a re-send, or a resolved alert to forget."""
        with self._lock:
            times = [now if e.dirty else (e.sent_at or now) + self.resend_interval for e in self._entries.values()]
            times += [
                e.resolved_since + self.resolved_retention
                for e in self._entries.values()
                if e.resolved_since is not None
            ]
        return max(0.0, min(times, default=now + self.resend_interval) - now)

    def _round(self) -> float:
        """Post what is due; the seconds to wait before the next round."""
        now = self.clock()
        if now < self._retry_at:
            return self._retry_at - now
        due = self._due(now)
        for i in range(0, len(due), self.batch):
            chunk = due[i : i + self.batch]
            try:
                self.client.post_alerts([self._postable(alert, now) for _, _, alert in chunk])
            except AlertmanagerError as err:
                if not err.retryable:
                    log.error("Alertmanager rejected %d alert(s): %s", len(chunk), err)
                    self._sent(chunk, now)
                    self.on_result("rejected", len(chunk))
                    continue
                self.failures += 1
                self.last_error = str(err)
                delay = backoff(self.failures, self.base_delay, self.max_delay)
                self._retry_at = self.clock() + delay
                if self.failures == 1:
                    log.warning("%s; retrying with back-off (up to %.0f s)", err, self.max_delay)
                self.on_result("failed", len(due) - i)
                return delay
            if self.failures:
                log.info("Alertmanager %s answers again after %d failed round(s)", self.client.url, self.failures)
                self.failures = 0
                self.last_error = ""
            self._sent(chunk, now)
            self.on_result("delivered", len(chunk))
        return self._next_wait(self.clock())

    def _sent(self, chunk: list[tuple[str, int, Alert]], now: float) -> None:
        with self._lock:
            for fp, version, _ in chunk:
                entry = self._entries.get(fp)
                if entry is None:
                    continue
                entry.sent_at = now
                if entry.version == version:
                    entry.dirty = False
