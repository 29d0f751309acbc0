"""The build's view of `simulators.api`: schemas, and cached runs through the browser's own entry.

Every run goes through `Session.run_json`, the same function the browser worker calls, so the
pre-rendered chart and the live one come from one code path (and two blocks showing one scenario
in two charts simulate it once). Runs are pure and deterministic (same parameters,
same bytes), so answers are also kept on disk between builds, in a file named after the hash of the
simulators archive: a change anywhere in simulators/ starts a fresh file. `serve` rebuilds after a
lesson edit then only run what the edit added. The validation's engine runs are also committed, in
docs/validation-runs.json, for the simulators code they depend on: a fresh clone's first build
reads them instead of making them (about 40 s of engine runs here).
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from simulators import api

from . import assets, processes

SERVED = "served_benchmarks\n"  # the cache's keys for the validation's serving runs (then their digest)
# The committed runs (scripts/validation_table.py writes them), and what they depend on: the layers
# of simulators/ below the widgets (tests/test_layers.py keeps the benchmarks from importing more).
VALIDATION_RUNS = Path("docs") / "validation-runs.json"
VALIDATION_LAYERS = ("__init__.py", "results_cache.py", "core", "engine", "benchmark", "data")


class SimulatorRunError(Exception):
    """`run_json` answered ok=false: `errors` is its list of {field, message}."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.get('field') or 'input'}: {e['message']}" for e in errors))


def cache_file(root: Path, archive_name: str) -> Path:
    """Where the builds of `root` keep answers for the simulators archive named `archive_name`
    (sitebuild/assets.simulators_archive): the build and `./dev test --fast` share it."""
    return root / "build" / f"sim-runs-{archive_name.removesuffix('.zip')}.json"


def run_digest(key: str) -> str:
    """How a validation run is kept: a digest of its key (api.measurement_runs), a few kB long."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


# The validation runs read so far in this process, by digest: one process runs one version of the
# code (`serve` builds in a new process each time), so no Simulators made later forgets them.
_SERVED: dict[str, float] = {}


def validation_key(root: Path) -> str:
    """A hash of the files of `root`/simulators/ that the validation's runs depend on."""
    digest = hashlib.sha256()
    package = root / "simulators"
    for path in assets.package_files(package):
        if (rel := path.relative_to(package)).parts[0] in VALIDATION_LAYERS:
            digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def committed_runs(root: Path) -> dict[str, float]:
    """The committed validation runs, by digest, if these simulators made them; else none (also
    when the file is missing or unreadable, as after a merge conflict: the build then makes them)."""
    try:
        kept = json.loads((root / VALIDATION_RUNS).read_text(encoding="utf-8"))
        return dict(kept["runs"]) if kept["simulators"] == validation_key(root) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


class Simulators:
    def __init__(self, cache_file: Path | None = None, committed: dict[str, float] | None = None) -> None:
        """`cache_file` keeps answers between builds (without one, in tests, none); `committed`: committed_runs."""
        self._session = api.Session()
        self.schemas: dict[str, dict[str, Any]] = api.schemas()
        self._cache_file = cache_file
        self._saved: dict[str, str] = (
            json.loads(cache_file.read_text()) if cache_file is not None and cache_file.is_file() else {}
        )
        self._runs: dict[str, dict[str, Any]] = {}
        # The validation's serving runs: committed, or kept in the same file, or made in parallel processes.
        _SERVED.update({k.removeprefix(SERVED): float(v) for k, v in self._saved.items() if k.startswith(SERVED)})
        _SERVED.update(committed or {})
        api.make_runs_with(processes.run_many, lambda key: _SERVED.get(run_digest(key)))

    def run(self, name: str, params: dict[str, Any], seed: int = 0) -> dict[str, Any]:
        """The parsed `run_json` answer for these parameters and seed, cached per build."""
        params_json = json.dumps(params, sort_keys=True)
        key = f"{name}\n{params_json}" + (f"\nseed {seed}" if seed else "")
        if key not in self._runs:
            if key not in self._saved:
                self._saved[key] = self._session.run_json(name, params_json, seed)
            self._runs[key] = json.loads(self._saved[key])
        answer = self._runs[key]
        if not answer["ok"]:
            raise SimulatorRunError(answer["errors"])
        return answer

    def save(self) -> None:
        """Keep this build's answers for the next one; answers of older simulators are dropped."""
        if self._cache_file is None:
            return
        self._cache_file.parent.mkdir(parents=True, exist_ok=True)
        for old in self._cache_file.parent.glob("sim-runs-*.json"):
            if old != self._cache_file:
                old.unlink()
        self._saved.update({SERVED + run_digest(k): repr(v) for k, v in api.measurement_runs().items()})
        partial = self._cache_file.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(self._saved))
        partial.replace(self._cache_file)  # atomic: a concurrent build reads old or new, never half
