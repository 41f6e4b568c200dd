"""One small interface the pages read through: :class:`DashboardData`, over whatever backends are configured.

Why one interface: the pages must not care whether a match came from the live store of ``hcep run``, a directory of
``hcep match`` output or the Parquet archive; here they are merged (one row per match id), joined to their events
(job, task, hosts), filtered by time, job and host, and cached until a backend's data changes.  Alerts are the
transitions the service's alert rules decided (the store's ``alerts`` table, or ``hcep match --alerts`` files), read
as they were written; Alertmanager's live state of them is read on demand (:meth:`DashboardData.alertmanager`).
Nothing here imports ``app``: types and ids come from :mod:`contracts`.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from dashboards import alerts as alerts_mod
from dashboards import records
from dashboards.config import DashboardConfig
from dashboards.pack import Pack, load_pack, load_packs

LOAD_TYPES = ("LoadStd", "Balance", "Imbalance")


class Backend(Protocol):
    name: str

    def version(self) -> Any: ...

    def load(self) -> dict[str, pd.DataFrame]: ...


@dataclass(frozen=True)
class Snapshot:
    """Everything the backends held at one version, merged and enriched."""

    matches: pd.DataFrame
    events: pd.DataFrame
    transitions: pd.DataFrame  # every alert transition (dashboards.alerts.ALERT_COLUMNS + hosts), oldest first
    alerts: pd.DataFrame  # one row per alert group, its latest transition; without the acknowledgement columns
    stats: pd.DataFrame
    deadletter: int

    @property
    def newest(self) -> float | None:
        """The latest time the data knows of (event ``ts``, match ``end``, alert transition): the end of every
        relative window."""
        values = [
            s.max()
            for s in (self.events["ts"], self.matches["end"], self.transitions["ts"])
            if len(s) and pd.notna(s.max())
        ]
        return float(max(values)) if values else None

    @property
    def oldest(self) -> float | None:
        values = [
            s.min()
            for s in (self.events["ts"], self.matches["start"], self.transitions["starts_at"])
            if len(s) and pd.notna(s.min())
        ]
        return float(min(values)) if values else None


def _between(times: pd.Series, since: float | None, until: float | None) -> pd.Series:
    keep = pd.Series(True, index=times.index)
    if since is not None:
        keep &= times >= since
    if until is not None:
        keep &= times <= until
    return keep


def _has(column: pd.Series, value: str) -> pd.Series:
    """Rows whose comma-separated ``column`` holds ``value``."""
    return column.fillna("").map(lambda text: value in text.split(","))


def _alert_filter(
    frame: pd.DataFrame, since: float | None, until: float | None, job: str | None, host: str | None
) -> pd.Series:
    """Alerts whose time -- from firing to resolved, or still open -- overlaps ``[since, until]``, of the job (its
    ``job_id`` label, or the job of its ``task_id``) and host (any host of its evidence record)."""
    ends = frame["ends_at"].fillna(float("inf"))
    keep = _between(ends, since, None) & _between(frame["starts_at"], None, until)
    if job:
        jobs = frame["job_id"].where(frame["job_id"].notna(), frame["task_id"].map(records.job_of))
        keep &= jobs == job
    if host:
        keep &= _has(frame["hosts"], host)
    return keep


def _alert_hosts(transitions: pd.DataFrame, matches: pd.DataFrame) -> pd.DataFrame:
    """Add ``hosts``: the hosts of each alert's evidence record (its events), else the host label or RETURN value."""
    out = transitions.copy()
    if out.empty:
        out["hosts"] = pd.Series(dtype="object")
        return out
    by_id = dict(zip(matches["id"], matches["hosts"], strict=True)) if not matches.empty else {}

    def hosts(row: dict[str, Any]) -> str:
        known = by_id.get(row["record_id"]) if row["record_id"] else None
        if known:
            return str(known)
        returned = (row["evidence"] or {}).get("return") or {}
        found = [h for h in (row["host"], returned.get("host")) if isinstance(h, str) and h]
        return ",".join(dict.fromkeys(found))

    out["hosts"] = [hosts(r) for r in out[["record_id", "evidence", "host"]].to_dict("records")]
    return out


