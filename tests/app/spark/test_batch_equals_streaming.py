"""batch == streaming: ``hcep batch`` on Spark (local[2]) prints the records ``hcep match`` prints for one input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.spark.conftest import EDGE_PACK, HANDCHECK, PACK, ROOT, SAMPLE, SPARK_PACK
from tests.app.spark.helpers import assert_same_records, run_cli

pytestmark = pytest.mark.spark


def _match(events: Path, pack: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    code, records, err = run_cli(["match", str(events), "--pack", str(pack)], capsys)
    assert code == 0, err
    return records


def _batch(inputs: list[Path], pack: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    argv = ["batch", "--pack", str(pack), *map(str, inputs), "--master", "local[2]", "--no-progress", *extra]
    code, records, err = run_cli(argv, capsys)
    assert code == 0, err
    return records


@pytest.mark.parametrize("name", ["sample", "handcheck", "generated"])
def test_hadoop_pack_batch_equals_match(spark, generated: Path, name: str, capsys) -> None:
    events = {"sample": SAMPLE, "handcheck": HANDCHECK, "generated": generated}[name]
    streaming = _match(events, PACK, capsys)
    assert streaming, "the reference found nothing: the comparison would prove little"
    assert_same_records(_batch([events], PACK, capsys), streaming)


@pytest.mark.parametrize("name", ["local", "cluster"])
def test_spark_pack_batch_equals_match(spark, name: str, tmp_path: Path, capsys) -> None:
    """The Spark pack over real event logs with planted problems (tests/queries/spark_pack/data): the collected events
    as JSON lines, and the raw log itself (collected on the driver), give the records of hcep match.  Its queries cut
    by stage_key; ExecutorRemoved carries none, so it reaches every stage's group (a negation between keyed events)."""
    from tests.queries.spark_pack.conftest import LOGS, collected, manifest, write_events

    events = write_events(collected(name), tmp_path / f"{name}.jsonl")
    streaming = _match(events, SPARK_PACK, capsys)
    queries = {r["query"] for r in streaming}
    assert {"StageDone", "SlowTask"} <= queries
    if name == "cluster":
        assert {"FetchWait", "ExecutorLost", "StageRetry"} <= queries
    assert_same_records(_batch([events], SPARK_PACK, capsys), streaming)
    assert_same_records(_batch([LOGS / manifest(name)["path"]], SPARK_PACK, capsys), streaming)


def test_edge_pack_over_two_inputs(spark, generated: Path, tmp_path: Path, capsys) -> None:
    """Keyless-only matches, negations across partitions, contiguity strategies, unpartitioned queries, a distinct
    value shared by partitions; two inputs concatenated (input positions continue across them)."""
    from app.matching.packs import load_pack
    from app.spark.batch import compile_plan, plans_from_pack
    from app.spark.batch_plan import plan_families
    from app.spark.tracegen import TraceConfig, trace

    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps(e) + "\n" for e in trace(TraceConfig(jobs=25, seed=3))))
    both = tmp_path / "both.jsonl"
    both.write_text(small.read_text() + SAMPLE.read_text())
    streaming = _match(both, EDGE_PACK, capsys)
    batch = _batch([small, SAMPLE], EDGE_PACK, capsys, "--explain")
    assert_same_records(batch, streaming)
    assert {r["query"] for r in streaming} >= {
        "keyless_only",
        "cancelled_by_any_reducer",
        "quiet_reducer",
        "next_from_balance",
        "strict_pair",
        "host_of_rising_load",
    }
    # Never cut, whatever the input: strict contiguity and no equivalence.
    compiled = {p.name: compile_plan(p) for p in plans_from_pack(load_pack(EDGE_PACK))}
    names = list(compiled)
    cut = {names[i]: fam.attr for fam in plan_families(list(compiled.values()), None) for i in fam.queries}
    assert cut["strict_pair"] is None and cut["no_key"] is None and cut["quiet_reducer"] == "task_id"


