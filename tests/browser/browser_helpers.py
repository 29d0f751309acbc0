"""Helpers for the browser tests: the served site, what a page must never do, waiting for Python."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import BrowserContext, Page

from sitebuild.course import id_order

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LIMIT_MS = 60_000  # generous: the machine may be shared; the benchmark measures speed

CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (e) =>
  console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
"""


@dataclass
class Site:
    url: str
    dir: Path

    def pages_with(self, marker: str) -> list[str]:
        """Site-relative URLs of the lesson pages whose HTML contains `marker`, in course order."""
        found = []
        for page in sorted((self.dir / "lessons").glob("*/index.html"), key=lambda p: _order(p.parent.name)):
            if marker in page.read_text(encoding="utf-8"):
                found.append(f"lessons/{page.parent.name}/")
        return found


def _order(slug: str) -> tuple[int, tuple[int, ...]]:
    return id_order(slug.split("-", 1)[0])


@dataclass
class Records:
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def watch(page: Page, records: Records) -> None:
    page.on("pageerror", lambda error: records.errors.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and records.errors.append(f"console: {m.text}"))


def wait_ready(page: Page) -> None:
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=RUNTIME_LIMIT_MS)


@contextmanager
def redrawn(page: Page) -> Iterator[None]:
    """Around a change to the page's first widget: waits, after it, until the widget has drawn an
    answer other than the one it showed before."""
    fig = page.locator("figure.sim").first
    before = fig.get_attribute("data-drawn")
    yield
    page.wait_for_function(
        "([el, before]) => el.dataset.drawn !== before", arg=[fig.element_handle(), before], timeout=RUNTIME_LIMIT_MS
    )


def open_tool(context: BrowserContext, site: Site, path: str) -> Page:
    """A tab on the site's page at `path` (a tools page, a lesson), its Python runtime ready."""
    tab = context.new_page()
    tab.goto(site.url + path)
    wait_ready(tab)
    return tab


def assert_clean(records: Records) -> None:
    """No request left the site's origin, and no script error or CSP violation happened."""
    assert records.requests, "the route handler saw no request at all"
    assert records.foreign == []
    assert records.errors == []
