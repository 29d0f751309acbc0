"""The browser's reduced standard library (sitebuild/stdlib.py) holds everything the simulators import.

Every simulator runs in Pyodide (Node.js) from the reduced zip the build makes, at its defaults and
with a bad parameter; any import of a module the zip lacks would fail that run.
"""

import io
import zipfile
from pathlib import Path

import pytest
from kept import ROOT

from simulators import api
from sitebuild import assets, stdlib


@pytest.fixture(scope="module")
def reduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("stdlib")
    _, archive = assets.simulators_archive(ROOT / "simulators")
    _, data = stdlib.stdlib_zip(ROOT / "simulators", archive, work / "cache")
    (work / "archive.zip").write_bytes(archive)
    (work / "stdlib.zip").write_bytes(data)
    return work / "archive.zip", work / "stdlib.zip"


def test_every_simulator_runs_in_pyodide_from_the_reduced_zip(reduced: tuple[Path, Path]) -> None:
    archive, zip_path = reduced
    answer = stdlib.run_in_pyodide(archive, zip_path)
    assert answer["answers"] == {name: True for name in api.SIMULATORS}
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
    # A frozen module (os, abc, codecs, …) names its source file even when loaded otherwise.
    assert [f for f in answer["files"] if f not in names and f + "c" not in names] == []


def test_the_reduced_zip_is_under_half_of_pyodides_and_holds_bytecode_of_its_sources(
    reduced: tuple[Path, Path],
) -> None:
    _, zip_path = reduced
    full = zipfile.ZipFile(stdlib.FULL_ZIP)
    with zipfile.ZipFile(zip_path) as z:
        assert z.testzip() is None
        for info in z.infolist():
            if info.filename.endswith(".pyc"):  # compiled from the source of the same name
                assert info.filename[:-1] in full.namelist()
                assert z.read(info)[:4] == z.read(next(n for n in z.namelist() if n.endswith(".pyc")))[:4]
            else:
                assert z.read(info) == full.read(info.filename)
        names = set(z.namelist())
    assert zip_path.stat().st_size < stdlib.FULL_ZIP.stat().st_size / 2
    assert not any(n.endswith(".py") for n in names)
    # Modules the simulators never import are left out; the ones they name are in.
    assert not any(n.startswith(("unittest/", "email/", "pydoc")) for n in names)
    assert {"tomllib/__init__.pyc", "json/__init__.pyc", "heapq.pyc", "random.pyc"} <= names


def test_members_adds_named_packages_whole_and_their_directories() -> None:
    available = ["a.py", "pkg/", "pkg/__init__.py", "pkg/sub/", "pkg/sub/x.py", "other.py", "big/", "big/y.py"]
    assert stdlib.members(["other.py"], {"pkg"}, available) == [
        "pkg/",
        "pkg/__init__.py",
        "pkg/sub/",
        "pkg/sub/x.py",
        "other.py",
    ]


def test_reduce_zip_keeps_only_the_members_asked_for() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("keep.py", "x = 1\n" * 100)
        z.writestr("drop.py", "y = 2\n")
    reduced = zipfile.ZipFile(io.BytesIO(stdlib.reduce_zip(buffer.getvalue(), ["keep.py"])))
    assert reduced.namelist() == ["keep.py"]
    assert reduced.read("keep.py") == b"x = 1\n" * 100
    assert reduced.getinfo("keep.py").compress_type == zipfile.ZIP_DEFLATED
