"""Where the dashboard reads from, taken from the environment.

Why the environment: ``hcep dashboard`` starts ``streamlit run`` in a child process and Streamlit's AppTest runs the
script in-process; environment variables reach both without argument plumbing through Streamlit's own parser.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "HCEP_DASHBOARD_"
#: The file name ``hcep run`` gives its SQLite store inside a data dir (``app.store.STORE_FILE``).
STORE_FILE = "hcep.sqlite"
#: The sidecar that keeps acknowledgements when the store has no place for them.
ACKS_FILE = "dashboard_acks.json"
DEFAULT_REFRESH = 10.0


def default_pack() -> Path:
    """The installed Hadoop pack (the queries the pages are written for)."""
    here = Path(__file__).resolve().parents[1] / "queries" / "hadoop.yaml"
    if here.is_file():
        return here
    from importlib.resources import files

    return Path(str(files("queries").joinpath("hadoop.yaml")))


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(PREFIX + name, "").strip()
    return Path(value).expanduser() if value else None


def _paths(env: Mapping[str, str], name: str) -> tuple[Path, ...]:
    value = env.get(PREFIX + name, "")
    return tuple(Path(v).expanduser() for v in value.split(os.pathsep) if v.strip())


@dataclass(frozen=True)
class DashboardConfig:
    """The dashboard's inputs; every one is optional, the pages show what is there."""

    data_dir: Path | None = None  # JSONL match records / events, and the default home of the others
    store: Path | None = None  # the SQLite store of ``hcep run`` (read-only)
    archive: Path | None = None  # Parquet archive root (``events/``, ``matches/``)
    pack: Path | None = None  # the query pack (descriptions, alert severities and summaries)
    logs: Path | None = None  # Hadoop log tree, searched for the log lines of a straggler
    acks: Path | None = None  # acknowledgement sidecar
    refresh: float = DEFAULT_REFRESH  # seconds between auto-refreshes; 0 turns it off
    metrics: str | None = None  # the Prometheus endpoint of ``hcep run`` (runs alive, shed counts, events/s)
    history: Path | None = None  # Spark history tables (``hcep history --out DIR``: durations/, skew/, ...)
    alertmanager: str | None = None  # Alertmanager's base URL: the open alerts, silenced/inhibited state
    more_stores: tuple[Path, ...] = ()  # the stores of further ``hcep run`` services (another pack, e.g. Spark's)
    more_packs: tuple[Path, ...] = ()  # further query packs shown beside ``pack``

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DashboardConfig:
        env = os.environ if env is None else env
        data = _path(env, "DATA")
        store = _path(env, "STORE")
        archive = _path(env, "ARCHIVE")
        if data is not None:
            if store is None and (data / STORE_FILE).is_file():
                store = data / STORE_FILE
            if archive is None and any((data / sub).is_dir() for sub in ("events", "matches")):
                archive = data
        history = _path(env, "HISTORY")
        if history is None:
            history = next((d / "history" for d in (data, archive) if d is not None and (d / "history").is_dir()), None)
        acks = _path(env, "ACKS")
        if acks is None:
            home = data or (store.parent if store else None) or archive
            acks = home / ACKS_FILE if home is not None else None
        try:
            refresh = max(0.0, float(env.get(PREFIX + "REFRESH", DEFAULT_REFRESH)))
        except ValueError:
            refresh = DEFAULT_REFRESH
        metrics = env.get(PREFIX + "METRICS", "").strip() or None
        alertmanager = env.get(PREFIX + "ALERTMANAGER", "").strip() or None
        return cls(
            data,
            store,
            archive,
            _path(env, "PACK") or default_pack(),
            _path(env, "LOGS"),
            acks,
            refresh,
            metrics,
            history,
            alertmanager,
            _paths(env, "MORE_STORES"),
            _paths(env, "MORE_PACKS"),
        )

    def to_env(self) -> dict[str, str]:
        """The variables that make :meth:`from_env` return this config (for the ``streamlit run`` child)."""
        out: dict[str, str] = {PREFIX + "REFRESH": f"{self.refresh:g}"}
        for name in ("data_dir", "store", "archive", "pack", "logs", "acks", "history"):
            value = getattr(self, name)
            if value is not None:
                key = "DATA" if name == "data_dir" else name.upper()
                out[PREFIX + key] = str(Path(value).resolve())
        if self.metrics:
            out[PREFIX + "METRICS"] = self.metrics
        if self.alertmanager:
            out[PREFIX + "ALERTMANAGER"] = self.alertmanager
        for name, paths in (("MORE_STORES", self.more_stores), ("MORE_PACKS", self.more_packs)):
            if paths:
                out[PREFIX + name] = os.pathsep.join(str(Path(p).resolve()) for p in paths)
        return out
