"""Altair charts of the pages.  Each takes plain frames (times as epoch seconds) and returns a chart.

Why functions apart from the pages: the same load-over-time chart serves the overview and the imbalance view, and
charts are easiest to check without Streamlit running.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from dashboards.records import to_datetime

#: What the chart functions return: an Altair Chart, LayerChart or FacetChart (Streamlit draws any of them).
AnyChart = Any

SEVERITY_COLORS = alt.Scale(
    domain=["critical", "error", "warning", "info"], range=["#b10026", "#e31a1c", "#fd8d3c", "#6baed6"]
)
HEIGHT = 260


def _time(frame: pd.DataFrame, column: str, name: str = "time") -> pd.DataFrame:
    out = frame.copy()
    out[name] = to_datetime(out[column])
    return out


def load_chart(load: pd.DataFrame, alerts: pd.DataFrame | None = None, threshold: float | None = None) -> AnyChart:
    """Cluster load imbalance (std-dev of load_one over the hosts) over time; Imbalance rounds in red, the threshold
    as a dashed rule, warning (and worse) alerts as vertical rules coloured by severity."""
    std = _time(load[load["type"] == "LoadStd"], "ts")
    rounds = _time(load[load["type"].isin(["Balance", "Imbalance"])], "ts")
    base = alt.Chart(std).encode(x=alt.X("time:T", title="time (UTC)"))
    layers: list[alt.Chart] = [
        base.mark_line(color="#3182bd").encode(
            y=alt.Y("val:Q", title="load std-dev"),
            tooltip=[alt.Tooltip("time:T", format="%H:%M:%S"), "val:Q", alt.Tooltip("mean:Q", title="mean load")],
        )
    ]
    if not rounds.empty:
        layers.append(
            alt.Chart(rounds)
            .mark_circle(size=60)
            .encode(
                x="time:T",
                y="val:Q",
                color=alt.Color(
                    "type:N",
                    title="round",
                    scale=alt.Scale(domain=["Balance", "Imbalance"], range=["#74c476", "#e31a1c"]),
                ),
                tooltip=["type:N", alt.Tooltip("time:T", format="%H:%M:%S"), "val:Q"],
            )
        )
    if threshold is not None:
        layers.append(
            alt.Chart(pd.DataFrame({"threshold": [threshold]}))
            .mark_rule(strokeDash=[6, 4], color="#636363")
            .encode(y="threshold:Q")
        )
    if alerts is not None and not alerts.empty and not std.empty:
        lo, hi = load["ts"].min(), load["ts"].max()
        # Info alerts are for the record; the rules mark only what needs a look.
        urgent = alerts[alerts["severity"].isin(["warning", "critical", "error"])]
        urgent = urgent[(urgent["starts_at"] >= lo) & (urgent["starts_at"] <= hi)]
        shown = _time(urgent[["alertname", "severity", "summary", "starts_at"]], "starts_at")
        if not shown.empty:
            layers.append(
                alt.Chart(shown)
                .mark_rule(strokeWidth=2, opacity=0.7)
                .encode(
                    x="time:T",
                    color=alt.Color("severity:N", scale=SEVERITY_COLORS, title="alert"),
                    tooltip=["alertname:N", "severity:N", "summary:N", alt.Tooltip("time:T", format="%H:%M:%S")],
                )
            )
    return alt.layer(*layers).resolve_scale(color="independent").properties(height=HEIGHT)


def skew_chart(jobs: pd.DataFrame) -> AnyChart:
    """Per job: slowest task / average task, mappers and reducers side by side (1.0 = no skew)."""
    long = jobs.melt(id_vars=["job_id"], value_vars=["map_skew", "reduce_skew"], var_name="kind", value_name="skew")
    long = long.dropna(subset=["skew"])
    long["kind"] = long["kind"].map({"map_skew": "mappers", "reduce_skew": "reducers"})
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("job_id:N", title=None, sort="-x", axis=alt.Axis(labelLimit=320)),
            x=alt.X("skew:Q", title="slowest / average task duration"),
            color=alt.Color("kind:N", title=None),
            yOffset="kind:N",
            tooltip=["job_id:N", "kind:N", alt.Tooltip("skew:Q", format=".2f")],
        )
        .properties(height=max(80, 40 * len(jobs)))
    )


def task_chart(tasks: pd.DataFrame, highlight: str | None = None) -> AnyChart:
    """Duration of every task attempt of a job, by kind, coloured by host; the highlighted task drawn larger."""
    frame = tasks.copy()
    frame["flag"] = frame["task_id"].eq(highlight) if highlight else False
    return (
        alt.Chart(frame)
        .mark_point(filled=True)
        .encode(
            x=alt.X("period:Q", title="duration (s)"),
            y=alt.Y("type:N", title=None),
            color=alt.Color("host:N"),
            size=alt.condition("datum.flag", alt.value(260), alt.value(70)),
            tooltip=["task_id:N", "type:N", "host:N", "period:Q"],
        )
        .properties(height=140)
    )


def pulls_chart(pulls: pd.DataFrame, slow_ids: list[str]) -> AnyChart:
    """Shuffle pulls of one reducer over time (duration), the slow pull(s) in red."""
    frame = _time(pulls, "ts")
    frame["pull"] = frame["id"].isin(slow_ids).map({True: "slow pull", False: "pull"})
    return (
        alt.Chart(frame)
        .mark_bar(size=8)
        .encode(
            x=alt.X("time:T", title="fetch done (UTC)"),
            y=alt.Y("period:Q", title="pull duration (s)"),
            color=alt.Color(
                "pull:N", scale=alt.Scale(domain=["pull", "slow pull"], range=["#9ecae1", "#e31a1c"]), title=None
            ),
            tooltip=["map_task:N", "host:N", "period:Q", alt.Tooltip("time:T", format="%H:%M:%S")],
        )
        .properties(height=HEIGHT)
    )


def queue_chart(curves: pd.DataFrame) -> AnyChart:
    """Map output written but not yet fetched, per job, over time (Q4's running sum of DataIO sizes, never below 0:
    :func:`dashboards.analysis.queue_curves` clamps, and marks the job's points ``incomplete``)."""
    frame = _time(curves[[c for c in ("job_id", "ts", "queued", "incomplete") if c in curves.columns]], "ts")
    frame["MiB"] = frame["queued"].clip(lower=0) / (1024 * 1024)
    tooltip = ["job_id:N", alt.Tooltip("MiB:Q", format=".1f"), alt.Tooltip("time:T", format="%H:%M:%S")]
    if "incomplete" in frame.columns:
        tooltip.append(alt.Tooltip("incomplete:N", title="incomplete data"))
    return (
        alt.Chart(frame)
        .mark_line(interpolate="step-after", point=True)
        .encode(
            x=alt.X("time:T", title="time (UTC)"),
            y=alt.Y("MiB:Q", title="queued map output (MiB)"),
            color=alt.Color("job_id:N", title="job"),
            tooltip=tooltip,
        )
        .properties(height=HEIGHT)
    )


def reducer_spans(spans: pd.DataFrame) -> AnyChart:
    """Reducers flagged by Q5/Q6 as bars over their run, opacity = confidence."""
    frame = _time(_time(spans, "start", "from"), "end", "to")
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("from:T", title="time (UTC)"),
            x2="to:T",
            y=alt.Y("task_id:N", title=None, axis=alt.Axis(labelLimit=320)),
            yOffset="query:N",
            color=alt.Color("query:N"),
            opacity=alt.Opacity("confidence:Q", scale=alt.Scale(domain=[0, 1]), legend=None),
            tooltip=["query:N", "task_id:N", "host:N", alt.Tooltip("confidence:Q", format=".3f")],
        )
        .properties(height=max(80, 44 * spans["task_id"].nunique()))
    )


