"""A load-test widget's "Download GuideLLM report" button: Python makes the report in the page's
worker on click, and GuideLLM 0.8.1's own loader accepts the file."""

from pathlib import Path

from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from guidellm.benchmark import GenerativeBenchmarksReport
from playwright.sync_api import BrowserContext


def test_the_load_test_widget_downloads_a_report_guidellm_loads(
    context: BrowserContext, site: Site, records: Records, tmp_path: Path
) -> None:
    pages = site.pages_with('data-sim="load_test"')
    assert pages, "no lesson embeds load_test"
    page = context.new_page()
    page.goto(site.url + pages[0])
    wait_ready(page)
    figure = page.locator('figure.sim[data-sim="load_test"]').first
    widget = figure.get_attribute("data-widget")
    # A short run keeps the sweep (ten runs) quick in the page; the report follows the controls.
    field = figure.locator(f"#sim-{widget}-num_requests")
    drawn = figure.get_attribute("data-drawn")
    field.fill("20")
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    button = figure.get_by_role("button", name="Download GuideLLM report (JSON)")
    with page.expect_download(timeout=180_000) as download:
        button.click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    assert path.name == f"{widget}-guidellm-benchmarks.json"
    report = GenerativeBenchmarksReport.load_file(path)
    kinds = [b.config.strategy.type_ for b in report.benchmarks]
    assert kinds[:2] == ["synchronous", "throughput"] and len(kinds) == 10
    assert all(b.metrics.request_totals.total <= 20 for b in report.benchmarks)
    assert button.is_enabled() and button.inner_text() == "Download GuideLLM report (JSON)"
    page.close()
    assert_clean(records)
