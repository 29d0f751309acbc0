#!/usr/bin/env python3
"""Page-speed figures for the built site (prints figures; not a test).

For every page with a chart (lessons and tools), over --runs loads each:
  chart   navigation -> first pre-rendered (static SVG) chart on screen  target <= 300 ms
  cold    navigation -> Python runtime ready, empty browser cache        target <= 2.0 s
  warm    the same with a persistent profile (HTTP cache, Cache Storage) target <= 1.0 s
  bytes   transferred by the page before the runtime starts          target <= 1.5 MB
for every simulator, on the first widget of it with a number among its controls, with that widget
set to the simulator's defaults through the page address (the target), and at the page's own scenario:
  change  control change -> chart redrawn, p50 and p95               target p95 <= 100 / 150 ms at defaults
  tab     chart choice (view) switched -> chart redrawn, p50 and p95, per simulator with views
timed after the page's warm-ups (runtime and plotly.js), each change to a value not used before;
and the full build time (target <= 60 s). One untimed page load warms the browser process up
first. The machine is shared: compare figures within one run.

Then, on the first page, the start-up on real networks (--network-runs loads each, cold cache):
  sent    bytes transferred until the runtime is ready, from a host that serves the build's
          precompressed copies (nginx gzip_static) and from `python -m http.server`, which
          compresses nothing; for the start the worker chooses and for both ways of starting
          (restoring the build's snapshot, or starting Python from scratch)
  ready   navigation -> runtime ready on the compressing host, unthrottled and through Chromium's
          own throttling (DevTools protocol): 20 Mbit/s 40 ms, 10 Mbit/s 40 ms (target <= 12 s),
          5 Mbit/s 100 ms with the CPU 4x slower (a phone)

    python scripts/bench_site.py [--runs 5] [--changes 20] [--pages 01,08,tools] [--network-runs 2] [--tabs-only]
    python scripts/bench_site.py --network-only   # only the start-up on real networks
    python scripts/bench_site.py --network-only --sites before=DIR,after=DIR   # two builds, lesson 01
    python scripts/bench_site.py --widgets 11,F2   # only those lessons' widgets, every numeric control

--widgets: per widget of those lessons and per numeric control of it, at the page's scenario and
at the slider's two ends (set through the widget's address), change -> first chart drawn (a
streaming chart's first partial one, data-partial, else the answer) and -> whole answer
(data-drawn), p50 and p95 over --changes changes to values not used before.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))  # chromium.py, local_hosts.py

import chromium  # noqa: E402
import local_hosts  # noqa: E402
from playwright.sync_api import BrowserContext, Page, sync_playwright  # noqa: E402

from simulators import api  # noqa: E402
from sitebuild import serve  # noqa: E402

# Records when the first chart is on screen, on the page's own clock (ms since navigation): the
# animation frame after its SVG (the build's static one, or plotly's) entered the document.
CHART_CLOCK = """
new MutationObserver((_, observer) => {
  if (document.querySelector("figure.sim .sim-chart svg")) {
    observer.disconnect();
    requestAnimationFrame(() => { window.benchChartAt = performance.now(); });
  }
}).observe(document, { childList: true, subtree: true });
"""

# Changes the first numeric control of a widget and resolves with the ms until redrawn.
CHANGE = """
async ([widget, value]) => {
  const figure = document.getElementById(`sim-${widget}`);
  const input = figure.querySelector(".sim-field input[inputmode=decimal]");
  const before = figure.dataset.drawn;
  const start = performance.now();
  const drawn = new Promise((resolve) => new MutationObserver((_, o) => {
    if (figure.dataset.drawn !== before) { o.disconnect(); resolve(performance.now() - start); }
  }).observe(figure, { attributes: true, attributeFilter: ["data-drawn"] }));
  input.value = String(value);
  input.dispatchEvent(new Event("input", { bubbles: true }));
  return drawn;
}
"""

# Picks another chart (the "view" control) and resolves with the ms until redrawn.
TAB = """
async ([widget, value]) => {
  const figure = document.getElementById(`sim-${widget}`);
  const select = figure.querySelector(`#sim-${figure.dataset.widget}-view`);
  const before = figure.dataset.drawn;
  const start = performance.now();
  const drawn = new Promise((resolve) => new MutationObserver((_, o) => {
    if (figure.dataset.drawn !== before) { o.disconnect(); resolve(performance.now() - start); }
  }).observe(figure, { attributes: true, attributeFilter: ["data-drawn"] }));
  select.value = value;
  select.dispatchEvent(new Event("change", { bubbles: true }));
  return drawn;
}
"""

# Changes one control and resolves with [ms to the first redraw (partial or whole), ms to the answer].
CHANGE_STREAMED = """
async ([widget, control, value]) => {
  const figure = document.getElementById(`sim-${widget}`);
  const input = figure.querySelector(`#sim-${widget}-${control}`);
  const before = figure.dataset.drawn;
  const partial = figure.dataset.partial;
  const start = performance.now();
  let first = null;
  // A value the simulator refuses draws nothing: it answers null when a field is marked invalid
  // or the status line reports, or after 60 s.
  const status = figure.querySelector(".sim-status");
  const said = status.textContent;
  const drawn = new Promise((resolve) => {
    const o = new MutationObserver((records) => {
      const invalid = records.some((r) => r.attributeName === "aria-invalid" && r.target.getAttribute("aria-invalid") === "true");
      const told = status.textContent.trim() !== "" && status.textContent !== said;
      if (invalid || told) { o.disconnect(); resolve(null); return; }
      if (figure.dataset.partial !== partial || figure.dataset.drawn !== before) first ??= performance.now() - start;
      if (figure.dataset.drawn !== before) { o.disconnect(); resolve([first, performance.now() - start]); }
    });
    o.observe(figure, { attributes: true, subtree: true, childList: true, characterData: true,
                        attributeFilter: ["data-drawn", "data-partial", "aria-invalid"] });
    setTimeout(() => { o.disconnect(); resolve(null); }, 60_000);
  });
  input.value = String(value);
  input.dispatchEvent(new Event("input", { bubbles: true }));
  return drawn;
}
"""

BYTES_BEFORE_RUNTIME = """
() => {
  const started = window.llmCourse.runtime.startedAt;
  return performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"))
    .filter((e) => e.startTime < started).reduce((sum, e) => sum + e.transferSize, 0);
}
"""


def build(site_dir: Path, url: str) -> float:
    start = time.monotonic()
    command = [sys.executable, str(ROOT / "site_build.py"), "build", "--site-dir", str(site_dir), "--site-url", url]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.monotonic() - start


def load(page: Page, url: str) -> tuple[float, float, int]:
    """(chart ms, ready ms, bytes before the runtime) for one navigation."""
    page.goto(url)
    page.wait_for_function("() => window.llmCourse?.runtime?.state === 'ready'", timeout=120_000)
    page.wait_for_function("() => window.benchChartAt !== undefined")
    chart, ready, snapshot = page.evaluate(
        "() => [window.benchChartAt, window.llmCourse.runtime.readyAt, window.llmCourse.runtime.fromSnapshot]"
    )
    if not snapshot:
        print(f"  note: {url} started Python without the build's snapshot (see the console)")
    return chart, ready, page.evaluate(BYTES_BEFORE_RUNTIME)


def stages(page: Page) -> str:
    """When each start-up stage began and the runtime was ready, ms since navigation."""
    at = page.evaluate(
        "() => { const r = window.llmCourse.runtime; return [r.startedAt, ...r.stageAt.slice(1), r.readyAt]; }"
    )
    return " → ".join(f"{v:.0f}" for v in at)


NUMERIC = ".sim-field input[inputmode=decimal]"


def changes(page: Page, widget: str, count: int) -> list[float]:
    """Change the widget's first numeric control `count` times, to a value not used before each
    time (no run repeats a scenario, so no cache can answer), alternating around its value."""
    figure = page.locator(f"figure#sim-{widget}")
    field = figure.locator(NUMERIC).first
    name = field.get_attribute("id").removeprefix(f"sim-{figure.get_attribute('data-widget')}-")
    param = next(p for p in api.schema(figure.get_attribute("data-sim"))["params"] if p["name"] == name)
    first = float(field.input_value())
    values = distinct_values(first, param, count)
    return [page.evaluate(CHANGE, [widget, v]) for v in values]


def tab_switches(page: Page, widget: str, count: int) -> list[float]:
    """Switch the widget's chart `count` times, cycling through its views (the first switch draws
    a view for the first time, later ones come back to views already drawn for this scenario)."""
    select = page.locator(f"figure#sim-{widget} select[id$='-view']")
    views = [v for v in select.locator("option").evaluate_all("(os) => os.map((o) => o.value)") if v != "__custom__"]
    current = select.input_value()
    order = [v for v in views if v != current] + [current]
    return [page.evaluate(TAB, [widget, order[i % len(order)]]) for i in range(count)]


def widgets_with_views(page: Page) -> list[tuple[str, str]]:
    """(widget id, simulator) of every widget on the page whose chart choice is a control."""
    return page.evaluate(
        """() => [...document.querySelectorAll("figure.sim")].filter((f) => f.querySelector(`#sim-${f.dataset.widget}-view`))
             .map((f) => [f.dataset.widget, f.dataset.sim])"""
    )


def tabs(browser_context: BrowserContext, pages: list[str], url: str, count: int) -> dict[str, list[float]]:
    """Tab-switch times on the first widget of each simulator that offers a chart choice."""
    per_sim: dict[str, list[float]] = {}
    page = browser_context.new_page()
    for name in pages:
        load(page, f"{url}{name}/")
        page.wait_for_function("() => window.llmCourse.chartsLive && window.llmCourse.runtime.background === 0")
        for widget, sim in widgets_with_views(page):
            if sim not in per_sim:
                per_sim[sim] = tab_switches(page, widget, count)
                print(
                    f"  tab    {sim:13s} p50 {percentile(per_sim[sim], 0.5):5.0f} ms  p95 {percentile(per_sim[sim], 0.95):5.0f} ms  ({name})"
                )
    page.close()
    return per_sim


def distinct_values(first: float, param: dict, count: int) -> list[float]:
    """`count` different valid values near `first`: steps of 1 (ints) or 1% (floats), up and down in
    turn (a value just past a model's own limit on one side still leaves the other side)."""
    step = 1 if param["type"] == "int" else abs(first) * 0.01 or (param["max"] - param["min"]) / 1000
    candidates = [first + sign * k * step for k in range(1, count + 1) for sign in (1, -1)]
    candidates = [int(v) if param["type"] == "int" else v for v in candidates if param["min"] <= v <= param["max"]]
    if not candidates:
        raise SystemExit(f"{param['name']}: no other valid value near {first}")
    return candidates[:count]  # a short range (GPUs 1-8) gives fewer changes: its row says how many


def at_defaults(page: Page, url: str, widget: str, sim: str) -> None:
    """Open `url` with the widget set to the simulator's defaults (its shared-scenario address)."""
    page.goto(url)
    params = json.loads(page.locator(f"figure#sim-{widget}").get_attribute("data-params"))
    defaults = {p["name"]: p["default"] for p in api.schema(sim)["params"]}
    state = {k: defaults[k] for k in params}
    page.goto(f"{url}?sim-{widget}={quote(json.dumps(state))}" if state else url)
    page.wait_for_function(
        "() => window.llmCourse?.runtime?.state === 'ready' && window.llmCourse.chartsLive && window.llmCourse.runtime.background === 0"
    )
    if state:  # the shared scenario runs once the runtime is ready
        page.wait_for_function(f"() => document.getElementById('sim-{widget}').dataset.drawn === '1'", timeout=60_000)


def widgets_with_numbers(page: Page) -> list[tuple[str, str]]:
    """(widget id, simulator) of every widget on the page with a number among its controls."""
    return page.evaluate(
        f"""() => [...document.querySelectorAll("figure.sim")].filter((f) => f.querySelector("{NUMERIC}"))
             .map((f) => [f.dataset.widget, f.dataset.sim])"""
    )


def summary(values: list[float], unit: str = "ms") -> str:
    return f"median {statistics.median(values):7.0f} {unit}  max {max(values):7.0f} {unit}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def lesson_widget_figures(context: BrowserContext, url: str, pages: list[str], count: int) -> None:
    """--widgets: change -> first chart and -> answer, per numeric control, at the page's scenario
    and at the slider's ends (the widget's address holds the scenario)."""
    print(f"lesson widgets: change -> first chart / whole answer, ms, {count} changes per row (after warm-ups)")
    page = context.new_page()
    firsts: list[float] = []
    for name in pages:
        page_url = f"{url}{name}/"
        load(page, page_url)
        for widget, sim in widgets_with_numbers(page):
            figure = page.locator(f"figure#sim-{widget}")
            params = json.loads(figure.get_attribute("data-params"))
            controls = json.loads(figure.get_attribute("data-controls"))
            fields = {p["name"]: p for p in api.schema(sim)["params"]}
            for control in [c for c in controls if fields.get(c, {}).get("type") in ("int", "float")]:
                f = fields[control]
                for where, start in (("page", params.get(control, f["default"])), ("min", f["min"]), ("max", f["max"])):
                    state = {control: start} if where != "page" else {}
                    scenario = {k: v for k, v in {**params, **state}.items() if k != "view"}
                    if state and not api.run(sim, scenario)["ok"]:  # the widget falls back to its page's values
                        print(
                            f"  {name.split('/')[-1][:24]:24s} {widget:12s} {control:13s} {where:5s} the slider's end is refused here"
                        )
                        continue
                    page.goto(f"{page_url}?sim-{widget}={quote(json.dumps(state))}" if state else page_url)
                    page.wait_for_function(
                        "() => window.llmCourse?.runtime?.state === 'ready' && window.llmCourse.chartsLive && window.llmCourse.runtime.background === 0",
                        timeout=120_000,
                    )
                    if state:
                        page.wait_for_function(
                            f"() => document.getElementById('sim-{widget}').dataset.drawn === '1'", timeout=120_000
                        )
                    values = distinct_values(float(start), f, count)
                    answers = [page.evaluate(CHANGE_STREAMED, [widget, control, v]) for v in values]
                    times = [t for t in answers if t is not None]
                    refused = len(answers) - len(times)
                    if not times:
                        print(
                            f"  {name.split('/')[-1][:24]:24s} {widget:12s} {control:13s} {where:5s} every value refused"
                        )
                        continue
                    first, whole = [t[0] for t in times], [t[1] for t in times]
                    firsts += first
                    fewer = (
                        f"  ({len(times)} changes{f', {refused} refused' if refused else ''})"
                        if len(times) < count
                        else ""
                    )
                    print(
                        f"  {name.split('/')[-1][:24]:24s} {widget:12s} {control:13s} {where:5s} first p50 {percentile(first, 0.5):6.0f} "
                        f"p95 {percentile(first, 0.95):6.0f}  whole p50 {percentile(whole, 0.5):6.0f} p95 {percentile(whole, 0.95):6.0f}{fewer}"
                    )
    page.close()
    print(
        f"  all: first chart p50 {percentile(firsts, 0.5):.0f} ms  p95 {percentile(firsts, 0.95):.0f} ms  (target p95 <= 150 ms)"
    )


# (name, Mbit/s, latency ms, CPU slow-down); 0 Mbit/s: not throttled.
NETWORKS = [
    ("unthrottled", 0, 0, 1),
    ("20 Mbit/s 40 ms", 20, 40, 1),
    ("10 Mbit/s 40 ms", 10, 40, 1),
    ("5 Mbit/s 100 ms CPU 4x", 5, 100, 4),
]


def start_up(
    browser, server, page: str, mbps: float = 0, latency_ms: float = 0, cpu: float = 1, start_with: str | None = None
):  # type: ignore[no-untyped-def]
    """One cold load: (ms to ready or None if it failed, bytes the server sent until then, from snapshot)."""
    context = browser.new_context()
    if start_with:
        context.add_init_script(f"window.llmCourse = {{ startWith: {json.dumps(start_with)} }};")
    tab = context.new_page()
    cdp = context.new_cdp_session(tab)
    if mbps:
        rate = mbps * 1e6 / 8
        conditions = {"offline": False, "latency": latency_ms, "downloadThroughput": rate, "uploadThroughput": rate}
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", conditions)
    if cpu > 1:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": cpu})
    server.reset()
    tab.goto(f"http://127.0.0.1:{server.server_port}/{page}/", timeout=300_000)
    tab.wait_for_function("() => ['ready', 'failed'].includes(window.llmCourse?.runtime?.state)", timeout=300_000)
    state, ready, snapshot, ready_epoch_ms = tab.evaluate(
        "() => { const r = window.llmCourse.runtime; return [r.state, r.readyAt, r.fromSnapshot, performance.timeOrigin + r.readyAt]; }"
    )
    sent = server.sent_by(ready_epoch_ms / 1000)  # not plotly.js, which the page fetches once Python is ready
    context.close()
    return (ready if state == "ready" else None), sent, snapshot


def network_figures(
    browser, sites: dict[str, Path], page: str, runs: int, variants=(None, "snapshot", "plain")
) -> None:  # type: ignore[no-untyped-def]
    """The start-up figures for each of `sites` (label -> built site), their loads interleaved so
    that a machine shared with others slows each site alike."""
    hosts = {
        label: {
            "compressing host (precompressed .gz)": local_hosts.start_precompressed(site_dir),
            "python -m http.server": local_hosts.start_plain(site_dir),
        }
        for label, site_dir in sites.items()
    }
    print(f"\nstart-up on real networks ({page}, {runs} cold loads each; load average {load_average()})")
    for name in next(iter(hosts.values())):
        for start_with in variants:
            loads = {label: [] for label in sites}
            for _ in range(runs):
                for label in sites:
                    loads[label].append(start_up(browser, hosts[label][name], page, start_with=start_with))
            for label, done in loads.items():
                how = start_with or "as chosen"
                used = "snapshot" if done[-1][2] else "from scratch"
                ready = statistics.median(t or float("nan") for t, _, _ in done) / 1000
                sent = statistics.median(b for _, b, _ in done) / 1e6
                print(f"  sent   {label}{name:38s} {how:10s} {sent:5.2f} MB  ready in {ready:4.1f} s ({used})")
    for network, mbps, latency, cpu in NETWORKS:
        loads = {label: [] for label in sites}
        for _ in range(runs):
            for label in sites:
                compressing = hosts[label]["compressing host (precompressed .gz)"]
                loads[label].append(start_up(browser, compressing, page, mbps, latency, cpu))
        for label, done in loads.items():
            times = [t for t, _, _ in done if t is not None]
            failed = runs - len(times)
            used = "snapshot" if done[-1][2] else "from scratch"
            median = f"{statistics.median(times) / 1000:5.1f} s" if times else "  never"
            print(
                f"  ready  {label}{network:24s} median {median}  max {max(times, default=0) / 1000:5.1f} s  "
                f"({used}; {failed} failed; load average {load_average()})"
            )
    for servers in hosts.values():
        for server in servers.values():
            server.shutdown()
            server.server_close()


def load_average() -> str:
    """The machine's 1-minute load average (the figures are only as quiet as the machine)."""
    return f"{os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--pages", help="comma-separated lesson ids (default: every page with a simulator)")
    parser.add_argument("--network-runs", type=int, default=2)
    parser.add_argument("--network-only", action="store_true", help="only the start-up on real networks")
    parser.add_argument(
        "--sites",
        help="with --network-only: LABEL=DIR,... sites already built, compared with their loads interleaved",
    )
    parser.add_argument("--tabs", type=int, default=12, help="chart (view) switches per simulator")
    parser.add_argument("--tabs-only", action="store_true", help="measure only the chart switches")
    parser.add_argument("--widgets", help="lesson ids whose widgets to time control by control, alone (e.g. 11,F2)")
    args = parser.parse_args()

    if args.sites:
        sites = {f"{label}: ": Path(path) for label, path in (item.split("=", 1) for item in args.sites.split(","))}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium.executable())
            network_figures(browser, sites, f"lessons/{args.pages or '01-kv-cache'}", args.network_runs)
            browser.close()
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-site-"))
    site_dir = work / "site"
    server = serve.start(site_dir)
    url = f"http://127.0.0.1:{server.server_port}/"
    build_s = build(site_dir, url)
    pages = sorted(
        p.parent.relative_to(site_dir).as_posix()
        for p in site_dir.glob("*/*/index.html")
        if p.parent.parent.name in ("lessons", "tools") and 'data-sim="' in p.read_text()
    )
    if args.pages:
        wanted = args.pages.split(",")
        pages = [p for p in pages if p.split("/")[1].split("-", 1)[0] in wanted or p.split("/")[0] in wanted]
    print(f"full build: {build_s:.1f} s (npm packages already installed)")
    print(f"{len(pages)} pages with simulators, {args.runs} loads each, {args.changes} control changes each\n")

    figures: dict[str, list[float]] = {"chart": [], "cold": [], "warm": [], "change": [], "bytes": []}
    per_sim: dict[str, list[float]] = {}  # at the page's scenario
    first_widget: dict[str, tuple[str, str]] = {}  # simulator -> (page url, widget id)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium.executable())
        if args.network_only:
            network_figures(browser, {"": site_dir}, pages[0], args.network_runs)
            browser.close()
            return 0
        warm_profile = playwright.chromium.launch_persistent_context(
            str(work / "profile"), executable_path=chromium.executable()
        )
        warm_profile.add_init_script(CHART_CLOCK)
        if args.widgets:
            wanted = args.widgets.split(",")
            lesson_widget_figures(
                warm_profile, url, [p for p in pages if p.split("/")[1].split("-", 1)[0] in wanted], args.changes
            )
            warm_profile.close()
            browser.close()
            server.shutdown()
            server.server_close()
            return 0
        # One untimed load first: a reader's browser is already running, and the first page of a
        # fresh browser process (and of the local server) pays start-up costs no reader would.
        throwaway = browser.new_context()
        throwaway.new_page().goto(f"{url}{pages[0]}/")
        throwaway.close()
        print("chart switches (view control), after the page's warm-ups")
        per_tab = tabs(warm_profile, pages, url, args.tabs)
        every = [v for values in per_tab.values() for v in values]
        print(f"  tab    all p50 {percentile(every, 0.5):.0f} ms  p95 {percentile(every, 0.95):.0f} ms\n")
        if args.tabs_only:
            warm_profile.close()
            browser.close()
            server.shutdown()
            server.server_close()
            return 0
        for name in pages:
            page_url = f"{url}{name}/"
            cold = []
            for _ in range(args.runs):
                context: BrowserContext = browser.new_context()
                context.add_init_script(CHART_CLOCK)
                cold.append(load(context.new_page(), page_url))
                context.close()
            print(f"{name}")
            warm_page = warm_profile.new_page()
            load(warm_page, page_url)  # fills the cache
            warm = [load(warm_page, page_url)[1] for _ in range(args.runs)]
            print(f"  start-up stages (last warm load, ms): worker {stages(warm_page)} ready")
            # Once the runtime is ready, plotly.js loads and replaces the static charts at idle, and
            # the widgets warm the runtime up in the background; changes are timed after both, as a
            # reader's first change would usually come later.
            warm_page.wait_for_function(
                "() => window.llmCourse.chartsLive && window.llmCourse.runtime.background === 0"
            )
            moves = []
            for widget, sim in widgets_with_numbers(warm_page):
                if sim not in per_sim:
                    first_widget[sim] = (page_url, widget)
                    per_sim[sim] = changes(warm_page, widget, args.changes)
                    moves += per_sim[sim]
                    print(
                        f"  change {sim:13s} p50 {percentile(per_sim[sim], 0.5):5.0f} ms  p95 {percentile(per_sim[sim], 0.95):5.0f} ms"
                    )
            warm_page.close()
            row = {
                "chart": [c[0] for c in cold],
                "cold": [c[1] for c in cold],
                "warm": warm,
                "change": moves,
                "bytes": [c[2] / 1e6 for c in cold],
            }
            for key, values in row.items():
                figures[key] += values
            print(f"  chart  {summary(row['chart'])}")
            print(f"  cold   {summary(row['cold'])}")
            print(f"  warm   {summary(row['warm'])}")
            print(f"  bytes  median {statistics.median(row['bytes']):.2f} MB  max {max(row['bytes']):.2f} MB")
        print("\nat each simulator's defaults (the widget's address holds them)")
        at_default: dict[str, list[float]] = {}
        default_page = warm_profile.new_page()
        for sim, (page_url, widget) in sorted(first_widget.items()):
            at_defaults(default_page, page_url, widget, sim)
            at_default[sim] = changes(default_page, widget, args.changes)
            print(
                f"  change {sim:13s} p50 {percentile(at_default[sim], 0.5):5.0f} ms  p95 {percentile(at_default[sim], 0.95):5.0f} ms"
            )
        warm_profile.close()
        network_figures(browser, {"": site_dir}, pages[0], args.network_runs)
        browser.close()
    server.shutdown()
    server.server_close()
    change = figures["change"]
    print("\nall pages")
    print(f"  chart  {summary(figures['chart'])}   (target <= 300 ms)")
    print(f"  cold   {summary(figures['cold'])}   (target <= 2000 ms)")
    print(f"  warm   {summary(figures['warm'])}   (target <= 1000 ms)")
    print(
        f"  change p50 {percentile(change, 0.5):.0f} ms  p95 {percentile(change, 0.95):.0f} ms   (target p95 <= 100 ms per simulator)"
    )
    worst = max(per_sim, key=lambda k: percentile(per_sim[k], 0.95))
    print(
        f"  change worst simulator: {worst} p95 {percentile(per_sim[worst], 0.95):.0f} ms; {len(per_sim)} simulators measured"
    )
    for target in (100, 150):  # the quality gates' target, and the course site's
        met = sorted(k for k, v in at_default.items() if percentile(v, 0.95) <= target)
        print(f"  change at defaults: p95 <= {target} ms for {len(met)} of {len(at_default)} simulators; over:", end="")
        print(
            "".join(f" {k} {percentile(v, 0.95):.0f}" for k, v in sorted(at_default.items()) if k not in met) or " none"
        )
    print(f"  bytes  max {max(figures['bytes']):.2f} MB   (target <= 1.5 MB)")
    print(f"  build  {build_s:.1f} s   (target <= 60 s)")
    print(json.dumps({k: round(statistics.median(v), 1) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
