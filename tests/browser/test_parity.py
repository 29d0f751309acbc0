"""Parity: for every simulator, run_json in the browser's worker writes the same bytes as CPython.

Cases: the defaults, the last choice of every choice parameter, and one invalid value (so the error
answer matches too).
"""

import json

import pytest
from browser_helpers import Records, Site, assert_clean, open_tool
from playwright.sync_api import BrowserContext, Page

from simulators import api


def cases() -> list[tuple[str, dict]]:
    found = []
    for name, schema in api.schemas().items():
        found.append((name, {}))
        for param in schema["params"]:
            if param["type"] == "choice" and len(param["choices"]) > 1:
                found.append((name, {param["name"]: param["choices"][-1]["value"]}))
        numeric = next((p for p in schema["params"] if p["type"] in ("int", "float") and p["max"] is not None), None)
        if numeric:
            found.append((name, {numeric["name"]: numeric["max"] * 10 + 1}))
    return found


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site) -> Page:
    return open_tool(context, site, site.pages_with('data-sim="')[0])


@pytest.mark.parametrize(("name", "params"), cases(), ids=lambda v: v if isinstance(v, str) else json.dumps(v))
def test_browser_and_cpython_write_identical_json(page: Page, name: str, params: dict) -> None:
    in_browser = page.evaluate(
        """async ([name, params]) => {
             const client = await import(new URL("assets/js/client.js", document.baseURI.replace(/lessons\\/.*$/, "")).href);
             return client.run("parity", name, params);
           }""",
        [name, params],
    )
    assert in_browser == api.run_json(name, json.dumps(params), 0)


def test_no_request_left_the_site_and_no_error_happened(page: Page, records: Records) -> None:
    assert_clean(records)
