"""The Spark view under Streamlit's AppTest on real Spark event logs with planted problems (``spark_fixture``), and
``dashboards.spark``'s tables on their own: the same stage table from the pack's records as from the events alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dashboards import records, spark
from tests.dashboards import spark_fixture
from tests.dashboards.test_pages import frame_text, markdown, metrics, open_view
from tests.queries.spark_pack.conftest import manifest


@pytest.fixture(scope="module")
def spark_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return spark_fixture.build(tmp_path_factory.mktemp("spark-data"))


@pytest.fixture
def spark_env(monkeypatch: pytest.MonkeyPatch, spark_dir: Path, tmp_path: Path) -> Path:
    for name in ("STORE", "ARCHIVE", "LOGS", "PACK", "MORE_STORES", "MORE_PACKS"):
        monkeypatch.delenv(f"HCEP_DASHBOARD_{name}", raising=False)
    monkeypatch.setenv("HCEP_DASHBOARD_DATA", str(spark_dir))
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
    monkeypatch.setenv("HCEP_DASHBOARD_ACKS", str(tmp_path / "acks.json"))
    return spark_dir


def _frames(spark_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    import json

    rows = [
        records.match_row(json.loads(line), "test")
        for line in (spark_dir / "spark_matches.jsonl").read_text().splitlines()
    ]
    events = [
        records.event_row(json.loads(line), i)
        for i, line in enumerate((spark_dir / "spark_events.jsonl").read_text().splitlines())
    ]
    return records.matches_frame([r for r in rows if r]), records.events_frame([e for e in events if e])


def test_stage_table_from_records_or_from_events_alone(spark_dir: Path) -> None:
    matches, events = _frames(spark_dir)
    from_records = spark.stages(matches, events.iloc[0:0])
    from_events = spark.stages(matches.iloc[0:0], events)
    assert len(from_records) == len(from_events) == sum(1 for t in events["type"] if t == "StageCompleted")
    cols = ["app_id", "stage_id", "stage_attempt", "tasks", "task_max", "task_median", "skew", "memory_spill"]
    key = ["app_id", "stage_id", "stage_attempt"]
    pd.testing.assert_frame_equal(
        from_records[cols].sort_values(key).reset_index(drop=True),
        from_events[cols].sort_values(key).reset_index(drop=True),
        check_dtype=False,
    )
    slow = spark_fixture.planted_stage("local", "slow")
    top = from_records.iloc[0]
    assert (top["app_id"], top["stage_id"]) == (manifest("local")["app_id"], slow) and top["skew"] > 10


@pytest.mark.usefixtures("spark_env")
def test_spark_view_shows_the_planted_problems() -> None:
    at = open_view("spark")
    assert not at.error
    m = metrics(at)
    assert m["Applications"] == "2" and int(m["Executors lost"]) >= 1
    assert int(m["Open Spark alerts (warning or worse)"]) >= 8
    text = markdown(at)
    for rule in (
        "StageSkew",
        "TaskStraggler",
        "StageSpill",
        "StageGcPressure",
        "ShuffleFetchStraggler",
        "ExecutorLostInStage",
        "StageRetried",
    ):
        assert f"**{rule}**" in text, rule
    apps = frame_text(at, 0)
    assert manifest("local")["app_id"] in apps and manifest("cluster")["app_id"] in apps


@pytest.mark.usefixtures("spark_env")
def test_spark_view_narrows_to_one_application() -> None:
    app = manifest("local")["app_id"]
    at = open_view("spark", app=app)
    text = markdown(at)
    assert "ShuffleFetchStraggler" not in text and "**StageSpill**" in text  # the cluster app's is gone
    stages = at.dataframe[1].value
    assert set(stages["app_id"]) == {app}
    assert int(stages.iloc[0]["stage_id"]) == spark_fixture.planted_stage("local", "slow")  # most skewed first


def test_spark_events_from_the_archive(spark_dir: Path, tmp_path: Path) -> None:
    """An archive of Spark events only (no records): the Spark view's stage table is built from its StageCompleted
    events, whose attributes the archive backend expands."""
    import json

    from app.spark.archive import ArchiveWriter
    from dashboards.backends.archive import ArchiveBackend

    events = [json.loads(line) for line in (spark_dir / "spark_events.jsonl").read_text().splitlines()]
    with ArchiveWriter(tmp_path / "archive", tick=0.001) as writer:
        writer.add_events(events)
    loaded = ArchiveBackend(tmp_path / "archive").load()
    table = spark.stages(loaded["matches"], loaded["events"])
    matches, frame = _frames(spark_dir)
    assert len(table) == len(spark.stages(matches, frame)) > 0
    assert set(table["app_id"]) == {manifest("local")["app_id"], manifest("cluster")["app_id"]}


def test_stage_table_keeps_application_attempts_apart() -> None:
    """Issue 27, defect 3: one YARN application's attempts 1-4 (real logs in one directory:
    ``tests/collectors/spark/fixtures/multiple_attempts``, NVIDIA/spark-rapids-tools, Apache-2.0) reuse its App ID and
    stage ids.  Shown together, each attempt's stage rows equal those of its own log shown alone; the pack's records,
    which name no attempt, give way to the events of those stages."""
    from tests.collectors.spark.conftest import run_collect
    from tests.collectors.spark.test_spark_thirdparty import logs_of

    def frame(events: list[dict]) -> pd.DataFrame:
        return records.events_frame([records.event_row(e, i) for i, e in enumerate(events)])

    none = pd.DataFrame()
    alone = [run_collect(path)[0] for path in logs_of("multiple_attempts")]
    cols = ["app_id", "app_attempt", "stage_id", "stage_attempt", "tasks", "task_max", "task_median", "end"]
    want = pd.concat([spark.stages(none, frame(events))[cols] for events in alone])
    want = want.sort_values(spark.STAGE_KEY).reset_index(drop=True)
    everything = [e for events in alone for e in events]
    done = [e for e in everything if e["type"] == "StageCompleted"]
    record_rows = [
        records.match_row(
            {
                "query": "StageDone",
                "match": {"c": [e["id"]]},
                "confidence": 1.0,
                "start": e["ts"],
                "end": e["ts"],
                "return": {k: e[k] for k in ("app_id", "stage_id", "stage_attempt", "tasks")},
            },
            "test",
        )
        for e in done
    ]
    matches = records.matches_frame([r for r in record_rows if r])
    for source in (none, matches):
        got = spark.stages(source, frame(everything))[cols].sort_values(spark.STAGE_KEY).reset_index(drop=True)
        assert len(got) == len(done) == 20 and sorted(set(got["app_attempt"])) == ["1", "2", "3", "4"]
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
    (app,) = spark.applications(spark.stages(none, frame(everything)), frame(everything), none, none, none).to_dict(
        "records"
    )
    starts = [e["ts"] for e in everything if e["type"] == "SparkAppStart"]
    ends = [e["ts"] for e in everything if e["type"] == "SparkAppEnd"]
    assert (app["stages"], app["tasks"], app["start"], app["end"]) == (20, 428, min(starts), max(ends))


def _judged(events: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The pack's test copy on ``events`` as ``hcep match`` and ``hcep match --alerts`` give them: the view's matches,
    events and alerts (one row per alert group, as the data source gives them)."""
    import argparse
    import json
    import tempfile

    from app.matching.judge import judge
    from app.matching.packs import compiled_queries, load_pack
    from app.matching.read import read_events
    from dashboards import alerts as alerts_mod
    from engine import match_events
    from tests.queries.spark_pack.conftest import SMALL

    args = argparse.Namespace(
        pack=str(SMALL), query=None, query_text=None, strategy=None, output=None, confidence=None, tick=None
    )
    compiled, tick = compiled_queries(args)
    pack = load_pack(SMALL)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        parsed = read_events(path, tick)
    rows = [records.match_row(r, "test") for r in match_events(compiled, parsed)]
    transitions = [alerts_mod.row_of(a, "test", i) for i, a in enumerate(judge(pack, parsed))]
    frame = records.events_frame([records.event_row(e, i) for i, e in enumerate(events)])
    alerts = alerts_mod.latest(alerts_mod.transitions_frame(transitions))
    return records.matches_frame([r for r in rows if r]), frame, alerts


