"""Every view of the dashboard under Streamlit's AppTest, on the fixture data: each shows its planted anomaly, the
filters and links work, the Alerts view shows the rules' open alerts grouped by job with their evidence, and
acknowledging an alert is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboards.fixture import (
    IMBALANCE_HOST,
    IMBALANCE_TASK,
    OTHER_JOB,
    SLOW_HOST,
    SLOW_PULL_TASK,
    STRAGGLER_JOB,
    STRAGGLER_MAPPER,
)

APP = Path(__file__).resolve().parents[2] / "dashboards" / "webapp" / "hcep_ops.py"
VIEWS = ["overview", "jobs", "stragglers", "queuing", "imbalance", "spark", "alerts", "queries"]


def open_view(view: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update(params)
    at.run()
    if view != "overview":
        at.switch_page(f"views/{view}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame_text(at: AppTest, index: int = 0) -> str:
    return at.dataframe[index].value.to_string()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.mark.usefixtures("dashboard_env")
@pytest.mark.parametrize("view", VIEWS)
def test_every_view_renders_with_a_title(view: str) -> None:
    at = open_view(view)
    assert at.title, f"{view}: no title"
    assert not at.error


@pytest.mark.usefixtures("dashboard_env")
def test_overview_shows_load_alerts_and_links_to_the_anomalies() -> None:
    at = open_view("overview")
    m = metrics(at)
    assert m["Imbalance rounds"] == "6"
    assert m["Load std-dev (latest)"] == "0.21"
    assert m["Open alerts"] == "4"  # the store's open alerts: 3 warning or worse, 1 info
    assert at.get("vega_lite_chart"), "no load chart"
    assert any("History (Spark)" in e.label for e in at.expander)
    links = {link.proto.label: (link.proto.page, link.proto.query_string) for link in at.get("page_link")}
    assert ("stragglers", f"task={SLOW_PULL_TASK}") in links.values()  # HungFetch -> its reducer
    assert ("jobs", f"job_detail={STRAGGLER_JOB}") in links.values()  # MapDataSkewDone -> its job
    assert not any(label.startswith("MapDataSkewDone (info)") for label in links)  # only warning or worse need a look


@pytest.mark.usefixtures("dashboard_env")
def test_jobs_shows_the_skewed_job_and_its_straggling_mapper() -> None:
    at = open_view("jobs")
    table = at.dataframe[0].value
    top = table.iloc[0]
    assert top["job_id"] == STRAGGLER_JOB
    assert top["map_max"] == pytest.approx(121.6) and top["map_skew"] == pytest.approx(2.32)
    assert metrics(at)["Slowest task (Mapper)"] == "121.6 s"
    assert STRAGGLER_MAPPER in markdown(at)
    assert STRAGGLER_MAPPER in frame_text(at, 1)
    history = at.dataframe[2].value  # jobs, tasks, then the history tables
    mine = history[(history["job_id"] == STRAGGLER_JOB) & (history["kind"] == "Mapper")].iloc[0]
    assert mine["group_b_mean"] == pytest.approx(121.6) and mine["ratio"] > 4  # the straggler is a group alone
    assert at.dataframe[3].value["max"].max() == pytest.approx(121.6)


@pytest.mark.usefixtures("dashboard_env")
def test_stragglers_shows_the_slow_pull_with_task_hosts_and_events() -> None:
    at = open_view("stragglers", task=SLOW_PULL_TASK)
    table = at.dataframe[0].value
    row = table[table["task_id"] == SLOW_PULL_TASK].iloc[0]
    assert row["slow_pull_s"] == pytest.approx(5.6)
    assert row["reducer_host"] == "worker-03" and row["source_host"] == "worker-02"
    assert at.selectbox(key="pick_task").value == SLOW_PULL_TASK
    assert SLOW_PULL_TASK in at.subheader[0].value
    assert "**5.6 s**" in markdown(at)
    events = "\n".join(c.value for c in at.code)
    assert '"type": "DataPull"' in events and '"period": 5.6' in events


@pytest.mark.usefixtures("dashboard_env")
def test_queuing_shows_the_queued_map_output_per_job() -> None:
    at = open_view("queuing")
    table = at.dataframe[0].value
    assert table.iloc[0]["job_id"] == STRAGGLER_JOB
    assert table.iloc[0]["peak_MiB"] == pytest.approx(138.2)
    assert OTHER_JOB in set(table["job_id"])
    assert at.get("vega_lite_chart")
    assert any(f"queued map output of {STRAGGLER_JOB} (12 points)" in e.label for e in at.expander)
    # The HeldMapOutput rule alerted on job 2 (resolved since): listed, and marked in the table.
    assert table.set_index("job_id").loc[OTHER_JOB, "held_alert"]
    assert not table.set_index("job_id").loc[STRAGGLER_JOB, "held_alert"]
    assert f"`{OTHER_JOB}` · HeldMapOutput of {OTHER_JOB} (moderate)" in markdown(at)
    assert not table["incomplete_data"].any() and not at.warning


@pytest.mark.usefixtures("dashboard_env")
def test_imbalance_shows_the_reducer_with_its_confidence() -> None:
    at = open_view("imbalance")
    table = at.dataframe[0].value
    mine = table[table["task_id"] == IMBALANCE_TASK]
    assert set(mine["query"]) == {"Q5", "Q6"}
    assert (mine["confidence"] == 1.0).all()
    assert table.iloc[0]["task_id"] == IMBALANCE_TASK  # flagged by both queries: first
    assert metrics(at)["Through an imbalance (Q5)"] == "1"
    assert at.selectbox(key="pick_task").value == IMBALANCE_TASK
    runaway = f"**RunawayReducer** `{IMBALANCE_TASK}` on **{IMBALANCE_HOST}** · RunawayReducer of {IMBALANCE_TASK}"
    assert runaway in markdown(at)  # the store's (resolved) RunawayReducer alert of this reducer and host


@pytest.mark.usefixtures("dashboard_env")
def test_stragglers_lists_the_hung_fetch_and_slow_node_alerts() -> None:
    text = markdown(open_view("stragglers"))
    assert f":orange-badge[warning] **HungFetch** `{SLOW_PULL_TASK}` · HungFetch of {SLOW_PULL_TASK}" in text
    assert f"**SlowNode** host **{SLOW_HOST}** · SlowNode of {SLOW_HOST} (moderate)" in text


@pytest.mark.usefixtures("dashboard_env")
def test_alerts_view_groups_the_open_alerts_by_job() -> None:
    at = open_view("alerts")
    m = metrics(at)
    assert m["Open, warning or worse"] == "3" and m["Open, info"] == "1" and m["Acknowledged"] == "0"
    assert m["Resolved"] == "3"  # HeldMapOutput of job 2, RunawayReducer of its reducer, SlowNode of a host
    assert at.multiselect(key="alert_severity").value == ["critical", "warning"]  # warning or worse by default
    text = markdown(at)
    # One box per job, most severe first; inside, one line per alert with severity, tier, rule, target and summary.
    assert text.index(f"`{STRAGGLER_JOB}` · 2 open alert(s)") < text.index(f"`{OTHER_JOB}` · 1 open alert(s)")
    assert (
        f":orange-badge[warning] **HungFetch** · `{STRAGGLER_JOB}` / `{SLOW_PULL_TASK}` · "
        f"HungFetch of {SLOW_PULL_TASK} (warning)"
    ) in text
    assert f":red-badge[critical · severe] **MapDataSkewDone** · `{STRAGGLER_JOB}` · " in text
    assert f":red-badge[critical · severe] **ReduceDataSkew** · `{OTHER_JOB}`" in text  # escalated: the open one
    assert f"**MapDataSkewDone** · `{OTHER_JOB}`" not in text  # info: hidden by default
    captions = "\n".join(c.value for c in at.caption)
    assert "confidence 1.00 · since 2023-11-14 22:16:00 UTC" in captions
    assert "Alerts: transitions from store (12)" in captions


@pytest.mark.usefixtures("dashboard_env")
def test_alerts_view_shows_the_rule_and_the_evidence_record() -> None:
    at = open_view("alerts")
    box = next(e for e in at.expander if e.label == f"Rule and evidence: HungFetch {SLOW_PULL_TASK}")
    text = "\n".join(m.value for m in box.markdown)
    assert "**HungFetch**: what HungFetch means" in text and "query **Q3**" in text  # the fixture's stand-in record
    record = json.loads(box.code[0].value)
    assert record["return"]["task_id"] == SLOW_PULL_TASK and record["return"]["period"] == 5.6
    assert record["match"]["c"] == ["25"]
    links = {(link.proto.page, link.proto.query_string) for link in box.get("page_link")}
    assert links == {("stragglers", f"task={SLOW_PULL_TASK}")}


@pytest.mark.usefixtures("dashboard_env")
def test_alerts_view_filters_by_severity_and_keeps_the_history_collapsed() -> None:
    at = open_view("alerts")
    history = next(e for e in at.expander if e.label.startswith("Resolved alerts"))
    assert history.label == "Resolved alerts (3)" and not history.proto.expanded
    lines = "\n".join(m.value for m in history.markdown)
    assert f"**HeldMapOutput** · `{OTHER_JOB}`" in lines
    assert f"**RunawayReducer** · `{OTHER_JOB}` / `{IMBALANCE_TASK}`" in lines and "**SlowNode**" in lines
    at.multiselect(key="alert_severity").set_value(["info"]).run()
    text = markdown(at)
    assert f":blue-badge[info · low] **MapDataSkewDone** · `{OTHER_JOB}`" in text and "HungFetch" not in text


@pytest.mark.usefixtures("dashboard_env")
def test_alerts_job_filter_narrows_the_alerts() -> None:
    at = open_view("alerts", job=OTHER_JOB)
    assert metrics(at)["Open, warning or worse"] == "1"
    text = markdown(at)
    assert "ReduceDataSkew" in text and SLOW_PULL_TASK not in text


def test_acknowledging_an_alert_is_kept(dashboard_env: Path) -> None:
    from dashboards.config import DashboardConfig
    from dashboards.source import DashboardData

    alerts = DashboardData(DashboardConfig.from_env()).alerts(state="firing")
    pull = alerts.set_index("alertname").loc["HungFetch", "alert_id"]  # the alert's fingerprint
    at = open_view("alerts")
    at.multiselect(key="ack_pick").set_value([pull]).run()
    at.text_input(key="ack_by").set_value("alice").run()
    at.button(key="ack_selected").click().run()
    assert not at.exception
    book = json.loads(dashboard_env.read_text())
    assert list(book) == [pull] and book[pull]["by"] == "alice"
    assert metrics(at)["Acknowledged"] == "1" and metrics(at)["Open, warning or worse"] == "2"
    assert f"**HungFetch** · `{STRAGGLER_JOB}`" not in markdown(at)  # acknowledged: hidden by default
    at.toggle(key="alert_show_acked").set_value(True).run()
    assert "acknowledged by alice" in "\n".join(c.value for c in at.caption)
    at.button(key="ack_all").click().run()
    assert metrics(at)["Open, warning or worse"] == "0"


@pytest.mark.usefixtures("dashboard_env")
def test_queries_shows_pack_counts_and_rates() -> None:
    at = open_view("queries")
    table = at.dataframe[0].value.set_index("query")
    facts = ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"]
    new = [
        "MapSkewRunning",
        "MapSkewDone",
        "ReduceSkew",
        "HungFetch",
        "HeldOutput",
        "HeldOutputEarly",
        "HeldOutputLate",
        "SlowHost",
    ]
    assert sorted(table.index) == sorted([*facts, *new, "RunawayHost", "HostLosesRaces"])
    assert table.loc["Q3", "matches"] == 8 and table.loc["Q5", "matches"] == 1  # 1 in the sample, 7 hand-checked
    assert (table.loc[facts].drop(index="Q7")["per_minute"] > 0).all()  # no Metric events in the fixture: no Q7 match
    assert (table.loc[new, "matches"] == 0).all()  # the rules' queries match nothing on these small traces
    assert table.loc["Q5", "strategy"] == "skip_till_any_match" and table.loc["Q5", "threshold"] == 0.5
    assert table.loc["HungFetch", "rules"] == "HungFetch" and table.loc["Q3", "rules"] == ""
    assert table.loc["RunawayHost", "rules"] == "RunawayReducer"
    assert table.loc["MapSkewDone", "alerts"] == 2 and table.loc["MapSkewDone", "open_alerts"] == 2
    assert metrics(at)["Runs alive"] == "-"  # no service statistics in a JSONL data dir
    rules = at.dataframe[1].value.set_index("rule")  # the pack's alert rules, below the queries
    assert list(rules.index) == [
        "MapDataSkew",
        "MapDataSkewDone",
        "ReduceDataSkew",
        "HungFetch",
        "HeldMapOutput",
        "HeldMapOutputEarly",
        "HeldMapOutputLate",
        "SlowNode",
        "SlowNodeKills",
        "RunawayReducer",
    ]
    assert (rules["for"] == "").all()  # no rule holds (the waits are in the queries now)
    assert rules.loc["SlowNode", "when"] == "paced = 0 OR (least_pace >= 1.7 AND least_host_pace >= 1.4)"
    assert rules.loc["HungFetch", "alerts"] == 1
    assert rules.loc["RunawayReducer", "kind"] == "runaway_reducer"
    assert rules.loc["ReduceDataSkew", "alerts"] == 1  # one group: its warning escalated to critical


@pytest.mark.usefixtures("dashboard_env")
def test_job_and_host_filters_come_from_the_url() -> None:
    at = open_view("stragglers", job=STRAGGLER_JOB)
    assert at.selectbox(key="filter_job").value == STRAGGLER_JOB
    assert set(at.dataframe[0].value["task_id"]) == {SLOW_PULL_TASK}
    at = open_view("jobs", host="worker-04")
    assert set(at.dataframe[0].value["job_id"]) == {STRAGGLER_JOB}  # only job 1 ran a task on worker-04


@pytest.mark.usefixtures("dashboard_env")
def test_time_window_ends_at_the_newest_data() -> None:
    at = open_view("stragglers", window="5 min")
    assert at.info and "No straggling pulls" in at.info[0].value  # the last 5 minutes hold only job jC's end
    at.selectbox(key="filter_window").set_value("7 d").run()
    assert SLOW_PULL_TASK in set(at.dataframe[0].value["task_id"])
    assert at.query_params["window"] == ["7 d"] or at.query_params["window"] == "7 d"


@pytest.mark.usefixtures("dashboard_env")
def test_views_link_to_each_other_keeping_the_filters() -> None:
    at = open_view("stragglers", task=SLOW_PULL_TASK, host="worker-03")
    targets = {(link.proto.page, link.proto.query_string) for link in at.get("page_link")}
    assert ("imbalance", f"host=worker-03&task={SLOW_PULL_TASK}") in targets
    assert ("jobs", f"host=worker-03&job_detail={STRAGGLER_JOB}") in targets


def test_auto_refresh_runs_the_view_in_a_fragment(dashboard_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "5")
    at = open_view("imbalance")
    assert at.toggle(key="auto_refresh").value is True
    assert IMBALANCE_TASK in frame_text(at)


def test_an_empty_data_dir_shows_hints_not_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HCEP_DASHBOARD_DATA", str(tmp_path))
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
    monkeypatch.delenv("HCEP_DASHBOARD_ACKS", raising=False)
    for view in VIEWS:
        at = open_view(view)
        assert not at.error, view


def test_queries_view_shows_the_live_service_numbers(dashboard_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service_metrics = pytest.importorskip("app.metrics")
    registry = service_metrics.Registry()
    registry.set("hcep_runs_alive", 5, {"query": "Q3"})
    registry.set("hcep_runs_alive", 2, {"query": "Q6"})
    registry.set("hcep_events_per_second", 120.0)
    registry.set("hcep_shed_runs_total", 11, {"query": "Q3"})
    registry.set("hcep_shed_events_total", 4, {"query": "Q3"})
    registry.set("hcep_shed_runs_total", 3, {"query": "Q6"})
    server = service_metrics.MetricsServer(registry, 0).start()
    try:
        monkeypatch.setenv("HCEP_DASHBOARD_METRICS", f"http://127.0.0.1:{server.port}/metrics")
        at = open_view("queries")
    finally:
        server.stop()
    table = at.dataframe[0].value.set_index("query")
    assert table.loc["Q3", "runs_alive"] == 5 and table.loc["Q6", "runs_alive"] == 2
    m = metrics(at)
    assert m["Runs alive"] == "7" and m["Events / s"] == "120"
    assert table.loc["Q3", "shed"] == 15 and table.loc["Q3", "shed_runs"] == 11 and table.loc["Q6", "shed_runs"] == 3
    assert m["Shed (total)"] == "18" and m["Partial matches shed"] == "14"


def test_a_simulated_cluster_shows_its_slow_pull_with_the_log_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """End to end on genuine artifacts: ``hcep simulate`` -> ``hcep collect`` -> ``hcep match`` -> the stragglers view
    names the ground truth's slow pull and quotes the reducer's fetcher log lines."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("app.commands.simulate") is None:
        pytest.skip("hcep simulate is not built")
    root = APP.parents[2]

    def hcep(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr

    sim, data = tmp_path / "sim", tmp_path / "data"
    data.mkdir()
    faults = tmp_path / "faults.json"  # one shuffle fetch stalled 40 s (within the read timeout: no retry)
    faults.write_text('[{"kind": "hung_fetch", "at": 60, "severity": 40}]')
    hcep("simulate", "--nodes", "4", "--hours", "0.3", "--seed", "3", "--faults", str(faults), "--out", str(sim))
    hcep("collect", "hadoop", str(sim / "hadoop"), "--out", str(data / "hadoop.jsonl"), "--no-progress")
    fault = json.loads((sim / "ground_truth.json").read_text())["faults"][0]
    events = [json.loads(line) for line in (data / "hadoop.jsonl").read_text().splitlines() if line.strip()]
    task = fault["entity"]["task_id"]
    stalled = max((e for e in events if e["type"] == "DataPull" and e["task_id"] == task), key=lambda e: e["period"])
    assert stalled["period"] >= fault["severity"]  # the stall, as the reducer's log shows it
    truth = {"task_id": task, "period": stalled["period"], "map_task": stalled["map_task"], "host": stalled["host"]}
    truth["map_attempt"] = stalled["map_attempt"]
    merged = tmp_path / "events.jsonl"
    merged.write_text("".join(json.dumps(e) + "\n" for e in sorted(events, key=lambda e: e["ts"])))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "match",
            str(merged),
            "--pack",
            str(root / "queries" / "hadoop.yaml"),
            "--query",
            "Q3",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    (data / "matches.jsonl").write_text(out)

    monkeypatch.setenv("HCEP_DASHBOARD_DATA", str(data))
    monkeypatch.setenv("HCEP_DASHBOARD_LOGS", str(sim))
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
    monkeypatch.setenv("HCEP_DASHBOARD_ACKS", str(tmp_path / "acks.json"))
    at = open_view("stragglers", task=truth["task_id"])
    row = at.dataframe[0].value.set_index("task_id").loc[truth["task_id"]]
    assert row["slow_pull_s"] == pytest.approx(truth["period"], abs=0.01)
    assert row["map_task"] == truth["map_task"] and row["source_host"] == truth["host"]  # where it pulled from
    logs = next(e for e in at.expander if e.label.startswith("Hadoop log lines"))
    text = "\n".join(c.value for c in logs.code)
    assert f"about to shuffle output of map {truth['map_attempt']}" in text


def test_queuing_never_shows_a_negative_queue(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path) -> None:
    """A job whose JobStart was missed fetches more than it was seen to write: clamped at 0, flagged incomplete."""
    import shutil

    for file in data_dir.glob("*.jsonl"):
        shutil.copyfile(file, tmp_path / file.name)
    job = "job_1700000000000_0009"
    records = [
        {
            "query": "Q4",
            "match": {"a": ["s9"], "b": [f"io{i}" for i in range(n)]},
            "confidence": 1.0,
            "start": 1_700_000_100.0,
            "end": 1_700_000_100.0 + n,
            "return": {
                "job_id": job,
                "start": 1_700_000_100.0,
                "last": 1_700_000_100.0 + n,
                "queued": queued,
                "change": -1.0,
            },
        }
        for n, queued in ((1, 4.0 * 2**20), (2, -3.0 * 2**20))
    ]
    (tmp_path / "partial.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.setenv("HCEP_DASHBOARD_DATA", str(tmp_path))
    monkeypatch.setenv("HCEP_DASHBOARD_REFRESH", "0")
    monkeypatch.setenv("HCEP_DASHBOARD_ACKS", str(tmp_path / "acks.json"))
    at = open_view("queuing")
    table = at.dataframe[0].value.set_index("job_id")
    assert table.loc[job, "incomplete_data"] and not table.drop(index=job)["incomplete_data"].any()
    assert table.loc[job, "peak_MiB"] == 4.0 and table.loc[job, "now_MiB"] == 0.0
    assert (table[["peak_MiB", "now_MiB"]] >= 0).all().all()
    assert at.warning and "Incomplete data for 1 job(s)" in at.warning[0].value and job in at.warning[0].value
    import pyarrow as pa

    [plotted] = at.get("vega_lite_chart")[0].proto.datasets
    points = pa.ipc.open_stream(plotted.data.data).read_all().to_pandas()
    assert job in set(points["job_id"]) and (points["MiB"] >= 0).all() and (points["queued"] >= 0).all()