class DashboardData:
    """The dashboard's data access.  Thread-safe (Streamlit serves each browser tab from its own thread)."""

    def __init__(self, config: DashboardConfig, backends: list[Backend] | None = None) -> None:
        self.config = config
        self.backends: list[Backend] = backends if backends is not None else self._backends(config)
        self.pack: Pack = load_packs([config.pack, *config.more_packs]) if config.more_packs else load_pack(config.pack)
        self.acks = alerts_mod.AckBook(config.acks)
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._cache: tuple[Any, Snapshot] | None = None
        self._history = None
        if config.history is not None:
            from dashboards.backends.history import HistoryTables

            self._history = HistoryTables(config.history)

    @staticmethod
    def _backends(config: DashboardConfig) -> list[Backend]:
        out: list[Backend] = []
        if config.store is not None or config.more_stores:
            from dashboards.backends.store import StoreBackend

            out.extend(StoreBackend(path) for path in (config.store, *config.more_stores) if path is not None)
        if config.data_dir is not None:
            from dashboards.backends.jsonl import JsonlBackend

            out.append(JsonlBackend(config.data_dir))
        if config.archive is not None:
            from dashboards.backends.archive import ArchiveBackend

            out.append(ArchiveBackend(config.archive))
        return out

    # ------------------------------------------------------------------ loading
    def snapshot(self) -> Snapshot:
        """The merged data, re-read only when some backend's version changed; one thread loads at a time (the
        others then find its snapshot)."""
        version = tuple((b.name, b.version()) for b in self.backends)
        with self._lock:
            if self._cache is not None and self._cache[0] == version:
                return self._cache[1]
        with self._loading:
            with self._lock:
                if self._cache is not None and self._cache[0] == version:
                    return self._cache[1]
            snap = self._load()
            with self._lock:
                self._cache = (version, snap)
        return snap

    def _load(self) -> Snapshot:
        parts = [b.load() for b in self.backends]

        def stack(key: str) -> list[pd.DataFrame]:
            return [p[key] for p in parts if key in p and not p[key].empty]

        matches = stack("matches")
        events = stack("events")
        merged = (
            records.matches_frame(pd.concat(matches, ignore_index=True).to_dict("records"))
            if matches
            else records.matches_frame([])
        )
        evs = (
            records.events_frame(pd.concat(events, ignore_index=True).to_dict("records"))
            if events
            else records.events_frame([])
        )
        merged = records.enrich(merged, evs)
        found = stack("alerts")
        transitions = (
            alerts_mod.transitions_frame(pd.concat(found, ignore_index=True).to_dict("records"))
            if found
            else alerts_mod.transitions_frame([])
        )
        transitions = _alert_hosts(transitions, merged)
        stats = stack("stats")
        dead = sum(int(p["stats"].attrs.get("deadletter", 0)) for p in parts if "stats" in p)
        stats_frame = pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()
        return Snapshot(merged, evs, transitions, alerts_mod.latest(transitions), stats_frame, dead)

    # ------------------------------------------------------------------ the interface the pages use
    def newest(self) -> float | None:
        return self.snapshot().newest

    def oldest(self) -> float | None:
        return self.snapshot().oldest

    def matches(
        self,
        query: str | Collection[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        job: str | None = None,
        host: str | None = None,
        task: str | None = None,
    ) -> pd.DataFrame:
        """Match rows (see :data:`dashboards.records.MATCH_COLUMNS`, plus ``r_<name>`` RETURN values) that overlap
        the time window and concern the job / host / task."""
        frame = self.snapshot().matches
        if frame.empty:
            return frame
        keep = _between(frame["end"], since, None) & _between(frame["start"], None, until)
        if query is not None:
            keep &= frame["query"].isin([query] if isinstance(query, str) else list(query))
        if job:
            keep &= frame["job_id"] == job
        if host:
            keep &= _has(frame["hosts"], host)
        if task:
            keep &= frame["task_id"] == task
        return frame[keep].reset_index(drop=True)

    def events(
        self,
        types: Collection[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        job: str | None = None,
        host: str | None = None,
        task: str | None = None,
        ids: Collection[str] | None = None,
    ) -> pd.DataFrame:
        """Event rows (``id, type, ts, lo, hi, job_id, task_id, host`` and every other attribute seen)."""
        frame = self.snapshot().events
        if frame.empty:
            return frame
        keep = _between(frame["ts"], since, until)
        if types is not None:
            keep &= frame["type"].isin(list(types))
        if job:
            keep &= frame["job_id"] == job
        if host:
            keep &= frame["host"] == host
        if task:
            keep &= frame["task_id"] == task
        if ids is not None:
            keep &= frame["id"].isin([str(i) for i in ids])
        return frame[keep].reset_index(drop=True)

    def load(self, since: float | None = None, until: float | None = None) -> pd.DataFrame:
        """Cluster load rounds (LoadStd, Balance, Imbalance events: ``val``, ``mean``, ``threshold``)."""
        return self.events(LOAD_TYPES, since, until)

    def alerts(
        self,
        since: float | None = None,
        until: float | None = None,
        job: str | None = None,
        host: str | None = None,
        query: str | None = None,
        acked: bool | None = None,
        state: str | None = None,
        severities: Collection[str] | None = None,
        alertname: str | None = None,
    ) -> pd.DataFrame:
        """One row per alert group -- its latest transition (:data:`dashboards.alerts.ALERT_COLUMNS`, ``hosts``,
        ``transitions``, ``first_fired``, :data:`ACK_COLUMNS`) -- whose time (fired until resolved, or until now)
        overlaps the window; ``state`` ``firing`` keeps the open ones, ``resolved`` the others."""
        frame = self.acks.annotate(self.snapshot().alerts)
        if frame.empty:
            return frame
        keep = _alert_filter(frame, since, until, job, host)
        if query:
            keep &= frame["query"] == query
        if alertname:
            keep &= frame["alertname"] == alertname
        if acked is not None:
            keep &= frame["acked"] == acked
        if state is not None:
            keep &= frame["state"] == state
        if severities is not None:
            keep &= frame["severity"].isin(list(severities))
        return frame[keep].reset_index(drop=True)

    def alert_transitions(
        self,
        since: float | None = None,
        until: float | None = None,
        job: str | None = None,
        host: str | None = None,
    ) -> pd.DataFrame:
        """Every alert transition (fired, escalated, resolved) of the alerts in the window, oldest first."""
        frame = self.snapshot().transitions
        if frame.empty:
            return frame
        return frame[_alert_filter(frame, since, until, job, host)].reset_index(drop=True)

    def alertmanager(self) -> pd.DataFrame | None:
        """Alertmanager's current alerts (``dashboards.backends.alertmanager.COLUMNS``; ``attrs["error"]`` says why
        it is empty when it did not answer), or None without ``--alertmanager``.  Read live, never cached."""
        if not self.config.alertmanager:
            return None
        from dashboards.backends.alertmanager import current_alerts

        return current_alerts(self.config.alertmanager)

    def record(self, record_id: str | None, query: str | None = None) -> dict[str, Any] | None:
        """The match row of an alert's evidence (``record_id`` of its evidence annotation), if the data holds it.

        The id is the service's (``contracts.records.record_id`` with the query's output mode); a data dir's records
        get the ``all``-mode id, so for a ``distinct`` query the id is recomputed with the pack's output mode."""
        if not record_id:
            return None
        frame = self.snapshot().matches
        if frame.empty:
            return None
        hit = frame[frame["id"] == record_id]
        if hit.empty and query:
            output = self.pack.output_of(query)
            if output != "all":
                mine = frame[frame["query"] == query]
                ids = [
                    records.record_id({"query": r["query"], "match": r["match"], "return": r["return"]}, output)
                    for r in mine.to_dict("records")
                ]
                hit = mine[[i == record_id for i in ids]]
        if hit.empty:
            return None
        # A growing run's record lists only what it adds: the evidence is its chain's whole signature.
        return records.whole_row(frame, hit.iloc[-1].to_dict())

    def acknowledge(self, alert_ids: Collection[str], by: str = "operator", note: str = "") -> int:
        """Acknowledge alerts by fingerprint (the ``alert_id`` column)."""
        return self.acks.acknowledge(alert_ids, by, note)

    def query_stats(self, since: float | None = None, until: float | None = None) -> pd.DataFrame:
        """Per query: the pack's settings, matches and alerts in the window, the match rate, and -- when the service
        reports them -- the runs alive, everything shed and the partial matches shed."""
        snap = self.snapshot()
        pack = self.pack.frame().rename(columns={"confidence": "threshold"})
        matches = self.matches(since=since, until=until)
        counts = (
            matches.groupby("query").agg(matches=("id", "size"), last_match=("end", "max")).reset_index()
            if not matches.empty
            else pd.DataFrame(columns=["query", "matches", "last_match"])
        )
        table = pack.merge(counts, on="query", how="outer") if not pack.empty else counts
        alert_counts = self.alerts(since=since, until=until)
        if not alert_counts.empty:
            alert_counts = alert_counts.assign(_open=alert_counts["state"] == "firing")
            per = alert_counts.groupby("query").agg(alerts=("alert_id", "size"), open_alerts=("_open", "sum"))
            table = table.merge(per.reset_index(), on="query", how="left")
        for col in ("matches", "alerts", "open_alerts"):
            if col not in table.columns:
                table[col] = 0
            table[col] = pd.to_numeric(table[col], errors="coerce").fillna(0).astype(int)
        lo = since if since is not None else snap.oldest
        hi = until if until is not None else snap.newest
        minutes = max(((hi or 0) - (lo or 0)) / 60.0, 1.0 / 60.0) if lo is not None and hi is not None else None
        table["per_minute"] = (table["matches"] / minutes).round(3) if minutes else float("nan")
        table["runs_alive"] = float("nan")
        table["shed"] = float("nan")
        table["shed_runs"] = float("nan")
        for stats in (snap.stats, self._live_stats()):  # the live service's numbers win
            if stats.empty or "query" not in stats.columns:
                continue
            latest = stats.sort_values("ts", kind="stable") if "ts" in stats.columns else stats
            latest = latest.groupby("query").last()
            for src, dst in (("runs", "runs_alive"), ("shed", "shed"), ("shed_runs", "shed_runs")):
                if src in latest.columns:
                    known = pd.to_numeric(table["query"].map(latest[src]), errors="coerce")
                    table[dst] = known.where(known.notna(), table[dst])
        return table.sort_values("query", kind="stable").reset_index(drop=True)

    def _live_stats(self) -> pd.DataFrame:
        if not self.config.metrics:
            return pd.DataFrame()
        from dashboards.backends import metrics

        return metrics.query_frame(metrics.scrape(self.config.metrics))

    def service(self) -> dict[str, float]:
        """Service-wide numbers of the running ``hcep run`` (events per second, lag, watermark delay), if known."""
        if not self.config.metrics:
            return {}
        from dashboards.backends import metrics

        return metrics.service_totals(metrics.scrape(self.config.metrics))

    def jobs(self) -> list[str]:
        snap = self.snapshot()
        values = pd.concat([snap.matches["job_id"], snap.events["job_id"]]).dropna()
        return sorted({str(v) for v in values if v})

    def hosts(self) -> list[str]:
        snap = self.snapshot()
        values = set(snap.events["host"].dropna())
        for text in snap.matches["hosts"].dropna():
            values.update(h for h in text.split(",") if h)
        return sorted(str(v) for v in values if v)

    def history_tables(self) -> list[str]:
        """Names of the Spark history tables there are (``durations``, ``skew``, ``queued``, ``anomalies``)."""
        return self._history.names() if self._history is not None else []

    def history(self, name: str, job: str | None = None) -> pd.DataFrame:
        """One Spark history table (empty when there is none), optionally only the rows of ``job``."""
        frame = self._history.table(name) if self._history is not None else pd.DataFrame()
        if job and not frame.empty and "job_id" in frame.columns:
            frame = frame[frame["job_id"] == job].reset_index(drop=True)
        return frame

    def describe(self) -> list[str]:
        return [b.name for b in self.backends] or ["no data source configured"]

    def deadletter(self) -> int:
        return self.snapshot().deadletter
