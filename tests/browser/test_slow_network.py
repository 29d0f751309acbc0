"""Slow and data-saving connections, throttled by Chromium itself (the DevTools protocol).

The site is served as a host set up for the build's precompressed copies serves it (nginx's
gzip_static: tests/browser/local_hosts.py). At 5 Mbit/s and 100 ms the download takes about
8 s: the runtime must become ready with no failure notice while the status line shows how far the
download got. With the browser's data saver on, Python is not downloaded until the reader asks.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import local_hosts
import pytest
from browser_helpers import RUNTIME_LIMIT_MS, Site
from playwright.sync_api import Browser, BrowserContext, CDPSession, Page, Route

# Every text the status lines of the page showed, in order (a MutationObserver, from the start).
STATUS_LOG = """
window.statusLog = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll("figure.sim .sim-status")) {
    const text = el.textContent.trim();
    if (text && window.statusLog.at(-1) !== text) window.statusLog.push(text);
  }
}).observe(document, { childList: true, subtree: true, characterData: true });
"""
PROGRESS = re.compile(r"Downloading the Python runtime: ([\d.]+) of ([\d.]+) MB")
FAILURE = re.compile(r"could not|stopped|did not start")


@pytest.fixture(scope="module")
def host(site: Site) -> Iterator[str]:
    server = local_hosts.start_precompressed(site.dir)
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def context(browser: Browser, host: str) -> Iterator[BrowserContext]:
    ctx = browser.new_context()
    ctx.add_init_script(STATUS_LOG)
    foreign: list[str] = []
    ctx.on("request", lambda r: None if r.url.startswith((host, "data:", "blob:")) else foreign.append(r.url))
    yield ctx
    ctx.close()
    assert foreign == []


def throttled(context: BrowserContext, mbps: float, latency_ms: float) -> tuple[Page, CDPSession]:
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    rate = mbps * 1e6 / 8  # bytes per second
    conditions = {"offline": False, "latency": latency_ms, "downloadThroughput": rate, "uploadThroughput": rate}
    cdp.send("Network.emulateNetworkConditions", conditions)

    # Chromium 150 throttles every later request but shows the emulated connection (the Network
    # Information API the page reads) only to the document that was open when it was set. So the
    # page's first script waits until the conditions are set again for the new document.
    def boot(route: Route) -> None:
        cdp.send("Network.emulateNetworkConditions", conditions)
        route.continue_()

    page.route("**/assets/js/boot.js", boot)
    return page, cdp


def sent_bytes(site_dir: Path, names: list[str]) -> int:
    """What the precompressed host sends for these runtime files: FILE.gz where the build wrote one."""
    total = 0
    for name in names:
        [path] = site_dir.glob(f"assets/*/**/{name}")
        copy = path.with_name(name + ".gz")
        total += (copy if copy.is_file() else path).stat().st_size
    return total


def runtime_files(page: Page, snapshot: bool) -> list[str]:
    config = page.evaluate("() => JSON.parse(document.getElementById('course-runtime').textContent)")
    names = ["pyodide.asm.wasm", "pyodide.asm.mjs", config["stdlib"], config["archive"]]
    return names + ([config["snapshot"]] if snapshot else [])


def test_at_5_mbit_and_100_ms_the_runtime_becomes_ready_and_shows_its_progress(
    context: BrowserContext, host: str, site: Site
) -> None:
    page, _ = throttled(context, mbps=5, latency_ms=100)
    page.goto(host + site.pages_with('data-sim="')[0])
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=2 * RUNTIME_LIMIT_MS)
    log = page.evaluate("() => window.statusLog")
    assert not [text for text in log if FAILURE.search(text)], log
    progress = [tuple(map(float, m.groups())) for text in log if (m := PROGRESS.search(text))]
    # Several readings on the way (one a second at most), part-way through and growing.
    assert len(progress) >= 3, log
    assert any(0 < done < total for done, total in progress), progress
    assert [done for done, _ in progress] == sorted(done for done, _ in progress), progress
    # At this rate the snapshot does not pay for its bytes: Python starts from scratch, and the
    # total shown is what the host sends (rounded to 0.1 MB).
    assert page.evaluate("() => window.llmCourse.runtime.fromSnapshot") is False
    expected_mb = sent_bytes(site.dir, runtime_files(page, snapshot=False)) / 1e6
    assert abs(progress[-1][1] - expected_mb) <= 0.051, (progress[-1], expected_mb)
    assert page.locator("figure.sim .sim-field input").first.is_enabled()


def test_with_the_data_saver_on_python_waits_until_the_reader_asks(
    context: BrowserContext, host: str, site: Site
) -> None:
    page, cdp = throttled(context, mbps=100, latency_ms=5)
    cdp.send("Emulation.setDataSaverOverride", {"dataSaverEnabled": True})
    wasm_requests: list[str] = []
    page.on("request", lambda r: "pyodide.asm" in r.url and wasm_requests.append(r.url))
    page.goto(host + site.pages_with('data-sim="')[0])
    figure = page.locator("figure.sim").first
    button = figure.locator(".sim-status button")
    button.wait_for()
    assert page.evaluate("() => window.llmCourse.runtime.state") == "waiting"
    assert "asks to save data" in figure.locator(".sim-status").inner_text()
    # The label says what the download costs from this host, computed at build time.
    expected_mb = sent_bytes(site.dir, runtime_files(page, snapshot=False)) / 1e6
    label = button.inner_text()
    assert label == f"Run the simulators here — {expected_mb:.1f} MB", label
    assert figure.locator(".sim-chart .sim-static-chart").count() == 1  # the pre-rendered chart
    assert figure.locator(".sim-field input").first.is_disabled()
    page.wait_for_timeout(1000)
    assert wasm_requests == []  # nothing of Python was downloaded
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.llmCourse.runtime.state === 'ready'", timeout=RUNTIME_LIMIT_MS)
    assert wasm_requests
    assert figure.locator(".sim-field input").first.is_enabled()


def test_on_a_connection_chrome_rates_3g_python_also_waits_for_the_reader(
    context: BrowserContext, host: str, site: Site
) -> None:
    """400 ms and 0.4 Mbit/s: Chrome's Network Information API says "3g". Python waits; once the
    connection is fast again (the throttling lifted), the reader's request starts it."""
    page, cdp = throttled(context, mbps=0.4, latency_ms=400)
    page.goto(host + site.pages_with('data-sim="')[0], timeout=RUNTIME_LIMIT_MS, wait_until="domcontentloaded")
    figure = page.locator("figure.sim").first
    button = figure.locator(".sim-status button")
    button.wait_for(timeout=RUNTIME_LIMIT_MS)
    assert page.evaluate("() => navigator.connection.effectiveType") == "3g"
    assert "connection looks slow" in figure.locator(".sim-status").inner_text()
    assert button.inner_text().startswith("Run the simulators here — ")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    button.click()
    page.wait_for_function("() => window.llmCourse.runtime.state === 'ready'", timeout=RUNTIME_LIMIT_MS)
    assert figure.locator(".sim-field input").first.is_enabled()


