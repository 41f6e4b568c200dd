"""Overview: cluster load and imbalance over time with the alerts marked, and what needs a look first."""

from __future__ import annotations

import streamlit as st

from dashboards import charts, ui
from dashboards.alerts import URGENT, sort_for_display


def render(ctx: ui.Context) -> None:
    st.title("Cluster overview")
    ui.filters_caption(ctx)
    data = ctx.data
    since, until = ctx.span()
    load = data.load(since, until)
    alerts = data.alerts(since, until, job=ctx.job, host=ctx.host)
    matches = data.matches(since=since, until=until, job=ctx.job, host=ctx.host)
    open_alerts = alerts[(alerts["state"] == "firing") & ~alerts["acked"]] if not alerts.empty else alerts
    std = load[load["type"] == "LoadStd"] if not load.empty else load
    imbalance = int((load["type"] == "Imbalance").sum()) if not load.empty else 0

    cols = list(st.columns(5))
    cols[0].metric("Jobs", int(matches["job_id"].nunique()) if not matches.empty else 0)
    cols[1].metric("Matches", len(matches))
    warn = int(open_alerts["severity"].isin(URGENT).sum()) if not open_alerts.empty else 0
    cols[2].metric("Open alerts", len(open_alerts), delta=f"{warn} warning+" if warn else None, delta_color="inverse")
    if not std.empty:
        last = std.iloc[-1]
        prev = std.iloc[-2]["val"] if len(std) > 1 else None
        cols[3].metric(
            "Load std-dev (latest)",
            f"{last['val']:.2f}",
            delta=None if prev is None else f"{last['val'] - prev:+.2f}",
            delta_color="inverse",
        )
    else:
        cols[3].metric("Load std-dev (latest)", "-")
    cols[4].metric("Imbalance rounds", imbalance)

    st.subheader("Cluster load imbalance")
    if std.empty:
        st.info("No Ganglia load rounds (LoadStd events) in this window.")
    else:
        threshold = ctx.data.pack.settings.get("imbalance_threshold")
        st.altair_chart(charts.load_chart(load, alerts, threshold), width="stretch")
        st.caption(
            "Line: std-dev of load_one over the hosts per Ganglia round; dots: Balance / Imbalance rounds; "
            "vertical rules: when warning-or-worse alerts fired (colour = severity); dashed: the pack's "
            "imbalance threshold."
        )

    past = data.history("anomalies")
    if not past.empty:
        with st.expander("History (Spark): stragglers and imbalances per time bucket"):
            st.altair_chart(charts.anomaly_bars(past), width="stretch")

    st.subheader("Needs a look")
    urgent = open_alerts[open_alerts["severity"].isin(URGENT)] if not open_alerts.empty else open_alerts
    if urgent.empty:
        st.success("No open warning-or-worse alerts.")
    else:
        for row in sort_for_display(urgent).head(8).to_dict("records"):
            ui.alert_link(ctx, row, f"{row['alertname']} ({row['severity']}): {row['summary']}", fallback="alerts")
    st.caption(
        f"{len(open_alerts)} open alert(s) in all; see the Alerts view for their evidence and to acknowledge them."
    )
    cols = list(st.columns(3))
    with cols[0]:
        ui.link(ctx, "alerts", "All alerts", icon=":material/notifications:")
    with cols[1]:
        ui.link(ctx, "jobs", "Job skew", icon=":material/work:")
    with cols[2]:
        ui.link(ctx, "queries", "Queries", icon=":material/query_stats:")


ui.show(render)
