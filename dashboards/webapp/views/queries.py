"""Queries: the loaded pack, matches and alerts per query, the match rate, and -- from the service -- the runs alive,
everything shed (events and partial matches) and the partial matches shed; the pack's alert rules with their open
and resolved alerts."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboards import charts, ui


def render(ctx: ui.Context) -> None:
    st.title("Queries")
    ui.filters_caption(ctx)
    data = ctx.data
    since, until = ctx.span()
    pack = data.pack
    st.markdown(f"Pack **{pack.name or '-'}** ({len(pack.queries)} queries) from `{pack.path or 'nowhere'}`.")
    stats = data.query_stats(since, until)
    if stats.empty:
        st.info("No queries loaded and no matches.")
        return
    cols = list(st.columns(5))
    cols[0].metric("Queries", len(stats))
    cols[1].metric("Matches", int(stats["matches"].sum()))
    cols[2].metric("Runs alive", _total(stats, "runs_alive"))
    cols[3].metric(
        "Shed (total)",
        _total(stats, "shed"),
        help="load shedding in the service: events and partial matches (runs) dropped, summed",
    )
    cols[4].metric(
        "Partial matches shed",
        _total(stats, "shed_runs"),
        help="runs of the NFA dropped by the load shedder (hcep_shed_runs_total)",
    )
    live = data.service()
    if live:
        cols = list(st.columns(4))
        cols[0].metric("Events / s", ui.num(live.get("hcep_events_per_second"), "{:.0f}"))
        cols[1].metric("Consumer lag (messages)", ui.num(live.get("hcep_consumer_lag_messages"), "{:.0f}"))
        cols[2].metric("Watermark delay (s)", ui.num(live.get("hcep_watermark_delay_seconds")))
        cols[3].metric("Dead letters", ui.num(live.get("hcep_deadletter_total"), "{:.0f}"))
    st.altair_chart(charts.query_bars(stats), width="stretch")
    st.dataframe(ui.with_times(stats, ("last_match",)), hide_index=True, width="stretch", key="queries_table")
    if stats["runs_alive"].isna().all():
        st.caption(
            "Runs alive and shed counts come from the streaming service (`hcep run`): give the dashboard its "
            "metrics endpoint (--metrics http://127.0.0.1:PORT/metrics)."
        )
    if data.deadletter():
        st.caption(f"Dead-lettered events in the store: {data.deadletter()}.")
    rules(ctx, since, until)
    st.subheader("Query text")
    for q in pack.queries:
        with st.expander(f"{q.name}: {q.description}"):
            st.code(q.text.strip(), language="sql")
            view = ui.VIEW_OF_QUERY.get(q.name)
            if view:
                ui.link(ctx, view, f"Open the {view} view", icon=":material/open_in_new:")
    st.caption("Sources: " + "; ".join(data.describe()))


def rules(ctx: ui.Context, since: float | None, until: float | None) -> None:
    """The pack's alert rules (records are facts, alerts are judgements), with their alerts in the window."""
    table = ctx.data.pack.rules_frame()
    if table.empty:
        return
    st.subheader("Alert rules")
    alerts = ctx.data.alerts(since, until)
    if not alerts.empty:
        per = alerts.assign(open=alerts["state"] == "firing").groupby("alertname")["open"].agg(["sum", "size"])
        table["open_alerts"] = table["rule"].map(per["sum"]).fillna(0).astype(int)
        table["alerts"] = table["rule"].map(per["size"]).fillna(0).astype(int)
    st.dataframe(table, hide_index=True, width="stretch", key="rules_table")


def _total(stats: Any, column: str) -> str | int:
    if column not in stats.columns or stats[column].isna().all():
        return "-"
    return int(stats[column].sum())


ui.show(render)
