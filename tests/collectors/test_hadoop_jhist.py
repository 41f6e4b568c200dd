"""Job history files: both encodings, the event mapping (docs/semantics.md section 7), and bad records."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from collectors.hadoop.common import Context, run_lines
from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.jhist import JhistJsonParser, parse_jhist
from tests.collectors.hadoop_testkit import JOB, sample, strip


def _parse(path: Path) -> tuple[list[dict], Context]:
    ctx = Context(source=str(path), deadletter=DeadLetterSink.memory())
    return list(parse_jhist(str(path), ctx)), ctx


def test_json_jhist_events() -> None:
    events, ctx = _parse(sample("jhist"))
    assert ctx.deadletter.count == 0 and ctx.stats.dead == 0
    assert Counter(e["type"] for e in events) == {
        "JobStart": 1,
        "JobEnd": 1,
        "Mapper": 5,
        "Reducer": 1,
        "ReducerStart": 1,
        "ReducerEnd": 1,
        "DataIO": 3,
        "MapStart": 5,
    }
    start = events[0]
    assert start["type"] == "JobStart" and start["ts"] == 1700000103.456  # the launch time, not the submit time
    assert (start["job_id"], start["user"], start["queue"], start["maps"], start["reduces"]) == (
        JOB,
        "alice",
        "default",
        3,
        1,
    )
    end = events[-1]
    assert end["type"] == "JobEnd" and end["status"] == "SUCCEEDED" and end["ts"] == 1700000141.9
    mappers = {e["attempt_id"][-8:]: e for e in events if e["type"] == "Mapper"}  # "000001_0" -> event
    assert mappers["000001_0"]["status"] == "FAILED" and mappers["000001_0"]["period"] == 3.7
    assert mappers["000002_0"]["status"] == "KILLED" and mappers["000002_0"]["period"] == 26.2
    assert mappers["000002_1"]["speculative"] is True and mappers["000000_0"]["speculative"] is False
    assert mappers["000000_0"]["host"] == "node03.hcep.local" and mappers["000000_0"]["task_id"].endswith("_m_000000")
    reducer = next(e for e in events if e["type"] == "Reducer")
    assert reducer["period"] == 27.7 and reducer["task_id"] == "task_1700000000000_0007_r_000000"
    sizes = sorted(e["size"] for e in events if e["type"] == "DataIO")
    assert sizes == [48880, 50012, 52431]  # MAP_OUTPUT_MATERIALIZED_BYTES of the successful attempts
    ios = [e for e in events if e["type"] == "DataIO"]
    assert [e["written"] for e in ios] == list(itertools.accumulate(e["size"] for e in ios))  # the job's so far
    assert [(e["maps_done"], e["maps"], e["reduces"]) for e in ios] == [(1, 3, 1), (2, 3, 1), (3, 3, 1)]
    assert all(e["delta"] == 0.5 for e in events)


def test_binary_jhist_gives_the_same_events(binary_jhist: Path) -> None:
    json_events, _ = _parse(sample("jhist"))
    bin_events, ctx = _parse(binary_jhist)
    assert ctx.stats.dead == 0
    assert [strip(e) for e in bin_events] == [strip(e) for e in json_events]


def test_ids_are_stable_and_unique() -> None:
    first, _ = _parse(sample("jhist"))
    again, _ = _parse(sample("jhist"))
    assert [e["id"] for e in first] == [e["id"] for e in again]
    assert len({e["id"] for e in first}) == len(first)


def test_bad_records_are_dead_lettered_and_the_rest_flows(tmp_path: Path) -> None:
    lines = sample("jhist").read_text().split("\n")
    broken = list(lines)
    broken[4] = broken[4][:60]  # truncated JSON (JOB_SUBMITTED)
    broken.insert(6, '{"type":"MAP_ATTEMPT_FINISHED","event":{"org.x.MapAttemptFinished":{"taskid":"t"}}}')
    broken.insert(7, "garbage \x00 line")
    path = tmp_path / "broken.jhist"
    path.write_text("\n".join(broken))
    events, ctx = _parse(path)
    reasons = [r["reason"] for r in ctx.deadletter.records]
    assert len(reasons) == 3 == ctx.stats.dead
    assert reasons[0].startswith("invalid JSON") and "missing field 'attemptId'" in reasons[1]
    assert all(r["location"].startswith(f"{path}:") for r in ctx.deadletter.records)
    # JOB_SUBMITTED was lost, so the user is unknown; everything else still comes out.
    assert Counter(e["type"] for e in events)["Mapper"] == 5
    assert next(e for e in events if e["type"] == "JobStart")["user"] == "unknown"
    stats = ctx.stats
    assert stats.lines == stats.used + stats.ignored + stats.continuation + stats.dead


def test_truncated_binary_file(binary_jhist: Path, tmp_path: Path) -> None:
    data = binary_jhist.read_bytes()
    cut = tmp_path / "cut.jhist"
    cut.write_bytes(data[: len(data) - 700])
    events, ctx = _parse(cut)
    assert ctx.deadletter.count == 1 and "@" in ctx.deadletter.records[0]["location"]
    assert any(e["type"] == "JobStart" for e in events) and not any(e["type"] == "JobEnd" for e in events)


def test_job_failed_before_init_still_pairs_start_and_end() -> None:
    ns = "org.apache.hadoop.mapreduce.jobhistory."
    lines = [
        "Avro-Json",
        '{"type":"record","name":"Event","fields":[]}',
        '{"type":"JOB_SUBMITTED","event":{"' + ns + 'JobSubmitted":{"jobid":"job_1_0001","jobName":"x",'
        '"userName":"bob","submitTime":1000,"jobConfPath":"","acls":{},"jobQueueName":"etl"}}}',
        "",
        '{"type":"JOB_FAILED","event":{"' + ns + 'JobUnsuccessfulCompletion":{"jobid":"job_1_0001","finishTime":5000,'
        '"finishedMaps":0,"finishedReduces":0,"jobStatus":"FAILED","diagnostics":{"string":"boom"}}}}',
    ]
    ctx = Context(source="mem")
    events = list(run_lines(JhistJsonParser(ctx), lines))
    assert [(e["type"], e["ts"]) for e in events] == [("JobStart", 1.0), ("JobEnd", 5.0)]
    assert events[1]["status"] == "FAILED" and events[1]["queue"] == "etl"


def test_delta_is_configurable() -> None:
    ctx = Context(source="x", delta=2.0)
    events = list(parse_jhist(str(sample("jhist")), ctx))
    assert {e["delta"] for e in events} == {2.0}


def test_attempt_counters_and_starts() -> None:
    """The input a map attempt read and the partition a reducer shuffled (job history counters), and every attempt's
    start with its host and container: what tells input skew from a straggler."""
    events, _ = _parse(sample("jhist"))
    starts = {e["attempt_id"][-8:]: e for e in events if e["type"] == "MapStart"}
    assert set(starts) == {"000000_0", "000001_0", "000001_1", "000002_0", "000002_1"}
    assert starts["000002_1"]["speculative"] is True
    assert all(e["container_id"].startswith("container_1700000000000_0007_01_") for e in starts.values())
    mappers = {e["attempt_id"][-8:]: e for e in events if e["type"] == "Mapper"}
    ok = mappers["000000_0"]
    assert ok["input_bytes"] > 0 and ok["input_records"] > 0 and ok["materialized_bytes"] == 52431
    assert ok["container_id"] == starts["000000_0"]["container_id"]
    reducer = next(e for e in events if e["type"] == "Reducer")
    assert reducer["shuffle_bytes"] > 0 and reducer["input_records"] > 0
