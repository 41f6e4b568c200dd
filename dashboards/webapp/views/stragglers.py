"""Stragglers: shuffle pulls slower than twice the reducer's earlier pulls (Q3), with the task, the hosts and the
events and log lines behind each; the HungFetch alerts (per reducer) and the slow-node alerts (SlowNode,
SlowNodeKills, per host)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboards import analysis, charts, logs, ui

#: The pack's rules this view shows (queries/hadoop.yaml): a hung fetch of a reducer, a slow node.
RULES = ("HungFetch", "SlowNode", "SlowNodeKills")


def rule_alerts(ctx: ui.Context, since: float | None, until: float | None) -> None:
    """One line per alert group of :data:`RULES`, open ones first, each linked to its reducer or host."""
    frames = [ctx.data.alerts(since, until, job=ctx.job, host=ctx.host, alertname=r) for r in RULES]
    found = [f for f in frames if not f.empty]
    if not found:
        st.caption("No HungFetch, SlowNode or SlowNodeKills alert in this window.")
        return
    alerts = pd.concat(found, ignore_index=True)
    for row in alerts.assign(_o=alerts["state"] != "firing").sort_values(["_o", "starts_at"]).to_dict("records"):
        state = "open" if row["state"] == "firing" else f"resolved {ui.when(row['ends_at'])}"
        where = f"`{row['task_id']}`" if row.get("task_id") else f"host **{row.get('host')}**"
        st.markdown(
            f"{ui.severity_badge(row['severity'], row['tier'])} **{row['alertname']}** {where} · {row['summary']} "
            f"(since {ui.when(row['starts_at'])}; {state})"
        )


def render(ctx: ui.Context) -> None:
    st.title("Straggling shuffle pulls")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    q3 = data.matches("Q3", since, until, job=ctx.job, host=ctx.host)
    rule_alerts(ctx, since, until)
    table = analysis.stragglers(
        q3, data.events(ids=[i for ids in q3["events"] for i in ids]) if not q3.empty else data.events(ids=[])
    )
    if table.empty:
        st.info("No straggling pulls (Q3 matches) in this window.")
        return
    cols = list(st.columns(3))
    worst = table.sort_values("ratio", ascending=False, na_position="last").iloc[0]
    cols[0].metric("Straggling pulls", len(table))
    cols[1].metric("Reducers affected", table["task_id"].nunique())
    cols[2].metric("Worst slow-down", ui.num(worst["ratio"], "{:.1f}x"), help=worst["task_id"])
    st.dataframe(ui.with_times(table.drop(columns=["id"])), hide_index=True, width="stretch", key="stragglers_table")

    task = ui.pick("Reducer", list(dict.fromkeys(table["task_id"])), "task")
    if task is None:
        return
    mine = table[table["task_id"] == task]
    row = mine.iloc[-1]
    st.subheader(f"Reducer {task}")
    st.markdown(
        f"Runs on **{row['reducer_host']}** (job `{row['job_id']}`). Slow pull: **{ui.num(row['slow_pull_s'])} s** "
        f"for map output of `{row['map_task']}` from **{row['source_host']}**, against an average of "
        f"{ui.num(row['earlier_avg_s'], '{:.2f}')} s over the {row['earlier_pulls']} pull(s) before it."
    )
    pulls = data.events(("DataPull",), task=task)
    matches = q3[q3["task_id"] == task]
    slow_ids = [m["c"][0] for m in matches["match"] if m.get("c")]
    if not pulls.empty:
        st.altair_chart(charts.pulls_chart(pulls, slow_ids), width="stretch")
    with st.expander("Events of the match (log-derived)", expanded=True):
        bound = [i for ids in matches["events"] for i in ids]
        events = data.events(ids=bound)
        lines = [
            json.dumps({k: v for k, v in e.items() if v == v and v is not None}, default=str)
            for e in events.to_dict("records")
        ]
        st.code("\n".join(lines) or "(the events are not in the data sources)", language="json", wrap_lines=True)
    if data.config.logs is not None:
        found = logs.straggler_lines(data.config.logs, task, row["map_task"])
        with st.expander(f"Hadoop log lines ({len(found)})", expanded=bool(found)):
            for path in dict.fromkeys(line.path for line in found):
                st.caption(f"`{logs.short_path(path, data.config.logs)}`")
                st.code(
                    "\n".join(f"{line.lineno}: {line.text}" for line in found if line.path == path),
                    language=None,
                    wrap_lines=True,
                )
            if not found:
                st.caption("(no matching lines in the log tree)")
    cols = list(st.columns(2))
    with cols[0]:
        ui.link(ctx, "jobs", f"Job {row['job_id']}", icon=":material/work:", job_detail=row["job_id"])
    with cols[1]:
        ui.link(ctx, "imbalance", "Was the cluster out of balance then?", icon=":material/balance:", task=task)


ui.show(render)
