"""Accessibility on every page: axe-core in both palettes, keyboard, text alternatives, motion.

axe-core comes from npm (package.json; the site never loads it) and is evaluated in the page.
Every page is audited with its widgets live (controls enabled, charts drawn), which is also where
every simulator block of every page is seen to go live.
"""

import json

import pytest
from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from crawl import all_pages, axe_violations, go, settle
from playwright.sync_api import BrowserContext, Page

from simulators import api

SCHEMES = {"light": "default", "dark": "slate"}


# Per page: its widgets, those live, and the enabled controls they show.
WIDGETS = """() => ({
  widgets: document.querySelectorAll("figure.sim").length,
  live: document.querySelectorAll("figure.sim.sim-live").length,
  disabled: document.querySelectorAll("figure.sim .sim-field :is(input, select):disabled").length,
  controls: document.querySelectorAll("figure.sim .sim-field :is(input, select)").length,
})"""


@pytest.mark.parametrize("palette", SCHEMES)
def test_axe_finds_no_serious_or_critical_violation_on_any_page(
    context: BrowserContext, site: Site, palette: str
) -> None:
    """Every page audited with its widgets live, and every widget of every page seen going live
    (controls enabled, chart drawn). The crawl moves by instant navigation, as a reader does, so
    Python starts once for all of it (test_visual.py loads every page in full and sees each one
    start the runtime itself)."""
    page = context.new_page()
    page.emulate_media(color_scheme=palette)
    page.goto(site.url)  # forget a palette saved by an earlier page, so the media query decides
    page.evaluate(
        "() => Object.keys(localStorage).filter((k) => k.endsWith('__palette')).forEach((k) => localStorage.removeItem(k))"
    )
    page.reload()
    found, widget_pages, controls = [], 0, 0
    pages = all_pages(site)
    assert len(pages) >= 25, pages
    for url in pages:
        go(page, site, url)
        settle(page)
        assert page.evaluate("() => document.body.dataset.mdColorScheme") == SCHEMES[palette]
        widgets = page.evaluate(WIDGETS)
        assert widgets["live"] == widgets["widgets"] and widgets["disabled"] == 0, f"{url}: {widgets}"
        widget_pages += widgets["widgets"] > 0
        controls += widgets["controls"]
        found += [f"{url or 'home'}: {v}" for v in axe_violations(page)]
    starts = page.evaluate("() => window.llmCourse.runtime.starts")
    page.close()
    # 14 lessons, the frontier pages and the tools embed simulators; the selector finds controls.
    assert widget_pages >= 20 and controls >= 100, (widget_pages, controls)
    assert starts == 1, "the crawl left instant navigation"
    assert found == [], "\n".join(found)


def _axis_title(layout: dict, trace: dict, axis: str) -> str:
    title = layout.get(f"{axis}axis{trace.get(f'{axis}axis', axis)[1:]}", {}).get("title")
    return (title if isinstance(title, str) else (title or {}).get("text")) or axis


def test_every_simulator_chart_has_words_and_a_data_table(context: BrowserContext, site: Site) -> None:
    """For one widget of each simulator: the chart names itself, points at its summary in words,
    and a "Data table" toggle shows the plotted numbers as tables."""
    page = context.new_page()
    checked: set[str] = set()
    for url in all_pages(site):
        if checked == set(api.SIMULATORS):
            break
        if 'data-sim="' not in (site.dir / url / "index.html").read_text(encoding="utf-8"):
            continue
        go(page, site, url)
        for figure in page.locator("figure.sim").all():
            name = figure.get_attribute("data-sim")
            if name in checked:
                continue
            chart = figure.locator(".sim-chart")
            chart.locator("svg").first.wait_for()
            assert chart.get_attribute("aria-label").startswith("Chart: ")
            summary = page.locator(f"#{chart.get_attribute('aria-describedby')}")
            assert len(summary.inner_text().split()) >= 5, f"{name}: the chart's summary says too little"
            assert figure.locator(".sim-metrics tbody tr").count() > 0
            figure.locator(".sim-data summary").click()
            tables = figure.locator(".sim-data-table table")
            tables.first.wait_for()
            answer = json.loads(figure.get_attribute("data-answer"))["figure"]
            traces = answer["data"]
            assert tables.count() == len(traces), name
            # Each table is headed by its own trace's axes (lesson 12: a second y axis is layout.yaxis2).
            for table, trace in zip(tables.all(), traces, strict=True):
                heads = [th.inner_text().strip() for th in table.locator("thead th").all()]
                assert heads == [_axis_title(answer["layout"], trace, axis) for axis in "xy"], (name, heads)
            assert figure.locator(".sim-data-table tbody tr").count() > 0, name
            assert tables.first.locator("caption").inner_text().strip()
            figure.locator(".sim-data summary").click()
            checked.add(name)
    page.close()
    assert checked == set(api.SIMULATORS), f"no page shows {sorted(set(api.SIMULATORS) - checked)}"


