"""Growing runs written as increments (semantics section 5): the chain rebuilds exactly what ``--full-matches`` writes,
its output is linear in its input, and the ids are those of the contract."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from contracts.records import (
    ChainError,
    ChainRebuilder,
    follow_chain,
    from_dict,
    increment_id,
    merge_chain,
    rebuild,
    record_id,
    to_dict,
)
from tests.differential.outputs import INPUTS, cli, events_file

ROOT = Path(__file__).resolve().parents[2]
HADOOP = str(ROOT / "queries" / "hadoop.yaml")


def _records(events: Path, *extra: str) -> list[dict]:
    return [json.loads(x) for x in cli(["match", str(events), "--pack", HADOOP, "--query", "Q4", *extra])]


def _as_sets(record: dict) -> dict:
    out = dict(record)
    out["match"] = {v: sorted(ids) for v, ids in record["match"].items()}
    return out


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_chain_rebuilds_the_full_matches(name: str, tmp_path: Path) -> None:
    events = events_file(name, tmp_path)
    inc = _records(events)
    full = _records(events, "--full-matches")
    assert len(inc) == len(full) and full  # one record per completed prefix, as before
    rebuilt = rebuild(inc)
    assert [_as_sets(r) for r in rebuilt] == [_as_sets(r) for r in full]
    # Kleene ids: the chain lists them in the order the run took them; --full-matches in record order.  Both are the
    # same set (the signature), and the same order whenever no two of them share a tick.
    assert all("id" in r for r in inc) and all("id" not in r and "extends" not in r for r in full)
    heads = [r for r in inc if "extends" not in r]
    assert heads and all(r["id"] == record_id(_full) for r, _full in zip(inc, full, strict=True) if "extends" not in r)


def test_ids_name_a_chain(tmp_path: Path) -> None:
    inc = _records(events_file("simulated", tmp_path))
    ids = [r["id"] for r in inc]
    assert len(set(ids)) == len(ids)
    seen: set[str] = set()
    for r in inc:
        if "extends" in r:
            assert r["extends"] in seen  # a record extends one written before it
            assert r["id"] == increment_id(r["query"], r["extends"], r["match"]) == record_id(r)
        seen.add(r["id"])
    # Each record is extended at most once: a run writes one chain.
    assert max(Counter(r["extends"] for r in inc if "extends" in r).values()) == 1


def test_output_is_linear_in_the_input(tmp_path: Path) -> None:
    """Count ids, not time: every DataIO event the runs take is listed once, so the ids of Q4's output are at most
    the records (the JobStart of each) plus the DataIO events of the input; whole signatures list far more."""
    events = events_file("simulated", tmp_path)
    dataio = sum(1 for line in events.read_text().splitlines() if '"DataIO"' in line)
    inc = _records(events)
    listed = sum(len(ids) for r in inc for ids in r["match"].values())
    assert listed <= len(inc) + dataio
    full = _records(events, "--full-matches")
    whole = sum(len(ids) for r in full for ids in r["match"].values())
    assert whole > 5 * listed  # the quadratic output this replaces (so the bound above says something)


def test_doubling_a_job_doubles_the_ids() -> None:
    """One job with n DataIO events: the increments list 2n ids (the JobStart in each record and each DataIO once),
    whole signatures n (n + 3) / 2."""
    from engine import compile_query
    from engine.evaluate import StreamedMatch
    from engine.events import decoder_for

    cq = compile_query(
        "PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 1 day RETURN sum(b[].size) AS queued",
        name="Q4",
        strategy="skip_till_next_match",
        output="all",
    )

    def ids(n: int, increments: bool) -> int:
        dec = decoder_for(0.1)
        objs = [{"type": "JobStart", "ts": 0, "job_id": "j", "id": "s"}]
        objs += [{"type": "DataIO", "ts": i + 1, "job_id": "j", "size": 1, "id": f"d{i}"} for i in range(n)]
        evs = [dec.event(o, i) for i, o in enumerate(objs)]
        return sum(len(v) for r in StreamedMatch([cq], evs, increments=increments) for v in r["match"].values())

    assert [ids(n, True) for n in (100, 200, 400)] == [200, 400, 800]
    assert [ids(n, False) for n in (100, 200)] == [100 * 103 // 2, 200 * 203 // 2]


def test_random_access_follows_the_chain(tmp_path: Path) -> None:
    inc = _records(events_file("sample", tmp_path))
    full = _records(events_file("sample", tmp_path), "--full-matches")
    by_id = {r["id"]: r for r in inc}
    for r, want in zip(inc, full, strict=True):
        chain, complete = follow_chain(r, by_id.get)
        assert complete and chain[-1] is r
        assert sorted(merge_chain(chain)["b"]) == sorted(want["match"]["b"])
    last = inc[-1]
    if "extends" in last:
        chain, complete = follow_chain(last, {}.get)  # nothing to look up: the chain is cut
        assert not complete and chain == [last]


def test_rebuilder_refuses_an_unknown_parent() -> None:
    with pytest.raises(ChainError):
        ChainRebuilder().match_of({"query": "Q4", "id": "x", "extends": "nope", "match": {"a": ["1"], "b": ["2"]}})


def test_match_record_keeps_id_and_extends() -> None:
    obj = {"query": "Q4", "id": "i2", "extends": "i1", "match": {"a": ["1"], "b": ["3"]}, "confidence": 1.0}
    obj.update({"start": 0.0, "end": 1.0, "return": {}})
    rec = from_dict(obj)
    assert to_dict(rec) == obj and record_id(rec) == "i2"
    plain = {k: v for k, v in obj.items() if k not in ("id", "extends")}
    assert to_dict(from_dict(plain)) == plain  # a self-contained record: no new keys


def test_golden_trace_is_there() -> None:
    with gzip.open(INPUTS["simulated"], "rt") as f:
        assert '"DataIO"' in f.read(200_000)


def test_a_store_from_before_increments_migrates_and_reads(tmp_path: Path) -> None:
    """A version-2 store (whole Q4 records, no ``extends`` column) opens as version 3 with its rows; the reader gives
    its records as they were, and the chains written after it are followed."""
    import sqlite3

    from app.store import Batch, Store
    from contracts.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, MatchRow
    from contracts.store import StoreReader

    full = _records(INPUTS["sample"], "--full-matches")
    inc = _records(INPUTS["sample"])
    path = tmp_path / "hcep.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    for table, column, kind in MIGRATIONS[1]:
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    db.execute("PRAGMA user_version = 2")
    old = full[-1]
    db.execute(
        'INSERT INTO matches (id, query, pack, confidence, start, "end", record, emitted_at, instance)'
        " VALUES (?, ?, 'hadoop', 1.0, ?, ?, ?, 1.0, 'i')",
        (record_id(old), "Q4", old["start"], old["end"], json.dumps(old)),
    )
    db.commit()
    db.close()
    assert StoreReader(path).schema_version() == 2
    store = Store(str(path))  # opening migrates
    assert store.schema_version() == SCHEMA_VERSION >= 3
    rows = [MatchRow.of(from_dict(r), record_id(r), "hadoop", 2.0, "i") for r in inc]
    store.commit(Batch(matches=rows, alerts=[], deadletters=[], offsets=[], checkpoint=None))
    store.close()
    reader = StoreReader(path)
    assert reader.whole_record(record_id(old)) == (old, True)  # the old row, whole as it was written
    got = reader.whole_record(inc[-1]["id"])
    assert got is not None and got[1]
    assert sorted(got[0]["match"]["b"]) == sorted(full[-1]["match"]["b"]) and "id" not in got[0]
    extends = {r[0] for r in sqlite3.connect(path).execute("SELECT extends FROM matches")}
    assert None in extends and inc[-1]["extends"] in extends


def test_signature_id_is_record_ids_json() -> None:
    """The fast id (strings only) hashes exactly the JSON text ``record_id`` always hashed."""
    import hashlib

    odd = ["é", 'q"uote', "back\\slash", "10", "9", "\u2028", "tab\t", ""]
    for parent in (None, "p"):
        match = {"z": odd[:3], "a": odd[3:], "b": ["x"]}
        body = ["Q", "extends", parent] if parent else ["Q", "match"]
        body.append({v: sorted(ids) for v, ids in match.items()})
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        want = hashlib.sha256(text.encode()).hexdigest()
        rec = {"query": "Q", "match": match} | ({"extends": parent} if parent else {})
        assert record_id(rec) == want
    assert record_id({"query": "Q", "match": {"a": [3]}})  # not a string: the general way
