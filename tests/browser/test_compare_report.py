"""The "Compare with your benchmark" page in real Chromium with real Pyodide: a real GuideLLM
report picked with the file input is read in the page (no request carries it anywhere), drawn
over the simulated sweep, kept out of the address; a damaged file gets a message on the field."""

from pathlib import Path

import pytest
from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, open_tool, redrawn
from playwright.sync_api import BrowserContext, Page, expect

REPORT = Path(__file__).parent.parent / "data" / "guidellm" / "v0.6.0-mock-server.json"


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site) -> Page:
    return open_tool(context, site, "tools/compare-benchmark/")


def test_a_real_report_is_read_in_the_page_and_drawn_over_the_sweep(page: Page, records: Records) -> None:
    fig = page.locator("figure.sim").first
    file_input = fig.locator("input[type=file]")
    expect(file_input).to_be_enabled(timeout=RUNTIME_LIMIT_MS)
    sent_before = len(records.requests)
    with redrawn(page):
        file_input.set_input_files(str(REPORT))
    expect(fig.locator(".sim-summary")).to_contain_text("Your report (GuideLLM 0.6.0)")
    names = page.evaluate("el => el.querySelector('.js-plotly-plot').data.map(t => t.name)", fig.element_handle())
    assert any(n.startswith("Your report") for n in names) and any(n.startswith("Simulated") for n in names)
    assert any(n.startswith("Ceiling") for n in names)
    # The file's text is not in the address, and no request went out with it.
    assert "report" not in page.url
    assert all("benchmarks" not in url for url in records.requests[sent_before:])


def test_a_damaged_file_gets_a_message_on_its_field(page: Page, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": []}')
    fig = page.locator("figure.sim").first
    fig.locator("input[type=file]").set_input_files(str(bad))
    expect(fig.locator(".sim-field-message").filter(has_text="not a GuideLLM report")).to_be_visible(
        timeout=RUNTIME_LIMIT_MS
    )


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
