"""The live demo end to end: ``hcep demo`` with every real part -- the Kafka broker and gmond/gmetad from the deploy
scripts, the live simulator, both collectors publishing to Kafka, ``hcep run`` and ``hcep dashboard`` -- on free
loopback ports in a temp dir; Debian's Chromium (driven by Playwright) checks that each view of the running
dashboard shows the faults the simulator injected (named by its ground truth), saving a screenshot of each
(``$HCEP_SCREENSHOTS`` or a pytest tmp dir); then Ctrl-C (SIGINT) must stop the demo with exit status 0 and leave
no process behind.

The tests share one demo (module fixture) and run in file order; the views are visited in the order their fault
shows up (held output, hung fetch, map data skew, runaway reducer), then the Alerts view must show the earliest alert
the guide announces (``app.demo.guide.expected_alerts``) with Alertmanager's state beside it. Everything waits by
polling, with generous limits for a loaded two-core machine. Without Java/Kafka, Ganglia, Chromium or Playwright the
module skips, except under ``CI=true``, where that fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.bench_live_delay import free_ports
from tests.browser import CHROMIUM, CHROMIUM_ARGS, CI, screenshot_dir

ROOT = Path(__file__).resolve().parents[3]
#: Seconds for the demo to come up (a cold Kafka start on a busy machine is the slow part).
START_TIMEOUT = 240.0
#: Seconds after the simulated cluster's start by which a fault must be on the dashboard.  The last one (the map data
#: skew's job, listed once it ends: its 1 GB split takes 3-4.5 minutes to read) comes about five minutes in.
SHOW_TIMEOUT = 420.0
STOP_TIMEOUT = 120.0
#: Seconds after the simulated cluster's start by which the demo's Spark application (started beside it) shows its
#: skew: its JVM comes up, then the hot key's task runs about 2.7 minutes.
SPARK_TIMEOUT = 420.0
#: The demo stops itself after this long if the test never gets to stop it.
SAFETY_DURATION = 900

pytestmark = pytest.mark.slow


def _need(ok: bool, reason: str) -> None:
    if ok:
        return
    if CI:
        pytest.fail(f"live demo test under CI: {reason}")
    pytest.skip(reason)


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _started_at(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else None  # starttime: tells a reused PID apart


def _alive(proc: tuple[int, str | None]) -> bool:
    """Is this process (PID, start time) still there?  A zombie is gone, only not yet reaped; a PID now used by
    another process is not ours."""
    fields = _stat(proc[0])
    return bool(fields) and fields[0] != "Z" and (proc[1] is None or _started_at(proc[0]) == proc[1])


def _mentioning(text: str) -> set[int]:
    """Processes whose command line mentions ``text`` (the test's temp dir: only the demo's processes do)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if text.encode() in handle.read():
                        found.add(int(entry))
            except OSError:
                continue
    return found


