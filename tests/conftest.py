"""Fixtures shared across test packages: a real Kafka broker, started once per test session by deploy/kafka/start.sh
on free loopback ports in a temporary run dir and stopped at the end (the pipeline and Spark tests use it).  Never
mocked.  Under CI=true a broker that cannot start fails the tests (it must not turn into a skip).

And the test run's ONE SparkSession (``spark``; a JVM start costs about 12 s here), shared by ``tests/app/spark`` and
the Spark collector's live tests: it writes its event log (Spark's default zstd, as one growing ``.inprogress`` file) to
``spark_event_dir``, so those tests can read what Spark logged about their jobs.  And the one ``local-cluster``
application that loses an executor (``lost_executor_run``), shared by the collector's and the Spark pack's tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "kafka"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Broker:
    bootstrap: str
    port: int
    zk_port: int
    run_dir: Path

    def _args(self) -> list[str]:
        return ["--run-dir", str(self.run_dir), "--port", str(self.port), "--zk-port", str(self.zk_port)]

    def start(self) -> None:
        subprocess.run(
            ["bash", str(DEPLOY / "start.sh"), *self._args()], check=True, capture_output=True, text=True, timeout=180
        )

    def stop(self, force: bool = False) -> None:
        subprocess.run(
            ["bash", str(DEPLOY / "stop.sh"), *self._args(), *(["--force"] if force else [])],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def status(self) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(DEPLOY / "status.sh"), *self._args()], capture_output=True, text=True, timeout=30
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: uses the shared SparkSession (one JVM for the whole test run)")


@pytest.fixture(scope="session")
def spark_event_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared SparkSession writes its event log (``spark.eventLog.dir``)."""
    return tmp_path_factory.mktemp("spark-events")


@pytest.fixture(scope="session")
def spark(spark_event_dir: Path):
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from app.spark.session import build_session

    # Event logging costs a few KB per task; single-file so the live log is one .inprogress file to follow.
    event_log = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(spark_event_dir),
        "spark.eventLog.rolling.enabled": "false",
    }
    session = build_session("local[2]", app_name="hcep-tests", shuffle_partitions=2, ui=False, conf=event_log)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def lost_executor_run(tmp_path_factory: pytest.TempPathFactory):
    """ONE ``local-cluster[2,1,1024]`` application per test run that loses an executor during a stage, its log
    followed by ``hcep collect spark --follow`` (executor JVMs cost a minute here): the collector's live test checks
    what was read, the Spark pack's live test what the pack makes of it."""
    pytest.importorskip("pyspark")
    from tests.collectors.spark.followers import run_lost_executor

    return run_lost_executor(tmp_path_factory.mktemp("lost-executor"))


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    if os.environ.get("CI") != "true":
        pytest.importorskip("kafka")
    have_java = shutil.which("java") is not None
    run_dir = tmp_path_factory.mktemp("kafka")
    broker = Broker("", free_port(), free_port(), run_dir)
    broker.bootstrap = f"127.0.0.1:{broker.port}"
    try:
        broker.start()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        out = getattr(err, "stderr", "") or ""
        message = f"the Kafka broker did not start (java {'found' if have_java else 'missing'}): {out[-2000:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        from app.kafka_io import wait_for_broker

        wait_for_broker(broker.bootstrap, timeout=60)
        yield broker
    finally:
        broker.stop(force=False)
