"""What each view shows, computed from match rows and events (no Streamlit here, so it is tested on its own).

The Hadoop pack's RETURN names (semantics section 7) are the contract: Q1/Q2 ``job_id, avg_period, max_period``; Q3
``task_id, period``; Q4 ``job_id, start, last, queued``; Q5/Q6 ``task_id``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

TASK_TYPES = ("Mapper", "Reducer")


def _best_per_job(matches: pd.DataFrame) -> pd.DataFrame:
    """One Q1/Q2 record per job: the one binding the most tasks (collapsed output may emit a few), then the latest."""
    if matches.empty:
        return matches
    frame = matches.assign(n=matches["match"].map(lambda m: len(m.get("b", [])) if isinstance(m, dict) else 0))
    frame = frame.sort_values(["n", "end"], kind="stable")
    return frame.drop_duplicates("job_id", keep="last")


def job_skew(q1: pd.DataFrame, q2: pd.DataFrame) -> pd.DataFrame:
    """Per job: task counts, average and slowest durations and skew (slowest / average) of mappers and reducers."""
    cols = [
        "job_id",
        "maps",
        "map_avg",
        "map_max",
        "map_skew",
        "reduces",
        "reduce_avg",
        "reduce_max",
        "reduce_skew",
        "start",
        "end",
    ]
    parts = []
    for frame, kind, count in ((q1, "map", "maps"), (q2, "reduce", "reduces")):
        best = _best_per_job(frame)
        if best.empty:
            continue
        part = pd.DataFrame(
            {
                "job_id": best["job_id"],
                count: best["n"],
                f"{kind}_avg": pd.to_numeric(best.get("r_avg_period"), errors="coerce"),
                f"{kind}_max": pd.to_numeric(best.get("r_max_period"), errors="coerce"),
                f"start_{kind}": best["start"],
                f"end_{kind}": best["end"],
            }
        )
        part[f"{kind}_skew"] = (part[f"{kind}_max"] / part[f"{kind}_avg"]).round(2)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=cols)
    table = parts[0] if len(parts) == 1 else parts[0].merge(parts[1], on="job_id", how="outer")
    table["start"] = table.filter(like="start_").min(axis=1)
    table["end"] = table.filter(like="end_").max(axis=1)
    for col in cols:
        if col not in table.columns:
            table[col] = float("nan")
    table = table[cols]
    order = table[["map_skew", "reduce_skew"]].apply(pd.to_numeric, errors="coerce").max(axis=1)
    return (
        table.assign(_o=order)
        .sort_values("_o", ascending=False, kind="stable")
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def job_tasks(events: pd.DataFrame, job: str) -> pd.DataFrame:
    """The finished task attempts of one job (Mapper / Reducer events), slowest first."""
    if events.empty:
        return events
    tasks = events[(events["type"].isin(TASK_TYPES)) & (events["job_id"] == job)]
    cols = [c for c in ("type", "task_id", "attempt_id", "host", "period", "status", "ts", "id") if c in tasks]
    return tasks[cols].sort_values("period", ascending=False, kind="stable").reset_index(drop=True)


def stragglers(q3: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """One row per Q3 match, newest first: the reducer, its host, the slow pull (duration, map task, source host)
    and the average of the earlier pulls it was compared with."""
    cols = [
        "id",
        "task_id",
        "job_id",
        "reducer_host",
        "slow_pull_s",
        "earlier_avg_s",
        "ratio",
        "map_task",
        "source_host",
        "earlier_pulls",
        "end",
        "confidence",
    ]
    if q3.empty:
        return pd.DataFrame(columns=cols)
    by_id = events.set_index("id") if not events.empty else pd.DataFrame()
    rows = []
    for m in q3.to_dict("records"):
        binding = m["match"] if isinstance(m["match"], dict) else {}

        def get(eid: str | None, attr: str) -> Any:
            if eid is None or by_id.empty or eid not in by_id.index or attr not in by_id.columns:
                return None
            value = by_id.at[eid, attr]
            return None if pd.isna(value) else value

        a = (binding.get("a") or [None])[0]
        c = (binding.get("c") or [None])[0]
        earlier = [get(e, "period") for e in binding.get("b", [])]
        earlier = [float(p) for p in earlier if p is not None]
        slow = m.get("r_period")
        slow = float(slow) if slow is not None and not pd.isna(slow) else get(c, "period")
        avg = sum(earlier) / len(earlier) if earlier else None
        rows.append(
            {
                "id": m["id"],
                "task_id": m["task_id"],
                "job_id": m["job_id"],
                "reducer_host": get(a, "host") or m["host"],
                "slow_pull_s": slow,
                "earlier_avg_s": avg,
                "ratio": round(slow / avg, 2) if slow and avg else None,
                "map_task": get(c, "map_task"),
                "source_host": get(c, "host"),
                "earlier_pulls": len(binding.get("b", [])),
                "end": m["end"],
                "confidence": m["confidence"],
            }
        )
    return pd.DataFrame(rows, columns=cols).sort_values("end", ascending=False, kind="stable").reset_index(drop=True)


def queue_curves(q4: pd.DataFrame) -> pd.DataFrame:
    """Per job, (time, queued bytes) points: 0 at job start, then each Q4 prefix's running sum at its last DataIO.

    A reducer cannot fetch what was not written, so Q4's ``queued`` is never negative on complete data
    (docs/semantics.md sections 3-4: same-tick DataIO events are all summed).  A negative sum means the job's data is
    incomplete (its JobStart or some of its writes were missed, e.g. the collector started late): the point is clamped
    at 0 -- never plotted below nothing -- and ``incomplete`` marks it, with the raw sum kept in ``raw``."""
    cols = ["job_id", "ts", "queued", "raw", "incomplete"]
    if q4.empty:
        return pd.DataFrame(columns=cols)
    raw = pd.to_numeric(q4.get("r_queued"), errors="coerce")
    points = pd.DataFrame({"job_id": q4["job_id"], "ts": pd.to_numeric(q4.get("r_last"), errors="coerce"), "raw": raw})
    starts = pd.DataFrame(
        {"job_id": q4["job_id"], "ts": pd.to_numeric(q4.get("r_start"), errors="coerce"), "raw": 0.0}
    ).drop_duplicates("job_id")
    curves = pd.concat([starts, points], ignore_index=True).dropna(subset=["ts", "raw"])
    curves = curves.drop_duplicates(["job_id", "ts"], keep="last")
    curves["incomplete"] = curves["raw"] < 0
    curves["queued"] = curves["raw"].clip(lower=0.0)
    return curves[cols].sort_values(["job_id", "ts"], kind="stable").reset_index(drop=True)


def queue_summary(curves: pd.DataFrame, alerted: Iterable[str] = ()) -> pd.DataFrame:
    """Per job: the peak of queued map output, what was still queued at the last point, whether its data is
    incomplete (a negative running sum, clamped) and whether the HeldMapOutput rule alerted on it (``alerted``)."""
    cols = ["job_id", "peak_MiB", "now_MiB", "points", "incomplete_data", "held_alert"]
    if curves.empty:
        return pd.DataFrame(columns=cols)
    mib = 1024 * 1024
    grouped = curves.groupby("job_id")
    held = set(alerted)
    out = pd.DataFrame(
        {
            "peak_MiB": (grouped["queued"].max() / mib).round(1),
            "now_MiB": (grouped["queued"].last() / mib).round(1),
            "points": grouped.size(),
            "incomplete_data": grouped["incomplete"].any().astype(bool),
        }
    ).reset_index()
    out["held_alert"] = out["job_id"].isin(held)
    return out[cols].sort_values("peak_MiB", ascending=False, kind="stable").reset_index(drop=True)


def imbalance_reducers(q56: pd.DataFrame) -> pd.DataFrame:
    """Reducers flagged by Q5 (ran through balance -> imbalance -> balance), Q6 (load std-dev kept rising) or Q7 (its
    own host became the outlier of an imbalanced cluster), with the confidence that the imprecise Ganglia times
    allow."""
    cols = ["task_id", "job_id", "host", "query", "confidence", "start", "end", "id"]
    if q56.empty:
        return pd.DataFrame(columns=cols)
    frame = q56.sort_values("confidence", ascending=False, kind="stable")
    frame = frame.drop_duplicates(["query", "task_id"], keep="first")
    # Reducers flagged by both queries first, then the surest, then the latest.
    frame = frame.assign(
        _n=frame.groupby("task_id")["query"].transform("nunique"),
        _c=frame.groupby("task_id")["confidence"].transform("max"),
    )
    frame = frame.sort_values(
        ["_n", "_c", "end", "task_id", "query"], ascending=[False, False, False, True, True], kind="stable"
    )
    return frame[cols].reset_index(drop=True)
