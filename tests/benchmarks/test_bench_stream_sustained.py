"""The sustained-rate benchmark's parts without Spark: the trace (K copies of the jobs at the asked rate, ids and
keys distinct, event time one second per file), the file -> batch map read from Spark's file source log, and the
CPU of a process tree (a child that burns CPU is counted)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.bench_stream_sustained import Trace, TreeCPU, _file_batches


def test_trace_lands_the_rate_in_distinct_copies() -> None:
    trace = Trace(rate=400, seconds=30)
    assert trace.copies >= 10
    seconds = [[json.loads(x) for x in trace.second(s)] for s in range(30)]
    events = [e for sec in seconds for e in sec]
    assert 0.7 * 400 * 30 <= len(events) <= 1.3 * 400 * 30
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids))
    jobs = {e["job_id"] for e in events if "job_id" in e}
    assert len({j.rsplit("-", 1)[1] for j in jobs}) == trace.copies
    for s, sec in enumerate(seconds):  # each file holds its own second of event time
        assert all(s - 1 <= e["ts"] - trace.base < s + 1 for e in sec)


def test_file_batches_from_the_source_log(tmp_path: Path) -> None:
    base = tmp_path / "spark" / "sources" / "0"
    base.mkdir(parents=True)
    (base / "0").write_text('v1\n{"path":"file:///in/s-000000.jsonl","timestamp":1,"batchId":0}\n')
    (base / "9.compact").write_text(
        'v1\n{"path":"file:///in/s-000000.jsonl","timestamp":1,"batchId":0}\n'
        '{"path":"file:///in/s-000001.jsonl","timestamp":2,"batchId":3}\n'
    )
    assert _file_batches(tmp_path) == {"s-000000.jsonl": 0, "s-000001.jsonl": 3}


def test_tree_cpu_counts_a_child() -> None:
    """The grandchild is reaped by its parent, which lives on: its CPU shows in the parent's children times."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {burn!r}]); time.sleep(2)",
        ]
    )
    cpu = TreeCPU([parent.pid]).start()
    parent.wait(60)
    assert cpu.stop() >= 0.4


