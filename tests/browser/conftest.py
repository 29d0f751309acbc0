"""Shared browser fixtures: one build served on a free port per session, one Chromium per module.

Nothing is mocked: the pages load the real vendored Pyodide and the real simulators. Every page
records what should never happen (a request to another origin, a script error, a CSP violation);
each module ends by asserting those records are empty (browser_helpers.assert_clean).
"""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import chromium
import pytest
from browser_helpers import CSP_LISTENER, ROOT, Records, Site, watch
from playwright.sync_api import Browser, BrowserContext, Route, sync_playwright

from sitebuild import serve


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    site_dir = tmp_path_factory.mktemp("browser") / "site"
    server = serve.start(site_dir)  # serves the folder the build is about to create
    url = f"http://127.0.0.1:{server.server_port}/"
    done = subprocess.run(
        [sys.executable, str(ROOT / "site_build.py"), "build", "--site-dir", str(site_dir), "--site-url", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    if marker := os.environ.get("COURSE_TEST_BUILT"):  # ./dev test starts the other tests now
        Path(marker).touch()
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