def query_bars(stats: pd.DataFrame) -> AnyChart:
    return (
        alt.Chart(stats)
        .mark_bar()
        .encode(
            x=alt.X("query:N", title=None),
            y=alt.Y("matches:Q"),
            tooltip=["query:N", "matches:Q", "per_minute:Q", "alerts:Q"],
        )
        .properties(height=200)
    )


def host_durations(durations: pd.DataFrame) -> AnyChart:
    """Spark history: median and 95th percentile task duration per host (a slow host stands out), by task kind."""
    frame = durations.melt(
        id_vars=["key", "kind"], value_vars=["p50", "p95"], var_name="quantile", value_name="seconds"
    )
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("key:N", title="host", axis=alt.Axis(labelLimit=320)),
            x=alt.X("seconds:Q", title="task duration (s)"),
            yOffset="quantile:N",
            color=alt.Color("quantile:N", title=None),
            column=alt.Column("kind:N", title=None),
            tooltip=["key:N", "kind:N", "quantile:N", alt.Tooltip("seconds:Q", format=".1f")],
        )
        .properties(width=320)
    )


def anomaly_bars(anomalies: pd.DataFrame) -> AnyChart:
    """Spark history: straggler and imbalance matches per time bucket."""
    frame = _time(anomalies, "bucket")
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("time:T", title="time (UTC)"),
            y=alt.Y("sum(count):Q", title="matches"),
            color=alt.Color("kind:N", title=None),
            tooltip=["kind:N", "query:N", "count:Q", alt.Tooltip("time:T", format="%Y-%m-%d %H:%M")],
        )
        .properties(height=160)
    )


def stage_skew_chart(stages: pd.DataFrame) -> AnyChart:
    """Per finished stage attempt: slowest / median task duration (1.0 = even); stages a rule alerted on in red,
    Dr. Elephant's skew tiers (2, 4, 8, 16) as dashed rules."""
    shown = stages.dropna(subset=["skew"]).head(40).copy()
    # an application's YARN attempts reuse its App ID and stage ids: the attempt is part of the bar's name
    attempt = shown["app_attempt"] if "app_attempt" in shown.columns else pd.Series(None, index=shown.index)
    shown["stage"] = (
        shown["app_id"].astype(str).str[-8:]
        + attempt.map(lambda a: f"_{a}" if isinstance(a, str) and a else "")
        + " / "
        + shown["stage_id"].astype(str)
        + "."
        + shown["stage_attempt"].astype(str)
    )
    shown["alerted"] = shown["alerts"].fillna("").map(lambda a: "alerted" if a else "no alert")
    bars = (
        alt.Chart(shown)
        .mark_bar()
        .encode(
            x=alt.X("stage:N", sort=None, title="application / stage.attempt"),
            y=alt.Y("skew:Q", title="slowest / median task"),
            color=alt.Color(
                "alerted:N", scale=alt.Scale(domain=["alerted", "no alert"], range=["#e31a1c", "#9ecae1"]), title=""
            ),
            tooltip=[
                "app_id:N",
                "app_attempt:N",
                "stage_id:Q",
                "stage_attempt:Q",
                "stage_name:N",
                "tasks:Q",
                "task_max:Q",
                "task_median:Q",
                "skew:Q",
                "alerts:N",
            ],
        )
    )
    tiers = (
        alt.Chart(pd.DataFrame({"tier": [2, 4, 8, 16]}))
        .mark_rule(strokeDash=[4, 4], color="#969696")
        .encode(y="tier:Q")
    )
    return alt.layer(bars, tiers).properties(height=HEIGHT)
