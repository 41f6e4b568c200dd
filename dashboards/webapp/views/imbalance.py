"""Imbalance: reducers that ran while the cluster load went out of balance (Q5), kept getting less balanced (Q6), or
whose own host became the outlier of an imbalanced cluster (Q7, which the UnbalancingReducer rule judges), with the
confidence the imprecise Ganglia times (+-7.5 s) allow."""

from __future__ import annotations

import streamlit as st

from dashboards import analysis, charts, ui


def render(ctx: ui.Context) -> None:
    st.title("Reducers and cluster load imbalance")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    flagged = analysis.imbalance_reducers(data.matches(["Q5", "Q6", "Q7"], since, until, job=ctx.job, host=ctx.host))
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
        help="the reducers the UnbalancingReducer alert rule judges",
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


ui.show(render)
