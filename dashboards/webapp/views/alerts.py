"""Alerts: the open alerts of the pack's alert rules, grouped by job and reducer, with severity, confidence, since
when, the rule's meaning and the evidence behind each; Alertmanager's state of them; acknowledgement; and the
resolved alerts in a collapsed history.

The alerts are what the service decided (the store's transitions, or ``hcep match --alerts`` files in the data
dir), never judged here; Alertmanager (``--alertmanager``) adds whether each is active, silenced or inhibited, and
lists the open alerts it holds that no transition here names.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from dashboards import alerts as alerts_mod
from dashboards import ui

#: Job groups drawn in full; the rest are counted (narrow the filters to see them).
MAX_JOBS = 40
#: Resolved alerts listed in the history.
MAX_RESOLVED = 300
SEVERITY_CHOICES = ["critical", "warning", "info"]
NO_JOB = "(no job)"


def render(ctx: ui.Context) -> None:
    st.title("Alerts")
    ui.filters_caption(ctx)
    since, until = ctx.span()
    data = ctx.data
    every = data.alerts(since, until, job=ctx.job, host=ctx.host)
    manager = data.alertmanager()
    extra = _alertmanager_only(ctx, manager)
    if not extra.empty:
        every = (
            pd.concat([every, data.acks.annotate(extra)], ignore_index=True)
            if not every.empty
            else data.acks.annotate(extra)
        )
    every = alerts_mod.with_alertmanager(every, manager) if not every.empty else every
    sources(data, manager)
    if every.empty:
        st.info("No alerts in this window.")
        return

    cols = st.columns([3, 1])
    chosen = cols[0].multiselect(
        "Severity",
        SEVERITY_CHOICES,
        default=["critical", "warning"],
        key="alert_severity",
        help="warning or worse by default: info alerts are for the record, not for paging",
    )
    show_acked = cols[1].toggle("Show acknowledged", value=False, key="alert_show_acked")
    open_all = every[every["state"] == "firing"]
    resolved_all = every[every["state"] == "resolved"]
    urgent = open_all["severity"].isin(alerts_mod.URGENT)
    metrics = st.columns(4)
    metrics[0].metric("Open, warning or worse", int((urgent & ~open_all["acked"]).sum()))
    metrics[1].metric("Open, info", int((~urgent & ~open_all["acked"]).sum()))
    metrics[2].metric("Acknowledged", int(open_all["acked"].sum()))
    resolved = resolved_all[resolved_all["severity"].isin(chosen)]
    metrics[3].metric("Resolved", len(resolved), help="resolved alerts of the chosen severities in the window")

    shown = open_all[open_all["severity"].isin(chosen)]
    if not show_acked:
        shown = shown[~shown["acked"]]
    shown = alerts_mod.sort_for_display(shown)
    st.subheader(f"Open alerts ({len(shown)})")
    if shown.empty:
        st.success(
            "No open alerts of the chosen severities." + ("" if show_acked else " (Acknowledged ones are hidden.)")
        )
    else:
        open_groups(ctx, shown)
    acknowledge(ctx, shown)
    history(ctx, resolved, since, until)


def sources(data: Any, manager: pd.DataFrame | None) -> None:
    """Where the alerts come from, and what Alertmanager says (or why it says nothing)."""
    parts = []
    transitions = data.alert_transitions()
    if not transitions.empty:
        counts = transitions.groupby("source").size()
        parts.append("transitions from " + ", ".join(f"{src} ({n})" for src, n in counts.items()))
    if manager is not None:
        url = data.config.alertmanager
        error = manager.attrs.get("error")
        if error:
            st.warning(f"Alertmanager {url} did not answer: {error}")
        else:
            silenced = int(manager["silenced_by"].map(bool).sum()) if not manager.empty else 0
            inhibited = int(manager["inhibited_by"].map(bool).sum()) if not manager.empty else 0
            parts.append(f"Alertmanager {url}: {len(manager)} open ({silenced} silenced, {inhibited} inhibited)")
    st.caption(
        "Alerts: "
        + (
            "; ".join(parts)
            if parts
            else "no source holds alerts yet (the store of `hcep run`, `hcep match --alerts` files, or --alertmanager)"
        )
    )


def _alertmanager_only(ctx: ui.Context, manager: pd.DataFrame | None) -> pd.DataFrame:
    """Alertmanager's open alerts no transition here names, filtered by the sidebar's job."""
    if manager is None or manager.empty:
        return alerts_mod.transitions_frame([])
    known = ctx.data.alert_transitions()
    extra = alerts_mod.only_in_alertmanager(known, manager)
    if extra.empty:
        return extra
    extra = alerts_mod.latest(extra.assign(hosts=extra["host"].fillna("")))
    if ctx.job:
        extra = extra[extra["job_id"] == ctx.job]
    return extra.reset_index(drop=True)


def owner(row: dict[str, Any]) -> str:
    """The job an alert is about (its ``job_id`` label), or the Spark application (``app_id``)."""
    labels: Any = row.get("labels") if isinstance(row.get("labels"), dict) else {}
    return row.get("job_id") or labels.get("app_id") or NO_JOB


def open_groups(ctx: ui.Context, shown: pd.DataFrame) -> None:
    """The open alerts, one bordered box per job or Spark application (the rule's group label), its reducers' or
    stages' alerts inside."""
    jobs = pd.Series([owner(r) for r in shown.to_dict("records")], index=shown.index, dtype="object")
    order = list(dict.fromkeys(jobs))  # sort_for_display put the most severe first
    for job in order[:MAX_JOBS]:
        mine = shown[jobs == job]
        with st.container(border=True):
            worst = mine.iloc[0]["severity"]
            st.markdown(f"#### {ui.severity_badge(worst)} `{job}` · {len(mine)} open alert(s)")
            for row in mine.sort_values(["task_id", "starts_at"], na_position="first", kind="stable").to_dict(
                "records"
            ):
                alert_entry(ctx, row)
    if len(order) > MAX_JOBS:
        st.caption(f"{len(order) - MAX_JOBS} more job(s) with open alerts: narrow the time window or pick a job.")


def target(row: dict[str, Any]) -> str:
    """What the alert is about: the job, and the reducer when the rule groups by it; a Spark application's stage
    (and executor)."""
    job = owner(row)
    labels: Any = row.get("labels") if isinstance(row.get("labels"), dict) else {}
    if not row.get("job_id") and labels.get("stage_id") is not None:
        executor = f" / executor `{labels['executor_id']}`" if labels.get("executor_id") else ""
        attempt = f" / attempt `{labels['app_attempt']}`" if labels.get("app_attempt") else ""
        return f"`{job}`{attempt} / stage `{labels['stage_id']}`{executor}"
    return f"`{job}` / `{row['task_id']}`" if row.get("task_id") else f"`{job}`"


def alert_entry(ctx: ui.Context, row: dict[str, Any]) -> None:
    """One open alert: severity, rule, job / reducer and summary on one line; confidence, since when, Alertmanager's
    state and acknowledgement below; the rule's meaning and the evidence in an expander."""
    st.markdown(
        f"{ui.severity_badge(row['severity'], row['tier'])} **{row['alertname']}** · {target(row)} · {row['summary']}"
    )
    facts = [f"confidence {ui.num(row['confidence'], '{:.2f}')}", f"since {ui.when(row['starts_at'])}"]
    if row.get("am_state"):
        facts.append(f"Alertmanager: {row['am_state']}")
    if row.get("acked"):
        facts.append(f"acknowledged by {row['acked_by']}")
    facts.append(f"source {row['source']}" + (f" ({row['delivery']})" if row.get("delivery") else ""))
    st.caption(" · ".join(facts))
    with st.expander(f"Rule and evidence: {row['alertname']} {row.get('task_id') or row.get('job_id') or ''}"):
        evidence(ctx, row)


def evidence(ctx: ui.Context, row: dict[str, Any]) -> None:
    """The rule's description, the evidence annotation (query, record id, event ids, RETURN values) and the match
    record it names, from whichever source holds it."""
    rule = ctx.data.pack.rule(str(row["alertname"]))
    description = row.get("description") or (rule.description if rule else "")
    if description:
        st.markdown(f"**{row['alertname']}**: {description}")
    if rule is not None and rule.value:
        st.caption(
            f"graded by `{rule.value}` = {ui.num(row.get('value'), '{:.3g}')}"
            + (f"; gated by `{rule.when}`" if rule.when else "")
            + (f"; held for {rule.hold}" if rule.hold else "")
        )
    found = row.get("evidence") or {}
    st.markdown(
        f"Evidence: query **{found.get('query') or row.get('query') or '?'}**, "
        f"{found.get('records', '?')} record(s) seen, record id `{found.get('record_id') or '-'}`"
    )
    st.json(found, expanded=False)
    record = ctx.data.record(found.get("record_id"), found.get("query") or row.get("query"))
    if record is None:
        st.caption("The match record itself is not in the data sources (the store or the data dir's match files).")
    else:
        st.markdown(f"The match record (from {record['source']}):")
        if record.get("chain", 1) > 1:  # a growing run's increments: the whole signature is the chain's
            whole = "its whole signature" if record.get("chain_complete") else "as much of it as the data holds"
            st.caption(f"A growing run's record: {whole}, rebuilt from a chain of {record['chain']} records.")
        st.code(
            json.dumps(
                {
                    "query": record["query"],
                    "match": record["match"],
                    "return": record["return"],
                    "confidence": record["confidence"],
                    "start": record["start"],
                    "end": record["end"],
                },
                indent=1,
                default=str,
            ),
            language="json",
        )
    ui.alert_link(ctx, row, f"Open the records of {row.get('query')} for {row.get('task_id') or row.get('job_id')}")


def acknowledge(ctx: ui.Context, shown: pd.DataFrame) -> None:
    """Acknowledge open alerts (by fingerprint: an escalated alert, with a new severity, asks again)."""
    data = ctx.data
    st.subheader("Acknowledge")
    if not data.acks.writable:
        st.warning("Acknowledgements cannot be saved: give the dashboard a writable data dir (--data) or --acks.")
        return
    open_rows = shown[~shown["acked"]] if not shown.empty else shown
    labels = {
        r["alert_id"]: f"{r['alertname']} · {r.get('task_id') or r.get('job_id') or ''} · {r['severity']}"
        for r in open_rows.to_dict("records")
    }
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


def history(ctx: ui.Context, resolved: pd.DataFrame, since: float | None, until: float | None) -> None:
    """Resolved alerts (collapsed), newest first, and every transition in a table."""
    resolved = resolved.sort_values("ends_at", ascending=False, kind="stable") if not resolved.empty else resolved
    with st.expander(f"Resolved alerts ({len(resolved)})", expanded=False):
        if resolved.empty:
            st.caption("No resolved alerts of the chosen severities in this window.")
        for row in resolved.head(MAX_RESOLVED).to_dict("records"):
            st.markdown(
                f"{ui.severity_badge(row['severity'], row['tier'])} **{row['alertname']}** · {target(row)} · "
                f"{row['fired_summary']} · {ui.when(row['starts_at'])} → {ui.when(row['ends_at'])}"
            )
        if len(resolved) > MAX_RESOLVED:
            st.caption(f"... and {len(resolved) - MAX_RESOLVED} older ones (see the transitions below).")
    transitions = ctx.data.alert_transitions(since, until, job=ctx.job, host=ctx.host)
    with st.expander(f"Every transition ({len(transitions)})", expanded=False):
        if not transitions.empty:
            table = transitions[
                [
                    "ts",
                    "state",
                    "severity",
                    "tier",
                    "alertname",
                    "job_id",
                    "task_id",
                    "summary",
                    "confidence",
                    "starts_at",
                    "ends_at",
                    "source",
                    "delivery",
                    "alert_id",
                ]
            ]
            st.dataframe(
                ui.with_times(table.iloc[::-1], ("ts", "starts_at", "ends_at")),
                hide_index=True,
                width="stretch",
                key="alert_transitions",
            )


ui.show(render)
