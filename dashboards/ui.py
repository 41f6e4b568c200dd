"""What every page shares: the data source, the sidebar filters (time, job, host) kept in the URL's query parameters,
links between views, formatting, and auto-refresh.

Why filters live in the URL: a link from one view to another (``stragglers?task=...&job=...``) carries them, a
bookmarked or shared URL opens the same view, and a page reload keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from dashboards.config import DashboardConfig
from dashboards.records import to_datetime
from dashboards.source import DashboardData

#: (file, title, url path, icon) of each view, in the navigation's order.
PAGES: list[tuple[str, str, str, str]] = [
    ("views/overview.py", "Overview", "overview", ":material/monitoring:"),
    ("views/jobs.py", "Jobs", "jobs", ":material/work:"),
    ("views/stragglers.py", "Stragglers", "stragglers", ":material/slow_motion_video:"),
    ("views/queuing.py", "Queuing", "queuing", ":material/stacked_line_chart:"),
    ("views/imbalance.py", "Imbalance", "imbalance", ":material/balance:"),
    ("views/spark.py", "Spark", "spark", ":material/bolt:"),
    ("views/alerts.py", "Alerts", "alerts", ":material/notifications:"),
    ("views/queries.py", "Queries", "queries", ":material/query_stats:"),
]
#: The view that explains each query of the Hadoop and Spark packs (alerts link there).
VIEW_OF_QUERY = {
    "Q1": "jobs",
    "Q2": "jobs",
    "Q3": "stragglers",
    "Q4": "queuing",
    "Q5": "imbalance",
    "Q6": "imbalance",
    "Q7": "imbalance",
    "MapSkewRunning": "jobs",  # MapDataSkew
    "MapSkewDone": "jobs",  # MapDataSkewDone
    "ReduceSkew": "jobs",  # ReduceDataSkew
    "HungFetch": "stragglers",  # HungFetch
    "HeldOutput": "queuing",  # HeldMapOutput
    "HeldOutputEarly": "queuing",  # HeldMapOutputEarly
    "HeldOutputLate": "queuing",  # HeldMapOutputLate
    "RunawayHost": "imbalance",  # RunawayReducer
    "SlowHost": "stragglers",  # SlowNode (by host: the view lists the slow-node alerts)
    "HostLosesRaces": "stragglers",  # SlowNodeKills
    "StageDone": "spark",
    "SlowTask": "spark",
    "FetchWait": "spark",
    "ExecutorLost": "spark",
    "StageRetry": "spark",
}
#: The query parameter each view selects its item by, and the alert label that fills it.
VIEW_PARAM = {
    "jobs": ("job_detail", "job_id"),
    "stragglers": ("task", "task_id"),
    "imbalance": ("task", "task_id"),
    "queuing": ("job", "job_id"),
    "spark": ("app", "app_id"),
}
#: Badge colours of the severities (Streamlit markdown ``:color-badge[...]``).
SEVERITY_COLOUR = {"critical": "red", "error": "red", "warning": "orange", "info": "blue"}
WINDOWS: dict[str, float | None] = {
    "all": None,
    "5 min": 300,
    "15 min": 900,
    "1 h": 3600,
    "6 h": 21600,
    "24 h": 86400,
    "7 d": 604800,
}
ALL = "(all)"
FILTER_KEYS = ("window", "job", "host")
CONTEXT_KEY = "_hcep_context"


@dataclass
class Context:
    """The data and the filters chosen in the sidebar."""

    data: DashboardData
    window: str = "all"
    job: str | None = None
    host: str | None = None
    refresh: float = 0.0

    def span(self) -> tuple[float | None, float | None]:
        """(since, until) of the time filter: windows end at the newest data, so a replayed trace reads like live."""
        seconds = WINDOWS.get(self.window)
        newest = self.data.newest()
        if seconds is None or newest is None:
            return None, None
        return newest - seconds, None

    def params(self, **extra: str | None) -> dict[str, str]:
        """Query parameters that keep the current filters, plus ``extra`` (None drops a key)."""
        out = {"window": self.window if self.window != "all" else None, "job": self.job, "host": self.host}
        out.update(extra)
        return {k: str(v) for k, v in out.items() if v}


@st.cache_resource(show_spinner=False)
def _data(key: tuple[tuple[str, str], ...]) -> DashboardData:
    return DashboardData(DashboardConfig.from_env(dict(key)))


def data_source() -> DashboardData:
    """One :class:`DashboardData` per configuration, shared by every session (it caches by data version)."""
    config = DashboardConfig.from_env()
    return _data(tuple(sorted(config.to_env().items())))


def _synced_select(label: str, key: str, options: list[str], default: str) -> str:
    """A sidebar selectbox mirrored in the query parameter ``key``; a link that sets the parameter wins."""
    wkey, seen = f"filter_{key}", f"_qp_seen_{key}"
    wanted = st.query_params.get(key)
    if wanted is not None and wanted not in options:
        options = [*options, wanted]
    if wanted is not None and wanted != st.session_state.get(seen):
        st.session_state[wkey] = wanted
    elif st.session_state.get(wkey) not in options:
        st.session_state[wkey] = default
    value = st.sidebar.selectbox(label, options, key=wkey)
    if value == default:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = value
    st.session_state[seen] = st.query_params.get(key)
    return value


def sidebar(data: DashboardData) -> Context:
    """Draw the filters and remember the context for the page about to run."""
    config = data.config
    window = _synced_select("Time window", "window", list(WINDOWS), "all")
    job = _synced_select("Job", "job", [ALL, *data.jobs()], ALL)
    host = _synced_select("Host", "host", [ALL, *data.hosts()], ALL)
    refresh = 0.0
    if config.refresh > 0:
        live = st.sidebar.toggle(f"Auto-refresh every {config.refresh:g} s", value=True, key="auto_refresh")
        refresh = config.refresh if live else 0.0
    newest = data.newest()
    st.sidebar.caption(f"Newest data: {when(newest)}" if newest is not None else "No data yet.")
    st.sidebar.caption("Sources: " + "; ".join(data.describe()))
    ctx = Context(data, window, None if job == ALL else job, None if host == ALL else host, refresh)
    st.session_state[CONTEXT_KEY] = ctx
    return ctx


def context() -> Context:
    ctx = st.session_state.get(CONTEXT_KEY)
    if ctx is None:  # a page script run on its own
        ctx = Context(data_source())
    return ctx


def show(render: Callable[[Context], None]) -> None:
    """Run a page's body, inside an auto-refreshing fragment when auto-refresh is on."""
    ctx = context()
    if ctx.refresh > 0:
        key = f"page:{render.__code__.co_filename}"
        st.fragment(run_every=ctx.refresh, key=key)(lambda: render(context()))()
    else:
        render(ctx)


