"""Failure stays visible and local: start-up failures, foreign page addresses, corrupt progress.

Complements test_runtime_failure.py (a wasm request never answered) and test_lesson_runtime.py
(unreadable JSON in the address; a run past the time limit is cancelled, the worker replaced and
the next run works): here the wasm answers 404 or with the wrong type, the address holds state
of the wrong shape, for unknown parameters or out of range, and saved progress has the wrong shape.
Pages that need no Python hold the wasm request unanswered, so no start-up competes for the CPU.
"""

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, wait_ready
from playwright.sync_api import BrowserContext, Page, Route

from simulators import api

STARTUP_LIMIT_S = 15
PROGRESS_KEY = "llm-course:progress:v1"


def hold_wasm(page: Page) -> list[Route]:
    held: list[Route] = []
    page.route("**/pyodide.asm.wasm*", lambda route: held.append(route))
    return held


def test_a_missing_or_mistyped_wasm_ends_in_a_notice_within_the_limit_and_the_charts_stay(
    context: BrowserContext, site: Site
) -> None:
    """Both at once, in two tabs: 404, and (no gzip copy, then) the right bytes served as text/plain
    (Pyodide would wait forever without an error: the worker checks the type)."""
    url = site.url + site.pages_with('data-sim="')[0]
    missing, mistyped = context.new_page(), context.new_page()
    missing.route("**/pyodide.asm.wasm*", lambda r: r.fulfill(status=404, body="not found", content_type="text/plain"))

    def wrong_type(route: Route) -> None:
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-type": "text/plain"})

    # The worker fetches the build's gzip copy and types it itself; a host without that copy sends
    # the .wasm, whose type must then be right.
    mistyped.route(
        "**/pyodide.asm.wasm.gz", lambda r: r.fulfill(status=404, body="not found", content_type="text/plain")
    )
    mistyped.route("**/pyodide.asm.wasm", wrong_type)
    for page in (missing, mistyped):
        page.goto(url)
    for page in (missing, mistyped):
        started = page.evaluate("() => window.llmCourse.runtime.startedAt")
        page.wait_for_function(
            "() => window.llmCourse.runtime.state === 'failed'", timeout=(STARTUP_LIMIT_S + 15) * 1000
        )
        failed_after = page.evaluate("() => performance.now()") - started
        assert failed_after <= (STARTUP_LIMIT_S + 3) * 1000, failed_after
        figure = page.locator("figure.sim").first
        status = figure.locator(".sim-status").inner_text()
        assert "Python runtime" in status and "pre-computed results" in status, status
        assert (
            page.locator("figure.sim .sim-chart:has(.sim-static-chart)").count() == page.locator("figure.sim").count()
        )
        assert figure.locator(".sim-field input").first.is_disabled()
        page.close()


def test_a_corrupt_snapshot_falls_back_to_starting_python_from_scratch(context: BrowserContext, site: Site) -> None:
    """The build's start-up snapshot saves seconds but is not needed: a broken one (truncated by a
    host, say) costs only that time. The runtime still starts, and runs answer."""
    url, widget, param = first_widget(site)
    page = context.new_page()
    page.goto(site.url)  # a page without Python: forget the good copy earlier tests left in the cache
    page.evaluate("() => caches.delete('llm-course-python-snapshot')")
    page.route(
        "**/generated/python-*.snapshot",
        lambda r: r.fulfill(
            status=200, body=b"\x1f\x8b\x08\x00" + b"\x00" * 60, content_type="application/octet-stream"
        ),
    )
    page.goto(site.url + url)
    wait_ready(page)
    assert page.evaluate("() => window.llmCourse.runtime.fromSnapshot") is False
    figure = page.locator(f"figure#sim-{widget}")
    field = figure.locator(f"#sim-{widget}-{param['name']}")
    page.wait_for_function("el => !el.disabled", arg=field.element_handle(), timeout=RUNTIME_LIMIT_MS)
    drawn = figure.get_attribute("data-drawn")
    field.fill(str(param["min"]))
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    assert field.get_attribute("aria-invalid") is None
    page.close()


