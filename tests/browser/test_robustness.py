"""Every simulator under random, extreme and garbage input, in the browser, against CPython.

For each simulator, the widget with the most numeric controls: all numeric fields at their minimum,
then at their maximum, random positions of every slider, random choices and ticks, then garbage
typed into each number field (empty, letters, 1e308, negative, NaN) and into each custom-JSON box.
After each step the widget must show what CPython's run_json answers for the same values: the
chart's summary when they are valid, each field's own message when not. No Python may run on the
page's main thread, the main thread must never freeze (no task of a second or more, by a long-task
observer) and no error may reach the console. How fast a chart follows a change is the benchmark's
to measure (scripts/bench_site.py), not this test's: the suite runs beside other tests on a shared
machine, where a 100 ms chart redraw can take several times as long.

One tab visits the pages by instant navigation, so Python starts once for the whole module.
"""

import html
import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from browser_helpers import ROOT, RUNTIME_LIMIT_MS, Records, Site, assert_clean, wait_ready
from crawl import go, settle
from playwright.sync_api import BrowserContext, Locator, Page

from simulators import api

LONG_TASKS = """
window.longTasks = [];
new PerformanceObserver((list) => { for (const e of list.getEntries()) window.longTasks.push(e.duration); })
  .observe({ type: "longtask", buffered: true });
"""
FREEZE_MS = 1_000  # a simulator run on the main thread takes seconds at these extremes
GARBAGE = ["", "abc", "1e308", "-5", "NaN"]
CUSTOM = "__custom__"
# What the widget showed, change by change: printed when an expectation fails.
HISTORY = """(f) => {
  window.figLog = [];
  const text = (sel) => [...f.querySelectorAll(sel)].map((m) => m.textContent.slice(0, 40)).join("|");
  new MutationObserver(() => window.figLog.push(
    `${Math.round(performance.now())} messages ${text(".sim-field-message")} summary ${text(".sim-summary")} status ${text(".sim-status")}`,
  )).observe(f, { subtree: true, childList: true, characterData: true });
}"""


@pytest.fixture(scope="module")
def plan(site: Site) -> dict[str, tuple[str, str]]:
    """simulator -> (page, widget id): its widget with the most numeric controls on any page."""
    schemas = api.schemas()
    best: dict[str, tuple[int, str, str]] = {}
    for path in sorted(site.dir.rglob("index.html")):
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r'<figure class="sim"[^>]*>', text):
            attrs = {k: html.unescape(v) for k, v in re.findall(r'(data-[a-z]+)="([^"]*)"', tag)}
            name, controls = attrs["data-sim"], json.loads(attrs["data-controls"])
            numeric = sum(1 for p in schemas[name]["params"] if p["name"] in controls and p["type"] in ("int", "float"))
            score = numeric * 100 + len(controls)
            if name not in best or score > best[name][0]:
                url = path.parent.relative_to(site.dir).as_posix() + "/"
                best[name] = (score, url, attrs["data-widget"])
    return {name: (url, widget) for name, (_, url, widget) in best.items()}


# CPython's answers come from a child process at the lowest priority: on two cores, the expected
# answer computed at full priority beside the browser would inflate the long tasks it measures.
ANSWERS = """
import json, sys
from simulators import api
for line in sys.stdin:
    name, values = json.loads(line)
    print(api.run_json(name, json.dumps(values)), flush=True)
"""


@pytest.fixture(scope="module")
def cpython() -> Iterator[Callable[[str, dict], dict]]:
    child = subprocess.Popen(
        [sys.executable, "-c", ANSWERS],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.nice(19),
    )
    memo: dict[str, dict] = {}

    def answer(name: str, values: dict) -> dict:
        key = json.dumps([name, values], sort_keys=True)
        if key not in memo:
            child.stdin.write(json.dumps([name, values]) + "\n")
            child.stdin.flush()
            memo[key] = json.loads(child.stdout.readline())
        return memo[key]

    yield answer
    child.stdin.close()
    child.wait(timeout=30)
    child.stdout.close()


