"""How `./dev test` spreads the suite over processes (pytest-xdist, `--dist loadgroup`).

Each test module stays on one worker, so a module-scoped fixture (Pyodide in Node.js, a browser)
starts once; every browser module shares one worker, so the site the browser tests serve is built
once (tests/browser/conftest.py's session fixture) and Chromium runs beside the CPU-bound
simulator tests instead of beside a second Chromium. Without xdist the groups are ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
from kept import KeptSimulators, kept_file

_KEPT: list[Path] = []  # the kept-answers file once loaded (one per process)


@pytest.fixture(scope="module", autouse=True)
def _kept_serving_runs() -> None:
    """The validation rows' engine runs that a site build of these same simulators kept (tests/kept.py),
    loaded once a process as soon as a module starts after such a build exists, so that the
    validation and cross-validation tests compare them instead of recomputing them (about 400 s of
    CPU); without such a build they are computed where first needed."""
    if not _KEPT and (path := kept_file()) is not None:
        from sitebuild.sims import Simulators

        Simulators(path)  # remembers them (sitebuild/sims.py)
        _KEPT.append(path)


@pytest.fixture
def kept_sims() -> KeptSimulators:
    """The build's view of the simulators, answering from a build's kept answers where one exists."""
    return KeptSimulators()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        group = "browser" if module.startswith("tests/browser/") else module
        item.add_marker(pytest.mark.xdist_group(group))