def test_alerts_and_stragglers_keep_application_attempts_apart() -> None:
    """Issue 27, defect 3, with the pack's own records and alerts (its RETURN names ``app_attempt``, its rules group
    by it) on the real ``multiple_attempts`` logs: shown together, each attempt's stragglers (and whether a rule alerted
    on them), its stages' alerts and its alert groups are those of its own log shown alone."""
    from tests.collectors.spark.conftest import run_collect
    from tests.collectors.spark.test_spark_thirdparty import logs_of

    alone = [run_collect(path)[0] for path in logs_of("multiple_attempts")]
    matches, events, alerts = _judged([e for events in alone for e in events])
    straggling = spark.stragglers(matches, alerts)
    staged = spark.stages(matches, events, alerts)
    cols = ["stage_id", "stage_attempt", "task_index", "executor_id", "duration", "tasks_before", "alerted"]
    total = 0
    for own in alone:
        (attempt,) = {e["app_attempt"] for e in own}
        m, e, a = _judged(own)
        want = spark.stragglers(m, a)[cols].sort_values(cols[:4]).reset_index(drop=True)
        got = straggling[straggling["app_attempt"] == attempt][cols].sort_values(cols[:4]).reset_index(drop=True)
        assert want["alerted"].any() and len(want) == 8
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
        key = ["stage_id", "stage_attempt"]
        want_alerts = spark.stages(m, e, a)[[*key, "alerts"]].sort_values(key).reset_index(drop=True)
        got_alerts = staged[staged["app_attempt"] == attempt][[*key, "alerts"]].sort_values(key).reset_index(drop=True)
        assert (want_alerts["alerts"] != "").any()
        pd.testing.assert_frame_equal(got_alerts, want_alerts, check_dtype=False)
        mine = alerts[[labels.get("app_attempt") == attempt for labels in alerts["labels"]]]
        assert len(mine) == len(a) > 0
        total += len(a)
    assert len(alerts) == total == 36  # one alert group per rule, attempt, stage (and executor): 22 mixed
