"""The start-up snapshot's path: restored as the worker restores it (tests/restore_snapshot.mjs),
without the standard library zip and the simulators' Python files, every simulator still runs; and
the bytes that path downloads stay within the issue's budget."""

import gzip
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from kept import ROOT

from simulators import api
from sitebuild import assets, precompress, stdlib


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("snapshot")
    _, archive = assets.simulators_archive(ROOT / "simulators")
    # The build's own cache (keyed by every input): free after a build, about a minute without one.
    _, stdlib_zip = stdlib.stdlib_zip(ROOT / "simulators", archive, ROOT / "build")
    _, snapshot = assets.python_snapshot(archive, stdlib_zip, ROOT / "build")
    _, data = assets.data_archive(archive)
    files = {"snapshot": snapshot, "data": data, "archive": archive, "stdlib": stdlib_zip}
    for name, content in files.items():
        (work / name).write_bytes(content)
    return {name: work / name for name in files}


def test_restored_without_stdlib_zip_or_python_files_every_simulator_runs(built: dict[str, Path]) -> None:
    node = shutil.which("node")
    assert node is not None
    script = ROOT / "tests" / "restore_snapshot.mjs"
    done = subprocess.run(
        [node, str(script), str(assets.NODE_MODULES / "pyodide"), str(built["snapshot"]), str(built["data"])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout)
    assert set(answers) == set(api.SIMULATORS)
    # ok at the defaults; a field error (not a crash) for the unknown parameter
    assert {name: ok for name, ok in answers.items() if ok != [True, False]} == {}


def test_the_data_archive_holds_every_file_but_the_python_sources(built: dict[str, Path]) -> None:
    whole = zipfile.ZipFile(built["archive"]).namelist()
    data = zipfile.ZipFile(built["data"]).namelist()
    assert data == [name for name in whole if not name.endswith(".py")]
    assert any(name.endswith(".toml") for name in data)


# The budget: bytes to interactive at most 8 MB from a host that compresses, on every path.
# The page itself (HTML, CSS, scripts, fonts, the search index) sent about 0.5 MB more in
# scripts/bench_site.py on lesson 01; the worker's downloads get the rest.
BUDGET_MB = 8.0
PAGE_MB = 0.5


def test_each_way_of_starting_downloads_within_the_budget(built: dict[str, Path]) -> None:
    vendored = {name: assets.NODE_MODULES / "pyodide" / name for name in assets.PYODIDE_DOWNLOADS}
    names = {"snapshot": "s", "data": "d", "archive": "a", "stdlib": "l"}
    sizes = precompress.downloads(vendored, {names[k]: path.read_bytes() for k, path in built.items()})
    skipped = precompress.paths(names)
    for with_snapshot in (False, True):
        files = precompress.start_files(sizes, skipped, with_snapshot)
        compressed = sum(gz for _, gz in files.values()) / 1e6
        assert compressed <= BUDGET_MB - PAGE_MB, (with_snapshot, compressed, files)
    # The snapshot file is gzip (sent as it is by every host) and holds its format's magic number.
    packed = gzip.decompress(built["snapshot"].read_bytes())
    assert int.from_bytes(packed[:4], "little") == 0x3253594E
