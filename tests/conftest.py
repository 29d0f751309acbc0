"""Shared by every test: the answers a site build kept, and hypothesis's settings.

`./dev test` runs the browser tests and the others as two processes at once, the others at the
lowest priority (nice 19): generating a hypothesis example may then wait for the CPU, which is no
fault of the test, so the too-slow health check and the per-example deadline are off for all."""

import pytest
from hypothesis import HealthCheck, settings
from kept import ROOT, KeptSimulators, kept_file

settings.register_profile("course", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("course")

_LOADED: list[str] = []  # the kept runs loaded in this process: "committed", then the build's file


@pytest.fixture(scope="module", autouse=True)
def _kept_serving_runs() -> None:
    """The validation rows' engine runs made by these same simulators: the committed ones
    (docs/validation-runs.json) from the first module on, and those a site build kept (tests/kept.py)
    as soon as a module starts after such a build exists, so that the validation and
    cross-validation tests compare them instead of recomputing them (about 400 s of CPU). Runs that
    neither holds are computed where first needed."""
    from sitebuild.sims import Simulators, committed_runs

    if "committed" not in _LOADED:
        Simulators(None, committed_runs(ROOT))  # remembered for the process (sitebuild/sims.py)
        _LOADED.append("committed")
    if "build" not in _LOADED and (path := kept_file()) is not None:
        Simulators(path)
        _LOADED.append("build")


@pytest.fixture
def kept_sims() -> KeptSimulators:
    """The build's view of the simulators, answering from a build's kept answers where one exists."""
    return KeptSimulators()
