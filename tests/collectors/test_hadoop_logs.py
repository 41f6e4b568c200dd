"""MRAppMaster and reduce-task syslogs: the events they yield (semantics section 7), zones, formats, malformed lines."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

from collectors.hadoop.amlog import AmLogParser, parse_am_log
from collectors.hadoop.common import Context, run_lines
from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.jhist import parse_jhist
from collectors.hadoop.tasklog import ReduceLogParser, parse_reduce_log
from tests.collectors.hadoop_testkit import JOB, sample, strip

R = "org.apache.hadoop.mapreduce.task.reduce."
ATT = "attempt_1700000000000_0007"


def _am(lines: list[str], **kw) -> tuple[list[dict], Context]:
    ctx = Context(source="am", deadletter=DeadLetterSink.memory(), **kw)
    return list(run_lines(AmLogParser(ctx), lines)), ctx


def _reduce(lines: list[str]) -> tuple[list[dict], Context]:
    ctx = Context(source="red", deadletter=DeadLetterSink.memory())
    return list(run_lines(ReduceLogParser(ctx), lines)), ctx


# ------------------------------------------------------------------------------------------------------- AM syslog
def test_am_log_agrees_with_the_history_file() -> None:
    ctx = Context(source="am", deadletter=DeadLetterSink.memory())
    am = list(parse_am_log(str(sample("am_syslog")), ctx))
    assert ctx.stats.dead == 0
    assert ctx.stats.continuation == 4  # the stack trace and blank line of a multi-line diagnostics record
    jhist = [e for e in parse_jhist(str(sample("jhist"))) if e["type"] != "DataIO"]

    def comparable(events: list[dict]) -> list[dict]:
        return sorted(
            ({k: v for k, v in strip(e).items() if k != "submit_ts"} for e in events),
            key=lambda e: (e["ts"], e["type"], e.get("attempt_id", "")),
        )

    assert comparable(am) == comparable(jhist)
    assert Counter(e["type"] for e in am)["Mapper"] == 5


def test_speculative_attempt_is_marked() -> None:
    events, _ = _am(sample("am_syslog").read_text().splitlines())
    spec = [e for e in events if e.get("speculative")]
    assert [e["attempt_id"] for e in spec] == [f"{ATT}_m_000002_1"]


def test_zone_is_configuration() -> None:
    line = (
        "2023-11-14 23:15:03,456 INFO [AsyncDispatcher event handler] org.apache.hadoop.mapreduce.v2.app.job.impl."
        f"JobImpl: {JOB}Job Transitioned from INITED to SETUP"
    )
    end = line.replace("03,456", "09,000").replace("INITED to SETUP", "COMMITTING to SUCCEEDED")
    utc, _ = _am([line, end])
    paris, _ = _am([line, end], tz=ZoneInfo("Europe/Paris"))
    assert utc[0]["ts"] == datetime(2023, 11, 14, 23, 15, 3, 456000, tzinfo=ZoneInfo("UTC")).timestamp()
    assert utc[0]["ts"] - paris[0]["ts"] == 3600.0  # 23:15 in Paris (UTC+1) is an hour earlier
    assert [e["type"] for e in utc] == ["JobStart", "JobEnd"] and utc[0]["user"] == "unknown"


def test_malformed_am_lines() -> None:
    base = "2023-11-14 22:15:03,456 INFO [AsyncDispatcher event handler] org.apache.hadoop.mapreduce.v2.app.job."
    lines = [
        "stray text before any record",
        base + "impl.JobImpl: job_1700000000000_0007Job Transitioned from INITED to SETUP",
        "2023-11-14 22:15:0x,456 INFO [main] org.apache.X: bad seconds",
        "2023-13-14 22:15:03,456 INFO [main] org.apache.X: month 13",
        base + "impl.TaskAttemptImpl: attempt_1700000000000_0007_m_000000_0 TaskAttempt Transitioned from ASSIGNED",
        base + "impl.TaskAttemptImpl: TaskAttempt: [attempt_x] using containerId: [container_1 on NM: [h]",
        "\tat org.apache.hadoop.mapred.YarnChild.main(YarnChild.java:164)",
    ]
    events, ctx = _am(lines)
    assert ctx.deadletter.count == 5 == ctx.stats.dead
    assert [r["location"] for r in ctx.deadletter.records] == ["am:1", "am:3", "am:4", "am:5", "am:6"]
    assert ctx.stats.continuation == 1
    assert [e["type"] for e in events] == ["JobStart"]  # flushed at the end of the input


def test_console_and_daemon_layouts_are_accepted() -> None:
    lines = [
        "23/11/14 22:15:03 INFO impl.JobImpl: job_1700000000000_0007Job Transitioned from INITED to SETUP",
        "2023-11-14 22:15:09,000 INFO  org.apache.hadoop.mapreduce.v2.app.job.impl.JobImpl: "
        "job_1700000000000_0007Job Transitioned from COMMITTING to KILLED",
    ]
    events, ctx = _am(lines)
    assert ctx.stats.dead == 0
    assert [(e["type"], e.get("status")) for e in events] == [("JobStart", None), ("JobEnd", "KILLED")]


# --------------------------------------------------------------------------------------------------- reduce syslog
def test_reduce_log_pulls() -> None:
    ctx = Context(source="red", deadletter=DeadLetterSink.memory())
    events = list(parse_reduce_log(str(sample("reduce_syslog")), ctx))
    assert ctx.stats.dead == 0
    pulls = [e for e in events if e["type"] == "DataPull"]
    ios = [e for e in events if e["type"] == "DataIO"]
    assert len(pulls) == 3 == len(ios)
    assert {e["task_id"] for e in pulls} == {"task_1700000000000_0007_r_000000"}
    assert [(p["map_task"][-6:], p["host"], p["period"], p["bytes"]) for p in pulls] == [
        ("000000", "node03.hcep.local", 0.012, 52431),
        ("000001", "node02.hcep.local", 0.014, 48880),
        ("000002", "node01.hcep.local", 0.061, 50012),
    ]
    assert [e["size"] for e in ios] == [-52431, -48880, -50012]
    assert all(p["job_id"] == JOB and p["ts"] == io["ts"] for p, io in zip(pulls, ios, strict=True))
    # the last pull is the Q3 straggler: slower than twice the mean of the pulls before it
    assert pulls[2]["period"] > 2 * (pulls[0]["period"] + pulls[1]["period"]) / 2


def _line(ms: str, thread: str, cls: str, msg: str) -> str:
    return f"2023-11-14 22:15:{ms} INFO [{thread}] {R}{cls}: {msg}"


def test_hadoop3_shuffle_lines_host_from_freed_line() -> None:
    """3.x logs Assigning/assigned/url at DEBUG: the host is only known when the fetcher frees it."""
    lines = [
        _line(
            "14,660",
            "EventFetcher for fetching Map Completion Events",
            "EventFetcher",
            f"{ATT}_r_000003_0 Thread started: EventFetcher for fetching Map Completion Events",
        ),
        _line(
            "14,705",
            "fetcher#2",
            "Fetcher",
            f"fetcher#2 about to shuffle output of map {ATT}_m_000004_0 decomp: 300000000 len: 300000004 to DISK",
        ),
        _line("17,905", "fetcher#2", "OnDiskMapOutput", f"Read 300000004 bytes from map-output for {ATT}_m_000004_0"),
        _line("17,906", "fetcher#2", "ShuffleSchedulerImpl", "node09.hcep.local:13562 freed by fetcher#2 in 3201ms"),
    ]
    events, ctx = _reduce(lines)
    assert ctx.stats.dead == 0
    pull = events[0]
    assert pull["type"] == "DataPull" and pull["host"] == "node09.hcep.local" and pull["to"] == "DISK"
    assert (pull["period"], pull["bytes"], pull["ts"]) == (3.2, 300000004, events[1]["ts"])
    assert pull["task_id"] == "task_1700000000000_0007_r_000003"


def test_pull_without_read_line_ends_at_freed_and_reducer_from_url() -> None:
    url = f"13562/mapOutput?job={JOB}&reduce=5&map={ATT}_m_000001_0"
    lines = [
        _line("14,700", "fetcher#1", "ShuffleSchedulerImpl", "Assigning node02.hcep.local:13562 with 1 to fetcher#1"),
        _line("14,702", "fetcher#1", "Fetcher", f"for url={url} sent hash and received reply"),
        _line(
            "14,705",
            "fetcher#1",
            "Fetcher",
            f"fetcher#1 about to shuffle output of map {ATT}_m_000001_0 decomp: 10 len: 14 to MEMORY",
        ),
        _line("14,905", "fetcher#1", "ShuffleSchedulerImpl", "node02.hcep.local:13562 freed by fetcher#1 in 205ms"),
    ]
    events, _ = _reduce(lines)
    pull = events[0]
    assert pull["task_id"] == "task_1700000000000_0007_r_000005" and pull["partial"] is True
    assert pull["period"] == 0.2 and pull["host"] == "node02.hcep.local"


def test_malformed_shuffle_lines() -> None:
    lines = [
        _line("14,700", "fetcher#1", "Fetcher", "fetcher#1 about to shuffle output of map attempt_b decomp: x len: 1"),
        _line("14,701", "fetcher#1", "InMemoryMapOutput", "Read many bytes from map-output for attempt_1"),
        _line("14,702", "fetcher#1", "ShuffleSchedulerImpl", "somewhere freed by nobody"),
        _line("14,703", "fetcher#1", "Fetcher", "for url=13562/mapOutput?map=x sent hash and received reply"),
        _line("14,704", "fetcher#1", "Merger", "Merging 3 sorted segments"),
    ]
    events, ctx = _reduce(lines)
    assert events == [] and ctx.deadletter.count == 4
    assert ctx.stats.ignored == 1
