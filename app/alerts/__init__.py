"""Alerts: rules over match records (``rules``), and the sinks that deliver them (``webhook``, ``alertmanager``).

Records are facts; alerts are judgements.  A pack's alert rules turn the records of its queries into alerts grouped
by job or reducer, with severity tiers, hold times and a resolved state (:mod:`app.alerts.rules`); the sinks deliver
the alert objects (:class:`contracts.alerts.Alert`) to webhooks and to Prometheus Alertmanager.
"""

from app.alerts.webhook import (
    DEFAULT_SECRET_ENV,
    SIGNATURE_HEADER,
    ZERO_TIME,
    AlertSender,
    Webhook,
    backoff,
    parse_webhooks,
    payload,
    post,
    sign,
    verify,
)

__all__ = [
    "DEFAULT_SECRET_ENV",
    "SIGNATURE_HEADER",
    "ZERO_TIME",
    "AlertSender",
    "Webhook",
    "backoff",
    "parse_webhooks",
    "payload",
    "post",
    "sign",
    "verify",
]
