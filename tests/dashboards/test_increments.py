"""The dashboard's evidence follows a growing run's chain (semantics section 5): over each backend -- JSONL match
files, the store of ``hcep run``, the Parquet archive -- the record an alert names comes back with its whole
signature, as ``hcep match --full-matches`` writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contracts.records import from_dict, record_id
from dashboards.config import DashboardConfig
from dashboards.source import DashboardData
from tests.dashboards.fixture import PACK
from tests.differential.outputs import INPUTS, cli

HADOOP = str(Path(__file__).resolve().parents[2] / "queries" / "hadoop.yaml")


def _q4(*extra: str) -> list[dict]:
    return [json.loads(x) for x in cli(["match", str(INPUTS["sample"]), "--pack", HADOOP, "--query", "Q4", *extra])]


@pytest.fixture(scope="module")
def chains() -> tuple[list[dict], list[dict]]:
    inc, full = _q4(), _q4("--full-matches")
    assert any("extends" in r for r in inc) and len(inc) == len(full)
    return inc, full


def _check(data: DashboardData, inc: list[dict], full: list[dict]) -> None:
    assert len(data.matches("Q4")) == len(inc)
    for r, want in zip(inc, full, strict=True):
        got = data.record(r["id"], "Q4")
        assert got is not None and got["chain_complete"]
        assert {v: sorted(ids) for v, ids in got["match"].items()} == {v: sorted(i) for v, i in want["match"].items()}
        assert got["chain"] == 1 + sum(1 for _ in _ancestors(r, inc))


def _ancestors(r: dict, inc: list[dict]):
    by_id = {x["id"]: x for x in inc}
    while "extends" in r:
        r = by_id[r["extends"]]
        yield r


def test_jsonl_evidence_follows_the_chain(tmp_path: Path, chains: tuple[list[dict], list[dict]]) -> None:
    inc, full = chains
    (tmp_path / "matches.jsonl").write_text("".join(json.dumps(r) + "\n" for r in inc))
    _check(DashboardData(DashboardConfig(data_dir=tmp_path, pack=PACK)), inc, full)


def test_store_evidence_follows_the_chain(tmp_path: Path, chains: tuple[list[dict], list[dict]]) -> None:
    store_mod = pytest.importorskip("app.store")
    from contracts.schema import MatchRow

    inc, full = chains
    store = store_mod.Store(str(tmp_path / "hcep.sqlite"))
    rows = [MatchRow.of(from_dict(r), record_id(r), "hadoop", 1.0, "i") for r in inc]
    store.commit(store_mod.Batch(matches=rows, alerts=[], deadletters=[], offsets=[], checkpoint=None))
    store.close()
    _check(DashboardData(DashboardConfig(store=tmp_path / "hcep.sqlite", pack=PACK)), inc, full)


def test_archive_evidence_follows_the_chain(tmp_path: Path, chains: tuple[list[dict], list[dict]]) -> None:
    archive = pytest.importorskip("app.spark.archive")
    inc, full = chains
    with archive.ArchiveWriter(tmp_path / "arch") as writer:
        writer.add_matches(inc)
    _check(DashboardData(DashboardConfig(archive=tmp_path / "arch", pack=PACK)), inc, full)


def test_a_lost_link_is_said(tmp_path: Path, chains: tuple[list[dict], list[dict]]) -> None:
    inc, _full = chains
    last = next(r for r in reversed(inc) if "extends" in r)
    kept = [r for r in inc if r["id"] != last["extends"]]
    (tmp_path / "matches.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    got = DashboardData(DashboardConfig(data_dir=tmp_path, pack=PACK)).record(last["id"], "Q4")
    assert got is not None and not got["chain_complete"] and got["match"]["b"] == last["match"]["b"]
