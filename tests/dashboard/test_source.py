"""The dashboard's data access over each backend -- JSONL files, the SQLite store of ``hcep run``, the Parquet
archive -- and the pieces around it (acknowledgements, log search, the ``hcep dashboard`` command's checks)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dashboards.config import DashboardConfig
from dashboards.logs import short_path, straggler_lines
from dashboards.source import DashboardData
from tests.dashboard.fixture import IMBALANCE_TASK, PACK, SAMPLE, SLOW_PULL_TASK, STRAGGLER_JOB

ROOT = Path(__file__).resolve().parents[2]


def records(data_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (data_dir / "matches.jsonl").read_text().splitlines() if line.strip()]


def sample_events() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def test_jsonl_matches_are_joined_to_their_events(data_dir: Path) -> None:
    data = DashboardData(DashboardConfig(data_dir=data_dir, pack=PACK))
    q3 = data.matches("Q3", job=STRAGGLER_JOB)
    assert list(q3["task_id"]) == [SLOW_PULL_TASK]
    assert q3.iloc[0]["host"] == "worker-03"  # the reducer's host, not the host a pull came from
    assert set(q3.iloc[0]["hosts"].split(",")) == {"worker-01", "worker-02", "worker-03"}
    q1 = data.matches("Q1", job=STRAGGLER_JOB)
    assert q1.iloc[0]["task_id"] is None  # a job's match binds many tasks
    assert set(data.matches(host="worker-04")["job_id"]) == {STRAGGLER_JOB}
    assert len(data.load()) == 42 and set(data.load()["type"]) == {"LoadStd", "Balance", "Imbalance"}


def test_time_filters_select_overlapping_matches(data_dir: Path) -> None:
    data = DashboardData(DashboardConfig(data_dir=data_dir, pack=PACK))
    everything = data.matches()
    late = data.matches(since=1_700_000_150.0)
    assert 0 < len(late) < len(everything)
    assert (late["end"] >= 1_700_000_150.0).all()
    assert data.matches(until=1_699_999_000.0).empty


def test_a_growing_file_is_reread_and_a_torn_line_skipped(tmp_path: Path, data_dir: Path) -> None:
    (tmp_path / "m.jsonl").write_text((data_dir / "matches.jsonl").read_text().splitlines()[0] + "\n")
    data = DashboardData(DashboardConfig(data_dir=tmp_path, pack=PACK))
    assert len(data.matches()) == 1
    with (tmp_path / "m.jsonl").open("a") as f:
        f.write((data_dir / "matches.jsonl").read_text().splitlines()[1] + "\n" + '{"query": "Q3", "mat')
    assert len(data.matches()) == 2


def test_store_backend_reads_matches_and_the_alert_outbox(tmp_path: Path, data_dir: Path) -> None:
    store_mod = pytest.importorskip("app.store")
    from app.alerts import alert_object
    from app.checkpoint import record_id

    recs = [r for r in records(data_dir) if r["start"] < 1_700_000_390]  # the sample's records
    q5 = next(r for r in recs if r["query"] == "Q5")
    alert_id = record_id(q5, "distinct")
    alert = alert_object(q5, alert_id=alert_id, pack="hadoop", severity="warning", summary="reducer {task_id}")
    store = store_mod.Store(str(tmp_path / "hcep.sqlite"))
    store.commit(store_mod.Batch(
        matches=[(record_id(r), r["query"], "hadoop", r["confidence"], r["start"], r["end"], json.dumps(r), 1.0, "i")
                 for r in recs],
        alerts=[(alert_id, "Q5", "ops", "warning", json.dumps(alert), "pending", 0.0, 1.0, "i")],
        deadletters=[("events", 0, 7, 0, "late", "{}", 1.0)], offsets=[], checkpoint=None))
    store.close()

    data = DashboardData(DashboardConfig.from_env({"HCEP_DASHBOARD_DATA": str(tmp_path),
                                                   "HCEP_DASHBOARD_PACK": str(PACK)}))
    assert data.config.store == tmp_path / "hcep.sqlite"
    assert len(data.matches()) == len(recs)
    alerts = data.alerts().set_index("alert_id")
    assert alerts.loc[alert_id, "status"] == "pending" and alerts.loc[alert_id, "task_id"] == IMBALANCE_TASK
    assert alerts.loc[alert_id, "summary"] == f"reducer {IMBALANCE_TASK}"
    assert alerts.index.is_unique  # the outbox alert and the one derived from its match are one alert
    assert data.deadletter() == 1
    assert (tmp_path / "hcep.sqlite").stat().st_size > 0

    # With the events beside the store, its matches get their hosts; the same records from JSONL are not doubled.
    (tmp_path / "events.jsonl").write_text(SAMPLE.read_text())
    (tmp_path / "matches.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    data = DashboardData(DashboardConfig.from_env({"HCEP_DASHBOARD_DATA": str(tmp_path)}))
    assert len(data.matches()) == len(recs)
    assert data.matches("Q3").iloc[0]["host"] == "worker-03"


def test_archive_backend_reads_events_and_matches(tmp_path: Path, data_dir: Path) -> None:
    archive = pytest.importorskip("app.spark.archive")
    recs = [r for r in records(data_dir) if r["start"] < 1_700_000_390]
    with archive.ArchiveWriter(tmp_path) as writer:
        writer.add_events(sample_events())
        writer.add_matches(recs)
    data = DashboardData(DashboardConfig.from_env({"HCEP_DASHBOARD_ARCHIVE": str(tmp_path)}))
    assert len(data.matches()) == len(recs)
    assert data.matches("Q3").iloc[0]["host"] == "worker-03"
    assert len(data.load()) == 42
    assert data.history_tables() == []


def test_history_tables_are_found_beside_the_data_and_reread_when_replaced(data_dir: Path, tmp_path: Path) -> None:
    data = DashboardData(DashboardConfig.from_env({"HCEP_DASHBOARD_DATA": str(data_dir)}))
    assert data.config.history == data_dir.resolve() / "history" or data.config.history == data_dir / "history"
    assert data.history_tables() == ["anomalies", "durations", "queued", "skew"]
    skew = data.history("skew", job=STRAGGLER_JOB)
    assert set(skew["kind"]) == {"Mapper", "Reducer"}
    shutil.copytree(data_dir / "history", tmp_path / "h")
    data = DashboardData(DashboardConfig(history=tmp_path / "h"))
    assert len(data.history("anomalies")) > 0
    time.sleep(0.01)
    pd.DataFrame({"bucket": [0.0], "kind": ["straggler"], "query": ["Q3"], "count": [9]}).to_parquet(
        tmp_path / "h" / "anomalies" / "part-00000.parquet")
    assert data.history("anomalies")["count"].tolist() == [9]
    assert data.history("nope").empty


def test_acknowledgements_survive_a_new_data_object(tmp_path: Path, data_dir: Path) -> None:
    config = DashboardConfig(data_dir=data_dir, pack=PACK, acks=tmp_path / "acks.json")
    data = DashboardData(config)
    first = data.alerts().iloc[0]["alert_id"]
    assert data.acknowledge([first, first], by="bob") == 1
    assert data.acknowledge([first]) == 0
    again = DashboardData(config).alerts(acked=True)
    assert again["alert_id"].tolist() == [first] and again.iloc[0]["acked_by"] == "bob"


def test_log_lines_of_a_straggler_are_found(tmp_path: Path) -> None:
    app = "application_1700000000000_0001"
    log = tmp_path / "hadoop" / "nodes" / "worker-03" / "userlogs" / app / "container_x_000004" / "syslog"
    log.parent.mkdir(parents=True)
    log.write_text(
        "2023-11-14 22:13:55,000 INFO [main] attempt_1700000000000_0001_r_000001_0 started\n"
        "2023-11-14 22:14:04,100 INFO [fetcher#1] Fetcher: about to shuffle output of map "
        "attempt_1700000000000_0001_m_000001_0 decomp: 24510464 len: 24510468 to MEMORY\n"
        "2023-11-14 22:14:04,200 INFO [fetcher#2] Fetcher: about to shuffle output of map "
        "attempt_1700000000000_0001_m_000002_0 decomp: 1 len: 1 to MEMORY\n")
    found = straggler_lines(tmp_path, SLOW_PULL_TASK, "task_1700000000000_0001_m_000001")
    assert [line.lineno for line in found] == [2]
    assert short_path(found[0].path, tmp_path) == "worker-03/container_x_000004/syslog"
    assert straggler_lines(tmp_path, "task_1700000000000_0002_r_000001", None) == []


def test_config_round_trips_through_the_environment(tmp_path: Path) -> None:
    config = DashboardConfig(data_dir=tmp_path, pack=PACK, refresh=3.0)
    again = DashboardConfig.from_env(config.to_env())
    assert again.data_dir == tmp_path.resolve() and again.refresh == 3.0
    assert again.acks == tmp_path.resolve() / "dashboard_acks.json"


def test_hcep_dashboard_rejects_missing_inputs(tmp_path: Path) -> None:
    def hcep(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "app.cli", "dashboard", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=60)

    none = hcep()
    assert none.returncode == 2 and "--data" in none.stderr
    missing = hcep("--data", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such directory" in missing.stderr
