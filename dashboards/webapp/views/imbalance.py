"""Imbalance: reducers that ran while the cluster load went out of balance (Q5), kept getting less balanced (Q6), or
whose own host became the outlier of an imbalanced cluster (Q7), with the confidence the imprecise Ganglia times
(+-7.5 s) allow; and the RunawayReducer alerts (query RunawayHost, one per reducer and host)."""

from __future__ import annotations

import streamlit as st

from dashboards import analysis, charts, ui


def render(ctx: ui.Context) -> None:
    st.title("Reducers and cluster load imbalance")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    flagged = analysis.imbalance_reducers(data.matches(["Q5", "Q6", "Q7"], since, until, job=ctx.job, host=ctx.host))
    runaway_alerts(ctx, since, until)
    if flagged.empty:
        st.info("No reducers coincide with a load imbalance (Q5 / Q6 / Q7 matches) in this window.")
        return
    both = flagged[flagged["query"].isin(["Q5", "Q6"])].groupby("task_id")["query"].nunique()
    cols = st.columns(4)
    cols[0].metric("Reducers flagged", flagged["task_id"].nunique())
    cols[1].metric("Through an imbalance (Q5)", int((flagged["query"] == "Q5").sum()))
    cols[2].metric("Flagged by Q5 and Q6", int((both > 1).sum()))
    cols[3].metric(
        "Own host the outlier (Q7)",
        int(flagged.loc[flagged["query"] == "Q7", "task_id"].nunique()),
        help="reducers whose own host became the outlier of an imbalanced cluster",
    )
    st.dataframe(
        ui.with_times(flagged.drop(columns=["id"])),
        hide_index=True,
        width="stretch",
        column_config={
            "confidence": st.column_config.ProgressColumn("confidence", min_value=0.0, max_value=1.0, format="%.3f")
        },
        key="imbalance_table",
    )
    lo, hi = flagged["start"].min() - 60, flagged["end"].max() + 60
    load = data.load(lo, hi)
    if not load.empty:
        threshold = data.pack.settings.get("imbalance_threshold")
        st.altair_chart(charts.load_chart(load, None, threshold), width="stretch")
    st.altair_chart(charts.reducer_spans(flagged), width="stretch")
    task = ui.pick("Reducer", list(dict.fromkeys(flagged["task_id"])), "task")
    if task:
        rows = flagged[flagged["task_id"] == task]
        text = ", ".join(f"{r['query']} (confidence {r['confidence']:.3f})" for r in rows.to_dict("records"))
        st.markdown(f"`{task}` on **{rows.iloc[0]['host']}**: {text}.")
        ui.link(ctx, "stragglers", f"Shuffle of {task}", icon=":material/slow_motion_video:", task=task)


#: The pack's rule on a reducer that drives its own host far above the cluster (queries/hadoop.yaml).
RUNAWAY_RULE = "RunawayReducer"


def runaway_alerts(ctx: ui.Context, since: float | None, until: float | None) -> None:
    """One line per RunawayReducer alert group (reducer and host), open ones first."""
    alerts = ctx.data.alerts(since, until, job=ctx.job, host=ctx.host, alertname=RUNAWAY_RULE)
    if alerts.empty:
        st.caption(f"No {RUNAWAY_RULE} alert in this window.")
        return
    for row in alerts.assign(_o=alerts["state"] != "firing").sort_values(["_o", "starts_at"]).to_dict("records"):
        state = "open" if row["state"] == "firing" else f"resolved {ui.when(row['ends_at'])}"
        st.markdown(
            f"{ui.severity_badge(row['severity'], row['tier'])} **{RUNAWAY_RULE}** `{row['task_id']}` on "
            f"**{row['host']}** · {row['summary']} (since {ui.when(row['starts_at'])}; {state})"
        )


ui.show(render)
