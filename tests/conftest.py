"""How `./dev test` spreads the suite over processes (pytest-xdist, `--dist loadgroup`).

Each test module stays on one worker, so a module-scoped fixture (Pyodide in Node.js, a browser)
starts once; every browser module shares one worker, so the site the browser tests serve is built
once (tests/browser/conftest.py's session fixture) and Chromium runs beside the CPU-bound
simulator tests instead of beside a second Chromium. Without xdist the groups are ignored."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        group = "browser" if module.startswith("tests/browser/") else module
        item.add_marker(pytest.mark.xdist_group(group))