def test_the_operator_benchmark_prints_its_minutes(capsys: pytest.CaptureFixture[str]) -> None:
    """``bench_stream_operator`` (the operator without Spark, minute by minute): two minutes of a small trace, a row
    per minute, every event routed and fed (figures are never asserted)."""
    from benchmarks.bench_stream_operator import main

    assert main(["--rate", "60", "--seconds", "120", "--trigger", "10", "--buckets", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip().replace(",", "") for c in row.strip("|").split("|")]
        assert int(cells[1]) > 0 and int(cells[2]) >= int(cells[1]) // 2 and int(cells[6]) > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_the_operator_benchmark_as_several_workers(capsys: pytest.CaptureFixture[str], workers: int) -> None:
    """``--workers 2``: each call on one of two simulated Python workers, each with its own caches (groups restored
    from the store when the other wrote them): the same events fed and the same groups held as one worker."""
    from benchmarks.bench_stream_operator import main

    assert main(["--rate", "60", "--seconds", "60", "--buckets", "2", "--workers", str(workers)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 "))
    cells = [c.strip().replace(",", "") for c in row.strip("|").split("|")]
    assert [int(cells[i]) for i in (1, 2, 6)] == _ONE_WORKER.setdefault("row", [int(cells[i]) for i in (1, 2, 6)])


_ONE_WORKER: dict[str, list[int]] = {}


def test_reference_events_are_decoded_as_they_are_sent() -> None:
    """``hcep run``'s reference events are decoded one at a time as they are published (all of them at once did not
    fit in memory for 10 minutes at 20,000 events/s)."""
    from benchmarks.bench_stream_sustained import _Decoded

    events = _Decoded(['{"type": "A", "job_id": "j"}', '{"type": "B"}'])
    assert len(events) == 2 and list(events) == [{"type": "A", "job_id": "j"}, {"type": "B"}]


def test_the_floor_operator_reads_its_rows_and_keeps_nothing() -> None:
    """``--operators floor``'s operator: one clock row a call counting the rows it read, no state, no timer; its
    launcher puts it in ``hcep stream``'s query (by an importable name: the workers import it)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyspark")
    from app.spark.stream import job
    from app.spark.stream.state import OUT_COLUMNS, pack_rows
    from benchmarks import stream_floor

    class Timers:
        def getCurrentWatermarkInMs(self) -> int:  # noqa: N802 - Spark's name
            return 1234

    frame = pd.DataFrame({"rows": [pack_rows([(1,) * 12] * 2), pack_rows([(1,) * 12])]})
    proc = stream_floor.FloorProcessor(plan=None)
    (out,) = list(proc.handleInputRows((0,), iter([frame, frame]), Timers()))
    row = dict(zip(OUT_COLUMNS, out.iloc[0], strict=True))
    assert (row["kind"], row["wm"], row["fed"]) == ("clock", 1234, 6)
    assert list(proc.handleExpiredTimer((0,), Timers(), None)) == []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(job, "BucketProcessor", job.BucketProcessor)
        mp.setattr("app.cli.main", lambda argv: 0)
        assert stream_floor.main(["stream"]) == 0
        assert job.BucketProcessor.__module__ == "benchmarks.stream_floor"


def test_the_first_batch_is_timed_from_the_session_and_on_its_own(tmp_path: Path) -> None:
    """A first trigger that found no file yet is not the first batch: that is the first one with input rows, its end
    counted from the session's start, and its own duration beside (the wait for the trigger is not its cost)."""
    import math

    from benchmarks.bench_stream_sustained import Run, summarize

    progress = tmp_path / "out" / "_stream" / "progress.jsonl"
    progress.parent.mkdir(parents=True)
    rows = [
        {"timestamp": "2026-12-06T10:00:00.000Z", "numInputRows": 0, "durationMs": {"triggerExecution": 400}},
        {"timestamp": "2026-12-06T10:00:10.000Z", "numInputRows": 5, "durationMs": {"triggerExecution": 6500}},
        {"timestamp": "2026-12-06T10:00:20.000Z", "numInputRows": 5, "durationMs": {"triggerExecution": 3000}},
    ]
    progress.write_text("".join(json.dumps(r) + "\n" for r in rows))
    up = datetime(2026, 12, 6, 10, 0, 0, tzinfo=UTC).timestamp() - 1.5
    run = Run("local[2]", 1.0, tmp_path, session_up=up, started=up - 10, stopped_landing=up + 30, cpu_s=1.0)
    row = summarize(run, Trace(20, 3), up + 40, 60.0)
    assert math.isclose(row["first batch s"], 1.5 + 10 + 6.5)
    assert math.isclose(row["first batch own s"], 6.5)
    assert row["batches"] == 2


# ------------------------------------------------------------------------------------------------ --source kafka

_OFFSETS = (
    'v1\n{"batchWatermarkMs":1,"batchTimestampMs":2,"conf":{"spark.sql.shuffle.partitions":"4"}}\n'
    '{"p.ganglia": {"0": 1}, "p.hadoop": {"0": 867, "1": 912}}\n'
    '{"logOffset":3}\n'
)


def test_kafka_offsets_from_the_offset_log(tmp_path: Path) -> None:
    """A batch's end offsets as Spark's offset log holds them (the version, the batch's metadata, then one line a
    source: the ``hcep-kafka`` source's and the control directory's file source); a file not whole yet, or of other
    topics, gives none."""
    from benchmarks.bench_stream_sustained import _kafka_offsets

    (tmp_path / "4").write_text(_OFFSETS)
    assert _kafka_offsets(tmp_path / "4", {"p.hadoop", "p.ganglia"}) == {
        "p.ganglia": {"0": 1},
        "p.hadoop": {"0": 867, "1": 912},
    }
    assert _kafka_offsets(tmp_path / "4", {"q.hadoop"}) is None
    (tmp_path / "5").write_text(_OFFSETS.split("\n", 2)[0] + "\n")
    assert _kafka_offsets(tmp_path / "5", {"p.hadoop"}) is None
    assert _kafka_offsets(tmp_path / "6", {"p.hadoop"}) is None


def test_a_landing_is_read_by_the_first_batch_that_reaches_all_its_partitions() -> None:
    from benchmarks.bench_stream_sustained import kafka_batches

    ends = {
        "s-0": {"t": {"0": 2, "1": 1}},
        "s-1": {"t": {"0": 4, "1": 3}},
        "s-2": {"t": {"0": 5, "1": 5}},
    }
    read = {0: {"t": {"0": 2, "1": 0}}, 1: {"t": {"0": 4, "1": 3}}, 2: {"t": {"0": 4, "1": 4}}}
    assert kafka_batches(read, ends) == {"s-0": 1, "s-1": 1}
    read[3] = {"t": {"0": 9, "1": 9}}
    assert kafka_batches(read, ends) == {"s-0": 1, "s-1": 1, "s-2": 3}
    assert kafka_batches({}, ends) == {}


def test_the_kafka_lander_publishes_as_the_collectors(kafka_broker, tmp_path: Path) -> None:
    """On a real broker: every event of a second lands (50 a message, a job's events in one partition, in order), and
    the offsets counted are the broker's own end offsets, so the batch that read a second is found."""
    from app import kafka_io
    from benchmarks.bench_stream_sustained import KafkaLander

    trace = Trace(rate=400, seconds=3)
    lander = KafkaLander(tmp_path / "w", kafka_broker.bootstrap)
    try:
        total = 0
        for s in range(3):
            name, ready, n = lander.prepare(trace, s)
            lander.land(name, ready)
            total += n
    finally:
        lander.close()
    assert lander.argv()[:2] == ["--bootstrap", kafka_broker.bootstrap]
    last = lander.ends["s-000002"]
    order = {x: i for i, x in enumerate(x for s in range(3) for x in trace.second(s))}
    lines: list[str] = []
    for topic in lander.topics.values():
        assert {str(p): o for p, o in kafka_io.end_offsets(kafka_broker.bootstrap, topic).items()} == last[topic]
        parts: dict[str, set[int]] = {}
        at: dict[int, list[int]] = {}  # partition -> the trace positions of its lines, as read
        for r in kafka_io.read_all(kafka_broker.bootstrap, topic):
            value = (r.value or b"").decode().split("\n")
            assert len(value) <= 50
            for line in value:
                lines.append(line)
                at.setdefault(r.partition, []).append(order[line])
                job = json.loads(line).get("job_id")
                if job is not None:
                    parts.setdefault(job, set()).add(r.partition)
        assert all(len(p) == 1 for p in parts.values())
        assert all(pos == sorted(pos) for pos in at.values())
    assert len(lines) == total == len(order)
    assert sorted(lines) == sorted(order)
