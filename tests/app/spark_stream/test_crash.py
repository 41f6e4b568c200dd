"""SIGTERM, then kill -9 in mid-stream: ``hcep stream`` as its own process (its own local Spark), files landing over
time; SIGTERM stops it cleanly; a second run's driver is killed (-9) after a few micro-batches (its JVM and Python
workers must die with it); more files land, and a restart with the same checkpoint finishes with
``--available-now``.  No record or alert transition is lost or
repeated: the records are ``hcep match``'s, each once, and the alerts those of an uninterrupted run's rules over
the same records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import PACK, ROOT, match, write_events
from tests.app.spark_stream.test_stream_spark import _split

pytestmark = [pytest.mark.slow]


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "app.cli", "stream", "--pack", str(PACK), "--input", str(tmp_path / "in")]
    argv += ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), "--master", "local[1]"]
    argv += ["--trigger", "1"]  # a timed trigger, as by default, but not the default's 10 s between batches
    log = open(tmp_path / f"log-{len(list(tmp_path.glob('log-*')))}.txt", "w")  # noqa: SIM115 - the child's
    return subprocess.Popen(
        [*argv, "--buckets", "2", *extra], cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True
    )


def _land(events: list[dict], directory: Path, name: str) -> None:
    tmp = directory.parent / f".{name}"
    write_events(events, tmp)
    os.replace(tmp, directory / name)


def _commits(tmp_path: Path) -> int:
    base = tmp_path / "out" / "_stream" / "commits"
    return len(list(base.glob("*.json"))) if base.is_dir() else 0


def _run_until(proc: subprocess.Popen, tmp_path: Path, parts: list, landed: int, stop_at: int, log: str) -> int:
    """Land parts one by one as the stream commits batches, until ``stop_at`` commits (or 4 minutes)."""
    deadline = time.monotonic() + 240
    while _commits(tmp_path) < stop_at and time.monotonic() < deadline and proc.poll() is None:
        if landed < len(parts) - 2 and _commits(tmp_path) >= landed - 1:
            _land(parts[landed], tmp_path / "in", f"part-{landed:02d}.jsonl")
            landed += 1
        time.sleep(0.5)
    assert proc.poll() is None, _failure(tmp_path / log)
    assert _commits(tmp_path) >= stop_at, "the stream made no progress"
    return landed


def _failure(log: Path) -> str:
    """What a dead run's log says: its exception and cause lines first (Spark's traces run to thousands of lines),
    then its end."""
    text = log.read_text()
    causes = [line for line in text.splitlines() if "Exception" in line or "Error" in line or "Caused by" in line]
    return "\n".join(causes[:40]) + "\n...\n" + text[-2000:]


def _gone(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def test_sigterm_then_kill_9_then_restart(cluster_events: list[dict], tmp_path: Path) -> None:
    from app.spark.stream.sink import read_alerts, read_records

    want = match(write_events(cluster_events, tmp_path / "all.jsonl"))
    parts = _split(cluster_events, 10)
    (tmp_path / "in").mkdir()
    # 1. SIGTERM stops the query cleanly: exit 0, the summary printed.
    proc = _start(tmp_path)
    landed = _run_until(proc, tmp_path, parts, 0, 2, "log-0.txt")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 0
    log0 = (tmp_path / "log-0.txt").read_text()
    assert "records" in log0.splitlines()[-1]
    # ... between micro-batches: a stop that cancels the batch inside foreachBatch killed Spark's stream thread
    # (a StackOverflowError in Spark's own error matching), and a restart could then fail to load the state.
    assert "Exception in thread" not in log0 and "StackOverflowError" not in log0, _failure(tmp_path / "log-0.txt")
    # 2. Kill -9 the driver in mid-stream: its JVM and Python workers go with it.
    proc = _start(tmp_path)
    try:
        landed = _run_until(proc, tmp_path, parts, landed, _commits(tmp_path) + 3, "log-1.txt")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        if not _gone(proc.pid, 60):
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("the driver's JVM outlived it by a minute")
    before = len(read_records(str(tmp_path / "out")))
    # 3. The rest lands; a restart on the same checkpoint finishes with --available-now.
    for i in range(landed, len(parts)):
        _land(parts[i], tmp_path / "in", f"part-{i:02d}.jsonl")
    proc = _start(tmp_path, "--available-now", "--no-progress")
    try:
        assert proc.wait(300) == 0, _failure(tmp_path / "log-2.txt")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    got = read_records(str(tmp_path / "out"))
    assert 0 < before < len(got)
    assert_same_records(got, want)  # none lost, none twice
    alerts = read_alerts(str(tmp_path / "out"))
    keys = Counter(json.dumps([a["labels"], a["startsAt"], a.get("endsAt")], sort_keys=True) for a in alerts)
    assert alerts and max(keys.values()) == 1, keys.most_common(3)
    assert _judged(got) == Counter(json.dumps([a["labels"], a.get("endsAt") is not None]) for a in alerts)


def _judged(records: list[dict]) -> Counter:
    """The transitions the pack's rules give for these records, judged one by one (labels, resolved or not)."""
    from app.alerts.rules import AlertEngine
    from app.matching.packs import load_pack

    engine = AlertEngine(load_pack(PACK))
    out = Counter()
    for r in sorted(records, key=lambda r: r["end"]):
        for a in engine.observe(r, r["end"]):
            out[json.dumps([a.to_json()["labels"], a.to_json().get("endsAt") is not None])] += 1
    return out
