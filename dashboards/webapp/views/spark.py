"""Spark: applications, their stages (duration, tasks, skew = slowest / median task), straggling tasks and stalled
shuffle fetches, memory spill, GC, executors lost and stage retries -- the Spark pack's records and the events of
``hcep collect spark`` -- and the Spark pack's alerts."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboards import alerts as alerts_mod
from dashboards import charts, spark, ui

ALL_APPS = "(all applications)"


def _table(frame: pd.DataFrame, key: str) -> None:
    st.dataframe(ui.with_times(frame, ("start", "end")), hide_index=True, width="stretch", key=key)


def render(ctx: ui.Context) -> None:
    st.title("Spark applications")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    matches = data.matches(spark.SPARK_QUERIES, since, until, host=ctx.host)
    events = data.events(("SparkAppStart", "SparkAppEnd", "StageCompleted", "ExecutorRemoved"), since, until)
    alerts = spark.spark_alerts(data.alerts(since, until))
    stages = spark.stages(matches, events, alerts)
    losses = spark.executor_losses(matches, events, alerts)
    retried = spark.retries(matches)
    apps = spark.applications(stages, events, losses, retried, alerts)
    if apps.empty:
        st.info(
            "No Spark applications in this window: no records of the Spark pack (queries/spark.yaml) and no "
            "events of `hcep collect spark`."
        )
        return
    straggling = spark.stragglers(matches, alerts)
    urgent = (
        alerts[(alerts["state"] == "firing") & alerts["severity"].isin(alerts_mod.URGENT)]
        if not alerts.empty
        else alerts
    )
    cols = list(st.columns(5))
    cols[0].metric("Applications", len(apps))
    cols[1].metric("Stages", len(stages))
    cols[2].metric("Straggling tasks", int((straggling["kind"] == "slow task").sum()) if not straggling.empty else 0)
    cols[3].metric("Executors lost", len(losses))
    cols[4].metric("Open Spark alerts (warning or worse)", len(urgent))
    st.subheader("Applications")
    _table(apps, "spark_apps")

    app = ui.pick("Application", [ALL_APPS, *apps["app_id"]], "app")
    if app and app != ALL_APPS:
        stages = stages[stages["app_id"] == app]
        straggling = straggling[straggling["app_id"] == app]
        losses = losses[losses["app_id"] == app]
        retried = retried[retried["app_id"] == app]
        alerts = alerts[alerts["labels"].map(lambda labels: isinstance(labels, dict) and labels.get("app_id") == app)]

    st.subheader("Spark alerts")
    if alerts.empty:
        st.caption("No alerts of the Spark pack for this selection.")
    for row in alerts_mod.sort_for_display(alerts).head(40).to_dict("records"):
        labels = row["labels"] if isinstance(row["labels"], dict) else {}
        where = f"stage {labels.get('stage_id', '?')}" + (
            f", executor {labels['executor_id']}" if labels.get("executor_id") else ""
        )
        if labels.get("app_attempt"):  # one YARN application's attempts reuse its stage ids
            where = f"attempt {labels['app_attempt']}, {where}"
        state = "" if row["state"] == "firing" else " (resolved)"
        st.markdown(
            f"{ui.severity_badge(row['severity'], row.get('tier'))} **{row['alertname']}** · {where}{state}: "
            f"{row['summary']}"
        )

    st.subheader("Stages")
    if stages.empty:
        st.caption("No finished stages.")
    else:
        st.caption(
            "Skew = slowest / median task duration of the stage attempt (Dr. Elephant's task skew; its tiers "
            "2, 4, 8, 16 dashed); red: a rule of the Spark pack alerted on the stage."
        )
        st.altair_chart(charts.stage_skew_chart(stages), width="stretch")
        _table(stages, "spark_stages")

    st.subheader("Straggling tasks and stalled shuffle fetches")
    if straggling.empty:
        st.caption("None: no task ran (or waited on fetches) more than twice as long as the tasks before it.")
    else:
        st.caption(
            "Found as each task ended, while its stage ran: ratio = its duration (or fetch wait) over the mean "
            "duration of the stage's earlier tasks; alerted = past the rule's gates."
        )
        _table(straggling, "spark_stragglers")

    cols = list(st.columns(2))
    with cols[0]:
        st.subheader("Memory spill")
        spilled = stages[stages["memory_spill"].fillna(0) > 0] if not stages.empty else stages
        if spilled.empty:
            st.caption("No stage spilled.")
        else:
            st.caption("spill_ratio = memory spilled / data processed (Dr. Elephant: 0.01, 0.1, 0.25, 0.5).")
            _table(
                spilled.sort_values("spill_ratio", ascending=False)[
                    [
                        "app_id",
                        "app_attempt",
                        "stage_id",
                        "stage_attempt",
                        "memory_spill",
                        "disk_spill",
                        "data_bytes",
                        "spill_ratio",
                        "alerts",
                    ]
                ],
                "spark_spill",
            )
    with cols[1]:
        st.subheader("GC")
        gc = stages[stages["run_time"].fillna(0) > 0] if not stages.empty else stages
        if gc.empty:
            st.caption("No executor run time recorded.")
        else:
            st.caption("gc_ratio = JVM GC time / executor run time (Dr. Elephant: 0.08, 0.1, 0.15, 0.2; 5 minutes).")
            _table(
                gc.sort_values("gc_ratio", ascending=False).head(20)[
                    ["app_id", "app_attempt", "stage_id", "stage_attempt", "run_time", "gc_time", "gc_ratio", "alerts"]
                ],
                "spark_gc",
            )

    st.subheader("Executors lost and stage retries")
    if losses.empty and retried.empty:
        st.caption("No executor was lost and no stage ran twice.")
    if not losses.empty:
        _table(losses, "spark_losses")
    if not retried.empty:
        _table(retried, "spark_retries")


ui.show(render)