@pytest.fixture(scope="module")
def tab(context: BrowserContext, site: Site) -> Page:
    page = context.new_page()
    page.add_init_script(LONG_TASKS)
    return page


def as_sent(param: dict, raw: str) -> object:
    """What widgets.js sends for text typed in a number field: a finite number, else the text."""
    text = raw.strip()
    try:
        value = float(text) if text and text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity") else None
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        return raw
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


def expect(page: Page, figure: Locator, answer: dict, name: str, values: dict, fields: list[str]) -> None:
    """Wait until the widget shows CPython's `answer` for `values`: summary, or each field's message."""
    if answer["ok"]:
        want = {"summary": answer["summary"], "messages": {f: "" for f in fields}}
    else:
        by_field = {e["field"]: e["message"] for e in answer["errors"]}
        want = {"summary": None, "messages": {f: by_field.get(f, "") for f in fields}}
        assert any(f in by_field for f in fields) or answer["errors"], answer
    shown = """(figure) => ({
      messages: Object.fromEntries([...figure.querySelectorAll(".sim-field-message")].map((m) =>
        [m.id.slice(`sim-${figure.dataset.widget}-`.length, -"-message".length), m.textContent])),
      summary: figure.querySelector(".sim-summary").textContent,
      status: figure.querySelector(".sim-status").textContent,
      runtime: JSON.stringify(window.llmCourse.runtime),
      url: location.search,
    })"""
    try:
        page.wait_for_function(
            f"""([figure, want]) => {{
                 const now = ({shown})(figure);
                 return Object.keys(want.messages).every((f) => now.messages[f] === want.messages[f]) &&
                   (want.summary === null || now.summary === want.summary);
               }}""",
            arg=[figure.element_handle(), want],
            timeout=RUNTIME_LIMIT_MS,
        )
    except Exception:
        now = page.evaluate(shown, figure.element_handle())
        now["log"] = page.evaluate("() => window.figLog.slice(-40)")
        raise AssertionError(f"{name} with {values}:\nexpected {want}\nshown {now}") from None


def read_values(figure: Locator, schema: dict, base: dict) -> dict:
    """The values the widget holds now, read back from its controls as widgets.js reads them."""
    values = {**{p["name"]: p["default"] for p in schema["params"]}, **base}
    widget = figure.get_attribute("data-widget")
    for name in json.loads(figure.get_attribute("data-controls")):
        p = next(q for q in schema["params"] if q["name"] == name)
        field = figure.locator(f"#sim-{widget}-{name}")
        if p["type"] in ("int", "float"):
            values[name] = as_sent(p, field.input_value())
        elif p["type"] == "bool":
            values[name] = field.is_checked()
        elif p["type"] == "choice":
            values[name] = field.input_value()
    return values


