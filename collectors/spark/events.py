"""The Spark event vocabulary: type names, the default ``delta``, stable ids, and the stage partition key.

Every event carries ``app_id``; stage-level events also carry ``stage_id``, ``stage_attempt`` and ``stage_key``
(``"<app_id>[_<app_attempt>]/<stage_id>/<attempt>"``; every event of an application attempt also carries
``app_attempt``): the engine partitions runs by a query's first equivalence attribute, so one
attribute that names a stage attempt is much cheaper than three.  Spark's job and task ids are ``spark_job_id`` and
``spark_task_id``, never ``job_id``/``task_id``, which the Hadoop pack's queries group by.
"""

from __future__ import annotations

import hashlib
from typing import Any

Event = dict[str, Any]

APP_START = "SparkAppStart"
APP_END = "SparkAppEnd"
JOB_START = "SparkJobStart"
JOB_END = "SparkJobEnd"
STAGE_SUBMITTED = "StageSubmitted"
STAGE_COMPLETED = "StageCompleted"
TASK = "SparkTask"
EXECUTOR_ADDED = "ExecutorAdded"
EXECUTOR_REMOVED = "ExecutorRemoved"
#: One per stage attempt running (submitted, not yet completed) when an executor is removed, from the same line as
#: the ExecutorRemoved: the collector knows which stages run, so every (stage attempt, lost executor) pair is one
#: event -- a query over StageSubmitted .. ExecutorRemoved can only take the first removal of each stage live.
STAGE_EXECUTOR_LOST = "StageExecutorLost"

TYPES = (
    APP_START,
    APP_END,
    JOB_START,
    JOB_END,
    STAGE_SUBMITTED,
    STAGE_COMPLETED,
    TASK,
    EXECUTOR_ADDED,
    EXECUTOR_REMOVED,
    STAGE_EXECUTOR_LOST,
)

#: Spark stamps every listener event with the driver's clock in epoch milliseconds (task launch and finish times
#: too: the driver's TaskSetManager records them), so the times are exact to the millisecond and share one clock.
#: The only uncertainty is the truncation to the millisecond, below any tick the engine uses: the events are
#: precise.  Raise it (``--delta``) to model clock skew when joining Spark events with another source.
DEFAULT_DELTA = 0.0

#: The largest time in epoch milliseconds taken as a clock reading (``engine.events.MAX_SECONDS``, 1e11 s).
MAX_MS = 1e14


def event_id(source: str, lineno: int, index: int = 0) -> str:
    """A stable id from the log's name (without ``.inprogress``), the line and the event's index within the line (0:
    the line's own event; StageExecutorLost events are 1, 2, ...): re-reading gives the same ids, and the rename of a
    finished log does not change them."""
    text = f"spark\x00{source}\x00{lineno}" + (f"\x00{index}" if index else "")
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def stage_key(app_id: str, stage_id: int, attempt: int, app_attempt: str | None = None) -> str:
    """``<app_id>[_<app_attempt>]/<stage_id>/<attempt>``: an application's attempts (YARN cluster mode re-runs the
    driver) reuse its App ID and its stage ids, so the key names the application attempt as Spark's log names do."""
    app = f"{app_id}_{app_attempt}" if app_attempt is not None else app_id
    return f"{app}/{stage_id}/{attempt}"


def base(etype: str, ms: float, eid: str, delta: float, app_id: str) -> Event:
    """The docs/semantics.md section 1 keys of an event at ``ms`` epoch milliseconds."""
    return {"type": etype, "ts": round(ms / 1000.0, 3), "id": eid, "delta": delta, "app_id": app_id}
