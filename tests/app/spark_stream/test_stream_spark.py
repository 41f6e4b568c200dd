"""``hcep stream`` on the test run's Spark session (local[2]): ``--available-now`` over a directory gives the
records of ``hcep match``; late events are dead-lettered and counted; Kafka through the real broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.spark.helpers import assert_same_records, run_cli
from tests.app.spark_stream.conftest import PACK, match, write_events

pytestmark = pytest.mark.spark


def _stream(capsys: pytest.CaptureFixture[str], tmp_path: Path, *source: str, extra: tuple[str, ...] = ()) -> Path:
    out = tmp_path / "out"
    argv = ["stream", "--pack", str(PACK), *source, "--output", str(out), "--checkpoint", str(tmp_path / "ck")]
    code, _, err = run_cli([*argv, "--available-now", "--master", "local[2]", "--no-progress", *extra], capsys)
    assert code == 0, err
    return out


def _split(events: list[dict], parts: int) -> list[list[dict]]:
    """Consecutive pieces cut only between different ticks: events of one tick stay in one file, in input order
    (across files, ties are broken by the file name's hash, not by the order of the files: README)."""
    from engine.events import decoder_for

    decode = decoder_for(0.1).event
    mid2 = [(ev.tlo + ev.thi) for ev in (decode(e) for e in events)]
    size = max(len(events) // parts, 1)
    out, cur = [], []
    for i, e in enumerate(events):
        if len(cur) >= size and mid2[i] != mid2[i - 1]:
            out.append(cur)
            cur = []
        cur.append(e)
    return [*out, cur]


@pytest.mark.parametrize("name", ["sample", "cluster"])
def test_available_now_equals_match(spark, request, tmp_path: Path, capsys, name: str) -> None:
    from app.spark.stream.sink import read_alerts, read_dead, read_records, totals

    events = request.getfixturevalue(f"{name}_events")
    want = match(write_events(events, tmp_path / "all.jsonl"))
    for i, part in enumerate(_split(events, 3)):
        write_events(part, tmp_path / "in" / f"part-{i}.jsonl")
    out = _stream(capsys, tmp_path, "--input", str(tmp_path / "in"))
    got = read_records(str(out))
    assert want and not read_dead(str(out))
    assert_same_records(got, want)
    assert totals(str(out))["records"] == len(want)
    if name == "cluster":
        alerts = read_alerts(str(out))
        assert alerts and all(a["labels"]["alertname"] for a in alerts)


def test_a_batch_replayed_after_the_sink_committed_it(spark, cluster_events, tmp_path: Path, capsys) -> None:
    """A stop or crash after the sink's commit of a batch and before Spark's: Spark runs that batch again at the
    next start.  The sink writes nothing twice, and the batch still runs, so that its state is committed (Spark 4
    fails the query otherwise: STATE_STORE_COMMIT_VALIDATION_FAILED; CI lost test_crash to it)."""
    from app.spark.stream.sink import read_alerts, read_records

    want = match(write_events(cluster_events, tmp_path / "all.jsonl"))
    for i, part in enumerate(_split(cluster_events, 3)):
        write_events(part, tmp_path / "in" / f"part-{i}.jsonl")
    out = _stream(capsys, tmp_path, "--input", str(tmp_path / "in"), extra=("--max-files-per-trigger", "1"))
    alerts = read_alerts(str(out))
    commits = tmp_path / "ck" / "spark" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    for name in (str(last), f".{last}.crc"):  # Spark's commit of the last batch never happened
        (commits / name).unlink(missing_ok=True)
    _stream(capsys, tmp_path, "--input", str(tmp_path / "in"))
    assert (commits / str(last)).exists()  # the batch ran again
    assert_same_records(read_records(str(out)), want)  # nothing lost, nothing twice
    assert read_alerts(str(out)) == alerts


def test_late_events_are_dead_lettered_and_counted(spark, sample_events, tmp_path: Path, capsys) -> None:
    """One file per micro-batch: the second file's events lie a day behind the first's watermark."""
    import os

    first = write_events(sample_events, tmp_path / "in" / "a.jsonl")
    old = [dict(e, id=f"old-{e['id']}", ts=e["ts"] - 86_400) for e in sample_events[:30]]
    second = write_events(old, tmp_path / "in" / "b.jsonl")
    stat = first.stat()
    os.utime(second, (stat.st_atime + 5, stat.st_mtime + 5))
    out = _stream(capsys, tmp_path, "--input", str(tmp_path / "in"), extra=("--max-files-per-trigger", "1"))
    from app.spark.stream.sink import read_dead, read_records, totals

    dead = read_dead(str(out))
    assert sorted(json.loads(d["text"])["id"] for d in dead) == sorted(e["id"] for e in old)
    assert {d["reason"] for d in dead} == {"late"}
    assert totals(str(out))["late"] == len(old)
    assert_same_records(read_records(str(out)), match(first))


def test_kafka_source(spark, kafka_broker, sample_events, tmp_path: Path, capsys) -> None:
    """The Hadoop events keyed by job on a topic of 2 partitions, the Ganglia events on another: the records of
    hcep match over the same events."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    hadoop, ganglia = "stream-test.hadoop", "stream-test.ganglia"
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    admin.create_topics([NewTopic(hadoop, 2, 1), NewTopic(ganglia, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    for e in sample_events:
        cluster = "job_id" not in e
        key = (e.get("job_id") or e.get("cluster") or "").encode()
        producer.send(ganglia if cluster else hadoop, value=json.dumps(e).encode(), key=key)
    producer.flush()
    producer.close()
    source = ("--bootstrap", kafka_broker.bootstrap, "--topics", f"{hadoop},{ganglia}")
    out = _stream(capsys, tmp_path, *source, extra=("--matches-topic", "stream-test.matches"))
    from app.spark.stream.sink import read_records

    want = match(write_events(sample_events, tmp_path / "all.jsonl"))
    assert_same_records(read_records(str(out)), want)
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        "stream-test.matches",
        bootstrap_servers=kafka_broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    published = [json.loads(m.value) for m in consumer]
    consumer.close()
    assert_same_records(published, want)


def test_alerts_reach_a_real_alertmanager(spark, cluster_events, alertmanager, tmp_path: Path, capsys) -> None:
    """``--alertmanager``: the transitions of the last micro-batch too are delivered before the command ends (it
    drains the sender), so Alertmanager shows exactly the alerts whose latest transition is firing."""
    from app.alerts.alertmanager import Alertmanager
    from app.spark.stream.sink import read_alerts
    from contracts.alerts import Alert

    write_events(cluster_events, tmp_path / "in" / "part-0.jsonl")
    out = _stream(capsys, tmp_path, "--input", str(tmp_path / "in"), extra=("--alertmanager", alertmanager.url))
    latest: dict[str, Alert] = {}
    for obj in read_alerts(str(out)):
        alert = Alert.from_json(obj)
        seen = latest.get(alert.fingerprint)
        if seen is None or float(obj.get("at", 0.0)) >= seen.at:
            latest[alert.fingerprint] = Alert(
                alert.labels, alert.annotations, alert.starts_at, alert.ends_at, at=float(obj.get("at", 0.0))
            )
    firing = {fp for fp, a in latest.items() if a.ends_at is None}
    assert firing, "the simulated cluster should leave alerts firing at the end of its input"
    client = Alertmanager(alertmanager.url, timeout=5.0)
    try:
        shown = {
            Alert.from_json(a).fingerprint
            for a in client.alerts()
            if a["labels"].get("pack") == "hadoop" and a["labels"].get("alertname")
        }
    finally:
        client.close()
    assert firing <= shown


def test_an_unreachable_alertmanager_is_reported_not_fatal(spark, cluster_events, tmp_path: Path, capsys) -> None:
    """The records and the alert files are the run's output; an Alertmanager that does not answer costs the final
    drain's wait and a line saying how many transitions it did not take, never the run."""
    from app.spark.stream.sink import read_alerts
    from tests.conftest import free_port

    write_events(cluster_events, tmp_path / "in" / "part-0.jsonl")
    argv = ["stream", "--pack", str(PACK), "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")]
    argv += ["--checkpoint", str(tmp_path / "ck"), "--available-now", "--master", "local[2]", "--no-progress"]
    code, _, err = run_cli([*argv, "--alertmanager", f"http://127.0.0.1:{free_port()}"], capsys)
    assert code == 0, err
    assert read_alerts(str(tmp_path / "out"))
    assert "alert transition(s) not delivered to Alertmanager in 10 s" in err and "connection refused" in err
