"""What the reader sees: every page at 1280 px and 390 px, light and dark, compared with committed
screenshots; the layout measured on each (grids, overlaps, clipped text, chart axes, sideways
scroll, the build-time charts and math there without the runtime); axe-core on the course map in
both palettes. Each page is loaded in full (not by instant navigation), so its own <head> is
exercised, and the context aborts and records any request to another origin.

Charts stay in their build-time (static SVG) state: the wasm request is held unanswered, so the
live plotly charts, whose timing varies, never replace them. What moves by itself (a widget's
loading status, the footer's offline size, which changes with every build) is masked. Baselines:
tests/browser/baselines/, accepted with the command in tests/browser/visual.py.
"""

from dataclasses import dataclass
from typing import Any

import pytest
import visual
from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from crawl import all_pages, axe_violations
from playwright.sync_api import BrowserContext, Page, Route
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

WIDTHS = {1280: 720, 390: 844}
PALETTES = ("light", "dark")
# Pages whose whole length is compared, not only the first screen: the course map.
FULL_PAGE = ("",)
MASK = ".sim-status, .course-offline"


@dataclass
class Shot:
    name: str
    outcome: visual.Outcome
    layout: dict[str, Any]


def shot_name(url: str, width: int, palette: str, full: bool = False) -> str:
    return f"{url.strip('/').replace('/', '--') or 'home'}-{width}-{palette}{'-full' if full else ''}"


def ready(page: Page) -> None:
    """The page as a reader sees it before Python runs: static charts, maths, the offline badge and the
    controls widgets.js builds from the schemas (a fresh-clone CI shot compare-benchmark before them)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll("figure.sim .sim-chart")].every((c) => c.querySelector(".sim-static-chart")) &&
             [...document.querySelectorAll("figure.sim .sim-controls")].every((c) => !c.hasAttribute("aria-busy")) &&
             [...document.querySelectorAll(".arithmatex")].every((m) => m.querySelector(".katex")) &&
             (!document.querySelector("[data-course-offline]") || document.querySelector("[data-course-offline]").dataset.state)""",
        timeout=RUNTIME_LIMIT_MS,
    )
    page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=RUNTIME_LIMIT_MS)


def two_frames(page: Page) -> None:
    """Two frames painted since now. Polled on animation frames with a limit that Playwright
    enforces, so a page that stops painting fails the test instead of hanging the run (an awaited
    requestAnimationFrame has no limit)."""
    page.evaluate("() => { window.visualFrames = 0; }")
    page.wait_for_function("() => ++window.visualFrames >= 3", polling="raf", timeout=RUNTIME_LIMIT_MS)


def capture(page: Page, name: str, full: bool = False) -> bytes:
    return page.screenshot(
        full_page=full, animations="disabled", caret="hide", mask=[page.locator(MASK)], mask_color="#808080"
    )


def open_tab(context: BrowserContext, palette: str, held: list[Route]) -> Page:
    page = context.new_page()
    # mkdocs-material keeps a palette chosen once in localStorage ("…__palette"), which then wins over
    # the emulated colour scheme: without this, the "dark" shots were of the light palette.
    page.add_init_script(
        "Object.keys(localStorage).filter(k => k.endsWith('__palette')).forEach(k => localStorage.removeItem(k))"
    )
    page.emulate_media(color_scheme=palette, reduced_motion="reduce")
    # The Python runtime is held back: its WebAssembly, and the .gz copy the worker fetches first.
    page.route("**/pyodide.asm.wasm*", lambda route: held.append(route))
    return page


def shoot(page: Page, site: Site, url: str, palette: str, taken: dict[str, Shot]) -> None:
    page.set_viewport_size({"width": 1280, "height": WIDTHS[1280]})
    page.goto(site.url + url)
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        ready(page)
        two_frames(page)
        layout = page.evaluate(visual.LAYOUT)
        for full in (False, True) if url in FULL_PAGE else (False,):
            name = shot_name(url, width, palette, full)
            taken[name] = Shot(name, visual.compare(name, capture(page, name, full)), layout)


@pytest.fixture(scope="module")
def shots(context: BrowserContext, site: Site) -> dict[str, Shot]:
    """Every page's shots. A page whose tab does not answer within the time limit is shot again in
    a new tab, once (one CI run stood still in this fixture for an hour, cause unknown; every wait
    here now has a limit); the comparison itself is never retried, and a second time-out fails."""
    taken: dict[str, Shot] = {}
    held: list[Route] = []
    for palette in PALETTES:
        page = open_tab(context, palette, held)
        for url in all_pages(site):
            try:
                shoot(page, site, url, palette, taken)
            except PlaywrightTimeoutError as error:
                print(
                    f"visual: {palette} {url or 'home'} timed out, shot again in a new tab: {error.message.splitlines()[0]}"
                )
                page.close()
                page = open_tab(context, palette, held)
                shoot(page, site, url, palette, taken)
        page.close()
    return taken