def link(ctx: Context, view: str, label: str, icon: str | None = None, **params: str | None) -> None:
    """A link to another view that keeps the filters and sets ``params``."""
    st.page_link(f"views/{view}.py", label=label, icon=icon, query_params=ctx.params(**params))


def when(seconds: float | None) -> str:
    if seconds is None or pd.isna(seconds):
        return "-"
    return datetime.fromtimestamp(float(seconds), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def num(value: object, fmt: str = "{:.1f}") -> str:
    """A number for text, ``-`` when missing."""
    try:
        return "-" if value is None or pd.isna(value) else fmt.format(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def with_times(frame: pd.DataFrame, columns: Sequence[str] = ("start", "end", "ts")) -> pd.DataFrame:
    """Epoch-second columns shown as UTC datetimes."""
    out = frame.copy()
    for col in columns:
        if col in out.columns:
            out[col] = to_datetime(pd.to_numeric(out[col], errors="coerce"))
    return out


def severity_badge(severity: object, tier: object = None) -> str:
    """A coloured badge naming the severity (and the Dr. Elephant tier when the rule grades by tiers)."""
    text = str(severity or "?")
    if isinstance(tier, str) and tier and tier != text:
        text += f" · {tier}"
    return f":{SEVERITY_COLOUR.get(str(severity), 'gray')}-badge[{text}]"


def alert_link(ctx: Context, alert: dict[str, object], label: str | None = None, fallback: str | None = None) -> None:
    """A link from an alert to the view that shows its query's records, selecting its job or reducer (to
    ``fallback`` for a query no view shows; no link without one)."""
    view = VIEW_OF_QUERY.get(str(alert.get("query"))) or fallback
    if view is None:
        return
    param, field = VIEW_PARAM.get(view, (None, None))
    labels: Any = alert.get("labels") if isinstance(alert.get("labels"), dict) else {}
    value = alert.get(field) if field else None
    value = value or (labels.get(field) if field else None)  # a Spark alert names its application in a label
    extra = {param: str(value)} if param and value else {}
    if not extra and alert.get("host"):  # a rule grouped by host (SlowNode): filter the view to that host
        extra = {"host": str(alert["host"])}
    link(ctx, view, label or f"Open the {view} view", icon=":material/open_in_new:", **extra)


def filters_caption(ctx: Context) -> None:
    parts = [f"window **{ctx.window}**"]
    if ctx.job:
        parts.append(f"job **{ctx.job}**")
    if ctx.host:
        parts.append(f"host **{ctx.host}**")
    st.caption("Filters: " + ", ".join(parts))


def pick(label: str, options: list[str], key: str) -> str | None:
    """A page-level selectbox mirrored in the query parameter ``key`` (e.g. the task a link points at)."""
    if not options:
        return None
    wanted = st.query_params.get(key)
    wkey, seen = f"pick_{key}", f"_qp_seen_pick_{key}"
    if wanted in options and wanted != st.session_state.get(seen):
        st.session_state[wkey] = wanted
    elif st.session_state.get(wkey) not in options:
        st.session_state[wkey] = wanted if wanted in options else options[0]
    value = st.selectbox(label, options, key=wkey)
    st.query_params[key] = value
    st.session_state[seen] = value
    return value
