"""Queuing: map output written but not yet fetched by the reducers, per job over time (Q4's running sums)."""

from __future__ import annotations

import streamlit as st

from dashboards import analysis, charts, ui


def render(ctx: ui.Context) -> None:
    st.title("Queued map output")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    q4 = ctx.data.matches("Q4", since, until, job=ctx.job, host=ctx.host)
    curves = analysis.queue_curves(q4)
    if curves.empty:
        st.info("No queued map output (Q4 matches) in this window.")
        history(ctx, ctx.job)
        return
    st.caption("Each point is one Q4 match: the sum of DataIO sizes since the job started (+ written by a mapper, "
               "- fetched by a reducer), at its last DataIO.")
    st.altair_chart(charts.queue_chart(curves), width="stretch")
    summary = analysis.queue_summary(curves)
    st.dataframe(summary, hide_index=True, width="stretch", key="queue_table")
    top = summary.iloc[0]
    st.markdown(f"Largest backlog: **{top['peak_MiB']:.1f} MiB** in `{top['job_id']}`.")
    ui.link(ctx, "jobs", f"Task skew of {top['job_id']}", icon=":material/work:", job_detail=str(top["job_id"]))
    history(ctx, ctx.job or str(top["job_id"]))


def history(ctx: ui.Context, job: str | None) -> None:
    """The same curve from the Spark history (every DataIO of the archive, not only the live matches)."""
    if "queued" not in ctx.data.history_tables() or not job:
        return
    past = ctx.data.history("queued", job=job)
    with st.expander(f"History (Spark): queued map output of {job} ({len(past)} points)"):
        if past.empty:
            st.caption("This job is not in the history tables.")
        else:
            st.altair_chart(charts.queue_chart(past[["job_id", "ts", "queued"]]), width="stretch")


ui.show(render)