def test_the_inflated_snapshot_is_kept_and_a_damaged_copy_is_replaced(context: BrowserContext, site: Site) -> None:
    """A returning reader restores the snapshot from Cache Storage (no inflating); a damaged cached
    copy is dropped and fetched again, and the runtime still starts from the snapshot."""
    url = site.url + first_widget(site)[0]
    page = context.new_page()
    page.goto(url)
    wait_ready(page)
    cached = "() => caches.open('llm-course-python-snapshot').then((c) => c.keys()).then((k) => k.map((r) => r.url))"
    [key] = poll(page, cached, lambda keys: len(keys) == 1)  # the worker stores it after starting
    config = json.loads(page.locator("#course-runtime").text_content())
    assert key.endswith(f"/assets/generated/{config['snapshot']}")
    page.evaluate(
        "(key) => caches.open('llm-course-python-snapshot').then((c) => c.put(key, new Response('damaged')))", key
    )
    page.reload()
    wait_ready(page)
    assert page.evaluate("() => window.llmCourse.runtime.fromSnapshot") is True
    stored = f"async () => {{ const r = await (await caches.open('llm-course-python-snapshot')).match({json.dumps(key)}); return r ? (await r.arrayBuffer()).byteLength : 0; }}"
    poll(page, stored, lambda size: size > 1e6)  # the good copy replaced the damaged one
    page.close()


def poll(page: Page, script: str, done: Callable[[Any], bool]) -> Any:
    """Evaluate an async `script` until `done` accepts its value (wait_for_function would take
    the promise itself for a truthy answer)."""
    deadline = time.monotonic() + RUNTIME_LIMIT_MS / 1000
    while not done(value := page.evaluate(script)):
        assert time.monotonic() < deadline, f"still {value!r}"
        page.wait_for_timeout(200)
    return value


def test_a_reader_run_goes_before_waiting_background_runs(context: BrowserContext, site: Site) -> None:
    """The widgets warm the runtime up with background runs after start-up; a reader's run queued
    behind them is answered first (after at most the one already running)."""
    url, _, _ = first_widget(site)
    page = context.new_page()
    page.goto(site.url + url)
    wait_ready(page)
    page.wait_for_function("() => window.llmCourse.runtime.background === 0", timeout=RUNTIME_LIMIT_MS)
    order = page.evaluate(
        """async (client) => {
             const { run } = await import(client);  // the page's own module instance
             const order = [];
             const jobs = [0, 1, 2].map((i) => run(`bg${i}`, "kv_cache", {}, { background: true }).then(() => order.push(`bg${i}`)));
             jobs.push(run("reader", "kv_cache", { context_tokens: 4096 }).then(() => order.push("reader")));
             await Promise.all(jobs);
             return order;
           }""",
        site.url + "assets/js/client.js",
    )
    assert sorted(order) == ["bg0", "bg1", "bg2", "reader"]
    assert order.index("reader") <= 1, order
    page.close()


def first_widget(site: Site) -> tuple[str, str, dict]:
    """(page, widget id, a numeric parameter among its controls) of the first lesson widget."""
    url = site.pages_with('data-sim="')[0]
    text = (site.dir / url / "index.html").read_text(encoding="utf-8")
    start = text.index('<figure class="sim"')
    tag = text[start : text.index(">", start)]
    widget = tag.split('data-widget="')[1].split('"')[0]
    name = tag.split('data-sim="')[1].split('"')[0]
    controls = json.loads(tag.split('data-controls="')[1].split('"')[0].replace("&quot;", '"'))
    param = next(p for p in api.schema(name)["params"] if p["name"] in controls and p["type"] in ("int", "float"))
    return url, widget, param


@pytest.mark.parametrize(
    "state",
    ["[1, 2]", "null", '"text"', '{"colour": 1}', "%E0%A4%A", '{"__proto__": {"x": 1}}'],
    ids=["array", "null", "string", "unknown-parameter", "broken-percent-encoding", "proto"],
)
def test_foreign_state_in_the_address_is_ignored_with_a_notice(context: BrowserContext, site: Site, state: str) -> None:
    url, widget, _ = first_widget(site)
    page = context.new_page()
    hold_wasm(page)
    raw = state if state.startswith("%") else quote(state)
    page.goto(f"{site.url}{url}?sim-{widget}={raw}&sim-no-such-widget=1&utm_source=x")
    figure = page.locator(f"figure#sim-{widget}")
    figure.locator(".sim-notice").wait_for()
    assert "could not be read" in figure.locator(".sim-notice").inner_text()
    assert f"sim-{widget}=" not in page.url, "the unreadable state stayed in the address"
    assert page.locator("figure.sim .sim-chart:has(.sim-static-chart)").count() == page.locator("figure.sim").count()
    page.close()


