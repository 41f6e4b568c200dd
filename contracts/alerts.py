"""The alert object: what ``hcep run`` sends and ``hcep match --alerts`` prints (docs/semantics.md section 8).

An alert is a judgement over match records, made by a pack's alert rule (``app.alerts.rules``): one alert per rule
and group (a job, a reducer), identified by its labels as Alertmanager identifies alerts.  The rule engine emits an
:class:`Alert` at each *transition* of a group: it starts firing, its severity changes (the old severity's alert is
resolved at the same moment, since severity is a label), or it resolves.  Times are event time (seconds), so the same
input gives the same alerts whether replayed from a file or consumed live.

Severities are Alertmanager's conventional ``info < warning < critical``; rules may grade by Dr. Elephant's tiers
``low < moderate < severe < critical`` (:data:`TIER_SEVERITY`), carried in the ``tier`` label.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

#: Alertmanager's conventional severity label values, least severe first.
SEVERITIES = ("info", "warning", "critical")
#: Dr. Elephant's severity tiers (least severe first) and the severity label each one carries.
TIER_SEVERITY = {"low": "info", "moderate": "warning", "severe": "critical", "critical": "critical"}
TIERS = tuple(TIER_SEVERITY)
#: Alertmanager's "no end time" (firing) in webhook payloads.
ZERO_TIME = "0001-01-01T00:00:00Z"


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for critical; -1 for anything else."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        return -1


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float | None:
    if not text or text.startswith("0001-"):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def fingerprint(labels: dict[str, str]) -> str:
    """A stable id of a label set (Alertmanager's identity of an alert), 16 hex digits."""
    text = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert transition.  ``ends_at`` is ``None`` while firing, the event time of resolution once resolved.

    ``labels`` always hold ``alertname`` (the rule), ``severity``, ``pack``, ``query`` and the rule's grouping labels
    (``job_id``, ``task_id``, ...); ``annotations`` hold ``summary``, ``description``, ``confidence`` and
    ``evidence`` (JSON: the query, the record ids and the RETURN values that produced the alert)."""

    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: float
    ends_at: float | None = None
    generator_url: str = ""
    #: Stream time at which this transition was decided (event-time seconds); also orders the outbox.
    at: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def status(self) -> str:
        return "firing" if self.ends_at is None else "resolved"

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.labels)

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "")

    @property
    def transition_id(self) -> str:
        """The idempotency key of this transition: the alert's identity, its status and its times as sent (RFC 3339,
        so that a receiver computes the same key from the JSON it got: :func:`transition_id`)."""
        ends = "" if self.ends_at is None else rfc3339(self.ends_at)
        body = f"{self.fingerprint}|{self.status}|{rfc3339(self.starts_at)}|{ends}"
        return hashlib.sha256(body.encode()).hexdigest()

    def resolved(self, at: float) -> Alert:
        return replace(self, ends_at=at, at=at)

    def to_json(self) -> dict[str, Any]:
        """Alertmanager v2 ``PostableAlert`` (``POST /api/v2/alerts``); ``endsAt`` only once resolved."""
        out: dict[str, Any] = {
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": rfc3339(self.starts_at),
        }
        if self.ends_at is not None:
            out["endsAt"] = rfc3339(self.ends_at)
        out["generatorURL"] = self.generator_url
        return out

    def to_webhook(self) -> dict[str, Any]:
        """One entry of an Alertmanager webhook payload (version 4): status, times, fingerprint."""
        return {
            "status": self.status,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": rfc3339(self.starts_at),
            "endsAt": ZERO_TIME if self.ends_at is None else rfc3339(self.ends_at),
            "generatorURL": self.generator_url,
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Alert:
        """From :meth:`to_json` or :meth:`to_webhook` output."""
        starts = parse_rfc3339(str(obj.get("startsAt", "")))
        ends = parse_rfc3339(str(obj.get("endsAt", "")))
        return cls(
            {str(k): str(v) for k, v in (obj.get("labels") or {}).items()},
            {str(k): str(v) for k, v in (obj.get("annotations") or {}).items()},
            0.0 if starts is None else starts,
            ends,
            str(obj.get("generatorURL", "")),
        )


def transition_id(obj: dict[str, Any]) -> str:
    """The transition id of an alert object as sent (``Alert.to_json`` or a webhook payload entry), computed from its
    labels, status and times (what :data:`TRANSITION_ANNOTATION` carries, for receivers that would rather read it)."""
    return Alert.from_json(obj).transition_id


#: The annotation in which every delivered entry carries its transition id (webhook payload entries and Alertmanager
#: PostableAlerts alike): a receiver drops a transition it has seen by reading this, whatever POST brought it.
TRANSITION_ANNOTATION = "transition_id"


def with_transition_id(obj: dict[str, Any], tid: str | None = None) -> dict[str, Any]:
    """A copy of an alert object whose ``annotations`` carry its transition id (``tid``, the outbox's id of it, or
    :func:`transition_id` of the object).  The annotation leaves the id unchanged: ids come from labels and times."""
    annotations = dict(obj.get("annotations") or {})
    annotations[TRANSITION_ANNOTATION] = tid if tid is not None else transition_id(obj)
    return {**obj, "annotations": annotations}


def carried_transition_id(obj: dict[str, Any]) -> str | None:
    """The transition id an entry carries in its annotations, None when it carries none."""
    value = (obj.get("annotations") or {}).get(TRANSITION_ANNOTATION)
    return value if isinstance(value, str) and value else None


def post_key(ids: Iterable[str]) -> str:
    """The ``Idempotency-Key`` of a POST carrying these transitions (and the outbox's id of that POST): the
    transition id itself for one, else the SHA-256 of the sorted ids joined by commas.  The outbox fixes a POST's
    transitions before sending it, so every re-send of it carries the same entries under the same key."""
    ordered = sorted(ids)
    if not ordered:
        raise ValueError("a POST carries at least one transition")
    return ordered[0] if len(ordered) == 1 else hashlib.sha256(",".join(ordered).encode()).hexdigest()
