"""One trace both ways: a simulated cluster with planted anomalies through the real broker and ``hcep run`` with the
product pack (queries/hadoop.yaml), and through ``hcep match --alerts``: the same alert transitions
(docs/semantics.md section 8)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.conftest import ROOT, Broker, run_command, start_service
from tests.pipeline.test_pipeline import _ensure

PACK = str(ROOT / "queries" / "hadoop.yaml")
GANGLIA = frozenset({"Metric", "LoadStd", "Balance", "Imbalance"})


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """A 20-node hour of fb2010 with its default fault mix, as the collectors turn it into events."""
    from benchmarks.bench_detection import ganglia_objects, run_config

    work = tmp_path_factory.mktemp("sim")
    run_config(3, "fb2010", 20, 1.0, str(work))

    events = [json.loads(line) for line in (work / "hadoop.jsonl").read_text().splitlines() if line.strip()]
    events.extend(ganglia_objects(work / "sim", 1.0))
    events.sort(key=lambda e: e["ts"])
    path = work / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path, events


def test_match_alerts_prints_what_run_sends(
    kafka_broker: Broker,
    prefix: str,
    tmp_path: Path,
    simulated: tuple[Path, list[dict]],
) -> None:
    from app.publish import publish
    from app.store import Store, store_path
    from contracts.alerts import transition_id

    path, events = simulated
    offline = subprocess.run(
        [sys.executable, "-m", "app.cli", "match", str(path), "--pack", PACK, "--alerts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert offline.returncode == 0, offline.stderr
    want = [json.loads(line) for line in offline.stdout.splitlines()]
    faults = json.loads((path.parent / "sim" / "ground_truth.json").read_text())["faults"]
    assert faults and want  # the default fault mix was injected, and alerted on (bench_detection scores how well)
    _ensure(kafka_broker.bootstrap, prefix)
    publish(
        [e for e in events if e["type"] not in GANGLIA],
        kafka_broker.bootstrap,
        "hadoop",
        topic=f"{prefix}.hadoop",
        pack=50,
    )
    publish(
        [e for e in events if e["type"] in GANGLIA],
        kafka_broker.bootstrap,
        "ganglia",
        topic=f"{prefix}.ganglia",
        pack=50,
    )
    data = tmp_path / "data"
    cmd = run_command(
        kafka_broker.bootstrap,
        PACK,
        data,
        prefix=prefix,
        extra=["--exit-when-idle", "5"],
    )
    proc = start_service(cmd, tmp_path / "run.log")
    assert proc.wait(timeout=600) == 0, (tmp_path / "run.log").read_text()[-3000:]
    store = Store(store_path(str(data)))
    rows = store.db.execute("SELECT alert FROM alerts ORDER BY rowid").fetchall()
    sent = [json.loads(r[0]) for r in rows]
    # The same transitions (identity, status and times), each once; and the same alert objects.
    assert collections.Counter(map(transition_id, sent)) == collections.Counter(map(transition_id, want))
    by_id = {transition_id(a): a for a in want}
    for a in sent:
        mine = by_id[transition_id(a)]
        assert a["labels"] == mine["labels"] and a["startsAt"] == mine["startsAt"]
        assert a["annotations"]["summary"] == mine["annotations"]["summary"]
