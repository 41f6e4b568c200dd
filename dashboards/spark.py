"""What the Spark view shows, computed from the Spark pack's match records and the Spark events (no Streamlit here, so
it is tested on its own).

Why both: the store of ``hcep run`` holds the pack's records (StageDone, SlowTask, FetchWait, ExecutorLost,
StageRetry: each carries the figures the view needs in its RETURN values) but no Spark events; a data dir or the
archive may hold the events ``hcep collect spark`` wrote and no records.  A stage is shown from its StageDone record
when there is one, else from its StageCompleted event, so every source gives the same table.  The RETURN names of
``queries/spark.yaml`` are the contract.

Application attempts: YARN re-runs a failed driver as a new attempt under the same App ID, and each attempt numbers
its stages from 0 again, so a stage is keyed by ``app_attempt`` too (the collector's ``stage_key``), and so are the
stragglers, losses, retries and the alerts on them (the pack's RETURN names ``app_attempt`` and its rules group by it;
logs without attempts give none: an empty label, a null value).  Records of an older pack name no attempt: where the
events name the attempts of a stage, they stand for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

SPARK_QUERIES = ("StageDone", "SlowTask", "FetchWait", "ExecutorLost", "StageRetry")
SPARK_EVENTS = ("SparkAppStart", "SparkAppEnd", "StageCompleted", "ExecutorRemoved")
STAGE_KEY = ["app_id", "app_attempt", "stage_id", "stage_attempt"]
STAGE_COLUMNS = [
    "app_id", "app_attempt", "stage_id", "stage_attempt", "skew", "alerts", "tasks", "duration", "task_max",
    "task_median", "failed_tasks", "gc_ratio", "memory_spill", "spill_ratio", "status", "stage_name", "run_time",
    "gc_time", "disk_spill", "data_bytes", "fetch_wait_max", "end",
]  # fmt: skip
#: StageCompleted attribute -> the StageDone RETURN name it becomes.
_EVENT_NAMES = {"task_duration_max": "task_max", "task_duration_median": "task_median", "ts": "end"}
STRAGGLER_COLUMNS = [
    "kind", "app_id", "app_attempt", "stage_id", "stage_attempt", "task_index", "executor_id", "host", "duration",
    "avg_before", "ratio", "fetch_wait", "tasks_before", "end", "alerted",
]  # fmt: skip
LOSS_COLUMNS = [
    "app_id", "app_attempt", "stage_id", "stage_attempt", "executor_id", "host", "reason", "elapsed", "end", "alerted",
]  # fmt: skip
RETRY_COLUMNS = ["app_id", "app_attempt", "stage_id", "stage_attempt", "stage_name", "num_tasks", "end"]
APP_COLUMNS = [
    "app_id", "app_name", "start", "end", "stages", "tasks", "failed_tasks", "worst_skew", "memory_spill",
    "gc_ratio", "executors_lost", "retries", "open_alerts",
]  # fmt: skip


def _returns(matches: pd.DataFrame, query: str) -> pd.DataFrame:
    """The RETURN values (``r_<name>`` columns, prefix dropped) of one query's records, with ``end``."""
    mine = matches[matches["query"] == query] if not matches.empty else matches
    if mine.empty:
        return pd.DataFrame()
    cols = {c: c[2:] for c in mine.columns if c.startswith("r_")}
    out = mine[list(cols)].rename(columns=cols)
    out["end"] = mine["end"].to_numpy()
    return out.reset_index(drop=True)


def _int(frame: pd.DataFrame, *cols: str) -> pd.DataFrame:
    for col in cols:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    return frame


def spark_alerts(alerts: pd.DataFrame) -> pd.DataFrame:
    """The alerts of the Spark pack (its queries, or an ``app_id`` label)."""
    if alerts.empty:
        return alerts
    apps = alerts["labels"].map(lambda labels: bool(isinstance(labels, dict) and labels.get("app_id")))
    return alerts[alerts["query"].isin(SPARK_QUERIES) | apps].reset_index(drop=True)