# The budget for the bytes a reader downloads until Python is ready (the page included).
COMPRESSING_BUDGET_MB = 8.0
PLAIN_HOST_BUDGET_MB = 14.0


HOSTS = {
    "compressing": (local_hosts.start_precompressed, COMPRESSING_BUDGET_MB),
    "http.server": (local_hosts.start_plain, PLAIN_HOST_BUDGET_MB),
}


@pytest.mark.parametrize("start_with", ["snapshot", "plain"])
@pytest.mark.parametrize("host_kind", list(HOSTS))
def test_bytes_to_interactive_stay_within_budget(browser: Browser, site: Site, host_kind: str, start_with: str) -> None:
    """Counted by the server itself (the worker's requests included) until the runtime is ready,
    for each way of starting: restoring the snapshot fetches neither the standard library zip nor
    the simulators' Python files."""
    start, budget = HOSTS[host_kind]
    server = start(site.dir)
    ctx = browser.new_context()
    ctx.add_init_script(f"window.llmCourse = {{ startWith: '{start_with}' }};")
    page = ctx.new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url.rsplit("/", 1)[-1]))
    try:
        page.goto(f"http://127.0.0.1:{server.server_port}/" + site.pages_with('data-sim="')[0])
        page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=RUNTIME_LIMIT_MS)
        from_snapshot, ready_ms = page.evaluate(
            "() => [window.llmCourse.runtime.fromSnapshot, performance.timeOrigin + window.llmCourse.runtime.readyAt]"
        )
        config = page.evaluate("() => JSON.parse(document.getElementById('course-runtime').textContent)")
        sent_mb = server.sent_by(ready_ms / 1000) / 1e6
    finally:
        ctx.close()
        server.shutdown()
        server.server_close()
    assert from_snapshot is (start_with == "snapshot")
    assert 1.0 < sent_mb <= budget, sent_mb
    skipped = [config["stdlib"], config["archive"]] if from_snapshot else [config["snapshot"], config["data"]]
    assert not set(skipped) & set(fetched), fetched


def test_at_10_mbit_the_worker_restores_the_snapshot(context: BrowserContext, host: str, site: Site) -> None:
    """Above the worker's threshold (6 Mbit/s as it measures; 10 Mbit/s read 7.3-9.4 on a busy
    machine) the snapshot's bytes cost less time than it saves."""
    page, _ = throttled(context, mbps=10, latency_ms=40)
    page.goto(host + site.pages_with('data-sim="')[0])
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=2 * RUNTIME_LIMIT_MS)
    assert page.evaluate("() => window.llmCourse.runtime.fromSnapshot") is True
    log = page.evaluate("() => window.statusLog")
    progress = [tuple(map(float, m.groups())) for text in log if (m := PROGRESS.search(text))]
    # The total shown grew by the snapshot and the data files and lost the stdlib zip and archive.
    config = page.evaluate("() => JSON.parse(document.getElementById('course-runtime').textContent)")
    names = ["pyodide.asm.wasm", "pyodide.asm.mjs", config["data"], config["snapshot"]]
    expected_mb = sent_bytes(site.dir, names) / 1e6
    assert abs(progress[-1][1] - expected_mb) <= 0.051, (progress[-1], expected_mb)
