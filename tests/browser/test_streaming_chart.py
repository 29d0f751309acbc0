"""A sweep chart streams in the browser: its points are drawn as the worker computes them.

Lesson 11's knee widget sweeps 13 simulated runs; after a change, the worker posts each growing
chart before the answer (api.Session.run_json_stream). The page draws them while the chart is
busy, then the answer: its chart must be the one CPython computes for the same scenario.
"""

import json

from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from playwright.sync_api import BrowserContext

from simulators import api

# Records, on each redraw of the widget (data-partial: a partial chart; data-drawn: the answer),
# the attribute and the number of points plotly then holds.
WATCH = """
(figure) => {
  window.streamed = [];
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      const points = figure.querySelector('.sim-chart').data.reduce((n, t) => n + (t.x?.length ?? 0), 0);
      window.streamed.push([m.attributeName, points]);
    }
  }).observe(figure, { attributes: true, attributeFilter: ['data-partial', 'data-drawn'] });
}
"""


def _change_and_watch(context: BrowserContext, site: Site, path: str, widget: str, watch: str, field: str, value: str):
    """Open `path`, record the widget's redraws with `watch`, set `field` to `value` and wait for
    the answer: (page, figure, scenario after the change, recorded redraws)."""
    page = context.new_page()
    page.goto(site.url + path)
    wait_ready(page)
    page.wait_for_function("() => window.llmCourse.chartsLive", timeout=RUNTIME_LIMIT_MS)
    figure = page.locator(f"figure#sim-{widget}")
    figure.evaluate(watch)
    values = {**json.loads(figure.get_attribute("data-params")), field: json.loads(value)}
    drawn = figure.get_attribute("data-drawn")
    figure.locator(f"#sim-{widget}-{field}").fill(value)
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    return page, figure, values, page.evaluate("() => window.streamed")


def _shows_cpython_answer(figure, sim: str, values: dict) -> None:
    view = values.pop("view", None)
    expected = json.loads(api.run_json(sim, json.dumps(values), 0, view))["figure"]["data"]
    shown = figure.locator(".sim-chart").evaluate("el => el.data.map((t) => [t.x, t.y])")
    assert shown == [[t["x"], t["y"]] for t in expected]
    assert figure.locator(".sim-chart").get_attribute("aria-busy") is None  # no longer busy


def test_a_sweep_is_drawn_point_by_point_and_ends_on_the_whole_answer(
    context: BrowserContext, site: Site, records: Records
) -> None:
    lesson = next(p for p in site.pages_with('data-sim="load_test"') if "/11-" in p)
    page, figure, values, streamed = _change_and_watch(context, site, lesson, "knee", WATCH, "num_requests", "400")
    partial = [n for what, n in streamed if what == "data-partial"]
    assert streamed[-1][0] == "data-drawn" and partial, streamed  # partial charts came first
    assert all(a <= b for a, b in zip(partial, partial[1:], strict=False)) and partial[0] < streamed[-1][1]
    _shows_cpython_answer(figure, "load_test", values)
    page.close()
    assert_clean(records)


TITLES = """
(figure) => {
  window.streamed = [];
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      window.streamed.push([m.attributeName, figure.querySelector('.sim-chart').layout.title.text]);
    }
  }).observe(figure, { attributes: true, attributeFilter: ['data-partial', 'data-drawn'] });
}
"""


def test_the_cheapest_search_is_drawn_as_it_goes_and_ends_on_the_whole_answer(
    context: BrowserContext, site: Site, records: Records
) -> None:
    """A tighter TTFT target makes the planner confirm some 30 layouts with the engine; the chart
    shows the lower bounds and the rows found while it does, then the answer CPython computes."""
    page, figure, values, streamed = _change_and_watch(
        context, site, "tools/roofline-planner/", "planner-cheapest", TITLES, "ttft_slo_s", "0.06"
    )
    partial = [title for what, title in streamed if what == "data-partial"]
    assert streamed[-1][0] == "data-drawn" and partial, streamed
    assert all("searching" in t for t in partial) and "searching" not in streamed[-1][1]
    _shows_cpython_answer(figure, "cheapest", values)
    page.close()
    assert_clean(records)


def test_an_engine_run_is_drawn_while_it_goes_and_ends_on_the_whole_answer(
    context: BrowserContext, site: Site, records: Records
) -> None:
    """Lesson 05's batching widget serves its trace twice (static, then continuous): the static run
    is drawn once while it goes, a quarter of its requests done (engine.cluster.serve_shown), then
    each whole run, and the last chart is the one CPython computes."""
    page, figure, values, streamed = _change_and_watch(
        context, site, "lessons/05-continuous-batching/", "main", TITLES, "num_requests", "400"
    )
    partial = [title for what, title in streamed if what == "data-partial"]
    assert streamed[-1][0] == "data-drawn" and partial, streamed
    assert "simulating: 100 of 400" in partial[0].replace("<br>", " ")
    assert not [t for t in partial[1:] + [streamed[-1][1]] if "simulating" in t]
    _shows_cpython_answer(figure, "batching", values)
    page.close()
    assert_clean(records)
