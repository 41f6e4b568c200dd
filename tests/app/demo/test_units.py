"""The live demo's parts without the daemons: the live simulator's plan and playback (on a fake clock), the
supervisor's process groups, and the demo's reaction to a child that dies."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from app.demo import live as demo_live
from app.demo.supervisor import Child, Supervisor, descendants
from simulator import live


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    out = tmp_path_factory.mktemp("live")
    cfg = live.live_config(nodes=20, minutes=4, seed=1, start=1_800_000_000.0)
    live.plan(cfg, str(out), showcase_every=120.0)
    return out, cfg.start


def test_the_showcase_is_a_fault_list_injected_in_the_first_seconds(planned: tuple[Path, float]) -> None:
    out, start = planned
    truth = json.loads((out / "ground_truth.json").read_text())
    assert set(truth) == {"window", "faults", "natural"}
    faults = truth["faults"]
    assert json.loads((out / "faults.json").read_text()) == live.showcase_faults(4, 120.0, 1)
    kinds = [f["kind"] for f in faults]
    assert {k: kinds.count(k) for k in kinds} == dict.fromkeys(
        ("map_data_skew", "reduce_data_skew", "slow_node", "hung_fetch", "held_output", "runaway_reducer"), 2
    )
    first = {f["kind"]: f for f in reversed(faults[:6])}
    for f in first.values():  # the first round: every kind gets a target and acts within the first minutes
        assert f["entity"] and f["actionable"], f
        assert start + f["at"] <= f["onset"] < start + (f["at"] + 1 if f["kind"] == "slow_node" else 150), f
    assert 90 <= first["hung_fetch"]["end"] - first["hung_fetch"]["onset"] < 180  # above the floor, before the timeout
    assert (out / "hadoop").is_dir() and not any((out / "hadoop").iterdir())  # empty until played


def test_timed_lines_cover_every_planned_line_in_order(planned: tuple[Path, float]) -> None:
    out, start = planned
    plan = out / live.PLAN
    files = sorted(p for p in (plan / "hadoop").rglob("*") if p.is_file())
    kinds = {p.suffix == ".jhist" for p in files}
    assert kinds == {True, False}
    for path in files:
        chunks = live.timed_lines(str(path))
        assert "".join(text for _, text in chunks) == path.read_text()  # nothing lost, nothing reordered
        times = [t for t, _ in chunks]
        assert times == sorted(times) and times[0] >= start - 1
    assert live.timeline(str(plan))[0][0] >= start


def test_playing_the_plan_rebuilds_its_files_on_the_clock(planned: tuple[Path, float], tmp_path: Path) -> None:
    """A fake clock jumping forward: lines appear only once their time has come; at the end every played file is
    byte for byte the planned one, and every Ganglia round went to the sender."""
    out, start = planned
    plan = out / live.PLAN
    now = [start - 10.0]
    sent: list[tuple[float, int]] = []

    def send(address: str, samples: list) -> None:
        sent.append((now[0], len(samples)))

    player = live.Player(str(plan), str(tmp_path), gmond="127.0.0.1:1", clock=lambda: now[0], tick=0.0, send=send)

    def wait(timeout: float | None = None) -> bool:
        """The player's sleep: the clock jumps 1 s instead.  While the Ganglia thread plays, only it moves the clock:
        were the file thread to move it too, it could race ahead on a busy machine and make rounds look overdue."""
        ganglia = any(t.name == "ganglia" and t.is_alive() for t in threading.enumerate())
        if threading.current_thread().name == "ganglia" or not ganglia:
            now[0] += 1.0
        else:
            time.sleep(0.001)
        return False

    player._stop.wait = wait  # type: ignore[method-assign]
    first_line = player.lines[0]
    player.lines = [x for x in player.lines if x[0] <= start + 30]  # the first 30 s
    player.rounds = [r for r in player.rounds if r[0] <= start + 30]
    stats = player.run()
    assert stats.lines == len(player.lines) and stats.rounds == len(player.rounds) == len(sent)
    assert all(at >= ts for (at, _), (ts, _) in zip(sent, player.rounds, strict=True))
    assert all(n == 20 for _, n in sent)
    played = (tmp_path / first_line[1]).read_text()
    assert played and (plan / first_line[1]).read_text().startswith(played)
    # Everything, played to the end, equals the plan.
    full = live.Player(str(plan), str(tmp_path / "all"), clock=lambda: 1e12)
    stats = full.run()
    for path in (plan / "hadoop").rglob("*"):
        if path.is_file():
            assert (tmp_path / "all" / path.relative_to(plan)).read_bytes() == path.read_bytes()
    # Ganglia rounds long overdue are skipped, not sent late with a wrong time (gmond stamps on arrival).
    assert stats.rounds == 0 and stats.skipped_rounds == len(full.rounds)


# -------------------------------------------------------------------------------------------------- supervision
def _sleeper(name: str, tmp_path: Path, code: str, **kw: object) -> Child:
    return Child(name, [sys.executable, "-c", code], tmp_path / f"{name}.log", title=f"the {name}", **kw)


def test_children_run_in_their_own_groups_and_stop_with_their_children(tmp_path: Path) -> None:
    sup = Supervisor(say=lambda _: None)
    # A child that starts a grandchild and ignores SIGTERM: SIGKILL to the group after the grace period.
    code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('up', flush=True); "
        "time.sleep(60)"
    )
    parent = sup.start(_sleeper("stubborn", tmp_path, code))
    quiet = sup.start(_sleeper("quiet", tmp_path, "import time; time.sleep(60)"))
    deadline = time.monotonic() + 30
    while len(descendants(parent.pid)) < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    grandchild = descendants(parent.pid)[0]
    assert os.getpgid(parent.pid) == parent.pid and os.getpgid(grandchild) == parent.pid
    assert os.getpgid(quiet.pid) == quiet.pid != os.getpgid(0)
    assert sup.failed() is None
    codes = sup.stop_all(grace=1.0)
    assert codes["stubborn"] == -9 and codes["quiet"] == -15
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{grandchild}") and time.monotonic() < deadline:
        time.sleep(0.1)
    state = (
        Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if os.path.exists(f"/proc/{grandchild}")
        else "gone"
    )
    assert state in ("gone", "Z")


def test_a_child_that_dies_stops_the_demo_with_status_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    opts = demo_live.Options(dir=tmp_path / "demo", pack=Path("queries/hadoop.yaml"))
    demo = demo_live.Demo(opts, say=lines.append)

    def start() -> None:  # instead of the daemons and hcep processes: two plain children, one of which fails
        demo.sup.start(_sleeper("collect-hadoop", demo.layout.logs, "import time; time.sleep(60)"))
        demo.sup.start(
            _sleeper(
                "simulate",
                demo.layout.logs,
                "import sys, time; print('boom: gmetric not found', flush=True); time.sleep(1); sys.exit(3)",
            )
        )

    monkeypatch.setattr(demo, "start", start)
    started = time.monotonic()
    assert demo.run() == 1
    assert time.monotonic() - started < 30
    text = "\n".join(lines)
    assert "the simulate (simulate, pid" in text and "exited with status 3" in text and "boom: gmetric" in text
    assert "stopped the collect-hadoop" in text and "demo: failed" in text
    assert all(not c.alive() for c in demo.sup.children)


def test_a_finished_simulator_is_not_a_failure(tmp_path: Path) -> None:
    sup = Supervisor(say=lambda _: None)
    sup.start(_sleeper("simulate", tmp_path, "pass", may_finish=True))
    sup.children[0].proc.wait()  # type: ignore[union-attr]
    assert sup.failed() is None


def test_a_second_demo_on_the_same_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "demo"])
    try:
        deadline = time.monotonic() + 30
        while b"demo" not in Path(f"/proc/{other.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)  # until the exec shows
        (tmp_path / "demo.pid").write_text(f"{other.pid}\n")
        lines: list[str] = []
        demo = demo_live.Demo(demo_live.Options(dir=tmp_path, pack=Path("queries/hadoop.yaml")), say=lines.append)

        def start() -> None:
            raise AssertionError("started although another demo uses the dir")

        monkeypatch.setattr(demo, "start", start)
        assert demo.run() == 1, lines
        assert f"another hcep demo (pid {other.pid})" in lines[0]
        assert (tmp_path / "demo.pid").read_text().strip() == str(other.pid)  # left alone
    finally:
        other.kill()
        other.wait()


# ------------------------------------------------------------------------------------------------------- replay
def test_the_replay_prints_the_alerts_hcep_match_alerts_gives(capsys: pytest.CaptureFixture[str]) -> None:
    """``hcep demo --replay`` ends with the pack's alerts: the same transitions ``hcep match --alerts`` prints."""
    from app.cli import main

    handcheck = Path(__file__).resolve().parents[2] / "data" / "hadoop_handcheck.jsonl"
    assert main(["match", str(handcheck), "--pack", "queries/hadoop.yaml", "--alerts"]) == 0
    alerts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["demo", "--replay", "--events", str(handcheck)]) == 0
    text = capsys.readouterr().out
    shown = text[text.index("\nAlerts  ") :]
    states = re.findall(r"^    (FIRING  |resolved) t=\d+s  (\w+) \((\w+)/(\w+)\)", shown, re.MULTILINE)
    assert states == [
        (
            "FIRING  " if "endsAt" not in a else "resolved",
            a["labels"]["alertname"],
            a["labels"]["severity"],
            a["labels"]["tier"],
        )
        for a in alerts
    ]
    # The rules of issue 24 are gated for real clusters: neither small trace passes them, and the replay says so.
    assert alerts == [] and "none: no record passes the gates of MapDataSkew" in shown
    assert "hcep match" in text and "--alerts" in text
    assert main(["demo", "--replay"]) == 0  # the sample trace: no record passes the rules' gates either
    assert "none: no record passes the gates of MapDataSkew" in capsys.readouterr().out


