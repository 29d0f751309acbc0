"""Reading offline: after one visit and "Make the course available offline", the network is
switched off, and every lesson still opens and one widget of every simulator still runs.

This module makes its own browser context without a route handler: Playwright's request
interception bypasses service workers, so with it the offline copy would never be used. Requests
to other origins are recorded from the context's request events instead.
"""

import json
from collections.abc import Iterator

import pytest
from browser_helpers import CSP_LISTENER, RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready, watch
from crawl import go
from playwright.sync_api import Browser, BrowserContext, Page

from simulators import api


@pytest.fixture(scope="module")
def own_records() -> Records:
    return Records()


@pytest.fixture(scope="module")
def offline_context(browser: Browser, site: Site, own_records: Records) -> Iterator[BrowserContext]:
    ctx = browser.new_context(service_workers="allow")

    def seen(request) -> None:  # type: ignore[no-untyped-def]
        own_records.requests.append(request.url)
        if not request.url.startswith((site.url, "data:", "blob:")):
            own_records.foreign.append(request.url)

    ctx.on("request", seen)
    ctx.add_init_script(CSP_LISTENER)
    ctx.on("page", lambda page: watch(page, own_records))
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def saved(offline_context: BrowserContext, site: Site) -> Page:
    """One visit, one click on the footer's control, the whole build in the browser's cache."""
    page = offline_context.new_page()
    page.goto(site.url)
    box = page.locator("[data-course-offline]")
    page.wait_for_function("() => document.querySelector('[data-course-offline]').dataset.state === 'idle'")
    manifest = json.loads((site.dir / "offline.json").read_text(encoding="utf-8"))
    button = box.locator("[data-offline-button]")
    assert f"({manifest['bytes'] / 1e6:.0f} MB)" in button.inner_text()
    button.click()
    page.wait_for_function(
        "() => document.querySelector('[data-course-offline]').dataset.state === 'saved'", timeout=120_000
    )
    assert "available offline" in box.locator("[data-offline-status]").inner_text()
    assert box.locator("[data-offline-progress]").evaluate("(bar) => bar.max") == manifest["files"]
    page.wait_for_function("() => navigator.serviceWorker.controller !== null")
    return page


def test_saving_shows_the_size_and_caches_every_file_of_the_build(saved: Page, site: Site) -> None:
    manifest = json.loads((site.dir / "offline.json").read_text(encoding="utf-8"))
    names = saved.evaluate("() => caches.keys()")
    ours = [n for n in names if n.startswith(f"llm-course-offline-{manifest['version']}-precache-")]
    assert len(ours) == 1, names
    count = saved.evaluate("async (name) => (await (await caches.open(name)).keys()).length", ours[0])
    # Every file but the worker itself, the source maps (for developer tools, not readers), the
    # raw WebAssembly (the Python worker fetches its .gz copy instead) and the build's .gz copies of
    # files cached as they are (a compressing host sends them in place of the file).
    files = [
        p
        for p in site.dir.rglob("*")
        if p.is_file()
        and p.name not in ("sw.js", "pyodide.asm.wasm")
        and p.suffix != ".map"
        and not (p.suffix == ".gz" and p.name != "pyodide.asm.wasm.gz" and p.with_suffix("").exists())
    ]
    assert any(p.name == "pyodide.asm.wasm.gz" for p in files)
    assert count == manifest["files"] == len(files)


def test_with_the_network_off_every_lesson_opens_and_every_simulator_runs(
    saved: Page, offline_context: BrowserContext, site: Site, own_records: Records
) -> None:
    offline_context.set_offline(True)
    page = saved
    page.reload()  # a full load from the offline copy
    page.wait_for_function("() => document.querySelector('[data-course-offline]').dataset.state === 'saved'")
    # The network is off (Chromium 150 tells navigator.onLine only to the document open when it was
    # switched off): a request the offline copy does not answer goes to the network and fails.
    # That failure is the one console error this test expects.
    with page.expect_console_message(lambda m: "ERR_INTERNET_DISCONNECTED" in m.text) as message:
        failed = page.evaluate("() => fetch('not-in-the-offline-copy.txt').then(() => null, (e) => String(e))")
    assert failed == "TypeError: Failed to fetch", failed
    own_records.errors.remove(f"console: {message.value.text}")
    lessons = sorted(p.parent.name for p in (site.dir / "lessons").glob("*/index.html"))
    assert len(lessons) >= 14
    untried = set(api.SIMULATORS)
    # Then the tools pages: a simulator only a tool embeds (the cheapest-configuration search) runs too.
    tools = sorted(p.parent.name for p in (site.dir / "tools").glob("*/index.html"))
    # and the validation page, whose widget is the only one of `published` (a row's public command).
    for slug in [f"lessons/{name}/" for name in lessons] + [f"tools/{name}/" for name in tools] + ["validation/"]:
        go(page, site, slug)
        page.locator(".lesson-head" if slug.startswith("lessons/") else "h1").first.wait_for(timeout=RUNTIME_LIMIT_MS)
        assert page.locator("h1").count() == 1, slug
        for figure in page.locator("figure.sim").all():
            name = figure.get_attribute("data-sim")
            if name not in untried:
                continue
            sliders = figure.locator("input[type=range]").all()
            if not sliders:
                continue  # another widget of this simulator has a slider
            wait_ready(page)
            page.wait_for_function("(f) => f.classList.contains('sim-live')", arg=figure.element_handle())
            # One step of a slider, either way; a step the simulator refuses (a tensor-parallel size
            # that does not divide the heads, a length past the model's) is answered with a field
            # error, so the control goes back and the next step is tried.
            # A log slider's value at its end can differ from max/min in the last digits (log10(2000)).
            ends = "(s) => [Number(s.value) >= Number(s.max) - 1e-9, Number(s.value) <= Number(s.min) + 1e-9]"
            steps = [
                (slider, key)
                for slider in sliders
                for key, at_end in zip(("ArrowRight", "ArrowLeft"), slider.evaluate(ends), strict=True)
                if not at_end  # a key that moves nothing changes nothing
            ]
            for slider, key in steps:
                drawn = figure.get_attribute("data-drawn")
                slider.press(key)
                page.wait_for_function(
                    "([el, before]) => el.dataset.drawn !== before || el.querySelector('[aria-invalid=true]')",
                    arg=[figure.element_handle(), drawn],
                    timeout=RUNTIME_LIMIT_MS,
                )
                if figure.get_attribute("data-drawn") != drawn:
                    break
                slider.press("ArrowLeft" if key == "ArrowRight" else "ArrowRight")  # back to a valid value
                page.wait_for_function(
                    "(el) => !el.querySelector('[aria-invalid=true]')",
                    arg=figure.element_handle(),
                    timeout=RUNTIME_LIMIT_MS,
                )
            else:
                raise AssertionError(f"{slug}: no slider step of {name} redrew its chart offline")
            assert json.loads(figure.get_attribute("data-answer"))["ok"], name
            untried.discard(name)
    assert untried == set(), f"no offline run of {sorted(untried)}"
    offline_context.set_offline(False)


def test_no_request_left_the_site_and_no_error_happened(own_records: Records) -> None:
    assert_clean(own_records)