def poll(check: Callable[[], Any], timeout: float, what: str, interval: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


class Demo:
    def __init__(self, proc: subprocess.Popen, root: Path, out: Path) -> None:
        self.proc = proc
        self.root = root
        self.out = out
        self.info: dict[str, Any] = {}
        self.truth: dict[str, Any] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.pids: set[tuple[int, str | None]] = set()  # every process of the demo seen while it ran, with its start
        self.started = time.monotonic()

    @property
    def url(self) -> str:
        return self.info["url"]

    def output(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def fault(self, kind: str) -> dict[str, Any]:
        """The first injected fault of ``kind`` that found a target (the first showcase round's)."""
        return next(f for f in self.truth["faults"] if f["kind"] == kind and f["entity"])

    def entity(self, kind: str) -> str:
        return str(next(iter(self.fault(kind)["entity"].values())))

    def remaining(self) -> float:
        """Seconds left until SHOW_TIMEOUT after the simulated cluster's start."""
        return max(30.0, float(self.truth["window"]["start"]) + SHOW_TIMEOUT - time.time())

    def note_processes(self) -> None:
        from app.demo.supervisor import descendants

        pids = set(descendants(self.proc.pid))
        pids.update(int(p) for p in self.info.get("children", {}).values() if p)
        for daemon in self.info.get("daemons", {}).values():
            pids.update(int(v) for k, v in daemon.items() if k.endswith("_PID") and str(v).isdigit())
        pids.update(_mentioning(str(self.root.parent)))  # e.g. start.sh's watcher of gmond, in a session of its own
        pids.discard(os.getpid())
        known = {pid for pid, _ in self.pids}
        self.pids.update((pid, _started_at(pid)) for pid in pids if pid not in known and _stat(pid))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    _need(shutil.which("java") is not None, "java is not installed (bash deploy/kafka/install.sh)")
    missing = [b for b in ("gmond", "gmetad", "gmetric") if shutil.which(b) is None]
    _need(not missing, f"Ganglia binaries missing: {missing} (bash deploy/ganglia/install.sh)")
    _need(Path(CHROMIUM).exists(), f"{CHROMIUM} not found (bash deploy/dashboard/install.sh)")
    try:
        import playwright.sync_api  # noqa: F401
        import streamlit  # noqa: F401
    except ImportError as err:
        _need(False, f"{err.name} is not installed")
    root = tmp_path_factory.mktemp("demo")
    kafka, zk, gmond, gmetad, interactive, metrics, dashboard, alertmanager, spark_metrics = free_ports(9)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    out = root / "demo.out"
    cmd = [
        sys.executable,
        "-m",
        "app.cli",
        "demo",
        "--dir",
        str(root / "run"),
        "--kafka-dir",
        str(root / "kafka"),
        "--kafka-port",
        str(kafka),
        "--zk-port",
        str(zk),
        "--gmond-port",
        str(gmond),
        "--gmetad-port",
        str(gmetad),
        "--gmetad-interactive-port",
        str(interactive),
        "--metrics-port",
        str(metrics),
        "--dashboard-port",
        str(dashboard),
        "--alertmanager-port",
        str(alertmanager),
        "--refresh",
        "3",
        "--spark-metrics-port",
        str(spark_metrics),
        "--duration",
        str(SAFETY_DURATION),
        "--minutes",
        "30",
    ]
    with open(out, "wb") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    d = Demo(proc, root / "run", out)
    try:
        info_file = d.root / "demo.json"

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"hcep demo exited ({proc.returncode}) while starting:\n{d.output()[-4000:]}")
            return info_file.exists()

        poll(up, START_TIMEOUT, "the demo to come up", interval=1.0)
        d.info = json.loads(info_file.read_text())
        d.truth = json.loads((d.root / "cluster" / "ground_truth.json").read_text())
        for line in (d.root / "cluster" / "jobs.jsonl").read_text().splitlines():
            job = json.loads(line)
            d.jobs[job["job_id"]] = job
        d.note_processes()
        print(f"\n[timing] demo up after {time.monotonic() - d.started:.1f} s")
        yield d
    finally:
        if proc.poll() is None:  # a test failed before the Ctrl-C test: stop it anyway
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for proc_id in d.pids:  # last resort, never expected to find anything
            if _alive(proc_id):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc_id[0], signal.SIGKILL)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = screenshot_dir(tmp_path_factory, "demo-screenshots")
    yield path
    print(f"\nlive demo screenshots: {path}")


@pytest.fixture(scope="module")
def page(demo: Demo) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1700})
            pg = context.new_page()
            pg.set_default_timeout(60_000)
            yield pg
            context.close()
        finally:
            browser.close()


# ------------------------------------------------------------------------------------------------------ helpers
def visit(page: Any, url: str, heading: str) -> None:
    page.goto(url)
    page.locator("h1", has_text=heading).wait_for()


