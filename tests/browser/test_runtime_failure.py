"""When Python cannot start, the page says why and keeps its pre-rendered charts.

The wasm request is held without an answer, as a host that stalls does; the client's stall limit (no
data for 15 s) must end the wait with a notice and a "Try again" button. Once the host answers
again, that button (pressed with the keyboard) starts Python and the controls come alive. The
page's clock (Playwright's, which runs at the real pace) jumps over the 15 s instead of waiting.
"""

from browser_helpers import Records, Site, assert_clean, wait_ready
from playwright.sync_api import BrowserContext, Route


def test_a_runtime_that_never_starts_ends_in_a_notice_and_the_charts_stay(context: BrowserContext, site: Site) -> None:
    held: list[Route] = []
    context.route("**/pyodide.asm.wasm*", lambda route: held.append(route))  # never answered
    context.clock.install()
    page = context.new_page()
    page.goto(site.url + site.pages_with('data-sim="')[0])
    for _ in range(300):  # until the worker asks for the wasm (the route answers in Playwright's waits)
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the wasm request never reached the route"
    assert page.evaluate("() => window.llmCourse.runtime.state") == "starting"
    page.clock.fast_forward(16_000)
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'failed'", timeout=30_000)
    figure = page.locator("figure.sim").first
    assert "no data for 15 s" in figure.locator(".sim-status").inner_text()
    assert figure.locator(".sim-chart .sim-static-chart").count() > 0
    assert figure.locator(".sim-field input").first.is_disabled()
    context.unroute("**/pyodide.asm.wasm*")
    for route in held:
        route.abort()
    retry = figure.locator(".sim-status button")
    assert retry.inner_text() == "Try again"
    retry.focus()
    page.keyboard.press("Enter")
    wait_ready(page)
    assert figure.locator(".sim-field input").first.is_enabled()
    assert page.evaluate("() => window.llmCourse.runtime.starts") == 2
    page.close()


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