def test_state_out_of_range_falls_back_to_the_page_scenario_with_a_notice(context: BrowserContext, site: Site) -> None:
    url, widget, param = first_widget(site)
    page = context.new_page()
    state = quote(json.dumps({param["name"]: param["max"] * 10 + 1}))
    page.goto(f"{site.url}{url}?sim-{widget}={state}")
    wait_ready(page)
    figure = page.locator(f"figure#sim-{widget}")
    page.wait_for_function(
        "el => el.querySelector('.sim-notice') && el.dataset.drawn !== undefined && el.dataset.drawn !== '0'",
        arg=figure.element_handle(),
        timeout=RUNTIME_LIMIT_MS,
    )
    assert "could not be read" in figure.locator(".sim-notice").inner_text()
    field = figure.locator(f"#sim-{widget}-{param['name']}")
    assert float(field.input_value()) <= param["max"]
    assert field.get_attribute("aria-invalid") is None
    assert f"sim-{widget}=" not in page.url
    page.close()


def test_an_error_on_a_setting_the_widget_does_not_show_names_that_setting(context: BrowserContext, site: Site) -> None:
    """Learner review (lesson 00.1): Llama-3.1-405B on one H100 said "use more GPUs or a smaller format"
    with no full stop and no tensor-parallel control to use; the status line names the setting."""
    page = context.new_page()
    page.goto(site.url + "lessons/00.1-autoregressive-generation/")
    wait_ready(page)
    figure = page.locator("figure#sim-timeline")
    figure.locator("#sim-timeline-model").select_option("llama-3.1-405b")
    status = figure.locator(".sim-status")
    page.wait_for_function(
        "el => el.textContent.includes('still show')", arg=status.element_handle(), timeout=RUNTIME_LIMIT_MS
    )
    text = status.inner_text()
    page.close()
    assert "a smaller format. (Tensor parallel is not among this widget's controls.) The chart" in text, text


@pytest.mark.parametrize(
    "saved",
    [
        "[]",
        '"progress"',
        "42",
        '{"completed": 5, "answers": {}, "last": null}',
        '{"completed": {}, "answers": [], "last": 7}',
    ],
    ids=["array", "string", "number", "completed-not-a-map", "answers-not-a-map"],
)
def test_saved_progress_of_the_wrong_shape_is_ignored_with_a_notice(
    context: BrowserContext, site: Site, saved: str
) -> None:
    page = context.new_page()
    page.goto(site.url)
    page.evaluate("([key, value]) => localStorage.setItem(key, value)", [PROGRESS_KEY, saved])
    page.reload()
    assert "could not be read" in page.locator(".course-notice").inner_text()
    assert page.locator("[data-course-completed]").inner_text() == "0"
    page.evaluate("() => localStorage.clear()")
    page.close()


def test_a_lesson_with_unreadable_progress_still_marks_itself_complete(context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    hold_wasm(page)
    url = site.url + site.pages_with('data-sim="')[0]
    page.goto(url)
    page.evaluate("(key) => localStorage.setItem(key, '{\"completed\": [1]')", PROGRESS_KEY)
    page.reload()
    assert "could not be read" in page.locator(".course-notice").inner_text()
    button = page.locator(".lesson-complete-button")
    button.click()
    assert button.get_attribute("aria-pressed") == "true"
    saved = json.loads(page.evaluate("(key) => localStorage.getItem(key)", PROGRESS_KEY))
    assert list(saved["completed"]) != []
    page.evaluate("() => localStorage.clear()")
    page.close()


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    """The 404 above is the one error the browser may log (it reports the failed resource itself)."""
    assert records.requests and records.foreign == []
    unexpected = [e for e in records.errors if "status of 404" not in e]
    assert unexpected == []
