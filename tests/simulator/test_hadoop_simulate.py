"""The simulator: its artifacts parse back into every job, task and attempt; same seed, same bytes."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from collections import Counter, defaultdict
from pathlib import Path

import fastavro
import pytest

from app.cli import CommandError
from app.commands import simulate as simulate_cmd
from collectors.hadoop.collect import Summary, collect
from collectors.hadoop.deadletter import DeadLetterSink
from simulator import SimConfig, simulate, swim

SMALL = {"nodes": 20, "hours": 0.2, "seed": 7}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("sim")
    summary = simulate(SimConfig(**SMALL), str(out), ganglia="none")
    dead = DeadLetterSink.memory()
    stats = Summary()
    events = list(collect([str(out / "hadoop")], deadletter=dead, summary=stats))
    truth = json.loads((out / "ground_truth.json").read_text())
    jobs = [json.loads(line) for line in (out / "jobs.jsonl").read_text().splitlines()]
    return {"out": out, "summary": summary, "events": events, "dead": dead, "truth": truth, "jobs": jobs}


def _by_type(events: list[dict], etype: str) -> list[dict]:
    return [e for e in events if e["type"] == etype]


def test_every_job_and_attempt_comes_back(run: dict) -> None:
    events, jobs = run["events"], run["jobs"]
    assert run["dead"].count == 0
    starts = {e["job_id"]: e for e in _by_type(events, "JobStart")}
    ends = {e["job_id"]: e for e in _by_type(events, "JobEnd")}
    assert set(starts) == set(ends) == {j["job_id"] for j in jobs}
    for job in jobs:
        start = starts[job["job_id"]]
        assert (start["maps"], start["reduces"], start["user"], start["queue"]) == (
            job["maps"],
            job["reduces"],
            job["user"],
            job["queue"],
        )
        assert start["ts"] == job["launch"] and ends[job["job_id"]]["ts"] == job["end"]
    mappers = {e["attempt_id"]: e["status"] for e in _by_type(events, "Mapper")}
    assert mappers == {a[0]: a[1] for j in jobs for a in j["map_attempts"]}
    reducers = {e["attempt_id"] for e in _by_type(events, "Reducer")}
    assert reducers == {a[0] for j in jobs for a in j["reduce_attempts"]}
    assert len(_by_type(events, "ReducerStart")) == len(_by_type(events, "ReducerEnd")) == len(reducers)
    assert run["summary"]["counts"]["map_attempts"] == len(mappers)
    assert set(mappers.values()) <= {"SUCCEEDED", "FAILED", "KILLED"}
    succeeded = Counter(e["task_id"] for e in _by_type(events, "Mapper") if e["status"] == "SUCCEEDED")
    assert set(succeeded.values()) == {1} and len(succeeded) == sum(j["maps"] for j in jobs)


def test_am_logs_alone_recover_the_same_facts(run: dict) -> None:
    """Without the history files (a running job), the AM logs give the same jobs, attempts and periods."""
    once = ("JobStart", "JobEnd", "Mapper", "Reducer", "ReducerStart", "ReducerEnd")  # one per job or attempt
    am_events = [e for e in collect([str(run["out"] / "hadoop" / "nodes")]) if e["type"] in once]
    full = {(e["type"], e.get("attempt_id") or e["job_id"]): e for e in run["events"] if e["type"] in once}
    for e in am_events:
        twin = full[(e["type"], e.get("attempt_id") or e["job_id"])]
        for key in ("ts", "job_id", "host", "period", "status", "user", "queue", "maps", "reduces", "speculative"):
            assert e.get(key) == twin.get(key), (key, e, twin)
    assert len(am_events) == len(full)


def test_shuffle_and_queue_accounting(run: dict) -> None:
    events, jobs = run["events"], run["jobs"]
    pulls = Counter(e["job_id"] for e in _by_type(events, "DataPull"))
    queued: dict[str, int] = defaultdict(int)
    for e in _by_type(events, "DataIO"):
        queued[e["job_id"]] += e["size"]
    # A reducer whose fetch timed out (hung_fetch beyond the read timeout) logs a retry: its pulls are the
    # collectors' to pair (issue 24 item 2), not checked here.
    retried = {f["affected"]["job_id"][0] for f in run["truth"]["faults"] if f["kind"] == "hung_fetch" and f["entity"]}
    for job in jobs:
        if job["job_id"] in retried:
            continue
        assert pulls.get(job["job_id"], 0) == job["pulls"]
        assert queued.get(job["job_id"], 0) == 0  # everything written was fetched
    written = sum(e["size"] for e in _by_type(events, "DataIO") if e["size"] > 0)
    assert written == sum(j["map_output_bytes"] for j in jobs)
    assert all(e["host"].endswith(".hcep.local") for e in _by_type(events, "DataPull"))


def test_jhist_files_follow_the_avro_schema(run: dict) -> None:
    files = sorted((run["out"] / "hadoop" / "history").rglob("*.jhist"))[:25]
    assert files
    for path in files:
        lines = path.read_text().split("\n")
        assert lines[0] == "Avro-Json" and lines[2].startswith('{"type":"AM_STARTED"') and lines[3] == ""
        schema = fastavro.parse_schema(json.loads(lines[1]))
        body = "\n".join(line for line in lines[2:] if line) + "\n"
        records = list(fastavro.json_reader(io.StringIO(body), schema))  # strict: raises on any schema violation
        assert records[-1]["type"] == "JOB_FINISHED"


def test_ganglia_samples(run: dict) -> None:
    lines = (run["out"] / "ganglia" / "samples.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert set(first) == {"ts", "cluster", "host", "metric", "value"} and first["metric"] == "load_one"
    times = sorted({json.loads(line)["ts"] for line in lines})
    assert {b - a for a, b in zip(times, times[1:], strict=False)} == {15.0}
    assert len(lines) == len(times) * SMALL["nodes"]


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_same_seed_same_artifacts(tmp_path: Path) -> None:
    cfg = {"nodes": 10, "hours": 0.1, "seed": 11}
    simulate(SimConfig(**cfg), str(tmp_path / "a"), ganglia="none")
    simulate(SimConfig(**cfg), str(tmp_path / "b"), ganglia="none")
    simulate(SimConfig(**{**cfg, "seed": 12}), str(tmp_path / "c"), ganglia="none")
    a, b, c = (_digest(tmp_path / x) for x in "abc")
    assert a == b and len(a) > 10
    assert a != c


def test_hadoop3_log_format_round_trip(tmp_path: Path) -> None:
    simulate(SimConfig(nodes=10, hours=0.1, seed=5, log_format="hadoop3", faults=[]), str(tmp_path), ganglia="none")
    reduce_logs = [p for p in (tmp_path / "hadoop" / "nodes").rglob("syslog") if "EventFetcher" in p.read_text()]
    assert reduce_logs
    assert not any("sent hash and received reply" in p.read_text() for p in reduce_logs)
    events = list(collect([str(tmp_path / "hadoop")]))
    jobs = [json.loads(line) for line in (tmp_path / "jobs.jsonl").read_text().splitlines()]
    pulls = _by_type(events, "DataPull")
    assert len(pulls) == sum(j["pulls"] for j in jobs)
    assert all(p["host"] for p in pulls)


def test_ganglia_writer_is_called_when_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator import ganglia_out

    calls = []
    monkeypatch.setattr(
        ganglia_out, "write_rrd", lambda root, cluster, samples: calls.append((root, cluster, len(samples)))
    )
    simulate(SimConfig(nodes=4, hours=0.05, seed=1, cluster="c1"), str(tmp_path), ganglia="rrd")
    assert calls and calls[0][0].endswith("ganglia/rrds") and calls[0][1] == "c1" and calls[0][2] > 0
    warnings: list[str] = []

    def broken(*_args: object) -> None:
        raise OSError("gmond unreachable")

    monkeypatch.setattr(ganglia_out, "send_gmetric", broken)
    simulate(
        SimConfig(nodes=4, hours=0.05, seed=1),
        str(tmp_path / "g"),
        ganglia="gmond",
        gmond="h:8649",
        warn=warnings.append,
    )
    assert warnings and "gmond unreachable" in warnings[0]
    assert (tmp_path / "g" / "ganglia" / "samples.jsonl").stat().st_size > 0


def test_swim_window_and_scaling() -> None:
    full = swim.window("fb2009", 1.0, 600)
    scaled = swim.window("fb2009", 1.0, 60)
    assert len(full) == len(scaled) == 78 and all(0 <= j.submit < 3600 for j in full)
    assert abs(scaled[0].input_bytes * 10 - full[0].input_bytes) < 10  # sizes scale with the cluster
    wrapped = swim.window("fb2009", 25.0, 600)
    assert len(wrapped) > len(swim.read_trace("fb2009"))


def test_simulate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    simulate_cmd.configure(parser)
    out = tmp_path / "cluster"
    argv = ["--nodes", "6", "--hours", "0.05", "--seed", "3", "--out", str(out), "--ganglia", "none", "--no-progress"]
    assert simulate_cmd.run(parser.parse_args(argv)) == 0
    assert "simulate:" in capsys.readouterr().err and (out / "ground_truth.json").exists()
    with pytest.raises(CommandError, match="--force"):
        simulate_cmd.run(parser.parse_args(argv))
    assert simulate_cmd.run(parser.parse_args([*argv, "--force"])) == 0
    with pytest.raises(CommandError, match="gmond HOST:PORT"):
        simulate_cmd.run(parser.parse_args([*argv[:-3], "--ganglia", "gmond", "--force"]))
    bad = tmp_path / "faults.json"
    bad.write_text('[{"kind": "meteor", "at": 1, "severity": 2}]')
    with pytest.raises(CommandError, match=r"faults.json\[0\]: unknown kind 'meteor'"):
        simulate_cmd.run(parser.parse_args([*argv, "--force", "--faults", str(bad)]))
    with pytest.raises(CommandError, match="--faults .*missing.json"):
        simulate_cmd.run(parser.parse_args([*argv, "--force", "--faults", str(tmp_path / "missing.json")]))
    bad.write_text('[{"kind": "slow_node", "at": 10, "severity": 3}]')
    assert simulate_cmd.run(parser.parse_args([*argv, "--force", "--faults", str(bad)])) == 0
    truth = json.loads((out / "ground_truth.json").read_text())
    assert [f["kind"] for f in truth["faults"]] == ["slow_node"] and truth["faults"][0]["entity"]["host"]
