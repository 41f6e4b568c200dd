"""The live demo's webhook receiver: where ``hcep run`` delivers the pack's alerts (Alertmanager's v4 JSON), and
where the demo's Alertmanager sends its notifications.

It listens on 127.0.0.1 (a free port).  On ``/alerts`` (hcep run's webhooks: one entry per alert *transition*) it
appends every transition to ``alerts.jsonl`` in the demo dir, counts the firing ones per rule and severity, keeps
which alerts are open (the latest transition of each fingerprint: :meth:`Receiver.open_counts`, for the demo's status
lines), and prints the first few warnings (anything above ``info``) of each rule on the terminal so a viewer sees
them arrive.  On ``/alertmanager`` (Alertmanager's
notifications: one per group, i.e. per job, carrying all its alerts) it appends each notification to
``alertmanager.jsonl`` next to it, counts them, and prints the first few.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts.alerts import fingerprint, transition_id

#: Alertmanager notifications printed on the terminal (the rest are only counted).
SHOWN_NOTIFICATIONS = 3
#: Alerts of one query printed on the terminal; the rest, and every ``info`` alert, are only counted (Q6 flags most
#: reducers while the load is out of balance, Q4 fires on every map output).
SHOWN_PER_QUERY = 3


class Receiver:
    def __init__(self, path: Path, say: Callable[[str], None], shown_per_query: int = SHOWN_PER_QUERY) -> None:
        self.path = path
        self.say = say
        self.shown_per_query = shown_per_query
        self.counts: Counter[tuple[str, str]] = Counter()
        self.open: dict[str, str] = {}  #: fingerprint -> severity of the alerts firing now
        self.notifications = 0  #: from Alertmanager
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self.url = ""

    def start(self) -> str:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                try:
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                    if self.path.startswith("/alertmanager"):
                        receiver.take_notification(json.loads(body or b"{}"))
                    else:
                        receiver.take(json.loads(body or b"{}"))
                except (ValueError, OSError):
                    self.send_response(400)
                    self.end_headers()
                    return
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                return

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="webhook", daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/alerts"
        return self.url

    @property
    def alertmanager_url(self) -> str:
        """Where Alertmanager's webhook notifications go (after :meth:`start`)."""
        return self.url.rsplit("/", 1)[0] + "/alertmanager"

    def take(self, payload: dict[str, Any]) -> None:
        alerts = payload.get("alerts") if isinstance(payload, dict) else None
        if not isinstance(alerts, list):
            raise ValueError("not an Alertmanager payload")
        with self.lock, open(self.path, "a", encoding="utf-8") as out:
            for alert in alerts:
                labels = alert.get("labels") or {}
                try:
                    key = transition_id(alert)
                except (ValueError, TypeError):
                    key = ""
                if key and key in self.seen:
                    continue  # at-least-once delivery: a retried POST
                self.seen.add(key)
                query, severity = str(labels.get("alertname", "?")), str(labels.get("severity", "?"))
                resolved = alert.get("status") == "resolved"
                fp = str(alert.get("fingerprint") or "") or fingerprint({str(k): str(v) for k, v in labels.items()})
                if resolved:
                    self.open.pop(fp, None)
                else:
                    self.counts[(query, severity)] += 1
                    self.open[fp] = severity
                out.write(json.dumps(alert, separators=(",", ":")) + "\n")
                if severity == "info" or resolved:
                    continue
                n = sum(v for (q, s), v in self.counts.items() if q == query and s != "info")
                if n <= self.shown_per_query:
                    summary = (alert.get("annotations") or {}).get("summary", "")
                    more = " (further ones are counted in the status lines)" if n == self.shown_per_query else ""
                    self.say(f"  alert {query} ({severity}): {summary}{more}")

    def take_notification(self, payload: dict[str, Any]) -> None:
        """One Alertmanager notification (webhook version 4): a group of alerts, firing or resolved."""
        alerts = payload.get("alerts") if isinstance(payload, dict) else None
        if not isinstance(alerts, list):
            raise ValueError("not an Alertmanager notification")
        with self.lock, open(self.path.with_name("alertmanager.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps(payload, separators=(",", ":")) + "\n")
            self.notifications += 1
            if self.notifications <= SHOWN_NOTIFICATIONS:
                group = ", ".join(f"{k}={v}" for k, v in sorted((payload.get("groupLabels") or {}).items()) if v)
                names = sorted({str((a.get("labels") or {}).get("alertname", "?")) for a in alerts})
                more = " (further ones are only counted)" if self.notifications == SHOWN_NOTIFICATIONS else ""
                self.say(
                    f"  Alertmanager notified {payload.get('status', '?')} {group or 'group'}: "
                    f"{len(alerts)} alert(s) ({', '.join(names)}){more}"
                )

    def open_counts(self) -> dict[str, int]:
        """The alerts open now (their latest transition fired), per severity."""
        with self.lock:
            return dict(Counter(self.open.values()))

    def totals(self) -> dict[str, int]:
        """Firing transitions received, per severity (a re-fired or escalated alert counts again)."""
        with self.lock:
            out: Counter[str] = Counter()
            for (_, severity), n in self.counts.items():
                out[severity] += n
            return dict(out)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