@pytest.fixture(scope="module")
def lesson(context: BrowserContext, site: Site) -> Page:
    """A lesson page whose first widget has a slider, live."""
    page = context.new_page()
    page.goto(site.url + site.pages_with('data-sim="')[0])
    wait_ready(page)
    settle(page)
    return page


# A stable name for a control: its id, the label a slider points at, a toolbar button's title, its text.
KEY = """(el) => el.id || (el.type === "range" ? `range:${el.getAttribute("aria-labelledby")}` : "") ||
  el.getAttribute("data-title") || el.textContent.trim().slice(0, 40) || el.tagName"""


def focusables(page: Page, figure_index: int) -> list[str]:
    """The widget's enabled, shown controls in document order (none has a positive tabindex)."""
    return page.evaluate(
        f"""(i) => [...document.querySelectorAll("figure.sim")[i].querySelectorAll("input, select, textarea, button, summary")]
             .filter((el) => !el.disabled && el.getClientRects().length > 0 && el.tabIndex >= 0)
             .map({KEY})""",
        figure_index,
    )


FOCUSED = (
    """() => {
  const key = """
    + KEY
    + """;
  const el = document.activeElement;
  const figure = el.closest("figure.sim");
  const style = getComputedStyle(el);
  return {
    key: key(el),
    figure: figure ? [...document.querySelectorAll("figure.sim")].indexOf(figure) : -1,
    visible: el.matches(":focus-visible") && style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2,
  };
}"""
)


def test_every_widget_control_is_reached_by_tab_with_a_visible_focus(lesson: Page) -> None:
    expected = focusables(lesson, 0)
    assert any(key.startswith("range:") for key in expected), expected
    lesson.locator("figure.sim").first.locator(".sim-caption").click()  # the Tab sequence starts here
    reached: list[str] = []
    for _ in range(len(expected) + 5):
        lesson.keyboard.press("Tab")
        now = lesson.evaluate(FOCUSED)
        if now["figure"] != 0:
            break
        assert now["visible"], f"{now['key']} has no visible focus outline"
        reached.append(now["key"])
    assert reached == expected


def test_a_slider_moved_with_the_arrow_keys_reruns_the_simulation(lesson: Page) -> None:
    figure = lesson.locator("figure.sim:has(input[type=range])").first
    slider = figure.locator("input[type=range]").first
    box = slider.locator("xpath=following-sibling::input[1]")
    drawn, before = figure.get_attribute("data-drawn"), box.input_value()
    slider.focus()
    slider.press("ArrowRight")
    lesson.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    assert box.input_value() != before
    assert lesson.evaluate("(el) => el.matches(':focus-visible')", slider.element_handle())


def test_a_log_slider_steps_to_two_significant_digits_and_reaches_its_bounds(lesson: Page) -> None:
    """Learner review: an arrow key on a log slider gave 2,250 then 2,531 (1% of its track each)."""
    figure = lesson.locator("figure.sim:has(input[type=range])").first
    numeric = [p for p in api.schema(figure.get_attribute("data-sim"))["params"] if p["type"] in ("int", "float")]
    index = next(i for i, p in enumerate(numeric) if p.get("log"))
    slider = figure.locator("input[type=range]").nth(index)
    box = slider.locator("xpath=following-sibling::input[1]")
    seen = []
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "End", "Home"):
        slider.press(key)
        seen.append(float(box.input_value().replace(",", "")))
    assert all(float(f"{v:.2g}") == v for v in seen[:3]), seen
    assert len(set(seen[:2])) == 2 and seen[-2:] == [numeric[index]["max"], numeric[index]["min"]], seen


def test_reduced_motion_turns_off_transitions_and_animations(context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    page.emulate_media(reduced_motion="reduce")
    page.goto(site.url + site.pages_with('data-sim="')[0])
    # The charts a page opens with are static; plotly.js draws the first live one after a change.
    wait_ready(page)
    figure = page.locator("figure.sim:has(input[type=range])").first
    drawn = figure.get_attribute("data-drawn")
    figure.locator("input[type=range]").first.press("ArrowRight")
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    moving = page.evaluate(
        """() => [...document.querySelectorAll("*")].filter((el) => {
             const s = getComputedStyle(el);
             const long = (v) => v.split(",").some((d) => parseFloat(d) > 0);
             return long(s.transitionDuration) || (s.animationName !== "none" && long(s.animationDuration));
           }).map((el) => el.className || el.tagName)"""
    )
    assert moving == []
    assert figure.locator(".sim-chart").evaluate("(chart) => chart.layout.transition.duration") == 0
    page.close()


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