def test_every_page_was_shot_at_both_widths_in_both_palettes(shots: dict[str, Shot], site: Site) -> None:
    expected = len(all_pages(site)) * len(WIDTHS) * len(PALETTES) + len(FULL_PAGE) * len(WIDTHS) * len(PALETTES)
    assert len(shots) == expected >= 100
    pages = all_pages(site)
    assert "" in pages and "glossary/" in pages and "validation/" in pages
    assert len([u for u in pages if u.startswith("lessons/")]) >= 14
    assert len([u for u in pages if u.startswith("tools/")]) >= 1


def test_every_page_shows_its_prerendered_charts_and_math_without_the_runtime(shots: dict[str, Shot]) -> None:
    """The shots are taken with the Python runtime held back and every other site unreachable:
    what a reader offline, or before Python starts, sees."""
    missing = {
        name: {k: s.layout[k] for k in ("figures", "drawn", "math", "math_rendered")}
        for name, s in shots.items()
        if s.layout["drawn"] != s.layout["figures"] or s.layout["math_rendered"] < s.layout["math"]
    }
    assert missing == {}
    phone_light = [s for name, s in shots.items() if name.endswith("-390-light")]
    assert sum(s.layout["figures"] for s in phone_light) >= 20


def test_every_page_with_a_widget_starts_the_runtime_itself(shots: dict[str, Shot]) -> None:
    """Loaded in full, each page's own scripts start Python (its WebAssembly is held back here:
    test_accessibility.py then sees every widget of every page go live)."""
    wrong = {
        name: s.layout["runtime"]
        for name, s in shots.items()
        if s.layout["figures"] and s.layout["runtime"] != {"state": "starting", "starts": 1}
    }
    assert wrong == {}
    assert sum(1 for name, s in shots.items() if name.endswith("-1280-light") and s.layout["figures"]) >= 20


def test_screenshots_match_the_baselines(shots: dict[str, Shot]) -> None:
    wrong = {name: s.outcome.problem for name, s in shots.items() if s.outcome.problem}
    assert wrong == {}, f"diff images in {visual.DIFFS}; accept deliberate changes as tests/browser/visual.py says"


def test_the_baselines_stay_small() -> None:
    files = sorted(visual.BASELINES.glob("*.png"))
    assert files, "no baselines committed"
    assert max(f.stat().st_size for f in files) < 200_000
    assert sum(f.stat().st_size for f in files) < 3_000_000


def test_the_course_map_keeps_its_grids(shots: dict[str, Shot]) -> None:
    """At 1280 px the journey's five steps stand in one row and every chapter shows two or more
    lesson cards side by side; at 390 px the steps stack (one per row)."""
    for palette in PALETTES:
        wide = shots[shot_name("", 1280, palette)].layout
        assert wide["journey_display"] == ["grid"]
        assert wide["journey"] == [5] and wide["journey_items"] == 5
        assert wide["cards"] and all(c["first_row"] >= min(2, c["items"]) for c in wide["cards"]), wide["cards"]
        narrow = shots[shot_name("", 390, palette)].layout
        assert narrow["journey"] == [1]
        assert all(c["first_row"] == 1 for c in narrow["cards"]), narrow["cards"]


def test_nothing_scrolls_sideways(shots: dict[str, Shot]) -> None:
    wide = {
        name: (s.layout["scroll_width"], s.layout["too_wide"])
        for name, s in shots.items()
        if s.layout["scroll_width"] > s.layout["width"]
    }
    assert wide == {}


def test_no_block_covers_another(shots: dict[str, Shot]) -> None:
    found = {name: s.layout["overlaps"][:3] for name, s in shots.items() if s.layout["overlaps"]}
    assert found == {}


def test_no_text_is_clipped(shots: dict[str, Shot]) -> None:
    found = {name: s.layout["clipped"][:3] for name, s in shots.items() if s.layout["clipped"]}
    assert found == {}


def test_chart_axis_titles_clear_their_tick_labels(shots: dict[str, Shot]) -> None:
    found = {name: s.layout["axes"][:3] for name, s in shots.items() if s.layout["axes"]}
    assert found == {}


