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
from tests.dashboards.fixture import PACK, SAMPLE, SLOW_PULL_TASK, STRAGGLER_JOB

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


def test_store_backend_reads_matches_and_the_alert_transitions(tmp_path: Path, data_dir: Path) -> None:
    store_mod = pytest.importorskip("app.store")
    from contracts.alerts import Alert
    from contracts.records import record_id

    recs = [r for r in records(data_dir) if r["start"] < 1_700_000_390]  # the sample's records
    q3 = next(r for r in recs if r["query"] == "Q3")
    labels = {
        "alertname": "ShufflePullStall",
        "severity": "warning",
        "tier": "moderate",
        "pack": "hadoop",
        "query": "Q3",
        "job_id": STRAGGLER_JOB,
        "task_id": SLOW_PULL_TASK,
    }
    notes = {
        "summary": "slow pull",
        "confidence": "1.0",
        "evidence": json.dumps({"query": "Q3", "record_id": record_id(q3), "records": 1}),
    }
    fired = Alert(labels, notes, 1_700_000_045.0, at=1_700_000_045.0)
    other = Alert(
        {**labels, "task_id": "task_x", "severity": "critical"},
        {"summary": "another"},
        1_700_000_050.0,
        at=1_700_000_050.0,
    )
    transitions = [fired, other, other.resolved(1_700_000_060.0)]
    store = store_mod.Store(str(tmp_path / "hcep.sqlite"))
    store.commit(
        store_mod.Batch(
            matches=[
                (record_id(r), r["query"], "hadoop", r["confidence"], r["start"], r["end"], json.dumps(r), 1.0, "i")
                for r in recs
            ],
            alerts=[
                (
                    a.transition_id,
                    "ShufflePullStall",
                    "ops",
                    a.severity,
                    json.dumps(a.to_webhook()),
                    "delivered" if a is fired else "pending",
                    0.0,
                    1.0,
                    "i",
                    a.fingerprint,
                    a.status,
                    a.starts_at,
                    a.ends_at,
                )
                for a in transitions
            ],
            deadletters=[("events", 0, 7, 0, "late", "{}", 1.0)],
            offsets=[],
            checkpoint=None,
        )
    )
    open_in_store = [a["fingerprint"] for a in store.open_alerts()]
    store.close()

    data = DashboardData(
        DashboardConfig.from_env({"HCEP_DASHBOARD_DATA": str(tmp_path), "HCEP_DASHBOARD_PACK": str(PACK)})
    )
    assert data.config.store == tmp_path / "hcep.sqlite"
    assert len(data.matches()) == len(recs)
    assert len(data.alert_transitions()) == 3
    alerts = data.alerts().set_index("alert_id")
    assert alerts.index.is_unique and len(alerts) == 2  # one row per alert: its latest transition
    assert list(data.alerts(state="firing")["alert_id"]) == open_in_store == [fired.fingerprint]  # as app.store says
    mine = alerts.loc[fired.fingerprint]
    assert mine["delivery"] == "delivered" and mine["task_id"] == SLOW_PULL_TASK and mine["tier"] == "moderate"
    assert mine["summary"] == "slow pull" and mine["confidence"] == 1.0 and mine["starts_at"] == 1_700_000_045.0
    assert alerts.loc[other.fingerprint, "state"] == "resolved" and alerts.loc[other.fingerprint, "transitions"] == 2
    assert data.record(mine["record_id"], "Q3")["return"]["period"] == 5.6
    assert data.deadletter() == 1
    assert (tmp_path / "hcep.sqlite").stat().st_size > 0

    # With the events beside the store, its matches get their hosts; the same records from JSONL are not doubled.
    (tmp_path / "events.jsonl").write_text(SAMPLE.read_text())
    (tmp_path / "matches.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    data = DashboardData(DashboardConfig.from_env({"HCEP_DASHBOARD_DATA": str(tmp_path)}))
    assert len(data.matches()) == len(recs)
    assert data.matches("Q3").iloc[0]["host"] == "worker-03"
    mine = data.alerts(state="firing").iloc[0]
    assert set(mine["hosts"].split(",")) == {"worker-01", "worker-02", "worker-03"}  # the evidence record's hosts
    assert set(data.alerts(host="worker-03")["alert_id"]) == {fired.fingerprint}


def test_alerts_of_a_data_dir_come_from_hcep_match_alerts_files(tmp_path: Path) -> None:
    """``hcep match --alerts`` output in the data dir: the latest transition of each alert decides its state."""
    from contracts.alerts import Alert

    labels = {"alertname": "HeldMapOutput", "severity": "warning", "pack": "hadoop", "query": "Q4", "job_id": "j1"}
    fired = Alert(labels, {"summary": "held"}, 100.0, at=100.0)
    escalated = Alert({**labels, "severity": "critical"}, {"summary": "held more"}, 160.0, at=160.0)
    lines = [fired.to_json(), fired.resolved(160.0).to_json(), escalated.to_json()]
    (tmp_path / "alerts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in lines) + '{"labels": {"al')
    data = DashboardData(DashboardConfig(data_dir=tmp_path, pack=PACK))
    alerts = data.alerts()
    assert list(alerts["severity"]) == ["critical"] and list(alerts["state"]) == ["firing"]  # one group, escalated
    assert alerts.iloc[0]["first_fired"] == 100.0 and alerts.iloc[0]["transitions"] == 3
    assert list(data.alert_transitions()["state"]) == ["firing", "resolved", "firing"]
    (tmp_path / "more-alerts.jsonl").write_text(json.dumps(escalated.resolved(200.0).to_json()) + "\n")
    assert list(data.alerts()["state"]) == ["resolved"]  # re-read: the file is new
    assert data.alerts(since=201.0).empty and len(data.alerts(since=199.0)) == 1  # windows: fired .. resolved


def test_store_reader_reads_a_store_without_transition_columns(tmp_path: Path) -> None:
    """A store of schema version 1 (before transitions): its alert rows still read, identified by their labels."""
    import sqlite3

    from contracts.alerts import Alert
    from contracts.store import StoreReader

    alert = Alert({"alertname": "Q3", "severity": "warning", "query": "Q3"}, {"summary": "old"}, 10.0)
    db = sqlite3.connect(tmp_path / "hcep.sqlite")
    db.execute("CREATE TABLE alerts (id TEXT PRIMARY KEY, query TEXT, severity TEXT, alert TEXT, status TEXT)")
    db.execute("INSERT INTO alerts VALUES ('a1', 'Q3', 'warning', ?, 'delivered')", (json.dumps(alert.to_webhook()),))
    db.execute("INSERT INTO alerts VALUES ('a2', 'Q3', 'warning', 'not json', 'delivered')")
    db.commit()
    db.close()
    reader = StoreReader(tmp_path / "hcep.sqlite")
    assert reader.schema_version() == 0 and reader.matches() == [] and reader.deadletter_count() == 0
    [row] = reader.alert_transitions()
    assert row.id == "a1" and row.alert == alert and row.delivery == "delivered"
    assert [a.fingerprint for a in reader.open_alerts()] == [alert.fingerprint]
    assert StoreReader(tmp_path / "missing.sqlite").alert_transitions() == []
    assert not (tmp_path / "missing.sqlite").exists()  # read-only: never created


def test_nothing_in_dashboards_imports_app() -> None:
    """The dashboard reads the service's outputs through ``contracts``; it never imports ``app`` (issue #16)."""
    import ast

    offenders = []
    for path in sorted((ROOT / "dashboards").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "app"]
    assert not offenders, offenders
    code = (
        "import sys, dashboards.source, dashboards.backends.store, dashboards.backends.jsonl, "
        "dashboards.backends.alertmanager, dashboards.backends.archive, dashboards.analysis, dashboards.charts, "
        "dashboards.logs; print(sorted(m for m in sys.modules if m == 'app' or m.startswith('app.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


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
        tmp_path / "h" / "anomalies" / "part-00000.parquet"
    )
    assert data.history("anomalies")["count"].tolist() == [9]
    assert data.history("nope").empty


def test_acknowledgements_survive_a_new_data_object(tmp_path: Path, data_dir: Path) -> None:
    store = data_dir / "hcep.sqlite"  # the fixture's alerts (alerts.jsonl is empty with the current pack)
    config = DashboardConfig(data_dir=data_dir, store=store, pack=PACK, acks=tmp_path / "acks.json")
    data = DashboardData(config)
    first = data.alerts().iloc[0]["alert_id"]  # an alert group of the store, by its fingerprint
    assert len(first) == 16
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
        "attempt_1700000000000_0001_m_000002_0 decomp: 1 len: 1 to MEMORY\n"
    )
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
        return subprocess.run(
            [sys.executable, "-m", "app.cli", "dashboard", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
        )

    none = hcep()
    assert none.returncode == 2 and "--data" in none.stderr
    missing = hcep("--data", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such directory" in missing.stderr


def test_an_old_store_s_anomaly_label_is_read_as_the_kind(tmp_path: Path) -> None:
    """Stores written before issue 24 label the fault kind ``anomaly``; the current pack labels it ``kind``."""
    from contracts.alerts import Alert
    from dashboards.alerts import row_of
    from dashboards.pack import load_pack

    old = Alert({"alertname": "MapperSkew", "severity": "warning", "anomaly": "skewed_mapper"}, {}, 1.0, at=1.0)
    new = Alert({"alertname": "MapDataSkew", "severity": "warning", "kind": "map_data_skew"}, {}, 1.0, at=1.0)
    assert row_of(old, "store", 0)["kind"] == "skewed_mapper" and row_of(new, "store", 0)["kind"] == "map_data_skew"
    pack = tmp_path / "old.yaml"
    pack.write_text("alerts:\n  - {name: R, query: Q1, labels: {anomaly: skewed_mapper}}\n")
    assert load_pack(pack).rule("R").kind == "skewed_mapper"  # type: ignore[union-attr]
    assert load_pack(PACK).rule("RunawayReducer").kind == "runaway_reducer"  # type: ignore[union-attr]