def _attempt(value: Any) -> str:
    """An application attempt as a key: ``""`` for none (absent, null, NaN or the empty label of a log without
    attempts), so a record and the alert on it meet whatever form the missing value took."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _alert_keys(alerts: pd.DataFrame, names: Iterable[str] | None = None) -> dict[tuple[Any, ...], list[str]]:
    """(app_id, app_attempt, stage_id) and (app_id, app_attempt, stage_id, executor_id) -> the rules that alerted on
    them (``_attempt``: one stage id names a stage in each of a YARN application's attempts)."""
    out: dict[tuple[Any, ...], list[str]] = {}
    if alerts.empty:
        return out
    wanted = set(names) if names is not None else None
    for labels, name in zip(alerts["labels"], alerts["alertname"], strict=True):
        if not isinstance(labels, dict) or (wanted is not None and name not in wanted):
            continue
        app, attempt, stage = labels.get("app_id"), _attempt(labels.get("app_attempt")), str(labels.get("stage_id", ""))
        for key in ((app, attempt, stage), (app, attempt, stage, labels.get("executor_id"))):
            if key[-1] is not None and name not in out.setdefault(key, []):
                out[key].append(name)
    return out


def _columns(frame: pd.DataFrame, *cols: str) -> Iterable[tuple[Any, ...]]:
    """The rows' values of ``cols`` (``None`` for a column the frame lacks)."""
    if frame.empty:
        return []
    none = pd.Series(None, index=frame.index, dtype="object")
    return zip(*(frame[c] if c in frame.columns else none for c in cols), strict=True)


def _keys(frame: pd.DataFrame, *extra: str) -> list[tuple[Any, ...]]:
    """Each row's key into ``_alert_keys``: app_id, attempt, stage id as text, then ``extra`` columns."""
    return [
        (app, _attempt(attempt), str(stage), *rest)
        for app, attempt, stage, *rest in _columns(frame, "app_id", "app_attempt", "stage_id", *extra)
    ]


def _attempts_apart(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the rows that name no application attempt (the pack's records) for a stage whose rows from
    the events do: the same figures, and keyed by App ID alone they would stand for every attempt at once."""
    named = frame["app_attempt"].notna()
    if not named.any() or named.all():
        return frame
    base = ["app_id", "stage_id", "stage_attempt"]
    covered = set(frame.loc[named, base].astype(str).itertuples(index=False, name=None))
    shadowed = [
        not has and key in covered
        for has, key in zip(named, frame[base].astype(str).itertuples(index=False, name=None), strict=True)
    ]
    return frame[[not s for s in shadowed]]


def stages(matches: pd.DataFrame, events: pd.DataFrame, alerts: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per finished stage attempt, most skewed first: its tasks, duration, task-time spread (skew = slowest
    / median task), GC, spill (spill_ratio = memory spill / data processed, Dr. Elephant's) and the rules that
    alerted on it."""
    parts = []
    done = _returns(matches, "StageDone")
    if not done.empty:
        parts.append(done)
    if not events.empty and "type" in events.columns:
        completed = events[events["type"] == "StageCompleted"].rename(columns=_EVENT_NAMES)
        if not completed.empty:
            parts.append(completed)
    if not parts:
        return pd.DataFrame(columns=STAGE_COLUMNS)
    frame = pd.concat(parts, ignore_index=True)
    for col in STAGE_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    frame = _int(frame[STAGE_COLUMNS].copy(), "stage_id", "stage_attempt", "tasks", "failed_tasks")
    frame = _attempts_apart(frame.dropna(subset=["app_id", "stage_id"])).drop_duplicates(STAGE_KEY, keep="first")
    num = [
        "duration",
        "task_max",
        "task_median",
        "run_time",
        "gc_time",
        "gc_ratio",
        "memory_spill",
        "disk_spill",
        "data_bytes",
        "fetch_wait_max",
        "end",
    ]
    for col in num:
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    median = frame["task_median"].where(frame["task_median"] > 0)
    frame["skew"] = (frame["task_max"] / median).round(2)
    frame["spill_ratio"] = (frame["memory_spill"] / frame["data_bytes"].where(frame["data_bytes"] > 0)).round(3)
    keys = _alert_keys(alerts if alerts is not None else pd.DataFrame())
    frame["alerts"] = [", ".join(keys.get(key, [])) for key in _keys(frame)]
    return frame.sort_values(["skew", "end"], ascending=[False, True], na_position="last", kind="stable").reset_index(
        drop=True
    )


def stragglers(matches: pd.DataFrame, alerts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The straggling tasks (SlowTask: > 2x the mean duration of the stage's earlier tasks) and stalled shuffle
    fetches (FetchWait), worst first; ``ratio`` is the duration (or the fetch wait) over that mean; ``alerted`` says
    whether a rule judged it worth an alert."""
    rows = []
    keys = _alert_keys(alerts if alerts is not None else pd.DataFrame(), ("TaskStraggler", "ShuffleFetchStraggler"))
    for query, kind, measure in (("SlowTask", "slow task", "duration"), ("FetchWait", "shuffle fetch", "fetch_wait")):
        part = _returns(matches, query)
        if part.empty:
            continue
        part["kind"] = kind
        for col in STRAGGLER_COLUMNS:
            if col not in part.columns:
                part[col] = None
        avg = pd.to_numeric(part["avg_before"], errors="coerce")
        part["ratio"] = (pd.to_numeric(part[measure], errors="coerce") / avg.where(avg > 0)).round(2)
        rule = "TaskStraggler" if query == "SlowTask" else "ShuffleFetchStraggler"
        part["alerted"] = [rule in keys.get(key, []) for key in _keys(part, "executor_id")]
        rows.append(part[STRAGGLER_COLUMNS])
    if not rows:
        return pd.DataFrame(columns=STRAGGLER_COLUMNS)
    out = _int(pd.concat(rows, ignore_index=True), "stage_id", "stage_attempt", "task_index", "tasks_before")
    return out.sort_values(["alerted", "ratio"], ascending=[False, False], kind="stable").reset_index(drop=True)


def executor_losses(matches: pd.DataFrame, events: pd.DataFrame, alerts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Executors lost while a stage ran (ExecutorLost records), and removals the records do not cover (from the
    ExecutorRemoved events: between stages, or before the pack ran), newest first."""
    lost = _returns(matches, "ExecutorLost")
    keys = _alert_keys(alerts if alerts is not None else pd.DataFrame(), ("ExecutorLostInStage",))
    parts = []
    if not lost.empty:
        for col in LOSS_COLUMNS:
            if col not in lost.columns:
                lost[col] = None
        lost["alerted"] = [bool(keys.get(key)) for key in _keys(lost, "executor_id")]
        parts.append(lost[LOSS_COLUMNS])
    if not events.empty and "type" in events.columns:
        removed = events[events["type"] == "ExecutorRemoved"]
        if not removed.empty:
            who = ("app_id", "app_attempt", "executor_id")  # executor ids start again in each application attempt
            seen = {(a, _attempt(t), str(e)) for a, t, e in _columns(lost, *who)}
            anyone = {(a, e) for a, t, e in seen if not t}  # a record of an older pack names no attempt
            removed = removed[
                [
                    (a, _attempt(t), str(e)) not in seen and (a, str(e)) not in anyone
                    for a, t, e in _columns(removed, *who)
                ]
            ]
            if not removed.empty:
                extra = pd.DataFrame(
                    {
                        "app_id": removed["app_id"],
                        "app_attempt": removed.get("app_attempt"),
                        "executor_id": removed["executor_id"],
                        "host": removed.get("host"),
                        "reason": removed.get("reason"),
                        "end": removed["ts"],
                        "alerted": False,
                    }
                )
                for col in LOSS_COLUMNS:
                    if col not in extra.columns:
                        extra[col] = None
                parts.append(extra[LOSS_COLUMNS])
    if not parts:
        return pd.DataFrame(columns=LOSS_COLUMNS)
    out = _int(pd.concat(parts, ignore_index=True), "stage_id", "stage_attempt")
    return out.sort_values("end", ascending=False, kind="stable").reset_index(drop=True)


def retries(matches: pd.DataFrame) -> pd.DataFrame:
    """Stage attempts after the first (StageRetry records), newest first."""
    part = _returns(matches, "StageRetry")
    if part.empty:
        return pd.DataFrame(columns=RETRY_COLUMNS)
    for col in RETRY_COLUMNS:
        if col not in part.columns:
            part[col] = None
    out = _int(part[RETRY_COLUMNS].copy(), "stage_id", "stage_attempt", "num_tasks")
    return out.sort_values("end", ascending=False, kind="stable").reset_index(drop=True)


def applications(
    stage_table: pd.DataFrame,
    events: pd.DataFrame,
    losses: pd.DataFrame,
    retry_table: pd.DataFrame,
    alerts: pd.DataFrame,
) -> pd.DataFrame:
    """One row per application: its name and times (from its SparkAppStart/End events, else its stages), stages,
    tasks, the worst stage skew, memory spilled, GC share of run time, executors lost, stage retries and open
    alerts; most open alerts first."""
    apps: dict[str, dict[str, Any]] = {}

    def app(app_id: object) -> dict[str, Any]:
        return apps.setdefault(str(app_id), {c: None for c in APP_COLUMNS} | {"app_id": str(app_id)})

    if not events.empty and "type" in events.columns:
        for row in events[events["type"].isin(("SparkAppStart", "SparkAppEnd"))].to_dict("records"):
            entry = app(row.get("app_id"))
            if row["type"] == "SparkAppStart":  # an application's attempts: from its first start to its last end
                entry["app_name"] = row.get("app_name")
                entry["start"] = row["ts"] if entry["start"] is None else min(entry["start"], row["ts"])
            else:
                entry["end"] = row["ts"] if entry["end"] is None else max(entry["end"], row["ts"])
    for app_id, group in stage_table.groupby("app_id") if not stage_table.empty else ():
        entry = app(app_id)
        run = group["run_time"].sum()
        entry.update(
            stages=len(group),
            tasks=int(group["tasks"].fillna(0).sum()),
            failed_tasks=int(group["failed_tasks"].fillna(0).sum()),
            worst_skew=group["skew"].max(),
            memory_spill=group["memory_spill"].fillna(0).sum(),
            gc_ratio=round(group["gc_time"].sum() / run, 3) if run else None,
        )
        first = (group["end"] - group["duration"].fillna(0)).min()
        entry["start"] = entry["start"] if entry["start"] is not None else first
        entry["end"] = entry["end"] if entry["end"] is not None else group["end"].max()
    for app_id, count in losses.groupby("app_id").size().items() if not losses.empty else ():
        app(app_id)["executors_lost"] = int(count)
    for app_id, count in retry_table.groupby("app_id").size().items() if not retry_table.empty else ():
        app(app_id)["retries"] = int(count)
    if not alerts.empty:
        open_ = alerts[alerts["state"] == "firing"]
        for labels in open_["labels"]:
            if isinstance(labels, dict) and labels.get("app_id"):
                entry = app(labels["app_id"])
                entry["open_alerts"] = (entry["open_alerts"] or 0) + 1
    if not apps:
        return pd.DataFrame(columns=APP_COLUMNS)
    out = pd.DataFrame(list(apps.values()), columns=APP_COLUMNS)
    for col in ("stages", "tasks", "failed_tasks", "executors_lost", "retries", "open_alerts"):
        out[col] = pd.to_numeric(out[col], errors="coerce").fillna(0).astype(int)
    return out.sort_values(["open_alerts", "start"], ascending=[False, True], kind="stable").reset_index(drop=True)
