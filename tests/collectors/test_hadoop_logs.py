"""MRAppMaster and reduce-task syslogs: the events they yield (semantics section 7), zones, formats, malformed lines."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

from collectors.hadoop.amlog import AmLogParser, parse_am_log
from collectors.hadoop.collect import sniff
from collectors.hadoop.common import Context, run_lines
from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.jhist import parse_jhist
from collectors.hadoop.tasklog import ReduceLogParser, parse_map_log, parse_reduce_log
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
    both = {"JobStart", "JobEnd", "Mapper", "Reducer", "ReducerStart", "ReducerEnd", "MapStart"}
    jhist = [e for e in parse_jhist(str(sample("jhist"))) if e["type"] in both]
    am = [e for e in am if e["type"] in both]  # JobInput, ReduceSlowstart, SchedulerStats: the AM log's own
    counters = {"submit_ts", "input_bytes", "input_records", "output_bytes", "output_records", "materialized_bytes"}
    counters |= {"shuffle_bytes", "input_groups", "shuffled_maps", "failed_shuffles"}  # the job history's own

    def comparable(events: list[dict]) -> list[dict]:
        return sorted(
            ({k: v for k, v in strip(e).items() if k not in counters} for e in events),
            key=lambda e: (e["ts"], e["type"], e.get("attempt_id", "")),
        )

    assert comparable(am) == comparable(jhist)
    assert Counter(e["type"] for e in am)["Mapper"] == 5


def test_am_log_input_slowstart_and_container_requests() -> None:
    """What the AM log alone says: the job's input and splits, the reduce slowstart point, and the allocator's
    counts of reducers waiting for containers against those assigned (logged whenever they change)."""
    events, ctx = _am(sample("am_syslog").read_text().splitlines())
    assert ctx.stats.dead == 0
    (job_input,) = [e for e in events if e["type"] == "JobInput"]
    assert (job_input["job_id"], job_input["input_bytes"], job_input["splits"]) == (JOB, 402653184, 3)
    (slowstart,) = [e for e in events if e["type"] == "ReduceSlowstart"]
    assert slowstart["job_id"] == JOB
    assert slowstart["ts"] == datetime(2023, 11, 14, 22, 15, 12, 410000, tzinfo=ZoneInfo("UTC")).timestamp()
    stats = [e for e in events if e["type"] == "SchedulerStats"]
    assert stats and all(e["job_id"] == JOB and e["phase"] in ("before", "after") for e in stats)
    first = stats[0]
    assert (first["pending_reds"], first["scheduled_maps"], first["assigned_reds"], first["completed_maps"]) == (
        1,
        3,
        0,
        0,
    )
    starts = [e for e in events if e["type"] == "MapStart"]
    assert len(starts) == 5 and all(e["container_id"].startswith("container_1700000000000_0007_") for e in starts)


def test_speculative_attempt_is_marked() -> None:
    events, _ = _am(sample("am_syslog").read_text().splitlines())
    spec = [e for e in events if e.get("speculative")]
    assert [(e["type"], e["attempt_id"]) for e in spec] == [
        ("MapStart", f"{ATT}_m_000002_1"),
        ("Mapper", f"{ATT}_m_000002_1"),
    ]


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
    start, *events = events
    assert start["type"] == "FetchStart" and start["host"] == ""  # not known yet when it starts
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
    assert events[0]["type"] == "FetchStart" and events[0]["host"] == "node02.hcep.local"
    pull = events[1]
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


def test_fetch_start_timeout_retry_and_shuffle_done() -> None:
    """A fetch is visible from its start (FetchStart); Hadoop's read timeout shows as 'Failed to shuffle output'
    with the exception on continuation lines (FetchFailed), the retry as a new fetch; the final merge ends the
    shuffle with the partition's bytes (ShuffleDone)."""
    m1 = f"{ATT}_m_000001_0"
    lines = [
        _line(
            "14,660",
            "EventFetcher for fetching Map Completion Events",
            "EventFetcher",
            f"{ATT}_r_000002_0 Thread started: EventFetcher for fetching Map Completion Events",
        ),
        _line("14,700", "fetcher#1", "ShuffleSchedulerImpl", "Assigning node02.hcep.local:13562 with 1 to fetcher#1"),
        _line(
            "14,705",
            "fetcher#1",
            "Fetcher",
            f"fetcher#1 about to shuffle output of map {m1} decomp: 96 len: 100 to MEMORY",
        ),
        f"2023-11-14 22:18:14,706 WARN [fetcher#1] {R}Fetcher: Failed to shuffle output of {m1} from "
        "node02.hcep.local:13562",
        "java.net.SocketTimeoutException: Read timed out",
        "\tat java.net.SocketInputStream.socketRead0(Native Method)",
        "2023-11-14 22:18:14,710 INFO [fetcher#1] "
        + R
        + "ShuffleSchedulerImpl: node02.hcep.local:13562 freed by fetcher#1 in 180010ms",
        "2023-11-14 22:18:20,700 INFO [fetcher#3] "
        + R
        + "ShuffleSchedulerImpl: Assigning node02.hcep.local:13562 with 1 to fetcher#3",
        "2023-11-14 22:18:20,705 INFO [fetcher#3] "
        + R
        + f"Fetcher: fetcher#3 about to shuffle output of map {m1} decomp: 96 len: 100 to MEMORY",
        "2023-11-14 22:18:20,905 INFO [fetcher#3] " + R + f"InMemoryMapOutput: Read 96 bytes from map-output for {m1}",
        "2023-11-14 22:18:20,906 INFO [fetcher#3] "
        + R
        + "ShuffleSchedulerImpl: node02.hcep.local:13562 freed by fetcher#3 in 206ms",
        "2023-11-14 22:18:21,000 INFO [main] "
        + R
        + "MergeManagerImpl: finalMerge called with 1 in-memory map-outputs and 0 on-disk map-outputs",
    ]
    events, ctx = _reduce(lines)
    assert ctx.stats.dead == 0 and ctx.stats.continuation == 2
    assert [e["type"] for e in events] == [
        "FetchStart",
        "FetchFailed",
        "FetchStart",
        "DataPull",
        "DataIO",
        "ShuffleDone",
    ]
    start, failed, retry, pull, _io, done = events
    reducer = "task_1700000000000_0007_r_000002"
    assert (start["task_id"], start["map_task"], start["map_attempt"], start["host"], start["bytes"]) == (
        reducer,
        "task_1700000000000_0007_m_000001",
        m1,
        "node02.hcep.local",
        100,
    )
    assert start["ts"] == datetime(2023, 11, 14, 22, 15, 14, 705000, tzinfo=ZoneInfo("UTC")).timestamp()
    assert (failed["task_id"], failed["map_attempt"], failed["host"], failed["failures"]) == (
        reducer,
        m1,
        "node02.hcep.local",
        1,
    )
    assert failed["waited"] == 180.001 and failed["job_id"] == JOB
    assert retry["ts"] < pull["ts"] and pull["period"] == 0.2
    assert (done["task_id"], done["attempt_id"], done["bytes"], done["maps"], done["failures"]) == (
        reducer,
        f"{ATT}_r_000002_0",
        100,
        1,
        1,
    )


