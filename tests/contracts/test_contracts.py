"""What crosses packages (contracts/): the record identity, the alert shapes and transition ids, the store schema and
its reader.  Other tools compute the same ids from the JSON they receive, so these are pinned, not just consistent."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contracts.alerts import Alert, fingerprint, parse_rfc3339, rfc3339, transition_id
from contracts.records import from_dict, record_id, to_dict
from contracts.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION
from contracts.store import StoreReader

RECORD = {
    "query": "Q3",
    "match": {"a": ["e2", "e1"], "c": ["e9"]},
    "confidence": 0.75,
    "start": 10.0,
    "end": 12.5,
    "return": {"job_id": "job_1", "duration": 3.5},
}


def test_record_id_depends_on_the_signature_only_and_is_order_free() -> None:
    same = {**RECORD, "match": {"c": ["e9"], "a": ["e1", "e2"]}, "confidence": 0.2, "return": {}}
    assert record_id(RECORD) == record_id(same)
    assert record_id(RECORD) != record_id({**RECORD, "match": {"a": ["e1"], "c": ["e9"]}})
    assert record_id(RECORD) != record_id({**RECORD, "query": "Q4"})
    # distinct output: the RETURN value is the identity
    assert record_id(RECORD, "distinct") == record_id({**RECORD, "match": {}}, "distinct")
    assert record_id(RECORD, "distinct") != record_id({**RECORD, "return": {"job_id": "job_2"}}, "distinct")
    # pinned: tools outside this repository recompute it (sha256 of the canonical JSON body)
    assert record_id(RECORD) == "e8f1307668ccb06c5dcd98d0d890a190b069772430d9ea4cf85189090c1e7b72"


def test_match_record_round_trips_the_spec_json() -> None:
    rec = from_dict(RECORD)
    assert rec["return"] == RECORD["return"] and to_dict(rec) == RECORD and rec == RECORD
    assert record_id(rec) == record_id(RECORD)


def test_an_old_store_record_is_read_with_the_defaults() -> None:
    """A record written before growing runs (no id, no extends) or by an older writer (ints for floats, keys in
    another order, no return) reads back as a whole record, its keys in section 5's order."""
    old = {"return": None, "end": 7, "start": 3, "match": {"a": ["e1"]}, "query": "Q1"}
    rec = from_dict(old)
    assert list(rec) == ["query", "match", "confidence", "start", "end", "return"]
    assert rec == {"query": "Q1", "match": {"a": ["e1"]}, "confidence": 1.0, "start": 3.0, "end": 7.0, "return": {}}
    assert isinstance(rec["start"], float) and record_id(rec) == record_id(old)
    grown = {"match": {"a": ["e1"]}, "extends": "p", "id": "i", "query": "Q4", "confidence": 1, "start": 0, "end": 1}
    assert list(to_dict(from_dict(grown))) == [
        "query",
        "id",
        "extends",
        "match",
        "confidence",
        "start",
        "end",
        "return",
    ]


def test_alert_shapes_and_transition_ids() -> None:
    labels = {"alertname": "ShufflePullStall", "severity": "warning", "pack": "hadoop", "job_id": "job_1"}
    firing = Alert(labels, {"summary": "slow pull"}, starts_at=1_700_000_000.0, at=1_700_000_000.0)
    resolved = firing.resolved(1_700_000_060.0)
    assert firing.status == "firing" and resolved.status == "resolved"
    assert firing.fingerprint == resolved.fingerprint == fingerprint(dict(reversed(list(labels.items()))))
    posted = firing.to_json()
    assert "endsAt" not in posted and posted["startsAt"] == rfc3339(1_700_000_000.0)
    assert resolved.to_json()["endsAt"] == rfc3339(1_700_000_060.0)
    hook = firing.to_webhook()
    assert (
        hook["status"] == "firing" and hook["endsAt"].startswith("0001-") and hook["fingerprint"] == firing.fingerprint
    )
    # a receiver computes the same transition id from either JSON shape it got
    assert transition_id(posted) == transition_id(hook) == firing.transition_id
    assert transition_id(resolved.to_json()) == resolved.transition_id != firing.transition_id
    assert parse_rfc3339(rfc3339(1_700_000_000.25)) == 1_700_000_000.25


def _v1_store(path: Path) -> None:
    """A version-1 store: the base schema, before the migrations add their columns."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(alerts)")}
    assert not columns & {column for _, column, _ in MIGRATIONS[1]}
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


def test_store_reader_reads_a_migrated_store_and_a_missing_one(tmp_path: Path) -> None:
    from app.store import Store

    missing = StoreReader(tmp_path / "none.sqlite")
    assert missing.match_counts() == {} and missing.alert_transitions() == []

    path = tmp_path / "hcep.sqlite"
    _v1_store(path)
    assert StoreReader(path).schema_version() == 1
    Store(str(path)).close()  # opening migrates
    reader = StoreReader(path)
    assert reader.schema_version() == SCHEMA_VERSION
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(alerts)")}
    assert {column for _, column, _ in MIGRATIONS[1]} <= columns
