"""How `./dev test` spreads the suite over processes (pytest-xdist, `--dist loadgroup`).

Each test module stays on one worker, so a module-scoped fixture (Pyodide in Node.js, a browser)
starts once; every browser module shares one worker, so the site the browser tests serve is built
once (tests/browser/conftest.py's session fixture) and Chromium runs beside the CPU-bound
simulator tests instead of beside a second Chromium. Without xdist the groups are ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


_KEPT: list[Path] = []  # the kept-runs file once loaded (one per process)


@pytest.fixture(scope="module", autouse=True)
def _kept_serving_runs() -> None:
    """The validation rows' engine runs that a site build of these same simulators kept (build/,
    keyed by the simulators' hash), loaded once a process as soon as a module starts after such a
    build exists (in a full run the browser tests build the site first), so that the validation and
    cross-validation tests compare them instead of recomputing them (about 400 s of CPU); without
    such a build they are computed where first needed."""
    if _KEPT:
        return
    from sitebuild import assets
    from sitebuild.sims import Simulators, cache_file

    kept = cache_file(ROOT, assets.simulators_archive(ROOT / "simulators")[0])
    if kept.is_file():
        Simulators(kept)  # remembers them (sitebuild/sims.py)
        _KEPT.append(kept)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        group = "browser" if module.startswith("tests/browser/") else module
        item.add_marker(pytest.mark.xdist_group(group))