def test_unpartitioned_when_runs_can_start_keyless(spark, capsys) -> None:
    """Input statistics decide: a skip_till_next_match query whose first type lacks the key runs in one group."""
    from app.matching.packs import load_pack
    from app.spark.batch import compile_plan, plans_from_pack
    from app.spark.batch_plan import InputStats, plan_families

    plans = [
        p
        for p in plans_from_pack(load_pack(EDGE_PACK))
        if p.name in ("next_from_balance", "two_keys", "collapsed_keyless_singletons")
    ]
    compiled = [compile_plan(p) for p in plans]
    stats = InputStats(
        events=4,
        widest=0,
        counts={"Balance": 1, "Imbalance": 1, "JobStart": 1, "DataPull": 1},
        lacking={
            "Balance": {"task_id": 1, "job_id": 1},
            "Imbalance": {"task_id": 1, "job_id": 1},
            "JobStart": {"task_id": 1, "job_id": 0},
            "DataPull": {"task_id": 0, "job_id": 0},
        },
    )
    attrs = {plans[i].name: fam.attr for fam in plan_families(compiled, stats) for i in fam.queries}
    assert attrs == {"next_from_balance": None, "two_keys": "job_id", "collapsed_keyless_singletons": None}


def test_archive_in_archive_out(spark, generated: Path, tmp_path: Path, capsys) -> None:
    """Parquet archive as input, the archive layout as output (--out): the records of hcep match all the same."""
    from app.spark.archive import read_table, record_from_row

    archive, out = tmp_path / "archive", tmp_path / "out"
    code, _, err = run_cli(["archive", str(generated), "--to", str(archive), "--no-progress"], capsys)
    assert code == 0, err
    code, printed, err = run_cli(
        ["batch", "--pack", str(PACK), str(archive), "--out", str(out), "--no-progress"], capsys
    )
    assert code == 0 and printed == [], err
    table = read_table(out, "matches").to_pylist()
    records = [record_from_row(r) for r in table]  # a growing run's increments keep their id and extends
    assert_same_records(records, _match(generated, PACK, capsys))
    assert {r["date"] for r in table} == {"2023-11-14"}
    assert {r["task_id"] for r in table if r["query"] == "Q6"} == {
        r["return"]["task_id"] for r in records if r["query"] == "Q6"
    }


def test_raw_logs_through_the_collectors(spark, tmp_path: Path, capsys) -> None:
    pytest.importorskip("collectors.hadoop.collect")
    raw = ROOT / "tests" / "collectors" / "samples"
    xml = ROOT / "tests" / "collectors" / "ganglia" / "data" / "gmond_cluster.xml"
    from app.spark.events import raw_to_jsonl

    converted = Path(raw_to_jsonl([str(raw), str(xml)], str(tmp_path)))
    code, collected, err = run_cli(["collect", "hadoop", str(raw), "--no-progress"], capsys)
    assert code == 0, err
    lines = converted.read_text().splitlines()
    assert [json.loads(line) for line in lines[: len(collected)]] == collected  # the collector's own output first
    streaming = _match(converted, PACK, capsys)
    assert_same_records(_batch([raw, xml], PACK, capsys), streaming)


def test_invalid_line_is_reported_like_match(spark, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    text = HANDCHECK.read_text() + "\n" + '{"type": "Mapper"}\n'  # a blank line, then the bad one
    bad.write_text(text)
    code, _, err = run_cli(["batch", "--pack", str(PACK), str(bad), "--no-progress"], capsys)
    assert code == 2
    assert f"{bad}:{len(text.splitlines())}: invalid event: 'ts' is required" in err
    code, _, reference = run_cli(["match", str(bad), "--pack", str(PACK)], capsys)
    assert code == 2 and reference.strip() in err


def test_max_delta_is_reported_like_match(spark, tmp_path: Path, capsys) -> None:
    """Issue 18: hcep batch rejects an event wider than --max-delta (default 7.5 s) naming its line, as match does."""
    wide = tmp_path / "wide.jsonl"
    text = HANDCHECK.read_text().rstrip("\n") + "\n" + '{"type": "LoadStd", "ts": 1700000100, "delta": 100, "val": 1}\n'
    wide.write_text(text)
    code, _, err = run_cli(["batch", "--pack", str(PACK), str(wide), "--no-progress"], capsys)
    assert code == 2
    assert f"{wide}:{len(text.splitlines())}: event wider than --max-delta 7.5 s" in err
    code, _, reference = run_cli(["match", str(wide), "--pack", str(PACK)], capsys)
    assert code == 2 and reference.strip() in err
    code, out, _ = run_cli(["batch", "--pack", str(PACK), str(wide), "--no-progress", "--max-delta", "100"], capsys)
    assert code == 0
    code, reference, _ = run_cli(["match", str(wide), "--pack", str(PACK), "--max-delta", "100"], capsys)
    assert out
    assert_same_records(out, reference)
