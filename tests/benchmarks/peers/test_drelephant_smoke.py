"""The port on a small simulated cluster, through ``hcep simulate`` (a subprocess: the simulator's package may
move) and the CLI: every job the simulator ran is analyzed once per heuristic, with its own submit and end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peers.drelephant import HEURISTIC_NAMES, SPEC9_HEURISTICS, analyze_history, scan_history
from benchmarks.peers.drelephant.__main__ import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("de_sim")
    hcep = Path(sys.executable).parent / "hcep"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [str(hcep), "simulate", "--nodes", "20", "--hours", "0.25", "--seed", "1", "--out", str(out), "--force"]
    subprocess.run([*cmd, "--ganglia", "none", "--no-progress"], check=True, env=env, capture_output=True, timeout=600)
    return out


def test_analyze_history_on_a_simulated_cluster(sim: Path) -> None:
    jobs = [json.loads(line) for line in (sim / "jobs.jsonl").read_text().splitlines() if line.strip()]
    succeeded = {j["job_id"]: j for j in jobs if j["status"] == "SUCCEEDED"}
    assert succeeded
    results = analyze_history(str(sim / "hadoop"))
    by_job: dict[str, list[dict[str, object]]] = {}
    for r in results:
        assert r["severity"] in ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")
        by_job.setdefault(str(r["job_id"]), []).append(r)
    assert set(succeeded) <= set(by_job)
    for job_id, job in succeeded.items():
        rs = by_job[job_id]
        assert sorted(str(r["heuristic"]) for r in rs) == sorted(SPEC9_HEURISTICS)
        assert all(abs(float(r["finished"]) - job["end"]) < 0.002 for r in rs)  # type: ignore[arg-type]
        assert all(abs(float(r["submitted"]) - job["submit"]) < 0.002 for r in rs)  # type: ignore[arg-type]


def test_every_heuristic_on_a_simulated_cluster(sim: Path) -> None:
    scan = scan_history(str(sim / "hadoop"), heuristics=None)
    assert scan.errors == [] and scan.analyzed == scan.jobs > 0
    assert {str(r["heuristic"]) for r in scan.results} >= set(HEURISTIC_NAMES) - {"Exception"}


def test_cli(sim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(sim / "hadoop")]) == 0
    out, err = capsys.readouterr()
    for line in out.splitlines():
        assert json.loads(line)["severity"] in ("MODERATE", "SEVERE", "CRITICAL")
    assert "analyzed" in err and "Mapper Skew" in err
