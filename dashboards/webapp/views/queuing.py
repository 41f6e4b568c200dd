"""Queuing: map output written but not yet fetched by the reducers, per job over time (Q4's running sums), and the
jobs the HeldMapOutput / HeldMapOutputEarly / HeldMapOutputLate rules alerted on (output written and not fetched for
minutes)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboards import analysis, charts, ui

#: The pack's alert rules on held map output (queries/hadoop.yaml: queries HeldOutput, HeldOutputEarly, HeldOutputLate).
HELD_RULES = ("HeldMapOutput", "HeldMapOutputEarly", "HeldMapOutputLate")
HELD_RULE = " / ".join(HELD_RULES)


def render(ctx: ui.Context) -> None:
    st.title("Queued map output")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    q4 = ctx.data.matches("Q4", since, until, job=ctx.job, host=ctx.host)
    held = held_frame(ctx, since, until)
    curves = analysis.queue_curves(q4)
    if curves.empty:
        st.info("No queued map output (Q4 matches) in this window.")
        held_alerts(ctx, held)
        history(ctx, ctx.job)
        return
    st.caption(
        "Each point is one Q4 match: the sum of DataIO sizes since the job started (+ written by a mapper, "
        "- fetched by a reducer), at its last DataIO."
    )
    summary = analysis.queue_summary(curves, alerted=held["job_id"].dropna() if not held.empty else ())
    incomplete = summary[summary["incomplete_data"]]
    cols = st.columns(4)
    cols[0].metric("Jobs", len(summary))
    cols[1].metric("Largest backlog (MiB)", f"{summary['peak_MiB'].max():.1f}")
    cols[2].metric(
        "Lowest point plotted (MiB)",
        f"{curves['queued'].min() / (1024 * 1024):.1f}",
        help="never below 0: a reducer cannot fetch what was not written",
    )
    cols[3].metric("Jobs with incomplete data", len(incomplete))
    if not incomplete.empty:
        st.warning(
            f"Incomplete data for {len(incomplete)} job(s): their running sum fell below zero (more fetched "
            "than written: the job's start or some of its map output was not seen), so their curves are "
            "clamped at 0 and not to be trusted: " + ", ".join(f"`{j}`" for j in incomplete["job_id"])
        )
    st.altair_chart(charts.queue_chart(curves), width="stretch")
    st.dataframe(
        summary,
        hide_index=True,
        width="stretch",
        key="queue_table",
        column_config={
            "incomplete_data": st.column_config.CheckboxColumn("incomplete data"),
            "held_alert": st.column_config.CheckboxColumn(f"{HELD_RULE} alert"),
        },
    )
    top = summary.iloc[0]
    st.markdown(f"Largest backlog: **{top['peak_MiB']:.1f} MiB** in `{top['job_id']}`.")
    ui.link(ctx, "jobs", f"Task skew of {top['job_id']}", icon=":material/work:", job_detail=str(top["job_id"]))
    held_alerts(ctx, held)
    history(ctx, ctx.job or str(top["job_id"]))


def held_frame(ctx: ui.Context, since: float | None, until: float | None) -> pd.DataFrame:
    """The alert groups of both held-output rules in the window."""
    frames = [ctx.data.alerts(since, until, job=ctx.job, host=ctx.host, alertname=r) for r in HELD_RULES]
    found = [f for f in frames if not f.empty]
    return pd.concat(found, ignore_index=True) if found else frames[0]


def held_alerts(ctx: ui.Context, held: pd.DataFrame) -> None:
    """The jobs the HeldMapOutput / HeldMapOutputEarly rules alerted on, open ones first."""
    st.subheader(f"Held map output alerts ({HELD_RULE})")
    if held.empty:
        st.caption(
            f"No {HELD_RULE} alert in this window: no job kept at least 1 GiB of map output unfetched for 3 minutes."
        )
        return
    for row in held.assign(_o=held["state"] != "firing").sort_values(["_o", "starts_at"]).to_dict("records"):
        state = "open" if row["state"] == "firing" else f"resolved {ui.when(row['ends_at'])}"
        st.markdown(
            f"{ui.severity_badge(row['severity'], row['tier'])} **{row['alertname']}** `{row['job_id']}` · "
            f"{row['fired_summary']} "
            f"(since {ui.when(row['starts_at'])}; {state})"
        )


def history(ctx: ui.Context, job: str | None) -> None:
    """The same curve from the Spark history (every DataIO of the archive, not only the live matches)."""
    if "queued" not in ctx.data.history_tables() or not job:
        return
    past = ctx.data.history("queued", job=job)
    with st.expander(f"History (Spark): queued map output of {job} ({len(past)} points)"):
        if past.empty:
            st.caption("This job is not in the history tables.")
            return
        points = past[["job_id", "ts", "queued"]].copy()
        if (points["queued"] < 0).any():  # the archive misses the job's start or some writes: clamp, say so
            st.caption("Incomplete data: the archive's running sum falls below zero; shown clamped at 0.")
            points["queued"] = points["queued"].clip(lower=0)
        st.altair_chart(charts.queue_chart(points), width="stretch")


ui.show(render)
