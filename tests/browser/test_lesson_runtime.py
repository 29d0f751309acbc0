"""A lesson page with simulators, in one tab: pre-rendered chart first, then the live runtime.

The tests run in file order on one page (one Pyodide start for the module); the round-trip and
time-limit tests add the few starts they are about.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from browser_helpers import ROOT, RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from playwright.sync_api import BrowserContext, Locator, Page

from simulators import api


@pytest.fixture(scope="module")
def sim_pages(site: Site) -> list[str]:
    pages = site.pages_with('data-sim="')
    assert len(pages) >= 2, "need two lesson pages with simulators"
    return pages


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site, sim_pages: list[str]) -> Page:
    tab = context.new_page()
    tab.goto(site.url + sim_pages[0])
    return tab


def numeric_figure(page: Page) -> Locator:
    """The first widget on the page with a number among its controls."""
    return page.locator("figure.sim:has(.sim-field input[inputmode=decimal])").first


def numeric_control(figure: Locator) -> tuple[dict, Locator]:
    """The first int/float parameter among the widget's controls, and its typed input."""
    schema = api.schemas()[figure.get_attribute("data-sim")]
    controls = json.loads(figure.get_attribute("data-controls"))
    param = next(p for p in schema["params"] if p["name"] in controls and p["type"] in ("int", "float"))
    widget = figure.get_attribute("data-widget")
    return param, figure.locator(f"#sim-{widget}-{param['name']}")


def other_value(param: dict, current: float) -> float:
    """A valid value clearly different from `current`: double it, or halve it near the top."""
    value = current * 2 if current * 2 <= param["max"] else current / 2
    value = max(value, param["min"])
    return int(round(value)) if param["type"] == "int" else value


def chart_state(figure: Locator) -> tuple[str, str]:
    """The points drawn (plotly's once live, else the build's answer behind the static chart) and the metrics."""
    data = figure.locator(".sim-chart").evaluate(
        "el => JSON.stringify((el.data ?? JSON.parse(el.closest('figure').dataset.answer).figure.data).map((t) => [t.x, t.y]))"
    )
    return data, "\n".join(figure.locator(".sim-metrics tbody, .sim-more-figures tbody").all_inner_texts())


def change_and_wait(figure: Locator, field: Locator, value: object) -> None:
    drawn = figure.get_attribute("data-drawn")
    field.fill(str(value))
    figure.page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )


def test_prerendered_chart_shows_before_the_runtime_is_ready(
    context: BrowserContext, site: Site, sim_pages: list[str]
) -> None:
    # A tab of its own where Python waits for the reader (the data saver is on: client.js starts
    # nothing until asked), so what the page shows without Python is seen, whatever the machine's speed.
    tab = context.new_page()
    cdp = context.new_cdp_session(tab)
    cdp.send("Emulation.setDataSaverOverride", {"dataSaverEnabled": True})
    tab.goto(site.url + sim_pages[0])
    tab.wait_for_selector("figure.sim .sim-chart .sim-static-chart")
    assert tab.evaluate("() => window.llmCourse.runtime.state") == "waiting"
    assert tab.locator("figure.sim .sim-metrics tbody tr").count() > 0
    assert tab.locator("figure.sim .sim-summary").first.inner_text().strip()
    tab.close()


def test_runtime_becomes_ready_once_and_enables_the_controls(page: Page) -> None:
    wait_ready(page)
    figure = numeric_figure(page)
    _, field = numeric_control(figure)
    assert field.is_enabled()
    assert page.evaluate("() => window.llmCourse.runtime.starts") == 1
    # Python came from the build's snapshot (test_failure_modes covers the fallback without it).
    assert page.evaluate("() => window.llmCourse.runtime.fromSnapshot") is True
    assert figure.locator(".sim-status progress").count() == 0


def test_changing_a_control_updates_chart_metrics_and_address(page: Page) -> None:
    figure = numeric_figure(page)
    param, field = numeric_control(figure)
    before = chart_state(figure)
    value = other_value(param, float(field.input_value()))
    change_and_wait(figure, field, value)
    after = chart_state(figure)
    assert after[0] != before[0] and after[1] != before[1]
    state = parse_qs(urlsplit(page.url).query)[f"sim-{figure.get_attribute('data-widget')}"][0]
    assert json.loads(state)[param["name"]] == value


