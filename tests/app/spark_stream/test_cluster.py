"""``hcep stream`` on a real Spark standalone cluster: a master and two workers of one core each, started by
``deploy/spark/cluster-start.sh`` on loopback (one module-scoped cluster; each run is its own driver process, with one
executor per worker).  Its records are ``hcep match``'s; a worker killed (-9, with its executor) in mid-stream
loses and repeats nothing: the tasks it ran are run again by the other executor from the checkpointed state, and a
restart (the worker started again by the idempotent script) finishes the input with ``--available-now``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import PACK, ROOT, match, with_ids, write_events
from tests.app.spark_stream.test_crash import _commits, _failure, _land
from tests.app.spark_stream.test_stream_spark import _split
from tests.conftest import free_port

pytestmark = [pytest.mark.slow]
START = ROOT / "deploy" / "spark" / "cluster-start.sh"
STOP = ROOT / "deploy" / "spark" / "cluster-stop.sh"


@dataclass
class Cluster:
    master: str
    run_dir: Path
    args: list[str]

    def start(self) -> dict[str, str]:
        done = subprocess.run(["bash", str(START), *self.args], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)

    def pid(self, name: str) -> int:
        return int((self.run_dir / f"{name}.pid").read_text().strip())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc (the worker's executors are found by parent PID)")
    run_dir = tmp_path_factory.mktemp("spark-cluster")
    port = free_port()
    args = ["--run-dir", str(run_dir), "--port", str(port), "--webui-port", "0"]
    c = Cluster(f"spark://127.0.0.1:{port}", run_dir, args)
    try:
        got = c.start()
        assert got["MASTER"] == c.master
        yield c
    finally:
        subprocess.run(["bash", str(STOP), *args, "--force"], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def jobs() -> list[dict[str, Any]]:
    """About 3,000 events: jobs of reducers with shuffle pulls one after another, Ganglia rounds every 15 s (the
    streaming benchmarks' workload; every query of the Hadoop pack has records in it)."""
    import json

    from benchmarks.bench_pipeline import workload

    hadoop, ganglia = workload(3000)
    return with_ids([json.dumps(e) for e in sorted(hadoop + ganglia, key=lambda e: e["ts"])])


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pack as it is when the module starts: a restart must run the plan its checkpoint was written by."""
    path = tmp_path_factory.mktemp("pack") / "hadoop.yaml"
    path.write_text(PACK.read_text())
    return path


def _start(c: Cluster, pack: Path, tmp_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "app.cli", "stream", "--pack", str(pack), "--input", str(tmp_path / "in")]
    argv += ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), "--master", c.master]
    argv += ["--trigger", "1"]  # a timed trigger, as by default, but not the default's 10 s between batches
    log = open(tmp_path / f"log-{len(list(tmp_path.glob('log-*')))}.txt", "w")  # noqa: SIM115 - the child's
    return subprocess.Popen(
        [*argv, "--buckets", "4", "--partitions", "4", *extra],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[bytes], log: Path, seconds: float = 600) -> None:
    try:
        assert proc.wait(seconds) == 0, _failure(log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _executors(worker: int) -> list[int]:
    """The executor JVMs a worker launched (its children running CoarseGrainedExecutorBackend)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == worker and b"CoarseGrainedExecutorBackend" in cmd:
            out.append(int(stat.parent.name))
    return out


def test_available_now_on_the_cluster_equals_match(
    cluster: Cluster, jobs: list[dict[str, Any]], pack: Path, tmp_path: Path
) -> None:
    from app.spark.stream.sink import read_dead, read_records

    want = match(write_events(jobs, tmp_path / "all.jsonl"), pack)
    for i, part in enumerate(_split(jobs, 3)):
        write_events(part, tmp_path / "in" / f"part-{i}.jsonl")
    _finish(_start(cluster, pack, tmp_path, "--available-now", "--no-progress"), tmp_path / "log-0.txt")
    assert_same_records(read_records(str(tmp_path / "out")), want)
    assert not read_dead(str(tmp_path / "out"))
    # It ran on the workers: each launched an executor for it.
    for name in ("worker-1", "worker-2"):
        assert list((cluster.run_dir / name).glob("app-*")), f"{name} ran no executor"


#: Run by a driver of its own on the cluster: what each executor's Python workers import the engine from, and how.
PROBE = """
import json, sys
from app.spark.session import spark_session
from app.commands.stream import session_conf

def probe(_):
    import contracts.compiled, engine.events
    yield (contracts.compiled.STATUS.split(":")[0], engine.events.__file__)

with spark_session(sys.argv[1], app_name="hcep-probe", conf=session_conf(sys.argv[1])) as spark:
    print(json.dumps(sorted(set(spark.sparkContext.parallelize(range(4), 4).mapPartitions(probe).collect()))))
"""


def test_the_executors_run_the_drivers_engine(cluster: Cluster) -> None:
    """The project reaches the executors as an archive they unpack, with the compiled hot path beside it (a zip on
    the path cannot hold extension modules): where the driver's build is current, the executors run it too."""
    from contracts.compiled import current

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("HCEP_PURE", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, cluster.master], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    files, why = current()
    mode = "compiled" if files else "pure"
    assert {m for m, _ in seen} == {mode}, (seen, why)
    assert all("/hcep-project.tgz/" in path for _, path in seen), seen
    assert all(path.endswith(".so") == (mode == "compiled") for _, path in seen), seen


def test_a_worker_killed_in_mid_stream_loses_and_repeats_nothing(
    cluster: Cluster, jobs: list[dict[str, Any]], pack: Path, tmp_path: Path
) -> None:
    from app.spark.stream.sink import read_records

    want = match(write_events(jobs, tmp_path / "all.jsonl"), pack)
    parts = _split(jobs, 8)
    (tmp_path / "in").mkdir()
    proc = _start(cluster, pack, tmp_path)
    landed = 0

    def run_until(commits: int) -> None:
        nonlocal landed
        deadline = time.monotonic() + 300
        while _commits(tmp_path) < commits and time.monotonic() < deadline and proc.poll() is None:
            if landed < len(parts) - 2 and _commits(tmp_path) >= landed - 1:
                _land(parts[landed], tmp_path / "in", f"part-{landed:02d}.jsonl")
                landed += 1
            time.sleep(0.5)
        assert proc.poll() is None, _failure(tmp_path / "log-0.txt")
        assert _commits(tmp_path) >= commits, "the stream made no progress"

    try:
        run_until(2)
        worker = cluster.pid("worker-1")
        executors = _executors(worker)
        assert executors, "worker-1 runs no executor for the stream"
        for pid in (worker, *executors):
            os.kill(pid, signal.SIGKILL)
        # The stream goes on with the other worker's executor (the lost tasks run again there).
        run_until(_commits(tmp_path) + 2)
        proc.send_signal(signal.SIGTERM)
        _finish(proc, tmp_path / "log-0.txt", 300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = len(read_records(str(tmp_path / "out")))
    # The idempotent start brings back the killed worker only; the rest lands; a restart finishes the input.
    assert cluster.start()["WORKER_2_PID"] == str(cluster.pid("worker-2"))
    for i in range(landed, len(parts)):
        _land(parts[i], tmp_path / "in", f"part-{i:02d}.jsonl")
    _finish(_start(cluster, pack, tmp_path, "--available-now", "--no-progress"), tmp_path / "log-1.txt")
    got = read_records(str(tmp_path / "out"))
    assert 0 < before < len(got)
    assert_same_records(got, want)  # none lost, none twice
