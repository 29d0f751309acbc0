"""Every simulator block of every page becomes live: the runtime starts and each widget's
controls are enabled (lesson issue: 'every simulator block in the lesson renders and becomes
live in the browser'). One tab; each page is a fresh load, so each starts Pyodide once."""

from __future__ import annotations

import pytest
from browser_helpers import Records, Site, assert_clean, wait_ready
from playwright.sync_api import BrowserContext, Page


@pytest.fixture(scope="module")
def tab(context: BrowserContext) -> Page:
    return context.new_page()


def widget_pages(site: Site) -> list[str]:
    lessons = site.pages_with('data-sim="')
    tools = sorted(f"tools/{p.parent.name}/" for p in (site.dir / "tools").glob("*/index.html"))
    return lessons + tools


def test_every_widget_on_every_page_goes_live(tab: Page, site: Site, records: Records) -> None:
    pages = widget_pages(site)
    assert len(pages) >= 20, pages  # 14 lessons, the frontier pages and the tools all embed simulators
    total_controls = 0
    for url in pages:
        tab.goto(site.url + url)
        widgets = tab.locator("figure.sim")
        count = widgets.count()
        assert count >= 1, url
        wait_ready(tab)
        tab.wait_for_function(
            "n => document.querySelectorAll('figure.sim.sim-live').length === n", arg=count, timeout=30_000
        )
        for i in range(count):
            # A block may show no controls (`controls: []`, a figure to read); the others must
            # have every control enabled once the runtime is ready.
            controls = widgets.nth(i).locator(".sim-field input, .sim-field select")
            disabled = widgets.nth(i).locator(".sim-field input:disabled, .sim-field select:disabled")
            assert disabled.count() == 0, (
                f"{url}: widget {i} has {disabled.count()} of {controls.count()} controls disabled"
            )
            total_controls += controls.count()
    assert total_controls >= 100, total_controls  # the selector really finds the controls
    assert_clean(records)