def test_downloads_and_the_python_recipe_reproduce_the_scenario(page: Page) -> None:
    figure = numeric_figure(page)
    with page.expect_download() as csv_download:
        figure.get_by_role("button", name="Download data (CSV)").click()
    assert Path(csv_download.value.path()).read_text().startswith("series,x,y\n")
    with page.expect_download() as json_download:
        figure.get_by_role("button", name="Download data (JSON)").click()
    saved = json.loads(Path(json_download.value.path()).read_text())
    figure.locator(".sim-reproduce summary").click()
    command = figure.locator(".sim-reproduce code").first.inner_text()
    assert command.startswith(f"python -m simulators run {saved['simulator']} --set ")
    argv = [sys.executable, *shlex.split(command)[1:], "--json"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"] == saved["metrics"]


def test_an_invalid_typed_value_shows_the_message_next_to_the_field(page: Page) -> None:
    figure = numeric_figure(page)
    param, field = numeric_control(figure)
    valid = field.input_value()
    field.fill(str(param["max"] * 10 + 1))
    message = figure.locator(f"#{field.get_attribute('id')}-message")
    message.wait_for(state="visible")
    page.wait_for_function(
        "el => el.textContent.includes('must be between')", arg=message.element_handle(), timeout=RUNTIME_LIMIT_MS
    )
    assert field.get_attribute("aria-invalid") == "true"
    assert message.get_attribute("id") in field.get_attribute("aria-describedby")
    # The chart and figures stay as the last valid values drew them, and the status line says so.
    status = figure.locator(".sim-status")
    assert "still show the last values that ran" in status.inner_text()
    field.fill(valid)
    page.wait_for_function("el => el.textContent === ''", arg=message.element_handle(), timeout=RUNTIME_LIMIT_MS)
    assert field.get_attribute("aria-invalid") is None
    assert "still show the last values" not in status.inner_text()


# Records every run the page posts to its worker: [simulator, seed, kept in the session].
RECORD_RUNS = """
window.runsPosted = [];
const PageWorker = window.Worker;
window.Worker = class extends PageWorker {
  postMessage(message, ...rest) {
    if (message?.type === "run") window.runsPosted.push([message.name, message.seed, message.keep]);
    return super.postMessage(message, ...rest);
  }
};
"""


def test_the_address_reproduces_the_scenario_in_a_fresh_tab(page: Page, context: BrowserContext) -> None:
    figure = numeric_figure(page)
    shared, _ = chart_state(figure)
    fresh = context.new_page()
    fresh.add_init_script(RECORD_RUNS)
    fresh.goto(page.url)
    wait_ready(fresh)
    copy = numeric_figure(fresh)
    fresh.wait_for_function("el => el.dataset.drawn !== '0'", arg=copy.element_handle(), timeout=RUNTIME_LIMIT_MS)
    assert chart_state(copy)[0] == shared
    # Every widget warms up on its page's scenario exactly as its first change will find it (seed
    # 0, the reader's sample, kept in the session); further warm-up runs draw other samples (seeds
    # 1, 2, ...) and keep nothing, so the session still holds the reader's scenario.
    fresh.wait_for_function("() => window.llmCourse.runtime.background === 0", timeout=RUNTIME_LIMIT_MS)
    runs = fresh.evaluate("() => window.runsPosted")
    sims = fresh.evaluate("() => [...document.querySelectorAll('figure.sim')].map((f) => f.dataset.sim)")
    assert {name for name, seed, _ in runs if seed == 0} == set(sims), runs
    assert runs.count([copy.get_attribute("data-sim"), 0, True]) >= 2  # the address's scenario, then its warm-up
    assert all(keep == (seed == 0) for _, seed, keep in runs), runs
    # Every widget warms up, not only a simulator's first: up to WARM_UP_RUNS further runs, ended
    # early only by one longer than WARM_ENOUGH_MS (Python's own time, from the worker).
    source = (ROOT / "docs/assets/js/widgets.js").read_text()
    most, enough = (int(re.search(rf"const {name} = (\d+);", source)[1]) for name in ("WARM_UP_RUNS", "WARM_ENOUGH_MS"))
    timed: dict[str, list[tuple[int, int]]] = {}
    for key, seed, ms in fresh.evaluate("() => window.llmCourse.warmUps"):
        timed.setdefault(key.split("#")[-1], []).append((seed, ms))
    widgets = fresh.evaluate("() => [...document.querySelectorAll('figure.sim')].map((f) => f.dataset.widget)")
    assert set(timed) == set(widgets), timed
    for widget, done in timed.items():
        assert [seed for seed, _ in done] == list(range(len(done))), (widget, done)
        assert len(done) == 1 + most or done[-1][1] > enough, (widget, done)
        assert all(0 <= ms <= enough for _, ms in done[:-1]), (widget, done)
    fresh.close()


def test_an_unreadable_address_is_ignored_with_a_notice(
    context: BrowserContext, site: Site, sim_pages: list[str]
) -> None:
    tab = context.new_page()
    tab.goto(site.url + sim_pages[0])
    widget = tab.locator("figure.sim").first.get_attribute("data-widget")
    tab.goto(f"{site.url}{sim_pages[0]}?sim-{widget}=%7Bnot-json")
    notice = tab.locator("figure.sim .sim-notice").first
    notice.wait_for()
    assert "could not be read" in notice.inner_text()
    assert f"sim-{widget}" not in tab.url
    tab.close()


def test_instant_navigation_keeps_the_worker_and_the_charts(page: Page, sim_pages: list[str]) -> None:
    page.evaluate("() => { window.sameDocument = true; }")
    page.locator(f".md-nav a[href$='{sim_pages[1].split('/')[1]}/']").first.click()
    page.wait_for_url(f"**/{sim_pages[1]}")
    lesson_id = sim_pages[1].split("/")[1].split("-")[0]  # the URL changes before the content does
    page.wait_for_function("id => document.querySelector('.lesson-head')?.dataset.lesson === id", arg=lesson_id)
    page.wait_for_selector("figure.sim .sim-chart svg")  # static, or already live
    assert page.evaluate("() => window.sameDocument") is True, "instant navigation fell back to a full load"
    assert page.evaluate("() => window.llmCourse.runtime.starts") == 1
    rules = page.evaluate("() => document.getElementById('plotly.js-style-global').sheet.cssRules.length")
    assert rules > 0, "plotly's global style rules were lost"
    figure = numeric_figure(page)
    param, field = numeric_control(figure)
    field.wait_for(state="visible")
    page.wait_for_function("el => !el.disabled", arg=field.element_handle(), timeout=RUNTIME_LIMIT_MS)
    before = chart_state(figure)
    change_and_wait(figure, field, other_value(param, float(field.input_value())))
    assert chart_state(figure)[0] != before[0]


def test_a_run_past_the_time_limit_is_cancelled_and_the_worker_replaced(page: Page) -> None:
    figure = numeric_figure(page)
    param, field = numeric_control(figure)
    # The widgets' warm-up runs first (a run started under the 1 ms limit would be cancelled too).
    page.wait_for_function("() => window.llmCourse.runtime.background === 0", timeout=RUNTIME_LIMIT_MS)
    page.evaluate("() => { window.llmCourse.runtime.runLimitMs = 1; }")
    field.fill(str(other_value(param, float(field.input_value()))))
    status = figure.locator(".sim-status")
    page.wait_for_function(
        "el => el.textContent.includes('ran longer than')", arg=status.element_handle(), timeout=RUNTIME_LIMIT_MS
    )
    page.evaluate("() => { window.llmCourse.runtime.runLimitMs = 10000; }")
    wait_ready(page)
    assert page.evaluate("() => window.llmCourse.runtime.starts") == 2
    # The restart's own status messages did not wipe out why the chart did not change.
    assert "ran longer than" in status.inner_text()
    change_and_wait(figure, field, param["default"])


def test_no_request_left_the_site_and_no_error_happened(page: Page, records: Records) -> None:
    assert any("/pyodide.asm.wasm" in url for url in records.requests), "worker requests were not seen"
    assert_clean(records)
