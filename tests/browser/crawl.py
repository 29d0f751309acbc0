"""Helpers for the tests that visit every page: the page list, instant navigation, axe-core.

A crawl stays in one tab and moves by the theme's instant navigation (a click on a same-site link),
as a reader does, so the Python runtime starts once per crawl instead of once per page.
"""

from browser_helpers import ROOT, RUNTIME_LIMIT_MS, Site
from playwright.sync_api import Page

# Installed by `npm ci` (package.json) for the tests only; the site never links it.
AXE_SOURCE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def all_pages(site: Site) -> list[str]:
    """Site-relative URLs of every page: home, lessons, tools, guides, glossary, validation."""
    found = []
    for path in sorted(site.dir.rglob("index.html")):
        rel = path.parent.relative_to(site.dir).as_posix()
        if rel.split("/")[0] in ("search", "assets"):
            continue
        found.append("" if rel == "." else f"{rel}/")
    return found


def go(page: Page, site: Site, url: str) -> None:
    """Move to site-relative `url` by instant navigation (a full load when the tab is elsewhere)."""
    target = site.url + url
    if not page.url.startswith(site.url) or page.evaluate("() => typeof document$ === 'undefined'"):
        page.goto(target)
        return
    if page.url.split("#")[0].split("?")[0] == target:
        return
    page.evaluate(
        """(href) => {
             window.crawlOld = document.querySelector(".md-content");
             const a = Object.assign(document.createElement("a"), { href });
             document.body.append(a);
             a.click();
             a.remove();
           }""",
        target,
    )
    page.wait_for_function(
        "(href) => document.querySelector('.md-content') !== window.crawlOld && location.href.split(/[?#]/)[0] === href",
        arg=target,
        timeout=RUNTIME_LIMIT_MS,
    )


def settle(page: Page) -> None:
    """Wait until every widget on the page has its live controls and its live (plotly) chart."""
    if page.locator("figure.sim").count() == 0:
        return
    page.wait_for_function(
        """() => window.llmCourse?.runtime?.state === "ready" &&
             [...document.querySelectorAll("figure.sim")].every((f) =>
               f.querySelector(".sim-chart .main-svg") && !f.querySelector(".sim-controls[aria-busy]") &&
               [...f.querySelectorAll(".sim-field input, .sim-field select")].every((i) => !i.disabled))""",
        timeout=RUNTIME_LIMIT_MS,
    )


def axe_violations(page: Page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """axe-core's violations of the given impacts on the current page, one line per rule."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE.read_text(encoding="utf-8"))  # evaluated, not a <script>: the CSP holds
    return page.evaluate(
        """async (impacts) => {
             const { violations } = await axe.run(document, { resultTypes: ["violations"] });
             return violations.filter((v) => impacts.includes(v.impact)).map((v) =>
               `${v.id} (${v.impact}) on ${v.nodes.length} node(s), e.g. ${v.nodes[0].target.join(" ")}: ` +
               v.nodes[0].failureSummary.replace(/\\s+/g, " "));
           }""",
        list(impacts),
    )
