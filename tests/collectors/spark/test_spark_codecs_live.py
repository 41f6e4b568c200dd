"""Every codec Spark writes event logs with, written by this machine's Spark during the test run, inside the run's
ONE SparkSession: ``spark.eventLog.compression.codec`` is read when an ``EventLoggingListener`` starts, and a
SparkContext starts one -- so beside it the test starts four more of Spark's own ``EventLoggingListener``s (one per
codec: lz4, lzf, snappy, zstd, and one plain; through py4j, on a copy of the session's SparkConf), registers them on
the live listener bus for one planted job, and stops them (which renames ``.inprogress``).  No second JVM.

The five logs hold the same listener events, so the collector must give the same events from each (ids aside: they
name the file), and what Spark's status tracker counted for the job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from collectors.spark.codecs import CODECS, MAGIC
from tests.collectors.spark import planted
from tests.collectors.spark.conftest import check_against_spark, run_collect

pytestmark = pytest.mark.spark

#: Small compression blocks, so that each log holds many (Spark's defaults: 32k).
SMALL_BLOCKS = {"spark.io.compression.lz4.blockSize": "4k", "spark.io.compression.snappy.blockSize": "4k"}


def _listener(spark: Any, codec: str | None, log_dir: Path) -> Any:
    """A started EventLoggingListener writing ``codec`` (None: plain) to ``log_dir``, registered on the bus."""
    sc = spark.sparkContext
    jvm, jsc = sc._jvm, sc._jsc.sc()
    conf = jsc.conf().clone()
    conf.set("spark.eventLog.rolling.enabled", "false")
    conf.set("spark.eventLog.compress", "false" if codec is None else "true")
    if codec is not None:
        conf.set("spark.eventLog.compression.codec", codec)
    for key, value in SMALL_BLOCKS.items():
        conf.set(key, value)
    log_dir.mkdir(parents=True)
    listener = jvm.org.apache.spark.scheduler.EventLoggingListener(
        sc.applicationId,
        jvm.scala.Option.empty(),
        jvm.java.net.URI(log_dir.as_uri()),
        conf,
        sc._jsc.hadoopConfiguration(),
    )
    listener.start()
    jsc.addSparkListener(listener)
    return listener


def _without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


def test_every_codec_written_by_this_session(spark: Any, tmp_path: Path) -> None:
    codecs: list[str | None] = [*CODECS, None]
    listeners = {codec: _listener(spark, codec, tmp_path / (codec or "plain")) for codec in codecs}
    jsc = spark.sparkContext._jsc.sc()
    try:
        planted.skewed_groupby(spark, "codecs-live", rows=40_000)
        planted.drain(spark)
    finally:
        for listener in listeners.values():
            jsc.removeSparkListener(listener)
            listener.stop()
    app = spark.sparkContext.applicationId
    counted = planted.accounting(spark, "codecs-live")
    shapes = []
    for codec in codecs:
        (log,) = (tmp_path / (codec or "plain")).iterdir()
        assert log.name == app + (f".{codec}" if codec else "")  # stopped: renamed from .inprogress
        assert log.read_bytes().startswith(MAGIC[codec])
        events, summary, dead = run_collect(log)
        assert dead.count == 0 and summary.unfinished == 0 and summary.stats.unknown == 0, codec
        check_against_spark(events, app, counted)
        shapes.append(_without_ids(events))
    assert all(shape == shapes[0] for shape in shapes), "the codecs gave different events"
    assert len(shapes[0]) >= 10  # a job, its two stages, their tasks
