"""The SASE++ side-by-side (``benchmarks/peers/sasepp.py``): the authors' Java engine, built with ``javac`` from the
sase-advanced mirror, and ours find the same matches on a small hand-made trace, row by row as
``sasepp_queries.Row.compare`` says they are comparable.  The peer is the truth here: nothing below restates what a
query should find, only that the two engines' signatures (as sets of our event ids) are the same.

The trace has what separates the formulations: interleaved jobs (per-job partitions), a job without reducers and one
without maps, a reducer with two slow pulls (SASE++ ends its run at the first), a slow pull past the 10-minute window
(SASE++ does not check the window when a run proceeds), a reducer with no Ganglia sample during it, and an imbalance
episode around one reducer only.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peers import sasepp
from benchmarks.peers.sasepp_build import CACHE, MIRROR, build
from benchmarks.peers.sasepp_queries import ROWS

pytestmark = pytest.mark.skipif(
    shutil.which("javac") is None or shutil.which("java") is None or not MIRROR.is_dir(),
    reason="needs javac/java and the sase-advanced mirror",
)

T0 = 1_700_000_000.0


def trace() -> list[dict[str, Any]]:
    """Hadoop events of four jobs and a Ganglia round every 15 s for 5 minutes; no two events share a millisecond."""
    ev: list[dict[str, Any]] = []

    def add(ts: float, type_: str, **attrs: Any) -> None:
        ev.append({"type": type_, "ts": T0 + ts, "id": f"e{len(ev)}", **attrs})

    for k in range(21):  # imbalance from 60 s to 105 s; LoadStd rising, with a dip
        add(15.0 * k, "LoadStd", val=0.5 + 0.01 * k - (0.2 if k == 6 else 0.0))
        add(15.0 * k + 0.0005, "Imbalance" if 4 <= k <= 7 else "Balance", val=1.2 if 4 <= k <= 7 else 0.6)

    def job(j: str, start: float, maps: list[float], end: float) -> None:
        add(start, "JobStart", job_id=j)
        for i, t in enumerate(maps):
            add(t, "Mapper", job_id=j, task_id=f"{j}_m{i}", host="h1", period=t - start - 0.5)
            add(t + 0.01, "DataIO", job_id=j, task_id=f"{j}_m{i}", size=1 << 20)
        add(end, "JobEnd", job_id=j)

    def reducer(j: str, r: str, start: float, pulls: list[tuple[float, float]], end: float) -> None:
        add(start, "ReducerStart", job_id=j, task_id=r, host="h2")
        for t, period in pulls:
            add(t, "DataPull", job_id=j, task_id=r, map_task=f"{j}_m0", host="h2", period=period)
            add(t + 0.01, "DataIO", job_id=j, task_id=r, size=-(1 << 19))
        add(end, "ReducerEnd", job_id=j, task_id=r, host="h2")
        add(end + 0.001, "Reducer", job_id=j, task_id=r, host="h2", period=end - start)

    job("jA", 1.001, [5.002, 6.003, 7.004], 121.061)
    job("jB", 2.101, [8.102, 9.103], 16.151)
    reducer("jA", "rA", 50.021, [(51.031, 0.1), (52.032, 0.1), (53.033, 1.0), (54.034, 0.1), (55.035, 10.0)], 120.051)
    reducer("jB", "rB", 10.121, [(11.131, 0.2), (12.132, 0.2), (13.133, 0.3)], 14.141)
    job("jC", 130.201, [131.202], 132.203)
    job("jD", 139.301, [], 802.341)
    reducer("jD", "rD", 140.311, [(141.321, 0.1), (142.322, 0.1), (800.323, 5.0)], 801.331)
    return sorted(ev, key=lambda e: e["ts"])


@pytest.fixture(scope="module")
def built() -> Path:
    return build(MIRROR, CACHE)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str], Path]:
    work = tmp_path_factory.mktemp("sasepp")
    return (work, *sasepp.prepare(trace(), work))


def _ours(row: str, name: str, path: Path) -> list[dict[str, Any]]:
    """Our records of ``name``: whole signatures, but Q4flat's pairs are our Q4's increments (a job's start and the
    one DataIO each record adds)."""
    return sasepp.our_records(name, path, increments=row == "Q4flat")


def _sig(rec: dict[str, Any]) -> frozenset[str]:
    return frozenset(i for ids in rec["match"].values() for i in ids)


@pytest.mark.parametrize("name", list(ROWS))
def test_same_matches(name: str, built: Path, inputs: tuple[Path, Path, list[str], Path]) -> None:
    work, stream, ids, ours_in = inputs
    row = ROWS[name]
    by_id = {e["id"]: e for e in trace()}
    nfa = work / f"{name}.nfa"
    nfa.write_text(row.nfa)
    printed = sasepp.run_sasepp(built, nfa, stream, row, 1, 60.0, printed=True).out.read_text()
    theirs = sasepp.signatures(printed, ids)
    ours = _ours(name, row.ours, ours_in)
    assert theirs and ours, f"{name}: the trace must give both engines something to find"
    if row.compare == "records":
        assert Counter(theirs) == Counter(_sig(r) for r in ours)
    elif row.compare == "extends":  # SASE++ writes the prefixes of two or more DataIO
        assert Counter(theirs) == Counter(_sig(r) for r in ours if len(r["match"]["b"]) >= 2)
    elif row.compare == "first":  # SASE++ ends a run at its first match, and proceeds past the window
        window = int(row.nfa.split("timeWindow = ")[1].split()[0])

        def span(sig: frozenset[str]) -> int:
            times = [float(by_id[i]["ts"]) for i in sig]
            return round(max(times) * 1000) - round(min(times) * 1000)

        firsts: dict[str, frozenset[str]] = {}
        for r in ours:
            firsts.setdefault(r["match"]["a"][0], _sig(r))
        assert len(ours) > len(firsts), "the trace has a reducer with two slow pulls"
        assert any(span(s) > window for s in theirs), "the trace has a slow pull past the window"
        assert Counter(s for s in theirs if span(s) <= window) == Counter(firsts.values())
    else:  # distinct task_id
        tasks = {by_id[i]["task_id"] for s in theirs for i in s if by_id[i]["type"] == "ReducerStart"}
        assert tasks == {r["return"]["task_id"] for r in ours}


def test_harness_table(built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command's own table on the trace (one row of each way of comparing, to stay quick): every count equal."""
    events = tmp_path / "trace.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in trace()))
    rows = ["Q1", "Q3", "Q4", "Q6"]
    argv = ["--events", str(events), "--repeat", "1", "--work", str(tmp_path / "w"), "--budget", "60"]
    assert sasepp.main([*argv, "--rows", ",".join(rows)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| Q")]
    assert [ln.split(" | ")[0][2:] for ln in lines] == rows
    assert all(" = " in ln and " != " not in ln for ln in lines), lines
