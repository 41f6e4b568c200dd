"""The Hadoop pack against causes (docs/semantics.md section 9): a simulated cluster with one injected fault per kind
is watched through the real collectors, and each fault's entity is named by a warning of a rule of its kind while
the fault acts; the same cluster without faults gets no warning that the background did not cause.

The truth is what the simulator injected (``ground_truth.json``), never a rule's threshold.  One small cluster (20
nodes, one hour): the slow test of this suite.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from app.matching.judge import judge
from engine.language.packs import load_pack

PACK = Path(__file__).resolve().parents[2] / "queries" / "hadoop.yaml"
FAULTS = [
    {"kind": "map_data_skew", "at": 600, "severity": 8},
    {"kind": "reduce_data_skew", "at": 900, "severity": 8},
    {"kind": "slow_node", "at": 1200, "severity": 4},
    {"kind": "hung_fetch", "at": 1500, "severity": 150},
    {"kind": "held_output", "at": 1800, "severity": 400},
    {"kind": "runaway_reducer", "at": 2100, "severity": 8},
]
GRACE = 600.0  # section 9: an alert may start up to 10 minutes after the fault's end


def _hcep(argv: list[str]) -> None:
    from app.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(argv)
    assert rc == 0, err.getvalue()[-2000:]


def _alerts(tmp: Path, faults: list[dict[str, Any]] | None) -> tuple[dict[str, Any], list[Any]]:
    """Simulate (with exactly ``faults``, or none), collect the logs and Ganglia samples, judge: (truth, alerts)."""
    from benchmarks.bench_detection import collect_events

    sim = tmp / "sim"
    argv = ["simulate", "--nodes", "20", "--hours", "1", "--seed", "3", "--out", str(sim), "--ganglia", "none"]
    argv += ["--no-progress", "--force"]
    if faults is None:
        argv.append("--no-faults")
    else:
        (tmp / "faults.json").write_text(json.dumps(faults))
        argv += ["--faults", str(tmp / "faults.json")]
    _hcep(argv)
    pack = load_pack(PACK)
    events = collect_events(sim, tmp, pack)
    truth = json.loads((sim / "ground_truth.json").read_text())
    return truth, list(judge(pack, events))


def _warnings(alerts: list[Any]) -> list[Any]:
    return [a for a in alerts if a.ends_at is None and a.labels["severity"] in ("warning", "critical")]


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any]]:
    return _alerts(tmp_path_factory.mktemp("faulted"), FAULTS)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [f["kind"] for f in FAULTS])
def test_each_injected_fault_is_named_while_it_acts(faulted: tuple[dict[str, Any], list[Any]], kind: str) -> None:
    truth, alerts = faulted
    (fault,) = [f for f in truth["faults"] if f["kind"] == kind]
    assert fault["actionable"]  # the target was drawn where the cause meets its floor
    ((label, entity),) = fault["entity"].items()
    hits = [
        w.starts_at - fault["onset"]
        for w in _warnings(alerts)
        if w.labels.get(label) == entity
        and w.labels.get("kind") == kind
        and fault["onset"] <= w.starts_at <= fault["end"] + GRACE
    ]
    assert hits, f"{kind} on {entity} not named"


@pytest.mark.slow
def test_the_same_cluster_without_faults_gets_no_unexplained_warning(tmp_path: Path) -> None:
    truth, alerts = _alerts(tmp_path, None)
    assert truth["faults"] == []
    natural = {tuple(sorted(n["entity"].items())) for n in truth["natural"]}
    unexplained = [w.labels for w in _warnings(alerts) if not any(w.labels.get(k) == v for e in natural for k, v in e)]
    assert unexplained == []
