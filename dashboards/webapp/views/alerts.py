"""Alerts: the log of alerts raised by the pack's queries, their delivery status, and acknowledgement."""

from __future__ import annotations

import streamlit as st

from dashboards import ui
from dashboards.alerts import SEVERITY_ORDER


def render(ctx: ui.Context) -> None:
    st.title("Alerts")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    alerts = data.alerts(since, until, job=ctx.job, host=ctx.host)
    if alerts.empty:
        st.info("No alerts in this window.")
        return
    severities = sorted(alerts["severity"].dropna().unique(), key=lambda s: SEVERITY_ORDER.get(s, 9))
    cols = st.columns([3, 1])
    chosen = cols[0].multiselect("Severity", severities, default=severities, key="alert_severity")
    show_acked = cols[1].toggle("Show acknowledged", value=False, key="alert_show_acked")
    shown = alerts[alerts["severity"].isin(chosen)]
    if not show_acked:
        shown = shown[~shown["acked"]]
    metrics = st.columns(3)
    metrics[0].metric("Open", int((~alerts["acked"]).sum()))
    metrics[1].metric("Acknowledged", int(alerts["acked"].sum()))
    metrics[2].metric("Warning or worse, open",
                      int(((alerts["severity"] != "info") & ~alerts["acked"]).sum()))
    table = shown.sort_values("ts", ascending=False)
    view = ui.with_times(table, ("ts", "acked_at"))
    st.dataframe(view[["ts", "severity", "query", "summary", "job_id", "task_id", "host", "confidence", "status",
                       "acked", "acked_by", "acked_at", "alert_id"]],
                 hide_index=True, width="stretch", key="alerts_table")

    st.subheader("Acknowledge")
    if not data.acks.writable:
        st.warning("Acknowledgements cannot be saved: give the dashboard a writable data dir (--data).")
        return
    open_rows = table[~table["acked"]]
    labels = {r["alert_id"]: f"{r['query']} · {r['summary']} · {ui.when(r['ts'])}"
              for r in open_rows.to_dict("records")}
    picked = st.multiselect("Alerts to acknowledge", list(labels), format_func=lambda a: labels[a], key="ack_pick")
    who = st.text_input("Acknowledged by", value="operator", key="ack_by")
    cols = st.columns(2)
    if cols[0].button("Acknowledge selected", disabled=not picked, key="ack_selected"):
        n = data.acknowledge(picked, by=who or "operator")
        st.session_state.pop("ack_pick", None)
        st.toast(f"Acknowledged {n} alert(s)")
        st.rerun()
    if cols[1].button(f"Acknowledge all {len(open_rows)} shown", disabled=open_rows.empty, key="ack_all"):
        n = data.acknowledge(list(open_rows["alert_id"]), by=who or "operator")
        st.toast(f"Acknowledged {n} alert(s)")
        st.rerun()


ui.show(render)
