"""A site build's kept answers, for tests that render lessons or compare the validation table.

The build keeps every widget's and number's answer, and the validation's engine runs, in
build/sim-runs-<simulators hash>.json (sitebuild/sims.py): answers of these same simulators, so a
test that reads them checks the same numbers the build computed, without computing them again.
In a full run the browser tests build the site first; without a build, answers are computed.
"""

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def kept_file() -> Path | None:
    """The kept-answers file of a build of the simulators as they are now, if there is one."""
    from sitebuild import assets
    from sitebuild.sims import cache_file

    path = cache_file(ROOT, assets.simulators_archive(ROOT / "simulators")[0])
    return path if path.is_file() else None


class KeptSimulators:
    """sitebuild.sims.Simulators made at first use (not at import, which comes before the browser
    tests' build), answering from the kept file if one exists by then."""

    def __init__(self) -> None:
        self._sims: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._sims is None:
            from sitebuild.sims import Simulators, committed_runs

            self._sims = Simulators(kept_file(), committed_runs(ROOT))
        return getattr(self._sims, name)