def test_the_guide_names_the_showcase_alerts_in_time_order(planned: tuple[Path, float], tmp_path: Path) -> None:
    from app.demo import guide

    out, start = planned
    truth = json.loads((out / "ground_truth.json").read_text())
    pack = tmp_path / "pack.yaml"
    pack.write_text("alerts:\n  - name: HungFetchAlert\n    labels: {kind: hung_fetch}\n  - name: Other\n")
    names = guide.alerts_by_kind(pack)
    assert names == {"hung_fetch": ["HungFetchAlert"]} and guide.alerts_by_kind(tmp_path / "missing.yaml") == {}
    expected = guide.expected_alerts(truth, names)
    assert len(expected) == 6 and [e["at"] for e in expected] == sorted(e["at"] for e in expected)
    assert {e["label"] for e in expected} == {"job_id", "task_id", "host"}
    lines = "\n".join(guide.look_for(truth, "http://127.0.0.1:8501/", start, names))
    for e in expected:
        name = "HungFetchAlert" if e["kind"] == "hung_fetch" else f"the alert for {e['kind']}"
        assert re.search(rf"{e['entity']}.*alert {name} about \+{e['at'] - start:.0f} s\)", lines), e
    assert guide.split_open({"critical": 2, "warning": 1, "info": 4}) == (3, 4)
