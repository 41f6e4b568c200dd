"""The dashboard as an operator sees it: ``hcep dashboard`` on the fixture data, driven in Debian's Chromium by
Playwright.  Each view must show its planted anomaly; a screenshot of each is saved (``$HCEP_SCREENSHOTS`` or a
pytest tmp dir, printed at the end).

Chromium is the system's ``/usr/bin/chromium`` (``deploy/dashboard/install.sh``), never a browser Playwright
downloads.  Without it (or without the ``playwright`` package) the tests skip -- except under ``CI=true``, where that
is an install bug and fails.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_browser, screenshot_dir, served_dashboard
from tests.dashboards.fixture import IMBALANCE_TASK, OTHER_JOB, SLOW_PULL_TASK, STRAGGLER_JOB, STRAGGLER_MAPPER

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 30_000
REFRESH_S = 2


def pack_size(*names: str) -> int:
    """How many queries the named pack files of ``queries/`` hold, read from the files themselves (a rule added to a
    pack must not break the views' tests)."""
    return sum(len(yaml.safe_load((ROOT / "queries" / name).read_text())["queries"]) for name in names)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = screenshot_dir(tmp_path_factory, "screenshots")
    yield path
    print(f"\ndashboard screenshots: {path}")


@pytest.fixture(scope="module")
def served(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """``hcep dashboard`` on a copy of the fixture data (the tests append to it), on a free loopback port:
    (URL, data dir, acks file)."""
    require_browser()
    data = tmp_path_factory.mktemp("served-data")
    for file in [*data_dir.glob("*.jsonl"), data_dir / "hcep.sqlite"]:
        shutil.copyfile(file, data / file.name)
    shutil.copytree(data_dir / "history", data / "history")
    acks = data / "acks.json"
    args = ["--data", str(data), "--acks", str(acks), "--refresh", str(REFRESH_S)]
    with served_dashboard(args) as url:
        yield url, data, acks


@pytest.fixture(scope="module")
def browser(served: tuple[str, Path, Path]) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def page(browser):
    """One tab for the module: the app's scripts load once (a fresh load costs seconds on two cores)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1700})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    context.close()


def visit(page, url: str, heading: str):
    page.goto(url)
    page.locator("h1", has_text=heading).wait_for()
    return page


def settle(page) -> None:
    """Wait until charts and tables have drawn, so the screenshot shows them."""
    page.wait_for_load_state("networkidle")
    for chart in page.locator(".vega-embed").all():  # (those in a closed expander are drawn, but hidden)
        chart.locator("canvas, svg").first.wait_for(state="attached")
    for table in page.locator('[data-testid="stDataFrame"]').all():
        if table.is_visible():  # (those in a closed expander are not drawn)
            table.locator("canvas").first.wait_for(state="attached")
    page.wait_for_timeout(300)


def shoot(page, shots: Path, name: str) -> Path:
    settle(page)
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path


def text_of(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def grid_text(page, index: int = 0) -> str:
    """The cells of a table (a canvas; its accessible copy in the DOM holds the text)."""
    grid = page.locator('[data-testid="stDataFrame"]').nth(index)
    grid.locator('[role="gridcell"]').first.wait_for(state="attached")
    return grid.text_content() or ""


def test_overview_lists_the_open_warnings_and_links_to_them(served, page, shots: Path) -> None:
    url = served[0]
    visit(page, url, "Cluster overview")
    link = page.get_by_text(f"HungFetch (warning): HungFetch of {SLOW_PULL_TASK}")
    link.wait_for()
    page.locator(".vega-embed").first.wait_for()
    body = text_of(page)
    assert "Imbalance rounds" in body and "Open alerts" in body
    assert "MapDataSkewDone (info)" not in body  # info alerts do not need a look
    shoot(page, shots, "1-overview")
    link.click()
    page.wait_for_url(re.compile(r"/stragglers\?.*task=" + SLOW_PULL_TASK))
    page.locator("h1", has_text="Straggling shuffle pulls").wait_for()


def test_jobs_view_shows_the_straggling_mapper(served, page, shots: Path) -> None:
    visit(page, served[0] + "jobs", "Jobs: task skew")
    page.get_by_text(f"Slowest: {STRAGGLER_MAPPER} on worker-04").wait_for()
    assert STRAGGLER_JOB in grid_text(page)
    page.locator("h3", has_text="History (Spark)").wait_for()
    assert "MODERATE" in grid_text(page, 2)  # the archive's skew verdict of the straggling job's mappers
    shoot(page, shots, "2-jobs")


def test_stragglers_view_shows_the_slow_pull(served, page, shots: Path) -> None:
    visit(page, served[0] + f"stragglers?task={SLOW_PULL_TASK}", "Straggling shuffle pulls")
    page.locator("h3", has_text=f"Reducer {SLOW_PULL_TASK}").wait_for()
    body = text_of(page)
    assert "Slow pull: 5.6 s" in body and "worker-03" in body and "worker-02" in body
    assert f"HungFetch {SLOW_PULL_TASK}" in body and "SlowNode host" in body  # the fixture store's alerts
    assert SLOW_PULL_TASK in grid_text(page)
    shoot(page, shots, "3-stragglers")


def test_queuing_view_shows_the_backlog(served, page, shots: Path) -> None:
    visit(page, served[0] + "queuing", "Queued map output")
    page.get_by_text(f"Largest backlog: 138.2 MiB in {STRAGGLER_JOB}").wait_for()
    shoot(page, shots, "4-queuing")


def test_imbalance_view_shows_the_reducer_and_its_confidence(served, page, shots: Path) -> None:
    visit(page, served[0] + "imbalance", "Reducers and cluster load imbalance")
    page.get_by_text(re.compile(re.escape(IMBALANCE_TASK) + r" on worker-02: Q5 \(confidence 1\.000\)")).wait_for()
    assert IMBALANCE_TASK in grid_text(page)
    assert f"RunawayReducer {IMBALANCE_TASK} on worker-02" in text_of(page)  # the fixture store's alert
    shoot(page, shots, "5-imbalance")


def test_queries_view_lists_the_pack(served, page, shots: Path) -> None:
    visit(page, served[0] + "queries", "Queries")
    page.get_by_text(f"Pack hadoop ({pack_size('hadoop.yaml')} queries)").wait_for()  # the default pack
    grid_text(page)  # the table is drawn (it renders only its visible rows: the names are checked in the text below)
    body = text_of(page)  # each query's text box is titled "<name>: <description>"
    assert all(f"{q}:" in body for q in ("Q1", "Q3", "Q5", "Q6", "HeldOutputLate", "SlowHost"))
    shoot(page, shots, "7-queries")


def test_job_filter_from_the_url_narrows_the_alerts(served, page, shots: Path) -> None:
    visit(page, served[0] + f"alerts?job={OTHER_JOB}", "Alerts")
    page.get_by_text(f"Filters: window all, job {OTHER_JOB}").wait_for()
    page.get_by_text(re.compile(r"critical · severe\s*ReduceDataSkew · " + OTHER_JOB)).wait_for()
    body = text_of(page)
    assert SLOW_PULL_TASK not in body and "MapDataSkewDone" not in body  # another job's; and an info alert
    page.get_by_text("Rule and evidence: ReduceDataSkew").click()
    page.get_by_text("The match record (from matches.jsonl):").wait_for()
    shoot(page, shots, "6-alerts")


def test_new_matches_appear_without_a_reload(served, page) -> None:
    url, data, _ = served
    visit(page, url + "stragglers", "Straggling shuffle pulls")
    page.get_by_text("Straggling pulls").wait_for()
    record = {
        "query": "Q3",
        "match": {"a": ["x-a"], "b": ["x-b"], "c": ["x-c"]},
        "confidence": 1.0,
        "start": 1_700_087_000.0,
        "end": 1_700_087_080.0,
        "return": {"task_id": "task_1700000000000_0009_r_000007", "period": 42.0},
    }
    (data / "late.jsonl").write_text(json.dumps(record) + "\n")
    page.get_by_text("task_1700000000000_0009_r_000007").first.wait_for(state="attached", timeout=REFRESH_S * 10_000)


def test_acknowledging_all_alerts_in_the_browser(served, page, shots: Path) -> None:
    url, _, acks = served
    visit(page, url + "alerts", "Alerts")
    button = page.get_by_role("button", name=re.compile(r"Acknowledge all \d+ shown"))
    button.click()
    page.get_by_text("No open").or_(page.get_by_role("button", name="Acknowledge all 0 shown")).first.wait_for()
    assert json.loads(acks.read_text()), "no acknowledgement written"
    shoot(page, shots, "8-alerts-acknowledged")