def main_text(page: Any) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def grid_text(page: Any, index: int = 0) -> str:
    """The cells of a table (drawn on a canvas; its accessible copy in the DOM holds the text)."""
    grids = page.locator('[data-testid="stDataFrame"]')
    if grids.count() <= index:
        return ""
    return grids.nth(index).text_content() or ""


def shoot(page: Any, shots: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    for chart in page.locator(".vega-embed").all():
        chart.locator("canvas, svg").first.wait_for(state="attached")
    page.wait_for_timeout(500)
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def open_selected(page: Any, demo: Demo, view: str, heading: str, param: str, value: str, table_has: str) -> None:
    """Open ``view`` with ``?param=value`` selected, once its table lists ``table_has``: a view whose list does not
    hold the value yet selects its first entry instead (and says so in the URL)."""
    visit(page, demo.url + view, heading)
    until_text(page, demo, re.escape(table_has), f"{table_has} in the {view} view", grid=True)
    visit(page, demo.url + f"{view}?{param}={value}", heading)


def until_text(page: Any, demo: Demo, pattern: str | re.Pattern, what: str, grid: bool = False) -> str:
    """Wait (the views refresh themselves every few seconds) until the view's text -- or its tables' cells --
    match ``pattern``; the matching text."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern

    def found() -> str | None:
        text = main_text(page) + ("\n" + "\n".join(grid_text(page, i) for i in range(4)) if grid else "")
        return text if rx.search(text) else None

    return poll(found, demo.remaining(), what)


# -------------------------------------------------------------------------------------------------------- tests
def test_the_demo_starts_every_part_on_loopback(demo: Demo) -> None:
    text = demo.output()
    for step in (
        "[1/7] Kafka broker",
        "[2/7] gmond and gmetad",
        "[3/7] streaming service",
        "[4/7] collectors",
        "[5/7] simulated Hadoop cluster",
        "[6/7] dashboard",
        "[7/7] all up",
    ):
        assert step in text, text
    assert f"Dashboard: {demo.url}" in text and "Ctrl-C stops everything" in text
    assert demo.url.startswith("http://127.0.0.1:")
    assert set(demo.info["children"]) == {
        "run",
        "collect-hadoop",
        "collect-ganglia",
        "simulate",
        "dashboard",
        "run-spark",
        "collect-spark",
        "spark-app",
    }  # --spark is the default
    assert set(demo.info["daemons"]) == {"kafka", "ganglia", "alertmanager"}
    assert all(d["started"] for d in demo.info["daemons"].values())  # fresh run dirs: the demo started them all
    assert demo.info["alertmanager"] == demo.info["daemons"]["alertmanager"]["ALERTMANAGER_URL"]
    # What the viewer is told to look for names the injected faults.
    for kind in ("hung_fetch", "runaway_reducer", "map_data_skew", "held_output", "reduce_data_skew", "slow_node"):
        assert demo.entity(kind) in text
    # Everything it started listens on loopback only.
    if shutil.which("ss"):
        demo.note_processes()
        listening = subprocess.run(["ss", "-H", "-ltunp"], capture_output=True, text=True, check=False).stdout
        ours = [
            line.split()[4] for line in listening.splitlines() if any(f"pid={pid}," in line for pid, _ in demo.pids)
        ]
        assert ours, listening
        assert all(addr.startswith(("127.", "[::1]", "[::ffff:127.")) for addr in ours), ours


def test_queuing_view_shows_the_held_map_output(demo: Demo, page: Any, shots: Path) -> None:
    job = demo.entity("held_output")
    visit(page, demo.url + "queuing", "Queued map output")
    until_text(page, demo, re.escape(job), f"queued output of {job}", grid=True)
    text = until_text(page, demo, r"Largest backlog: [\d.]+ MiB in " + re.escape(job), "the largest backlog")
    # Never a negative queue: the lowest point plotted, and every Q4 record the service stored.
    lowest = re.search(r"Lowest point plotted \(MiB\)\s*\n\s*(-?[\d.]+)", text)
    assert lowest and float(lowest.group(1)) >= 0, text
    shoot(page, shots, "1-queuing")
    from contracts.store import StoreReader

    queued = [
        (r["return"]["job_id"], r["return"]["queued"])
        for _, r, _ in StoreReader(demo.info["store"]).matches()
        if r["query"] == "Q4"
    ]
    assert queued and all(q >= 0 for _, q in queued), [x for x in queued if x[1] < 0][:5]


@pytest.mark.xfail(
    reason="flaky since the showcase became a fault list: Q3's slow pull needs an earlier pull of the same reducer, "
    "and the showcase's stalled fetch is not always after one (passed 2 of 3 runs)",
    strict=False,
)
def test_stragglers_view_shows_the_slow_pull(demo: Demo, page: Any, shots: Path) -> None:
    task = demo.entity("hung_fetch")  # a stalled fetch, retried after the read timeout: Q3's slow pull
    open_selected(page, demo, "stragglers", "Straggling shuffle pulls", "task", task, task)
    until_text(page, demo, "Reducer " + re.escape(task), f"the slow pull of {task}")
    # The reducer's fetcher lines from the simulated cluster's log tree (--logs), drawn last.
    text = until_text(page, demo, r"Hadoop log lines \([1-9]\d*\)", "the Hadoop log lines of the slow pull")
    assert re.search(r"Slow pull: [\d.]+ s", text), text
    shoot(page, shots, "2-stragglers")


def test_jobs_view_shows_the_straggling_mapper(demo: Demo, page: Any, shots: Path) -> None:
    skew = demo.fault("map_data_skew")
    job_id, task = skew["entity"]["job_id"], skew["affected"]["task_id"][0]
    job = demo.jobs[job_id]
    attempt = task.replace("task_", "attempt_")
    # The skewed map is the job's slowest task; its slowest attempt may be the original one, killed when Hadoop's
    # speculative copy on another host finished first (the background has a speculator): either host is its host.
    hosts = sorted({a[2] for a in job["map_attempts"] if a[0].startswith(attempt)})
    assert hosts, job["map_attempts"]
    shown = re.escape(f"Slowest: {task} on ") + "(" + "|".join(re.escape(h) for h in hosts) + ")"
    open_selected(page, demo, "jobs", "Jobs: task skew", "job_detail", job_id, job_id)
    until_text(page, demo, shown, f"the straggler {task}")
    shoot(page, shots, "3-jobs")


def test_imbalance_view_shows_the_runaway_reducer(demo: Demo, page: Any, shots: Path) -> None:
    runaway = demo.fault("runaway_reducer")
    task, host = runaway["entity"]["task_id"], runaway["affected"]["host"][0]
    visit(page, demo.url + "imbalance", "Reducers and cluster load imbalance")
    # The runaway spins 3-10 minutes: Q6 (rising load while it runs) and Q7 (its own host the outlier) flag it while
    # it spins; Q5 (through an imbalance and back to balance) only once it has ended, after this test's limit.
    open_selected(page, demo, "imbalance", "Reducers and cluster load imbalance", "task", task, task)
    until_text(
        page,
        demo,
        re.escape(f"{task} on {host}: ") + r".*Q[567] \(confidence \d\.\d{3}\)",
        f"Q6 or Q7 on the runaway reducer {task}",
    )
    shoot(page, shots, "4-imbalance")
    print(
        f"\n[timing] imbalance on the dashboard {time.time() - float(demo.truth['window']['start']):.0f} s after "
        f"the cluster started"
    )


def test_overview_shows_the_imbalance_rounds_and_the_warnings(demo: Demo, page: Any, shots: Path) -> None:
    visit(page, demo.url, "Cluster overview")
    # The page draws top to bottom: wait for its last section too, not only the metric.
    text = until_text(
        page, demo, r"Imbalance rounds\s*\n\s*[1-9][\s\S]*Needs a look", "imbalance rounds on the overview"
    )
    assert "Load std-dev (latest)" in text and "Needs a look" in text
    assert re.search(r"Open alerts\s*\n\s*[1-9]", text), text
    page.locator(".vega-embed").first.wait_for()
    shoot(page, shots, "5-overview")


def test_alerts_view_shows_the_earliest_showcase_alert(demo: Demo, page: Any, shots: Path) -> None:
    """The first alert the guide announces (the runaway reducer's or the hung fetch's) is on the Alerts view, warning
    or worse, naming its entity, with Alertmanager's state beside it; the webhook got it too."""
    from app.demo import guide

    expected = guide.expected_alerts(demo.truth, guide.alerts_by_kind(ROOT / "queries" / "hadoop.yaml"))
    first = expected[0]
    assert first["kind"] in ("runaway_reducer", "hung_fetch") and first["rule"], expected
    rules = "(?:" + "|".join(map(re.escape, first["rule"])) + ")"
    pattern = re.compile(
        rf"(warning|critical)(?: · \w+)?\s*{rules} · [^\n]*{re.escape(first['entity'])}[^\n]*\n+([^\n]*)"
    )
    visit(page, demo.url + f"alerts?job={first['job_id']}", "Alerts")

    def shown() -> str | None:
        """The alert's line and the one below it: open (with Alertmanager's state), or resolved in the history."""
        history = page.get_by_text(re.compile(r"^Resolved alerts \(\d+\)$"))
        if history.count() and history.first.locator("xpath=ancestor::details[1]").get_attribute("open") is None:
            history.first.click()  # the collapsed history, opened (again, after a refresh redrew it)
            page.wait_for_timeout(500)
        found = pattern.search(main_text(page))
        return found.group(0) if found else None

    found = poll(shown, demo.remaining(), f"the {first['rule']} alert of {first['entity']} on the Alerts view")
    header = f"Alertmanager {demo.info['alertmanager']}:"

    def with_header() -> str | None:
        """The page once Streamlit has drawn Alertmanager's line too (a rerun can draw the alerts first)."""
        text = main_text(page)
        return text if header in text else None

    text = poll(with_header, 60, "Alertmanager's line on the Alerts view")
    assert "did not answer" not in text, text
    if "since" in found:  # still open: Alertmanager's state is shown beside it
        assert "Alertmanager: active" in found, found
    print(f"\n[alerts] the earliest showcase alert: {found.splitlines()[0]!r}")
    shoot(page, shots, "6-alerts")
    delivered = [json.loads(line) for line in (demo.root / "alerts.jsonl").read_text().splitlines()]
    assert any(
        a["labels"]["alertname"] in first["rule"] and a["labels"].get(first["label"]) == first["entity"]
        for a in delivered
    )  # the webhook got it too
    visit(page, demo.url + "alerts", "Alerts")  # all of them: which of the showcase's alerts are there by now
    page.get_by_text(re.compile(r"^Resolved alerts \(\d+\)$")).click()
    page.wait_for_timeout(1000)
    everything = main_text(page)
    assert "Alertmanager: active" in everything  # the open ones (a slow pull stays open 30 min): as Alertmanager says
    for e in expected:
        rules = "(?:" + "|".join(map(re.escape, e["rule"] or ["-"])) + ")"
        seen = re.search(rf"(warning|critical)(?: · \w+)?\s*{rules} · [^\n]*{re.escape(e['entity'])}", everything)
        print(
            f"\n[alerts] {e['rule']} of {e['entity']}: expected about "
            f"+{e['at'] - float(demo.truth['window']['start']):.0f} s, {'shown' if seen else 'not shown yet'}"
        )
    shoot(page, shots, "6b-alerts-all")


def test_queries_view_shows_the_pack_and_the_live_service(demo: Demo, page: Any, shots: Path) -> None:
    visit(page, demo.url + "queries", "Queries")
    # Streamlit draws a view top-down: wait for the service's row (Events / s) below the pack's, not just the first.
    text = until_text(page, demo, r"Runs alive\s*\n\s*\d[\s\S]*Events / s", "runs alive and the service's metrics")
    queries = sum(
        len(yaml.safe_load((ROOT / "queries" / f"{p}.yaml").read_text())["queries"]) for p in ("hadoop", "spark")
    )
    assert (
        f"Pack hadoop + spark ({queries} queries)" in text and "Partial matches shed" in text and "Events / s" in text
    )
    # The table lists every query of both packs (21 now), sorted; a virtualised grid draws only the rows in view.
    grid = until_text(page, demo, r"Q[1-7]\n", "the queries table", grid=True)
    assert sum(f"Q{i}" in grid for i in range(1, 8)) >= 3, grid
    shoot(page, shots, "7-queries")


def test_spark_view_shows_the_demo_application(demo: Demo, page: Any, shots: Path) -> None:
    """The PySpark application beside the cluster: its spilling stage and its skewed one, found by the Spark pack's
    own service at the pack's production gates, on the Spark view; the webhook got the alerts too."""
    assert demo.info["spark"] and {"spark", "spark_matches"} <= set(demo.info["topics"])
    visit(page, demo.url + "spark", "Spark applications")

    def left() -> float:
        return max(30.0, float(demo.truth["window"]["start"]) + SPARK_TIMEOUT - time.time())

    for rule, pattern in (
        ("StageSpill", r"StageSpill · stage \d+: app \S+ stage \d+ \(attempt 0\): [\d,]+ bytes"),
        ("StageSkew", r"StageSkew · stage \d+: .*slowest task ran \d+\.\d s"),
        ("TaskStraggler", r"TaskStraggler · stage \d+, executor driver: "),
    ):
        rx = re.compile(pattern)
        poll(lambda rx=rx: rx.search(main_text(page)) is not None, left(), f"the {rule} alert on the Spark view")
        print(
            f"\n[timing] {rule} on the Spark view {time.time() - float(demo.truth['window']['start']):.0f} s after "
            f"the cluster started"
        )
    until_text(page, demo, "hcep-demo-spark", "the demo's Spark application in the applications table", grid=True)
    shoot(page, shots, "8-spark")
    delivered = [json.loads(line) for line in (demo.root / "alerts.jsonl").read_text().splitlines()]
    assert {"StageSpill", "StageSkew"} <= {a["labels"]["alertname"] for a in delivered if a["labels"].get("app_id")}


def test_ctrl_c_stops_everything(demo: Demo) -> None:
    demo.note_processes()
    children = {pid for pid in demo.info["children"].values()}
    assert all(_alive(p) for p in demo.pids if p[0] in children)
    assert len(demo.pids) >= 10, demo.pids  # 5 children, Streamlit, ZooKeeper, the broker, gmond, gmetad, Alertmanager
    started = time.monotonic()
    demo.proc.send_signal(signal.SIGINT)
    code = demo.proc.wait(STOP_TIMEOUT)
    stopped = time.monotonic() - started
    text = demo.output()
    assert code == 0, text[-3000:]
    assert "stopping (SIGINT)" in text and "demo: stopped;" in text
    left = poll(lambda: not [p for p in demo.pids if _alive(p)] or None, 30, "every process to be gone", 0.5)
    assert left
    assert not [p for p in demo.pids if _alive(p)]
    with socket.socket() as s:  # nothing answers on the dashboard's port any more
        assert s.connect_ex(("127.0.0.1", int(demo.url.rsplit(":", 1)[1].strip("/")))) != 0
    print(f"\n[timing] stopped {stopped:.1f} s after SIGINT; whole demo test {time.monotonic() - demo.started:.0f} s")
