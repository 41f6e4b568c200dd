"""Alert objects for the Alertmanager tests, each test with job ids of its own (one Alertmanager serves them all)."""

from __future__ import annotations

import itertools
import time
import uuid

from contracts.alerts import Alert

_seq = itertools.count()


def job_id() -> str:
    """A job id no other test uses."""
    return f"job_{int(time.time())}_{next(_seq):04d}_{uuid.uuid4().hex[:6]}"


def make_alert(
    job: str,
    name: str = "SkewedMappers",
    *,
    task: str | None = None,
    severity: str = "warning",
    starts: float | None = None,
    ends: float | None = None,
    at: float = 0.0,
    summary: str = "",
) -> Alert:
    labels = {"alertname": name, "severity": severity, "pack": "hadoop", "query": "Q1", "job_id": job}
    if task is not None:
        labels["task_id"] = task
    annotations = {
        "summary": summary or f"{name} in {job}",
        "description": "",
        "confidence": "0.875",
        "evidence": '{"query": "Q1"}',
    }
    return Alert(labels, annotations, time.time() - 30 if starts is None else starts, ends, at=at)
