"""A short seeded run of every fuzz target of ``benchmarks/fuzz.py`` (issue 18): the real samples and a few seconds of
byte-level mutations of them pass the campaign's checks -- no exception but the documented ones, every rejected input
counted and reported where it is, no input over the time bound.  ``HCEP_FUZZ_SECONDS`` makes the runs longer."""

from __future__ import annotations

import importlib.util
import os

import pytest

from benchmarks import fuzz

SECONDS = float(os.environ.get("HCEP_FUZZ_SECONDS", "3"))
NEEDS = {"rrd": "rrdtool", "archive": "pyarrow", "jhist": "fastavro"}


@pytest.mark.parametrize("name", sorted(fuzz.TARGETS))
def test_seeded_fuzz_run(name: str) -> None:
    module = NEEDS.get(name)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    camp = fuzz.run_mutation(fuzz.TARGETS[name], runs=10**9, seed=20251126, timeout=5.0, seconds=SECONDS)
    assert camp.inputs > len(fuzz.TARGETS[name].seeds())
    assert not camp.findings, "\n\n".join(text for text, _ in camp.findings.values())


def test_the_mutator_is_deterministic() -> None:
    import random

    pool = [b"abc", b'{"type": "A"}']
    a = [fuzz.mutate(random.Random(5), pool[1], pool, 64) for _ in range(3)]
    b = [fuzz.mutate(random.Random(5), pool[1], pool, 64) for _ in range(3)]
    assert a == b
