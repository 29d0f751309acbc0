"""A Python standard library zip for the browser holding only what the simulators import.

Pyodide's own python_stdlib.zip is 2.5 MB (614 files: asyncio, email, unittest, pydoc, …). The
worker passes this reduced zip as Pyodide's `stdLibURL` instead. Its members are
  1. every stdlib file that was imported when Pyodide started as the worker starts it and ran every
     simulator at its defaults and with a bad parameter (sitebuild/stdlib.mjs, Node.js, ~4 s), and
  2. the whole of every stdlib module or package that simulators/ names in an import statement
     (read from the source), so an import inside a function that those runs missed is still there;
     but for simulators/__main__.py, the command line, which the browser never runs (argparse).
Its Python files are then compiled to bytecode by Pyodide's own Python (sitebuild/compile_stdlib.mjs):
importing bytecode skips compiling, which is most of what starting Python from scratch costs. It is
cached in build/ under the hash of its inputs (the simulators archive, package-lock.json, the scripts).
tests/test_stdlib_zip.py runs every simulator in Pyodide from the reduced zip.
"""

import ast
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

from sitebuild.errors import BuildError
from sitebuild.processes import ROOT, run_node

PYODIDE = ROOT / "node_modules" / "pyodide"
FULL_ZIP = PYODIDE / "python_stdlib.zip"
SCRIPT = ROOT / "sitebuild" / "stdlib.mjs"
COMPILE_SCRIPT = ROOT / "sitebuild" / "compile_stdlib.mjs"


def run_in_pyodide(archive_file: Path, stdlib_zip: Path | None = None) -> dict:
    """stdlib.mjs's answer: {"files": [imported members of the stdlib zip], "answers": {name: ok}}."""
    return json.loads(_node(SCRIPT, archive_file, *([stdlib_zip] if stdlib_zip else [])))


def _node(script: Path, *args: Path) -> str:
    return run_node(
        script, PYODIDE, *args, purpose="build the browser's standard library", failed=f"sitebuild/{script.name} failed"
    )


def imported_names(package_dir: Path) -> set[str]:
    """Top-level module names the package's Python files import, but for its command line (__main__.py)."""
    names: set[str] = set()
    for path in (p for p in package_dir.rglob("*.py") if p.name != "__main__.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def members(imported: list[str], names: set[str], available: list[str]) -> list[str]:
    """The reduced zip's members, in the full zip's order: the imported files, every file of the
    named top-level modules and packages, and the directory entries above them."""
    wanted = set(imported) | {
        name for name in available if name.split("/")[0].removesuffix(".py") in names and not name.endswith("/")
    }
    for name in list(wanted):
        parts = name.split("/")[:-1]
        wanted |= {"/".join(parts[: i + 1]) + "/" for i in range(len(parts))}
    if missing := wanted - set(available):
        raise BuildError(f"the standard library zip has no {sorted(missing)[0]}")
    return [name for name in available if name in wanted]


def cached(cache_dir: Path, stem: str, suffix: str, inputs: bytes, make: Callable[[Path], Path]) -> bytes:
    """The file `make(work)` writes, kept in cache_dir under the hash of `inputs` (older ones of
    `stem` deleted): `work` is a path of this process's own, so two builds at once (pytest -n 2)
    never share one, and the finished file is moved in atomically."""
    path = cache_dir / f"{stem}-{hashlib.sha256(inputs).hexdigest()[:16]}{suffix}"
    if not path.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        for old in cache_dir.glob(f"{stem}-*{suffix}"):  # not a concurrent build's work files
            old.unlink(missing_ok=True)
        make(path.with_name(f"{path.stem}-{os.getpid()}.work")).replace(path)
    return path.read_bytes()


def hashed(stem: str, data: bytes, suffix: str) -> tuple[str, bytes]:
    """A generated file's name (`stem`, 12 hex digits of its SHA-256, `suffix`) and its bytes."""
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:12]}{suffix}", data


def reduce_zip(full: bytes, keep: list[str]) -> bytes:
    """A zip of the members `keep` of `full`, each stored with its original compression and date."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(full)) as source, zipfile.ZipFile(buffer, "w") as target:
        for name in keep:
            target.writestr(source.getinfo(name), source.read(name))
    return buffer.getvalue()


def stdlib_zip(package_dir: Path, archive: bytes, cache_dir: Path) -> tuple[str, bytes]:
    """The reduced standard library zip and its hashed name."""
    scripts = SCRIPT.read_bytes() + COMPILE_SCRIPT.read_bytes() + Path(__file__).read_bytes()
    inputs = archive + (ROOT / "package-lock.json").read_bytes() + scripts

    def make(work: Path) -> Path:
        archive_file, sources = work.with_suffix(".archive"), work.with_suffix(".sources")
        archive_file.write_bytes(archive)
        try:
            answer = run_in_pyodide(archive_file)
            full = FULL_ZIP.read_bytes()
            with zipfile.ZipFile(io.BytesIO(full)) as source:
                available = source.namelist()
            sources.write_bytes(reduce_zip(full, members(answer["files"], imported_names(package_dir), available)))
            _node(COMPILE_SCRIPT, sources, work.with_suffix(".partial"))
        finally:
            archive_file.unlink()
            sources.unlink(missing_ok=True)
        return work.with_suffix(".partial")

    return hashed("python-stdlib", cached(cache_dir, "python-stdlib", ".zip", inputs, make), ".zip")
