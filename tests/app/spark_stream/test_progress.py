"""``hcep stream``'s progress reporter over Spark's ``recentProgress`` (no Spark): every batch that ran is printed
and logged once, including batch 0 after an idle first trigger, which reports under the same batch id."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark")

from app.spark.stream.job import Reporter, progress_key  # noqa: E402


def _idle(bid: int, ts: str) -> dict:
    return {
        "batchId": bid,
        "timestamp": ts,
        "numInputRows": 0,
        "durationMs": {"latestOffset": 4, "triggerExecution": 7},
    }


def _ran(bid: int, ts: str, rows: int) -> dict:
    return {
        "batchId": bid,
        "timestamp": ts,
        "numInputRows": rows,
        "durationMs": {"addBatch": 1900, "latestOffset": 37, "triggerExecution": 2082},
    }


def test_batch_zero_after_an_idle_first_trigger_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seen in a 4-minute benchmark run: the first trigger found no file yet and reported an idle batch 0; the batch
    0 that ran 7 s later was dropped from the log and the console (it had the same id), so the first batch looked
    like the next one, 17.9 s after the session instead of 13.3."""
    sink = SimpleNamespace(
        progress_log=tmp_path / "_stream" / "progress.jsonl", totals=SimpleNamespace(fed=0, records=0, alerts=0, late=0)
    )
    report = Reporter(True, sink)  # type: ignore[arg-type]
    seq = [_idle(0, "t0")]
    query = SimpleNamespace(recentProgress=seq)
    report(query)
    seq += [_ran(0, "t1", 7)]
    report(query)
    seq += [_idle(1, "t2"), _idle(1, "t3")]  # idle again: printed once until a batch runs
    report(query)
    seq += [_ran(1, "t4", 10), _ran(2, "t5", 10)]
    report(query)
    report(query)
    logged = [json.loads(x) for x in sink.progress_log.read_text().splitlines()]
    assert [(p["batchId"], p["timestamp"]) for p in logged] == [(0, "t0"), (0, "t1"), (1, "t2"), (1, "t4"), (2, "t5")]
    printed = [x for x in capsys.readouterr().err.splitlines() if x.startswith("hcep stream: batch")]
    assert len(printed) == 5 and "7 input rows" in printed[1]


def test_progress_order() -> None:
    assert progress_key(_idle(0, "a")) < progress_key(_ran(0, "b", 1)) < progress_key(_idle(1, "c"))
    assert progress_key({"batchId": 3, "durationMs": None}) == (3, False)
