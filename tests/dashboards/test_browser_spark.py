"""The Spark view as an operator sees it: ``hcep dashboard`` on real Spark event logs with planted problems
(``spark_fixture``: the collected events, the Spark pack's records and alerts), in Debian's Chromium driven by
Playwright.  The view must show the planted skew (the slowed task's stage first, with its alerts), the spill and the
lost executor; the Queries view both packs side by side."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_browser, screenshot_dir, served_dashboard
from tests.dashboards import spark_fixture
from tests.dashboards.test_browser import grid_text, pack_size, shoot, text_of, visit
from tests.queries.spark_pack.conftest import manifest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    data = spark_fixture.build(tmp_path_factory.mktemp("spark-served"))
    packs = ["--pack", str(ROOT / "queries" / "hadoop.yaml"), "--pack", str(ROOT / "queries" / "spark.yaml")]
    with served_dashboard(["--data", str(data), "--refresh", "0", *packs]) as url:
        yield url


@pytest.fixture(scope="module")
def page(served: str) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = chromium.new_context(viewport={"width": 1400, "height": 1800})
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        try:
            yield pg
        finally:
            context.close()
            chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = screenshot_dir(tmp_path_factory, "spark-screenshots")
    yield path
    print(f"\nSpark view screenshots: {path}")


def test_spark_view_shows_the_planted_skew_and_spill(served: str, page, shots: Path) -> None:
    local = manifest("local")["app_id"]
    slow = spark_fixture.planted_stage("local", "slow")
    visit(page, served + f"spark?app={local}", "Spark applications")
    page.locator("h3", has_text="Stages").wait_for()
    body = text_of(page)
    # The slowed task: its stage's skew alert and its straggler alert, found when the task ended.
    assert re.search(
        rf"StageSkew · stage {slow}: app {local} stage {slow} \(attempt 0\): slowest task ran [\d.]+ s, "
        r"[\d.]+x the median",
        body,
    ), body[:3000]
    assert re.search(rf"TaskStraggler · stage {slow}, executor driver: .* task 3 on executor driver", body)
    assert re.search(r"StageSpill · stage \d+: .* bytes of memory spilled", body)
    assert "ShuffleFetchStraggler" not in body  # the other application's
    stages = grid_text(page, 1)
    assert local in stages and "StageSkew" in stages and "StageSpill" in stages
    page.locator(".vega-embed").first.wait_for()
    shoot(page, shots, "spark-local")


def test_spark_view_shows_the_lost_executor_and_the_stalled_fetch(served: str, page, shots: Path) -> None:
    cluster = manifest("cluster")["app_id"]
    visit(page, served + f"spark?app={cluster}", "Spark applications")
    page.locator("h3", has_text="Executors lost and stage retries").wait_for()
    body = text_of(page)
    assert re.search(r"ExecutorLostInStage · stage \d+, executor \d+: .*Command exited with code 137", body)
    assert re.search(r"ShuffleFetchStraggler · stage \d+, executor \d+: .* waited [\d.]+ s on shuffle fetches", body)
    assert "StageGcPressure" in body and "StageRetried" in body
    shoot(page, shots, "spark-cluster")


def test_queries_view_lists_both_packs(served: str, page, shots: Path) -> None:
    visit(page, served + "queries", "Queries")
    page.get_by_text(f"Pack hadoop + spark ({pack_size('hadoop.yaml', 'spark.yaml')} queries)").wait_for()
    grid_text(page)  # the table is drawn (it renders only its visible rows: the names are checked in the text below)
    body = text_of(page)  # each query's text box is titled "<name>: <description>"
    assert all(f"{q}:" in body for q in ("Q1", "RunawayHost", "StageDone", "SlowTask", "ExecutorLost"))
    shoot(page, shots, "spark-queries")
