"""Shared browser fixtures: one build served on a free port per session, one Chromium per module.

Nothing is mocked: the pages load the real vendored Pyodide and the real simulators. Every page
records what should never happen (a request to another origin, a script error, a CSP violation);
each module ends by asserting those records are empty.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, sync_playwright

from sitebuild import chromium, serve

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
    from sitebuild.course import id_order

    return id_order(slug.split("-", 1)[0])


@dataclass
class Records:
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    site_dir = tmp_path_factory.mktemp("browser") / "site"
    server = serve.start(site_dir)  # serves the folder the build is about to create
    url = f"http://127.0.0.1:{server.server_port}/"
    done = subprocess.run([sys.executable, str(ROOT / "site_build.py"), "build", "--site-dir", str(site_dir),
                           "--site-url", url], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    yield Site(url, site_dir)
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium.executable())
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def records() -> Records:
    return Records()


@pytest.fixture(scope="module")
def context(browser: Browser, site: Site, records: Records) -> Iterator[BrowserContext]:
    ctx = browser.new_context()

    def route(route: Route) -> None:
        url = route.request.url
        records.requests.append(url)
        if url.startswith(site.url) or re.match(r"^(data|blob):", url):
            route.continue_()
        else:
            records.foreign.append(url)
            route.abort()

    ctx.route("**/*", route)
    ctx.add_init_script(CSP_LISTENER)
    ctx.on("page", lambda page: watch(page, records))
    yield ctx
    ctx.close()


def watch(page: Page, records: Records) -> None:
    page.on("pageerror", lambda error: records.errors.append(f"page error: {error}"))
    page.on("console", lambda m: m.type == "error" and records.errors.append(f"console: {m.text}"))


def wait_ready(page: Page) -> None:
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=RUNTIME_LIMIT_MS)


def assert_clean(records: Records) -> None:
    """No request left the site's origin, and no script error or CSP violation happened."""
    assert records.requests, "the route handler saw no request at all"
    assert records.foreign == []
    assert records.errors == []
