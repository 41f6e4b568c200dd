"""The collectors publish to a real Kafka broker (``--kafka``): Hadoop batch and ``--follow``, Ganglia ``--rrd`` and
``--gmond``; the events read back from the topic are exactly what the collector writes as JSON lines, keyed by job or
host, packed several to a message.  An unreachable broker is a one-line error, exit 1."""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.commands import collect_ganglia, collect_hadoop
from tests.collectors.hadoop_testkit import sample
from tests.pipeline.conftest import ROOT, Broker, free_port, wait_until

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    return f"c{os.getpid()}-{request.node.name[:30].replace('_', '-')}-{random.randrange(10**6)}"


def _run(module: object, argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    module.configure(parser)  # type: ignore[attr-defined]
    return module.run(parser.parse_args(argv))  # type: ignore[attr-defined]


def _consume(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, list[dict]]]:
    """``(partition, key, events)`` per message, in each partition's order."""
    from app.kafka_io import read_all

    return [
        (r.partition, r.key, [json.loads(line) for line in r.value.split(b"\n")]) for r in read_all(bootstrap, topic)
    ]


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _canon(events: list[dict]) -> list[str]:
    return sorted(json.dumps(e, sort_keys=True) for e in events)


def _by_partition(messages: list[tuple[int, bytes | None, list[dict]]]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = collections.defaultdict(list)
    for part, _key, events in messages:
        out[part].extend(events)
    return out


# ------------------------------------------------------------------------------------------------------ hadoop
def test_collect_hadoop_batch_publishes_packed_keyed_by_job(kafka_broker: Broker, prefix: str, tmp_path: Path) -> None:
    copy = tmp_path / "events.jsonl"
    topic = f"{prefix}.hadoop"
    argv = [
        str(sample("jhist").parent),
        "--kafka",
        kafka_broker.bootstrap,
        "--topic",
        topic,
        "--pack",
        "4",
        "--out",
        str(copy),
    ]
    assert _run(collect_hadoop, argv) == 0
    written = _events(copy)
    messages = _consume(kafka_broker.bootstrap, topic)
    got = [e for _p, _k, events in messages for e in events]
    assert len(written) > 10 and _canon(got) == _canon(written)
    assert max(len(events) for _p, _k, events in messages) == 4 < len(written)  # packed
    jobs: dict[str, set[int]] = collections.defaultdict(set)
    for part, _key, events in messages:
        for e in events:
            jobs[e["job_id"]].add(part)
    assert all(len(parts) == 1 for parts in jobs.values())  # a job's events share a partition
    for events in _by_partition(messages).values():  # each partition in the collector's (time) order
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_collect_hadoop_follow_publishes_each_batch_and_resumes(
    kafka_broker: Broker, prefix: str, tmp_path: Path
) -> None:
    """The demo's command line: ``hcep collect hadoop DIR --follow --kafka HOST:PORT --state FILE``, as a process."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(sample("am_syslog"), logs / "am_syslog")
    state = tmp_path / "tail.json"
    topic = f"{prefix}.hadoop"
    cmd = [
        sys.executable,
        "-m",
        "app.cli",
        "collect",
        "hadoop",
        str(logs),
        "--follow",
        "--kafka",
        kafka_broker.bootstrap,
        "--state",
        str(state),
        "--topic",
        topic,
        "--poll",
        "0.2",
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def published() -> list[dict]:
        try:
            return [e for _p, _k, events in _consume(kafka_broker.bootstrap, topic) for e in events]
        except Exception:  # noqa: BLE001 - the topic may not exist yet
            return []

    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(published()) > 0, 60, "the AM log's events in Kafka")
        first = published()
        # A file appearing later is picked up and published incrementally.
        shutil.copy(sample("reduce_syslog"), logs / "reduce_syslog")
        wait_until(lambda: len(published()) > len(first), 60, "the reduce log's events in Kafka")
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == ""  # with --kafka and no --out nothing goes to stdout
    assert state.exists() and "collect hadoop: 2 files" in err
    both = published()
    assert {e["type"] for e in both} >= {"JobStart", "Mapper", "DataPull", "ReducerStart"}
    assert len(_canon(both)) == len(set(_canon(both)))  # no event twice

    # Restarted on the committed state: nothing new, nothing re-published.
    argv = [
        str(logs),
        "--follow",
        "--kafka",
        kafka_broker.bootstrap,
        "--state",
        str(state),
        "--topic",
        topic,
        "--poll",
        "0",
        "--max-polls",
        "2",
    ]
    assert _run(collect_hadoop, argv) == 0
    assert _canon(published()) == _canon(both)


def test_unreachable_broker_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"127.0.0.1:{free_port()}"
    state = tmp_path / "tail.json"
    started = time.monotonic()
    argv = [str(sample("am_syslog")), "--follow", "--kafka", dead, "--kafka-timeout", "1", "--state", str(state)]
    assert _run(collect_hadoop, argv) == 1
    assert _run(collect_ganglia, ["--gmond", "127.0.0.1:1", "--once", "--kafka", dead, "--kafka-timeout", "1"]) == 1
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    assert f"hcep collect hadoop: cannot publish to Kafka at {dead}" in err
    assert f"hcep collect ganglia: cannot publish to Kafka at {dead}" in err
    assert not state.exists()


# ------------------------------------------------------------------------------------------------------ ganglia
def test_collect_ganglia_rrd_publishes_keyed_by_host(kafka_broker: Broker, prefix: str, tmp_path: Path) -> None:
    pytest.importorskip("rrdtool")
    from simulator.ganglia_out import STEP, write_rrd

    start = math.floor(time.time() / STEP) * STEP - 20 * STEP
    samples = [(float(start + i * STEP), h, "load_one", v + i) for i in range(20) for h, v in (("a", 0.0), ("b", 4.0))]
    write_rrd(str(tmp_path / "rrds"), "hc", samples)
    copy = tmp_path / "events.jsonl"
    topic = f"{prefix}.ganglia"
    argv = [
        "--rrd",
        str(tmp_path / "rrds"),
        "--since",
        "1h",
        "--kafka",
        kafka_broker.bootstrap,
        "--topic",
        topic,
        "--out",
        str(copy),
        "--threshold",
        "1.5",
    ]
    assert _run(collect_ganglia, argv) == 0
    written = _events(copy)
    assert collections.Counter(e["type"] for e in written) == {"Metric": 40, "LoadStd": 20, "Imbalance": 20}
    messages = _consume(kafka_broker.bootstrap, topic)
    got = [e for _p, _k, events in messages for e in events]
    assert _canon(got) == _canon(written)
    hosts: dict[str, set[int]] = collections.defaultdict(set)
    for part, _key, events in messages:
        for e in events:
            if "host" in e:
                hosts[e["host"]].add(part)
    assert set(hosts) == {"a", "b"} and all(len(p) == 1 for p in hosts.values())
    for events in _by_partition(messages).values():
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_collect_ganglia_gmond_poll_publishes(kafka_broker: Broker, prefix: str, tmp_path: Path) -> None:
    """The demo's command line: ``hcep collect ganglia --gmond HOST:PORT --interval S --kafka HOST:PORT``."""
    doc = (ROOT / "tests" / "collectors" / "ganglia" / "data" / "gmond_cluster.xml").read_bytes()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(doc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    topic = f"{prefix}.ganglia"
    copy = tmp_path / "events.jsonl"
    try:
        gmond = "{}:{}".format(*listener.getsockname())
        argv = [
            "--gmond",
            gmond,
            "--interval",
            "0.1",
            "--rounds",
            "2",
            "--kafka",
            kafka_broker.bootstrap,
            "--topic",
            topic,
            "--out",
            str(copy),
        ]
        assert _run(collect_ganglia, argv) == 0
    finally:
        stop.set()
        thread.join(5)
        listener.close()
    written = _events(copy)
    assert written and {"Metric", "LoadStd"} <= {e["type"] for e in written}
    got = [e for _p, _k, events in _consume(kafka_broker.bootstrap, topic) for e in events]
    assert _canon(got) == _canon(written)