def test_a_live_chart_on_a_phone_keeps_its_axis_title_clear(context: BrowserContext, site: Site) -> None:
    """plotly.js lays a live chart out for the phone's width: rotated tick labels, the axis title
    and the legend below it must not meet (the batching lesson's first chart rotates its ticks)."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + next(u for u in site.pages_with('data-sim="batching"')))
    wait_ready(page)
    page.locator("figure.sim .sim-chart .main-svg").first.wait_for(timeout=RUNTIME_LIMIT_MS)
    layout = page.evaluate(visual.LAYOUT)
    rotated = page.evaluate(
        "() => [...document.querySelectorAll('figure.sim .xtick text')].some((t) => /rotate/.test(t.getAttribute('transform')))"
    )
    page.close()
    assert rotated, "no live chart on the page rotates its tick labels: the check needs another page"
    assert layout["axes"] == []


# Draws, with the page's own charts module, one chart whose title is `words` long, at the phone's
# width: where its title ends and its plot starts (plotly's drag area), in pixels from its top.
DRAW_TITLED = """async (words) => {
  const { draw } = await import(new URL("../../assets/js/charts.js", document.baseURI).href);
  const el = document.createElement("div");
  el.style.width = "358px";
  el.style.height = "360px";
  document.querySelector("article").prepend(el);
  await draw(el, { data: [{ type: "scatter", x: [0, 1], y: [0, 1], name: "a line" }],
                   layout: { title: { text: words }, margin: { l: 60, r: 20, t: 50, b: 60 } } });
  const top = el.getBoundingClientRect().top;
  const title = el.querySelector(".g-gtitle").getBoundingClientRect();
  return [title.top - top, title.bottom - top, el.querySelector(".nsewdrag").getBoundingClientRect().top - top];
}"""


@pytest.mark.parametrize("lines", [1, 2, 4, 6])
def test_a_long_chart_title_on_a_phone_stays_above_its_plot(context: BrowserContext, site: Site, lines: int) -> None:
    """charts.js breaks a title too long for the chart into lines; however many, they sit inside
    the chart and above its plot (plotly hangs the lines after the first into the plot otherwise:
    lesson 06's chart drawn while it simulates has four at 390 px)."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + "lessons/06-pagedattention/")
    words = " ".join(["Reserved"] * (4 * lines))  # 4 words of 8 letters fill a line of a 358 px chart
    title_top, title_bottom, plot_top = page.evaluate(DRAW_TITLED, words)
    page.close()
    assert 0 <= title_top and title_bottom <= plot_top, (title_top, title_bottom, plot_top)


def test_a_subtitle_on_a_phone_joins_the_title_and_is_broken_into_lines(context: BrowserContext, site: Site) -> None:
    """Learner review: at 390 px lesson 10's operating-points subtitle lost both ends ("Llama-3-8B on" and
    "prompt shared"); plotly breaks neither a title nor a subtitle, so charts.js joins them and breaks both."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + "lessons/10-vllm-and-sglang/")
    sub = "Llama-3-8B on NVIDIA H100 SXM5 80GB, 200-token answers, 40% of each prompt shared"
    text, left, right, width = page.evaluate(
        """async (sub) => {
             const { draw } = await import(new URL("../../assets/js/charts.js", document.baseURI).href);
             const el = Object.assign(document.createElement("div"), { style: "width: 358px; height: 360px" });
             document.querySelector("article").prepend(el);
             await draw(el, { data: [{ type: "scatter", x: [0, 1], y: [0, 1], name: "a" }],
                              layout: { title: { text: "Which organising bet pays where", subtitle: { text: sub } } } });
             const t = el.querySelector(".g-gtitle").getBoundingClientRect(), c = el.getBoundingClientRect();
             return [el.querySelector(".g-gtitle").textContent, t.left - c.left, t.right - c.left, c.width];
           }""",
        sub,
    )
    page.close()
    assert text.replace(" ", "") == ("Which organising bet pays where: " + sub).replace(" ", ""), text
    assert 0 <= left and right <= width, (left, right, width)


def test_a_long_legend_entry_on_a_phone_stays_inside_the_chart(context: BrowserContext, site: Site) -> None:
    """Plotly cuts a legend entry wider than the chart off at its edge; charts.js breaks a long
    name into lines on a narrow chart (lesson 05's running chart: "… (prefill or decode) (so far)")."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + "lessons/05-continuous-batching/")
    name = "Static: sequences still running (prefill or decode), one line per slot (so far)"
    right, text, chart_right = page.evaluate(
        """async (name) => {
             const { draw } = await import(new URL("../../assets/js/charts.js", document.baseURI).href);
             const el = Object.assign(document.createElement("div"), { style: "width: 358px; height: 360px" });
             document.querySelector("article").prepend(el);
             await draw(el, { data: [{ type: "scatter", x: [0, 1], y: [0, 1], name }],
                              layout: { showlegend: true, legend: { orientation: "h", y: -0.3 } } });
             const entry = el.querySelector(".legendtext");
             return [entry.getBoundingClientRect().right, entry.textContent, el.getBoundingClientRect().right];
           }""",
        name,
    )
    page.close()
    assert text.replace(" ", "") == name.replace(" ", "")  # every word shown, on one line or more
    assert right <= chart_right, (right, chart_right)


def test_a_phone_chart_with_a_long_legend_keeps_a_plot_of_200_px(context: BrowserContext, site: Site) -> None:
    """Learner review: at 390 px lesson 08's batch chart (six legend entries, a three-line title) kept
    a plot 75 px high, lesson 02's memory bars 86 px; charts.js grows such a chart until its plot is
    200 px (charts.js MIN_PLOT_PX), on every chart of both pages."""
    heights = {}
    for path in ("lessons/02-gpu-memory/", "lessons/08-speculative-decoding/"):
        page = context.new_page()
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(site.url + path)
        wait_ready(page)
        charts = page.locator("figure.sim .sim-chart")
        for i in range(charts.count()):
            charts.nth(i).locator(".main-svg").first.wait_for(timeout=RUNTIME_LIMIT_MS)
        heights[path] = page.evaluate(
            "() => [...document.querySelectorAll('figure.sim .sim-chart')].map((g) => g._fullLayout._size.h)"
        )
        page.close()
    assert all(len(h) >= 2 for h in heights.values()), heights
    assert all(h >= 199 for hs in heights.values() for h in hs), heights


def test_a_long_y_axis_title_on_a_phone_fits_along_its_plot(context: BrowserContext, site: Site) -> None:
    """Learner review: at 390 px lesson 04's y title ("Share of the dense figure (lower is better)",
    about 280 px) was longer than its plot was high and ran into the chart's title; charts.js breaks
    a y title longer than MIN_PLOT_PX (200 px) between words."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + "lessons/04-sparsification/")
    title, plot = page.evaluate(
        """async () => {
             const { draw } = await import(new URL("../../assets/js/charts.js", document.baseURI).href);
             const el = Object.assign(document.createElement("div"), { style: "width: 358px; height: 360px" });
             document.querySelector("article").prepend(el);
             await draw(el, { data: [{ type: "bar", x: ["a", "b"], y: [0.6, 1], name: "bars" }],
                              layout: { title: { text: "A title" }, yaxis: { title: { text: "Share of the dense figure (lower is better)" }, automargin: true },
                                        legend: { orientation: "h", y: -0.25 }, margin: { l: 60, r: 20, t: 50, b: 60 } } });
             const box = (q) => el.querySelector(q).getBoundingClientRect();
             return [box(".g-ytitle").height, box(".nsewdrag").height];
           }"""
    )
    page.close()
    assert title <= plot, (title, plot)


def test_long_bar_names_and_axis_title_on_a_phone_leave_the_bars_room(context: BrowserContext, site: Site) -> None:
    """Tool review: at 390 px diagnose's lever names took the chart's width (bars about 90 px wide) and
    its x axis title ran off the edge; charts.js breaks both between words on a narrow chart."""
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url + "tools/diagnose/")
    names = ["Token budget 512 (chunked prefill)", "Speculative decoding (EAGLE)", "FP8 KV cache"]
    plot, title, chart = page.evaluate(
        """async (names) => {
             const { draw } = await import(new URL("../../assets/js/charts.js", document.baseURI).href);
             const el = Object.assign(document.createElement("div"), { style: "width: 358px; height: 360px" });
             document.querySelector("article").prepend(el);
             await draw(el, { data: [{ type: "bar", orientation: "h", x: [-0.6, -0.3, -0.01], y: names, name: "Change" }],
                              layout: { xaxis: { title: { text: "predicted change (negative: faster)" }, automargin: true },
                                        yaxis: { automargin: true },
                                        legend: { orientation: "h", y: -0.25 }, margin: { l: 60, r: 20, t: 50, b: 60 } } });
             const box = (q) => el.querySelector(q).getBoundingClientRect();
             return [box(".nsewdrag").width, box(".g-xtitle").right, box(".main-svg").right];
           }""",
        names,
    )
    page.close()
    assert plot >= 0.45 * 358 and title <= chart, (plot, title, chart)


@pytest.mark.parametrize("palette", PALETTES)
def test_axe_finds_nothing_serious_on_the_course_map(context: BrowserContext, site: Site, palette: str) -> None:
    """tests/browser/test_accessibility.py audits every page in both palettes; this repeats the
    audit where the visual checks look hardest, with the reader's progress shown."""
    page = context.new_page()
    page.emulate_media(color_scheme=palette)
    page.goto(site.url)
    page.evaluate(
        """() => localStorage.setItem("llm-course:progress:v1",
             JSON.stringify({ completed: { "00.1": "2026-01-01T00:00:00Z" }, last: "00.2", answers: {} }))"""
    )
    page.reload()
    page.locator(".course-journey [aria-current=step]").wait_for()
    assert page.locator("[data-course-completed]").inner_text() == "1"
    assert axe_violations(page) == []
    page.evaluate("() => localStorage.clear()")
    page.close()


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
