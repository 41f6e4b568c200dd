"""History aggregates on a small hand-checked archive: quantiles, Dr. Elephant-style skew, queued data, anomalies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.spark.helpers import run_cli

pytest.importorskip("pyarrow")

T0 = 1_700_000_000.0


def _tasks(job: str, kind: str, periods: list[float], hosts: list[str]) -> list[dict]:
    return [
        {
            "type": kind,
            "ts": T0 + 100 + i,
            "job_id": job,
            "task_id": f"{job}_{kind[0]}{i}",
            "host": hosts[i % len(hosts)],
            "period": p,
            "status": "SUCCEEDED",
        }
        for i, p in enumerate(periods)
    ]


def _archive(root: Path) -> None:
    from app.spark.archive import ArchiveWriter

    events = [
        {"type": "JobStart", "ts": T0, "job_id": "j1", "user": "alice", "queue": "default", "maps": 12, "reduces": 4},
        {"type": "JobStart", "ts": T0 + 1, "job_id": "j2", "user": "bob", "queue": "etl", "maps": 60, "reduces": 0},
        *_tasks("j1", "Mapper", [10.0] * 10 + [50.0] * 2, ["w1", "w2"]),
        *_tasks("j1", "Reducer", [20.0, 20.0, 20.0, 180.0], ["w3"]),
        *_tasks("j2", "Mapper", [5.0] * 55 + [90.0] * 5, ["w1"]),
        {"type": "DataIO", "ts": T0 + 10, "job_id": "j1", "task_id": "m0", "size": 100},
        {"type": "DataIO", "ts": T0 + 20, "job_id": "j1", "task_id": "m1", "size": 200},
        {"type": "DataIO", "ts": T0 + 30, "job_id": "j1", "task_id": "r0", "size": -150},
        {"type": "DataIO", "ts": T0 + 15, "job_id": "j2", "task_id": "m0", "size": 7},
    ]
    matches = [
        {"query": q, "match": {"a": ["x"]}, "confidence": 1.0, "start": end - 5, "end": end, "return": {}}
        for q, end in (("Q3", 1000.0), ("Q3", 1100.0), ("Q6", 1250.0), ("Q5", 1300.0), ("Q1", 1000.0))
    ]
    with ArchiveWriter(root, flush_rows=50) as writer:  # several batches: order must survive them
        writer.add_events(events)
        writer.add_matches(matches)


def test_two_groups_and_severity() -> None:
    from app.spark.history import severity_ascending, skew, two_groups

    assert two_groups([10.0] * 10 + [50.0] * 2) == ([10.0] * 10, [50.0] * 2)
    assert severity_ascending(1.99, (2, 4, 8, 16)) == 0 and severity_ascending(16, (2, 4, 8, 16)) == 4
    flat = skew([7.0] * 20)
    assert flat["ratio"] == 1.0 and flat["severity"] == "NONE"
    assert skew([10.0] * 10 + [50.0] * 2, basis="difference")["deviation_severity"] == "MODERATE"  # 5 - 1 = 4
    assert skew([10.0] * 10 + [40.0] * 2, basis="difference")["deviation_severity"] == "LOW"  # 4 - 1 = 3


@pytest.mark.spark
def test_history_tables(spark, tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    root, out = tmp_path / "archive", tmp_path / "history"
    _archive(root)
    code, _, err = run_cli(["history", str(root), "--out", str(out), "--bucket", "300", "--no-progress"], capsys)
    assert code == 0, err

    def table(name: str) -> list[dict]:
        return pq.read_table(out / name).to_pylist()

    durations = {(r["level"], r["key"], r["kind"]): r for r in table("durations")}
    m1 = durations[("job", "j1", "Mapper")]
    # 12 durations, ten of 10 s and two of 50 s: nearest-rank quantiles.
    assert (m1["tasks"], m1["min"], m1["p50"], m1["p75"], m1["p90"], m1["p95"], m1["max"]) == (
        12,
        10.0,
        10.0,
        10.0,
        50.0,
        50.0,
        50.0,
    )
    assert m1["mean"] == pytest.approx(200 / 12)
    assert durations[("user", "bob", "Mapper")]["tasks"] == 60
    assert durations[("queue", "default", "Reducer")]["p50"] == 20.0
    assert durations[("host", "w1", "Mapper")]["tasks"] == 6 + 60
    assert durations[("host", "w3", "Reducer")]["max"] == 180.0

    skew = {(r["job_id"], r["kind"]): r for r in table("skew")}
    # j1 mappers: groups 10 x 10 s and 2 x 50 s -> ratio 5: MODERATE by ratio, group A of 10 tasks caps it at LOW.
    assert (
        skew[("j1", "Mapper")]["ratio"],
        skew[("j1", "Mapper")]["deviation_severity"],
        skew[("j1", "Mapper")]["tasks_severity"],
        skew[("j1", "Mapper")]["severity"],
    ) == (5.0, "MODERATE", "LOW", "LOW")
    # j1 reducers: ratio 9 (SEVERE) but only 3 short tasks: NONE.
    assert (skew[("j1", "Reducer")]["ratio"], skew[("j1", "Reducer")]["severity"]) == (9.0, "NONE")
    # j2 mappers: 55 x 5 s vs 5 x 90 s -> ratio 18 (CRITICAL), 55 short tasks (MODERATE): MODERATE.
    j2 = skew[("j2", "Mapper")]
    assert (j2["group_a_tasks"], j2["group_b_tasks"], j2["ratio"], j2["deviation_severity"], j2["severity"]) == (
        55,
        5,
        18.0,
        "CRITICAL",
        "MODERATE",
    )

    queued = sorted((r["job_id"], r["ts"], r["queued"]) for r in table("queued"))
    assert queued == [("j1", T0 + 10, 100.0), ("j1", T0 + 20, 300.0), ("j1", T0 + 30, 150.0), ("j2", T0 + 15, 7.0)]

    anomalies = sorted((r["bucket"], r["kind"], r["query"], r["count"]) for r in table("anomalies"))
    assert anomalies == [(900.0, "straggler", "Q3", 2), (1200.0, "imbalance", "Q5", 1), (1200.0, "imbalance", "Q6", 1)]


@pytest.mark.spark
def test_spark_application_tables(spark, tmp_path: Path, capsys) -> None:
    """A real Spark event log (the pack's planted local jobs) archived with the Spark pack's records: the history
    jobs take the new types, and the stage table agrees with what the collector computed per stage."""
    import json

    import pyarrow.parquet as pq

    from tests.queries.spark_pack.conftest import SPARK_PACK_PATH, collected, manifest, write_events

    events = list(collected("local"))
    jsonl = write_events(events, tmp_path / "local.jsonl")
    root, out = tmp_path / "archive", tmp_path / "history"
    code, _, err = run_cli(
        ["archive", str(jsonl), "--to", str(root), "--pack", str(SPARK_PACK_PATH), "--no-progress"], capsys
    )
    assert code == 0, err
    code, _, err = run_cli(["history", str(root), "--out", str(out), "--no-progress"], capsys)
    assert code == 0 and "spark_stages" in err and "spark_apps" in err, err
    stages = {
        (r["app_id"], r["stage_id"], r["stage_attempt"]): r for r in pq.read_table(out / "spark_stages").to_pylist()
    }
    app = manifest("local")["app_id"]
    done = [e for e in events if e["type"] == "StageCompleted"]
    assert set(stages) == {(app, e["stage_id"], e["stage_attempt"]) for e in done}
    for e in done:
        row = stages[(app, e["stage_id"], e["stage_attempt"])]
        assert (row["tasks"], row["status"], row["task_max"]) == (e["tasks"], e["status"], e["task_duration_max"])
        assert (row["memory_spill"], row["disk_spill"]) == (e["memory_spill"], e["disk_spill"])
        assert row["run_time"] == pytest.approx(e["run_time"]) and row["gc_time"] == pytest.approx(e["gc_time"])
    slow = max(stages.values(), key=lambda r: r["skew"] or 0)  # the slowed task's stage: 2.5 s against ~0.1 s
    assert slow["skew"] > 10 and slow["task_p50"] < 0.5 < 2.5 <= slow["task_max"]
    spilled = [r for r in stages.values() if r["memory_spill"]]
    assert spilled and all(r["spill_ratio"] > 1 for r in spilled)
    (row,) = pq.read_table(out / "spark_apps").to_pylist()
    assert (row["app_id"], row["app_name"], row["stage_attempts"]) == (app, "hcep-pack-local", len(done))
    assert row["tasks"] == sum(1 for e in events if e["type"] == "SparkTask") and row["end"] > row["start"]
    anomalies = {(r["kind"], r["query"]) for r in pq.read_table(out / "anomalies").to_pylist()}
    assert ("straggler", "SlowTask") in anomalies
    assert json.loads((tmp_path / "local.jsonl").read_text().splitlines()[0])["type"] == "SparkAppStart"


@pytest.mark.spark
def test_spark_tables_keep_application_attempts_apart(spark, tmp_path: Path, capsys) -> None:
    """Issue 27, defect 3, in the history job: YARN attempts 1-4 of one application (real logs in one directory:
    ``tests/collectors/spark/fixtures/multiple_attempts``, NVIDIA/spark-rapids-tools, Apache-2.0) reuse its App ID
    and stage ids.  Archived together, each attempt's rows equal the figures of its own log collected alone (the
    collector's StageCompleted figures, its task and executor events); keyed without the attempt they were summed."""
    import pyarrow.parquet as pq

    from app.spark.archive import ArchiveWriter
    from tests.collectors.spark.conftest import run_collect
    from tests.collectors.spark.test_spark_thirdparty import logs_of

    alone: dict[str, list[dict]] = {}
    for path in logs_of("multiple_attempts"):
        events, _, dead = run_collect(path)
        (start,) = [e for e in events if e["type"] == "SparkAppStart"]
        assert dead.count == 0 and start["app_attempt"] not in alone
        alone[start["app_attempt"]] = events
    assert sorted(alone) == ["1", "2", "3", "4"]
    root, out = tmp_path / "archive", tmp_path / "history"
    with ArchiveWriter(root) as writer:
        for events in alone.values():
            writer.add_events(events)
    code, _, err = run_cli(["history", str(root), "--out", str(out), "--no-progress"], capsys)
    assert code == 0, err

    want_stages, want_apps = {}, {}
    for attempt, events in alone.items():
        tasks = [e for e in events if e["type"] == "SparkTask"]
        for e in events:
            if e["type"] == "StageCompleted":
                mine = [t for t in tasks if t["stage_key"] == e["stage_key"]]
                want_stages[(e["app_id"], attempt, e["stage_id"], e["stage_attempt"])] = (
                    e["stage_key"],
                    e["status"],
                    e["tasks"],
                    len(mine),
                    e["failed_tasks"],
                    e["task_duration_max"],
                    e["memory_spill"],
                    e["disk_spill"],
                    round(e["run_time"], 3),
                    round(e["gc_time"], 3),
                    e["ts"],
                )
        (begin,) = [e for e in events if e["type"] == "SparkAppStart"]
        (end,) = [e for e in events if e["type"] == "SparkAppEnd"]
        stages_done = sum(1 for e in events if e["type"] == "StageCompleted")
        added = sum(1 for e in events if e["type"] == "ExecutorAdded")
        want_apps[(begin["app_id"], attempt)] = (begin["ts"], end["ts"], stages_done, len(tasks), added)
    got_stages = {
        (r["app_id"], r.get("app_attempt"), r["stage_id"], r["stage_attempt"]): (
            r.get("stage_key"),
            r["status"],
            r["tasks"],
            r["tasks"],
            r["failed_tasks"],
            r["task_max"],
            r["memory_spill"],
            r["disk_spill"],
            round(r["run_time"], 3),
            round(r["gc_time"], 3),
            r["completed"],
        )
        for r in pq.read_table(out / "spark_stages").to_pylist()
    }
    assert len(want_stages) == 20 and got_stages == want_stages
    got_apps = {
        (r["app_id"], r.get("app_attempt")): (
            r["start"],
            r["end"],
            r["stage_attempts"],
            r["tasks"],
            r["executors_added"],
        )
        for r in pq.read_table(out / "spark_apps").to_pylist()
    }
    assert got_apps == want_apps and {v[3] for v in want_apps.values()} == {107}