@pytest.mark.parametrize("name", sorted(api.SIMULATORS))
def test_random_extreme_and_garbage_input(
    tab: Page, site: Site, plan: dict, cpython: Callable[[str, dict], dict], name: str
) -> None:
    url, widget = plan[name]
    go(tab, site, url)
    if tab.evaluate("() => window.llmCourse?.runtime?.state") != "ready":
        wait_ready(tab)
    settle(tab)
    rng = random.Random(name)
    schema = api.schema(name)
    figure = tab.locator(f"figure#sim-{widget}")
    base = json.loads(figure.get_attribute("data-params"))
    controls = [
        next(p for p in schema["params"] if p["name"] == c) for c in json.loads(figure.get_attribute("data-controls"))
    ]
    numeric = [p for p in controls if p["type"] in ("int", "float")]
    fields = [p["name"] for p in controls]
    box = lambda p: figure.locator(f"#sim-{widget}-{p['name']}")  # noqa: E731

    def check(values: dict) -> dict:
        answer = cpython(name, values)
        expect(tab, figure, answer, name, values, fields)
        return answer

    tab.evaluate("() => { window.longTasks.length = 0; }")
    figure.evaluate(HISTORY)

    for end in ("min", "max"):  # every number at one end of its range
        for p in numeric:
            box(p).fill(str(p[end]))
        check(read_values(figure, schema, base))

    for p in controls:  # random positions through the controls themselves
        if p["type"] in ("int", "float"):
            slider = figure.locator(f"input[type=range][aria-labelledby='sim-{widget}-{p['name']}-label']")
            low, high = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
            slider.fill(str(rng.uniform(low, high)))
        elif p["type"] == "choice":
            box(p).select_option(rng.choice(p["choices"])["value"])
        elif p["type"] == "bool" and rng.random() < 0.5:
            box(p).click()
    check(read_values(figure, schema, base))

    for p in numeric:  # garbage typed into each number field, then its valid value back
        valid = box(p).input_value()
        for raw in GARBAGE:
            box(p).fill(raw)
            if not check(read_values(figure, schema, base))["ok"]:
                assert box(p).get_attribute("aria-invalid") == "true" or p["name"] not in fields
        box(p).fill(valid)
        check(read_values(figure, schema, base))

    for p in (p for p in controls if p["type"] == "choice" and p.get("custom")):  # bad JSON in a custom box
        chosen = box(p).input_value()
        shown = box(p).locator(f"option[value='{CUSTOM}']").inner_text()  # "Custom gpu" read as an id
        assert shown == f"Custom {'GPU' if p['custom'] == 'gpu' else p['custom']} (paste JSON)…", shown
        box(p).select_option(CUSTOM)
        area = box(p).locator("xpath=following-sibling::textarea[1]")
        area.fill("{not json")
        message = figure.locator(f"#sim-{widget}-{p['name']}-message")
        tab.wait_for_function("el => el.textContent.startsWith('not valid JSON')", arg=message.element_handle())
        box(p).select_option(chosen)
        check(read_values(figure, schema, base))
        break  # one custom box per simulator: they share the code path

    # The runtime is fetched by the worker only: the page's own resource timeline never lists it.
    runtime_on_page = "() => performance.getEntriesByType('resource').some((e) => e.name.includes('pyodide.asm'))"
    assert not tab.evaluate(runtime_on_page), "the page's main thread loaded the Python runtime"
    longest = tab.evaluate("() => Math.max(0, ...window.longTasks)")
    assert longest < FREEZE_MS, f"the main thread was blocked for {longest:.0f} ms"
    assert tab.evaluate("() => window.llmCourse.runtime.starts") == 1, "a run hit the time limit"


def test_a_log_slider_starting_at_zero_has_a_zero_notch(
    tab: Page, site: Site, cpython: Callable[[str, dict], dict]
) -> None:
    # deployment's batch limits: 0 is "vllm serve's default for the GPU", 1 to 4,096 a log scale.
    go(tab, site, "tools/kv-cache-calculator/")
    if tab.evaluate("() => window.llmCourse?.runtime?.state") != "ready":
        wait_ready(tab)
    settle(tab)
    schema = api.schema("deployment")
    figure = tab.locator("figure#sim-deploy-a")
    base = json.loads(figure.get_attribute("data-params"))
    fields = json.loads(figure.get_attribute("data-controls"))
    figure.evaluate(HISTORY)
    slider = figure.locator("input[type=range][aria-labelledby='sim-deploy-a-max_num_seqs-label']")
    box = figure.locator("#sim-deploy-a-max_num_seqs")
    low, high = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    assert low < 0 == math.log10(1) < high == pytest.approx(math.log10(4096))
    for position, shown in ((high, "4096"), (0.0, "1"), (low, "0"), (math.log10(64), "64")):
        slider.fill(str(position))
        assert box.input_value() == shown
        values = read_values(figure, schema, base)
        answer = cpython("deployment", values)
        expect(tab, figure, answer, "deployment", values, fields)
    assert "64 sequences (as set)" in answer["summary"]
    box.fill("0")  # typed: the slider goes back to its zero notch
    assert float(slider.input_value()) == pytest.approx(low)
    expect(tab, figure, cpython("deployment", read_values(figure, schema, base)), "deployment", values, fields)


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
