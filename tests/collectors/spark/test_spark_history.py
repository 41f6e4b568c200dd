"""Spark's own History Server is the oracle: for every application attempt, stage attempt, task and executor of the
local logs (this machine's Spark 4.3: every codec, rolling, in progress, the Spark pack's applications, the test
run's own SparkSession) and of the third-party fixtures (Spark 2.2 to 3.x, YARN attempts, lost executors), the
collector's figures equal what its REST API reports, and where they must differ ``history.compare`` says why.
``hcep collect spark --history-server URL`` gives the same events as the log directory the server reads."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from collectors.spark import events as ev
from collectors.spark.history import Attempt, HistoryClient, HistoryServerError, collect_history
from tests.collectors.spark import planted
from tests.collectors.spark.conftest import run_collect
from tests.collectors.spark.history import HistoryServer, Tally, compare


def _attempt(events: list[dict[str, Any]]) -> tuple[str, str | None]:
    (start,) = [e for e in events if e["type"] == ev.APP_START]
    return start["app_id"], start.get("app_attempt")


def _compare_logs(server: HistoryServer, paths: list[Path]) -> Tally:
    collected = {path: run_collect(path) for path in paths}
    for path, (_, _, dead) in collected.items():
        assert dead.count == 0, path
    server.wait_for({_attempt(events) for events, _, _ in collected.values()})
    total = Tally()
    for events, _, _ in collected.values():
        total.add(compare(server, events))
    return total


def test_every_figure_agrees_with_the_history_server(history_server: HistoryServer) -> None:
    total = _compare_logs(history_server, history_server.copies)
    print(f"\nHistory Server comparison (fixtures): {total}")
    # 9 local application attempts (7 collector fixtures, the Spark pack's local and local-cluster ones) and 7
    # third-party ones (gpu_oom, spark2, 4 YARN attempts, tasks_executors_fail)
    assert total.apps == len(history_server.copies) == 16
    assert total.stages >= 240 and total.tasks >= 22_000 and total.executors >= 60
    assert total.removals >= 3  # the killed executor of the local cluster, executors 2 and 1 of stage 238
    assert total.notes["stage attempts running at an executor's removal"] >= 3  # one StageExecutorLost each
    assert total.notes["resubmitted task ends (failed to the History Server)"] >= 50
    assert total.notes["stage submissions without a time (Spark <= 2.2)"] == 6


def test_collect_from_the_history_server_gives_the_same_events(
    history_server: HistoryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--history-server URL``: every attempt's logs through ``/api/v1/applications/{id}[/{attempt}]/logs``, the
    same events, ids included, as reading the server's own log directory."""
    history_server.wait_for({_attempt(run_collect(p)[0]) for p in history_server.copies})
    remote, local = tmp_path / "remote.jsonl", tmp_path / "local.jsonl"
    assert main(["collect", "spark", "--history-server", history_server.url, "--out", str(remote)]) == 0
    err_remote = capsys.readouterr().err
    assert main(["collect", "spark", str(history_server.logdir), "--out", str(local)]) == 0
    err_local = capsys.readouterr().err
    assert remote.read_text() == local.read_text() and len(remote.read_text().splitlines()) > 20_000
    assert err_remote.split(", ", 1)[1] == err_local.split(", ", 1)[1]  # the same counts but the log total
    assert "0 dead-lettered" in err_remote


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--history-server", "http://127.0.0.1:1"], "cannot reach the History Server at http://127.0.0.1:1"),
        (["/tmp", "--history-server", "http://127.0.0.1:1"], "give LOGDIR or --history-server, not both"),
        (["--history-server", "127.0.0.1:18080"], "must be an http(s) URL"),
        (["--history-server", "http://127.0.0.1:1", "--follow"], "--follow reads a log directory"),
        ([], "give LOGDIR"),
    ],
)
def test_history_server_arguments_exit_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.jsonl"
    assert main(["collect", "spark", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists() or out.read_text() == ""


@pytest.mark.spark
def test_this_runs_spark_session_agrees(spark: Any, spark_event_dir: Path, history_server: HistoryServer) -> None:
    """The test run's own SparkSession (its growing ``.inprogress`` log, copied after its jobs drained): a skewed
    groupBy, a straggler and a job that fails, every figure as the History Server reads the same copy."""
    planted.skewed_groupby(spark, "history-skew", rows=20_000)
    planted.slow_task(spark, "history-slow")
    sc = spark.sparkContext
    sc.setJobGroup("history-fail", "a job that fails")

    def boom(_: Any) -> Any:
        raise ValueError("planted failure for the History Server comparison")

    try:
        with pytest.raises(Exception, match="planted failure"):
            sc.parallelize(range(4), 2).map(boom).count()
    finally:
        sc.setJobGroup("", "")
    planted.drain(spark)
    (log,) = [p for p in spark_event_dir.iterdir() if p.name.startswith("local-")]
    copy = history_server.logdir / log.name
    shutil.copy(log, copy)
    total = _compare_logs(history_server, [copy])
    print(f"\nHistory Server comparison (this run's session): {total}")
    events, summary, _ = run_collect(copy)
    assert total.apps == 1 and total.stages >= 4 and total.executors == 1
    assert [e for e in events if e["type"] == ev.JOB_END and e["status"] == "FAILED"]
    assert summary.unfinished == 1


class _Served(HistoryClient):
    """A History Server's answers without one: two attempts, the second's logs unavailable (the REST calls
    themselves are tested against the real server above)."""

    def __init__(self, log: Path) -> None:
        super().__init__("http://history.example:18080")
        self.log = log

    def attempts(self) -> list[Attempt]:
        return [Attempt("local-1", None, True), Attempt("app-2", "1", True)]

    def download_logs(self, attempt: Attempt, target: str) -> None:
        if attempt.app_id == "app-2":
            raise HistoryServerError("http://history.example:18080/api/v1/applications/app-2/1/logs: HTTP 404")
        shutil.copy(self.log, Path(target) / self.log.name)


def test_history_source_names_where_bad_lines_and_missing_logs_came_from(tmp_path: Path) -> None:
    """A dead letter of a downloaded log names the server, the attempt and the file (its temporary copy is gone); an
    attempt whose logs cannot be had is named as not read."""
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.spark.collect import Summary
    from tests.collectors.spark.conftest import LOGS, fixture

    log = tmp_path / "local-1"
    lines = (LOGS / fixture("plain")["path"]).read_text().splitlines()
    lines[5] = '{"Event":"SparkListenerTaskEnd","Stage ID":"zero"}'
    log.write_text("\n".join(lines) + "\n")
    summary, dead = Summary(), DeadLetterSink.memory()
    events = list(collect_history("", deadletter=dead, summary=summary, client=_Served(log)))
    assert events and summary.logs == 1 and summary.skipped == 1
    (letter,) = dead.records or []
    assert letter["location"] == "http://history.example:18080 local-1/local-1:6"
    (missing,) = summary.skipped_paths
    assert missing.startswith("http://history.example:18080 app-2 attempt 1: ") and "HTTP 404" in missing


def test_history_scripts_are_idempotent_and_loopback_only(history_server: HistoryServer, tmp_path: Path) -> None:
    """``history-start.sh`` again with the same settings leaves the running server alone (same PID); with another
    log directory it refuses; the server listens on loopback only; ``history-stop.sh`` with nothing running is
    fine."""
    import subprocess

    from tests.collectors.spark.history import DEPLOY

    port = history_server.url.rsplit(":", 1)[1]
    base = ["bash", str(DEPLOY / "history-start.sh"), "--run-dir", str(history_server.run_dir), "--port", port]
    pid = (history_server.run_dir / "history.pid").read_text().strip()
    again = subprocess.run(
        [*base, "--log-dir", str(history_server.logdir)], capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0 and "already running" in again.stderr and f"PID={pid}" in again.stdout
    other = subprocess.run([*base, "--log-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert other.returncode == 1 and "with other settings" in other.stderr
    if shutil.which("ss"):
        listening = subprocess.run(["ss", "-H", "-ltnp"], capture_output=True, text=True, timeout=30).stdout
        mine = [line.split()[3] for line in listening.splitlines() if f"pid={pid}," in line]
        assert mine and all(a.startswith(("127.", "[::ffff:127.", "[::1]")) for a in mine), mine
    stop = ["bash", str(DEPLOY / "history-stop.sh"), "--run-dir", str(tmp_path / "nothing")]
    assert subprocess.run(stop, capture_output=True, timeout=60).returncode == 0
