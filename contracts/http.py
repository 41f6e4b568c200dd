"""How a failed HTTP request is named, the same way wherever the project talks to Alertmanager.

``hcep run``'s alert sender (``app.alerts.alertmanager``) and the dashboard's alert page
(``dashboards.backends.alertmanager``) both report an unreachable Alertmanager to an operator; the reason reads the
same in a service log and on the page because it is made here.
"""

from __future__ import annotations

import requests

#: Causes found in requests' (nested) messages, reported as the cause itself.
_KNOWN = (
    "Connection refused",
    "Name or service not known",
    "No route to host",
    "Connection reset",
    "Remote end closed connection",
    "certificate verify failed",
)


def failure_reason(err: requests.RequestException) -> str:
    """The short cause of a failed request (requests' own messages nest three exceptions deep)."""
    if isinstance(err, requests.Timeout):
        return "timed out"
    text = str(err)
    for known in _KNOWN:
        if known in text:
            return known.lower()
    return text.splitlines()[0][:200] if text else type(err).__name__
