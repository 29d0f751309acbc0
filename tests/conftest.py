"""Shared by every test: the answers a site build kept, and hypothesis's settings.

`./dev test` runs the browser tests and the others as two processes at once, the others at the
lowest priority (nice 19): generating a hypothesis example may then wait for the CPU, which is no
fault of the test, so the too-slow health check and the per-example deadline are off for all."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from kept import KeptSimulators, kept_file

settings.register_profile("course", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("course")

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
