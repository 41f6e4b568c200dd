"""Helpers for the collector tests: the sample files (Hadoop's real formats), a JSON -> binary .jhist converter (so
both encodings are checked against the same facts), and event comparison."""

from __future__ import annotations

from pathlib import Path

from benchmarks.jhist_binary import json_jhist_to_binary as json_jhist_to_binary  # the tests' import

SAMPLES = Path(__file__).resolve().parent / "samples"
JOB = "job_1700000000000_0007"


def sample(name: str) -> Path:
    if name == "jhist":
        return next(SAMPLES.glob("*.jhist"))
    return SAMPLES / name


def strip(event: dict) -> dict:
    """An event without its id/delta, for comparisons across sources."""
    return {k: v for k, v in event.items() if k not in ("id", "delta")}