def test_connect_failure_is_a_failed_fetch() -> None:
    lines = [
        _line(
            "14,660",
            "EventFetcher for fetching Map Completion Events",
            "EventFetcher",
            f"{ATT}_r_000000_0 Thread started: EventFetcher for fetching Map Completion Events",
        ),
        f"2023-11-14 22:15:44,700 WARN [fetcher#4] {R}Fetcher: Failed to connect to node05.hcep.local:13562 "
        "with 3 map outputs",
        "java.net.ConnectException: Connection refused",
    ]
    events, ctx = _reduce(lines)
    assert ctx.stats.dead == 0
    assert [(e["type"], e["host"], e["outputs"], e["job_id"]) for e in events] == [
        ("FetchFailed", "node05.hcep.local", 3, JOB)
    ]


def test_map_log_split_known_at_start(tmp_path) -> None:
    """A map task's syslog says its input split when it starts; the attempt is named only at its end, so the split
    is tied to the attempt by the container directory the log lives in."""
    container = "container_1700000000000_0007_01_000004"
    path = tmp_path / "application_1700000000000_0007" / container / "syslog"
    path.parent.mkdir(parents=True)
    main = "INFO [main] org.apache.hadoop.mapred."
    path.write_text(
        "\n".join(
            [
                f"2023-11-14 22:15:05,001 {main}YarnChild: Kind: mapreduce.job, Service: {JOB}, Ident: (x@1)",
                f"2023-11-14 22:15:05,412 {main}MapTask: Processing split: "
                "hdfs://nn01.hcep.local:8020/user/alice/in/part-00001:134217728+134217728",
                f"2023-11-14 22:15:05,420 {main}MapTask: (EQUATOR) 0 kvi 26214396(104857584)",
                f"2023-11-14 22:15:39,100 {main}Task: Task:{ATT}_m_000001_0 is done. "
                "And is in the process of committing",
            ]
        )
        + "\n"
    )
    assert sniff(str(path)) == "map"
    ctx = Context(source=str(path), deadletter=DeadLetterSink.memory())
    events = list(parse_map_log(str(path), ctx))
    assert ctx.stats.dead == 0
    assert [strip(e) for e in events] == [
        {
            "type": "MapSplit",
            "ts": datetime(2023, 11, 14, 22, 15, 5, 412000, tzinfo=ZoneInfo("UTC")).timestamp(),
            "job_id": JOB,
            "split_bytes": 134217728,
            "split_start": 134217728,
            "path": "hdfs://nn01.hcep.local:8020/user/alice/in/part-00001",
            "container_id": container,
        }
    ]


def test_a_reduce_log_that_names_the_mrappmaster_is_still_a_reduce_log(tmp_path) -> None:
    """Hadoop 2.7+ reducers log 'Reporting fetch failure for M to MRAppMaster.': the AM is told by its loggers."""
    path = tmp_path / "syslog"
    path.write_text(
        sample("reduce_syslog").read_text()
        + f"2023-11-14 22:18:14,710 INFO [fetcher#1] {R}ShuffleSchedulerImpl: Reporting fetch failure for "
        f"{ATT}_m_000001_0 to MRAppMaster.\n"
    )
    assert sniff(str(path)) == "reduce"
    assert sniff(str(sample("am_syslog"))) == "am"
