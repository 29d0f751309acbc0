"""The "Why is my model slow?" page in real Chromium with real Pyodide: a command line typed in,
a real vLLM start-up log pasted and a real GuideLLM report picked; the ranked levers read back.
The pasted texts stay in the page (not in the address, no request carries them); a bad flag gets
a message on its field and the text the reader pasted is kept."""

from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, open_tool, redrawn
from playwright.sync_api import BrowserContext, Page, expect

DATA = Path(__file__).parent.parent / "data"
LOG = (DATA / "vllm_logs" / "llama31-8b-tp2.log").read_text()
REPORT = DATA / "guidellm" / "v0.6.0-mock-server.json"
COMMAND = (
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --tensor-parallel-size 2 "
    "--gpu-memory-utilization 0.95 --no-enable-prefix-caching"
)


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site) -> Page:
    return open_tool(context, site, "tools/diagnose/")


def test_a_command_line_a_log_and_a_report_give_the_ranked_levers(page: Page, records: Records) -> None:
    fig = page.locator("figure.sim").first
    command = fig.locator("#sim-diagnose-command")
    expect(command).to_be_enabled(timeout=RUNTIME_LIMIT_MS)
    sent_before = len(records.requests)
    with redrawn(page):
        command.fill(COMMAND)
    with redrawn(page):
        fig.get_by_label("vLLM start-up log: paste").fill(LOG)
    expect(fig.locator(".sim-summary")).to_contain_text("your log: 1,044,688")
    with redrawn(page):
        fig.locator("input[type=file]").nth(2).set_input_files(str(REPORT))  # config, log, report
    summary = fig.locator(".sim-summary")
    expect(summary).to_contain_text("Levers, ranked: 1. ")
    text = summary.inner_text()
    assert "--kv-cache-dtype fp8" in text and "lesson 03" in text
    names = page.evaluate("el => el.querySelector('.js-plotly-plot').data[0].y", fig.element_handle())
    assert "FP8 KV cache" in names
    # The texts pasted are not in the address, and no request went out with them.
    address = unquote_plus(page.url)
    assert "tensor-parallel-size 2" in address and '"log"' not in address and '"report"' not in address
    assert all("KV cache" not in url and "benchmarks" not in url for url in records.requests[sent_before:])


def test_a_bad_flag_is_named_on_its_field_and_the_paste_is_kept(page: Page) -> None:
    fig = page.locator("figure.sim").first
    command = fig.locator("#sim-diagnose-command")
    command.fill("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp two")
    expect(fig.locator(".sim-field-message").filter(has_text="-tp: 'two' is not a whole number")).to_be_visible(
        timeout=RUNTIME_LIMIT_MS
    )
    assert command.input_value().endswith("-tp two")
    assert fig.get_by_label("vLLM start-up log: paste").input_value() == LOG


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
