"""A slider on a phone; the runtime under the Content-Security-Policy; every link to another site
well-formed. Every page's build-time charts and math without the runtime, and its width on a
phone, are measured on test_visual.py's shots (one full load of each page per width and palette,
with any request to another origin aborted and recorded).
"""

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

from browser_helpers import RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from playwright.sync_api import BrowserContext

PHONE = {"width": 390, "height": 844}


def test_a_slider_at_390_px_is_visible_and_operable(context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    page.set_viewport_size(PHONE)
    page.goto(site.url + site.pages_with('data-sim="')[0])
    wait_ready(page)
    figure = page.locator("figure.sim:has(input[type=range])").first
    slider = figure.locator("input[type=range]").first
    slider.scroll_into_view_if_needed()
    page.wait_for_function("el => !el.disabled", arg=slider.element_handle(), timeout=RUNTIME_LIMIT_MS)
    box = slider.bounding_box()
    assert box and box["width"] >= 100 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    drawn = figure.get_attribute("data-drawn")
    slider.click(position={"x": box["width"] * 0.8, "y": box["height"] / 2})  # a tap near its right end
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    chart = figure.locator(".sim-chart").bounding_box()
    assert chart and chart["x"] + chart["width"] <= PHONE["width"] + 1, chart
    # The live chart's title is broken into lines that fit the phone, none cut at the edges.
    title = figure.locator(".sim-chart .gtitle").bounding_box()
    assert title and chart["x"] <= title["x"] and title["x"] + title["width"] <= chart["x"] + chart["width"], (
        title,
        chart,
    )
    page.close()


# ---- Content-Security-Policy ----

DIRECTIVE = re.compile(r"\s*([a-z-]+)\s+([^;]+)")


def test_the_policy_allows_the_site_itself_and_what_wasm_and_the_worker_need(site: Site) -> None:
    text = (site.dir / "index.html").read_text(encoding="utf-8")
    content = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    policy = {m.group(1): m.group(2).split() for m in DIRECTIVE.finditer(content)}
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    for directive, sources in policy.items():
        for source in sources:
            allowed = source in ("'self'", "'none'") or source.startswith("'sha256-")
            allowed |= (directive, source) in {
                ("script-src", "'wasm-unsafe-eval'"),  # compiling Pyodide's WebAssembly
                ("img-src", "data:"),  # plotly's and KaTeX's inline images
                ("img-src", "blob:"),  # plotly's "download plot as PNG"
            }
            assert allowed, f"{directive} allows {source}"
    for page in site.dir.rglob("*.html"):
        assert content in page.read_text(encoding="utf-8") or page.name == "404.html" or "search" in page.parts


def test_the_runtime_starts_and_runs_under_the_policy(context: BrowserContext, site: Site, records: Records) -> None:
    """The policy is enforced (a meta tag); the listener of every page logs any violation as an
    error, which assert_clean below turns into a failure."""
    page = context.new_page()
    page.goto(site.url + site.pages_with('data-sim="')[0])
    wait_ready(page)
    blocked = page.evaluate(
        """() => new Promise((resolve) => {
             const s = document.createElement("script");
             s.textContent = "window.inlineRan = true";
             document.addEventListener("securitypolicyviolation", () => resolve(true), { once: true });
             document.head.append(s);
             setTimeout(() => resolve(false), 1000);
           })"""
    )
    assert blocked and page.evaluate("() => window.inlineRan") is None, "the policy is not enforced"
    probe = ("console: Executing inline script violates", "console: CSP violation: script-src-elem inline")
    records.errors[:] = [e for e in records.errors if not e.startswith(probe)]  # the probe's own reports
    figure = page.locator("figure.sim:has(.sim-field input[inputmode=decimal])").first
    field = figure.locator(".sim-field input[inputmode=decimal]").first
    drawn = figure.get_attribute("data-drawn")
    field.fill(str(float(field.input_value()) * 2 if float(field.input_value()) > 0 else 1))
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[figure.element_handle(), drawn], timeout=RUNTIME_LIMIT_MS
    )
    page.close()


# ---- links to other sites ----


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def test_every_link_to_another_site_is_well_formed(site: Site) -> None:
    bad, count = [], 0
    for page in sorted(site.dir.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for href in parser.hrefs:
            parts = urlsplit(href)
            if not parts.scheme and not href.startswith("//"):
                continue  # local: site_build.py check_links checks these (tests/site/test_site_build.py)
            if parts.scheme == "mailto":
                continue
            count += 1
            ok = parts.scheme in ("https", "http") and "." in parts.hostname if parts.hostname else False
            ok = ok and not re.search(r"\s", href) and parts.hostname != "localhost" and ".." not in parts.netloc
            if not ok:
                bad.append(f"{page.relative_to(site.dir)}: {href!r}")
    assert count >= 50, "fewer links to other sites than the lessons' references"
    assert bad == []


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
