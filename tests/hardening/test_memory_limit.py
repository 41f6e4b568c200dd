"""No input takes ``hcep match`` past a memory budget (issue 18): the exponential blow-up of a skip_till_any_match
Kleene query runs under ``RLIMIT_AS`` with the default bounds, and dies of ``MemoryError`` without them."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 400 * 2**20  # bytes of address space for the whole process

#: Trend enumeration (GRETA cannot evaluate b[..i-1]): one NFA^b run per subset of the B events, 2**39 of them.
TREND = "PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 1 hour RETURN count(*)"
#: Per-match output over possible worlds: 2**39 signatures closed by the one C.
SIGNATURES = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 1 hour"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS semantics")


def _events(path: Path) -> None:
    lines = [
        {"type": "A", "ts": 0, "k": 1},
        *({"type": "B", "ts": i, "k": 1, "v": i} for i in range(1, 40)),
        {"type": "C", "ts": 100, "k": 1},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (BUDGET, BUDGET))


def _match(events: Path, query: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "match", str(events), "--query-text", query, *extra],
        preexec_fn=_limited,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def test_blowup_runs_within_the_budget_with_the_default_bounds(tmp_path: Path) -> None:
    events = tmp_path / "blowup.jsonl"
    _events(events)
    for query, records in ((TREND, 1), (SIGNATURES, 20_000)):
        proc = _match(events, query)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert len(proc.stdout.splitlines()) == records
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("hcep match: memory limits dropped partial matches"), lines


def test_blowup_without_bounds_exceeds_the_budget(tmp_path: Path) -> None:
    """The same input with the bounds off: the runs exhaust the address space (so the test above means something).

    Where the allocation fails decides how the process dies: in the interpreter, of ``MemoryError``; in the compiled
    engine's runtime (mypyc's ``librt``), of an abort that prints ``fatal: out of memory``.  Both are the budget spent.
    """
    events = tmp_path / "blowup.jsonl"
    _events(events)
    proc = _match(events, TREND, "--max-runs", "0", "--max-runs-per-key", "0")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "MemoryError" in proc.stderr or "fatal: out of memory" in proc.stderr, proc.stderr[-2000:]
