"""Jobs: mapper and reducer durations and skew per job (Q1 / Q2), the tasks of one job, and Spark history."""

from __future__ import annotations

import streamlit as st

from dashboards import analysis, charts, ui


def render(ctx: ui.Context) -> None:
    st.title("Jobs: task skew")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    q1 = data.matches("Q1", since, until, job=ctx.job, host=ctx.host)
    q2 = data.matches("Q2", since, until, job=ctx.job, host=ctx.host)
    table = analysis.job_skew(q1, q2)
    if table.empty:
        st.info("No finished jobs (Q1 / Q2 matches) in this window.")
    else:
        st.caption("Skew = slowest task / average task of the job (Q1 mappers, Q2 reducers); 1.0 means even.")
        st.altair_chart(charts.skew_chart(table), width="stretch")
        st.dataframe(ui.with_times(table), hide_index=True, width="stretch", key="jobs_table")

    jobs = list(table["job_id"]) if not table.empty else []
    if ctx.job and ctx.job not in jobs:
        jobs.insert(0, ctx.job)
    job = ui.pick("Job", jobs, "job_detail") if jobs else None
    if job:
        st.subheader(f"Tasks of {job}")
        tasks = analysis.job_tasks(data.events(("Mapper", "Reducer"), since, until, job=job), job)
        if tasks.empty:
            st.info("No task events of this job in the data (only its match records).")
        else:
            slowest = tasks.iloc[0]
            st.metric(
                f"Slowest task ({slowest['type']})",
                f"{slowest['period']:.1f} s",
                help=f"{slowest['task_id']} on {slowest['host']}",
            )
            st.markdown(f"Slowest: `{slowest['task_id']}` on **{slowest['host']}**")
            st.altair_chart(charts.task_chart(tasks, slowest["task_id"]), width="stretch")
            st.dataframe(ui.with_times(tasks), hide_index=True, width="stretch", key="tasks_table")
        cols = st.columns(2)
        with cols[0]:
            ui.link(ctx, "stragglers", f"Straggling pulls of {job}", icon=":material/slow_motion_video:", job=job)
        with cols[1]:
            ui.link(ctx, "queuing", f"Queued map output of {job}", icon=":material/stacked_line_chart:", job=job)

    history(ctx, job)


def history(ctx: ui.Context, job: str | None) -> None:
    """The Spark history tables: skew verdicts per job and task durations per host over the archive."""
    data = ctx.data
    st.subheader("History (Spark)")
    if not data.history_tables():
        st.caption("No Spark history tables (`hcep history ARCHIVE --out DIR`, then `hcep dashboard --history DIR`).")
        return
    skew = data.history("skew", job=ctx.job)
    if not skew.empty:
        st.caption(
            "Skew over the archive, in the manner of Dr. Elephant: a job's task durations split in two groups; "
            "ratio = the larger group mean over the smaller; the severity also needs enough tasks."
        )
        rank = {s: i for i, s in enumerate(("CRITICAL", "SEVERE", "MODERATE", "LOW", "NONE"))}
        skew = skew.assign(_r=skew["severity"].map(rank)).sort_values(["_r", "ratio"], ascending=[True, False])
        st.dataframe(skew.drop(columns="_r"), hide_index=True, width="stretch", key="history_skew")
    durations = data.history("durations")
    if not durations.empty:
        hosts = durations[durations["level"] == "host"]
        if ctx.host:
            hosts = hosts[hosts["key"] == ctx.host]
        if not hosts.empty:
            st.altair_chart(charts.host_durations(hosts))
        if job:
            mine = durations[(durations["level"] == "job") & (durations["key"] == job)]
            if not mine.empty:
                st.markdown(f"Task durations of `{job}` in the archive (s):")
                st.dataframe(mine.drop(columns=["level"]), hide_index=True, width="stretch", key="history_durations")


ui.show(render)
