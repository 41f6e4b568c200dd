"""The live pipeline delivers the showcase's faults to Alertmanager: ``hcep demo`` with every real part (its own Kafka
broker, gmond/gmetad, Prometheus Alertmanager, the live simulator, the collectors, ``hcep run``) on free loopback
ports, watched by ``benchmarks.bench_live_delay``.  Each actionable fault of the first showcase round must reach
Alertmanager as a warning that names its entity (section 9's ``detects``), and nothing can be there before its cause
was written.  Deadlines are generous (a loaded two-core machine); the test measures no speed.  Without Java, Ganglia
or Alertmanager it skips, except under ``CI=true``, where that fails."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.bench_live_delay import run_live, table

pytestmark = pytest.mark.slow

#: Seconds after the simulated cluster's start by which every alert must be in Alertmanager: they come within +250 s on
#: the shared machine.  The slow node is not watched here: its evidence is five slowed maps' own ends, so its alert
#: comes minutes after the others (142 s after its onset in the one run measured, 2026-11-28; target 10 minutes) and
#: the test ends when the others are in instead of waiting out its target; ``python -m benchmarks.bench_live_delay``
#: watches every kind.
WAIT = 720.0
KINDS = frozenset({"map_data_skew", "reduce_data_skew", "hung_fetch", "held_output", "runaway_reducer"})
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"


def _need(ok: bool, reason: str) -> None:
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"live delay test under CI: {reason}")
    pytest.skip(reason)


def test_the_live_pipeline_delivers_the_showcase_faults_to_alertmanager(tmp_path: Path) -> None:
    _need(shutil.which("java") is not None, "java is not installed (bash deploy/kafka/install.sh)")
    missing = [b for b in ("gmond", "gmetad", "gmetric") if shutil.which(b) is None]
    _need(not missing, f"Ganglia binaries missing: {missing} (bash deploy/ganglia/install.sh)")
    _need(Path(ALERTMANAGER).exists(), "Alertmanager missing (bash deploy/alertmanager/install.sh)")

    result = run_live(tmp_path, minutes=15, rounds=1, wait=WAIT, start_timeout=400.0, kinds=KINDS, say=print)

    cols, rows = table(result)
    print("\n" + " | ".join(cols) + "\n" + "\n".join(" | ".join(r) for r in rows))  # the figures, with -s
    faults = result["faults"]
    assert {f["kind"] for f in faults} >= {"map_data_skew", "hung_fetch", "held_output", "runaway_reducer"}, faults
    missed = [(f["kind"], f["entity"]) for f in faults if f["actionable"] and f["seen"] is None]
    assert not missed, f"no alert in Alertmanager for {missed}: {faults}"
    for f in faults:
        if f["seen"] is not None:
            # causality: the alert starts at or after the onset (detects says so) and reached Alertmanager after the
            # line that started it was written (the player writes a line when the wall clock reaches its time)
            assert f["starts"] >= f["onset"] and f["seen"] >= f["starts"] - 2.0, f
