"""Browser assets: the pinned npm packages (installed by `npm ci`) and the bundled simulators.

Nothing is copied into docs/: the hooks add these files to the mkdocs build as virtual files, so the
site carries exactly the files listed here and nothing stale.
"""

import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from sitebuild.errors import BuildError
from sitebuild.processes import ROOT, run_node
from sitebuild.stdlib import cached, hashed, reduce_zip

NODE_MODULES = ROOT / "node_modules"
STAMP = NODE_MODULES / ".course-package-lock.sha256"
SNAPSHOT_SCRIPT = ROOT / "sitebuild" / "snapshot.mjs"
SNAPSHOT_FORMAT = ROOT / "docs" / "assets" / "js" / "snapshot_format.mjs"  # imported by the script

# site path under assets/vendor/ -> file in node_modules/. Pyodide: core files only, no packages.
VENDOR = {
    "pyodide/pyodide.mjs": "pyodide/pyodide.mjs",
    "pyodide/pyodide.asm.mjs": "pyodide/pyodide.asm.mjs",
    "pyodide/pyodide.asm.wasm": "pyodide/pyodide.asm.wasm",
    "plotly/plotly.min.js": "plotly.js-basic-dist-min/plotly-basic.min.js",
    "katex/katex.min.js": "katex/dist/katex.min.js",
    "katex/katex.min.css": "katex/dist/katex.min.css",
}
KATEX_FONTS = "katex/dist/fonts"
# The vendored Pyodide files the worker downloads at start-up (stdlib: sitebuild/stdlib.py, not python_stdlib.zip).
PYODIDE_DOWNLOADS = ("pyodide.asm.wasm", "pyodide.asm.mjs")
# The trace types the basic plotly.js bundle draws; a figure using another type fails the build.
PLOTLY_TRACE_TYPES = frozenset({"scatter", "bar", "pie"})


def npm_ci() -> None:
    """Install package-lock.json's exact packages, unless node_modules already holds them."""
    digest = hashlib.sha256((ROOT / "package-lock.json").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError("npm is needed to install the browser assets: apt-get install -y npm")
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise BuildError(f"npm ci failed:\n{done.stdout}{done.stderr}")
    STAMP.write_text(digest)


def vendor_files() -> dict[str, Path]:
    """site path -> source file for every vendored asset; fails if `npm ci` has not run."""
    files = {f"assets/vendor/{dest}": NODE_MODULES / src for dest, src in VENDOR.items()}
    files |= {
        f"assets/vendor/katex/fonts/{font.name}": font for font in sorted(NODE_MODULES.glob(f"{KATEX_FONTS}/*.woff2"))
    }
    if missing := [str(path) for path in files.values() if not path.is_file()]:
        raise BuildError(
            f"vendored assets missing ({missing[0]} …): run `python site_build.py build`, which runs npm ci"
        )
    return files


def pyodide_lock() -> dict[str, Any]:
    """A lock file with the real `info` and no packages: Pyodide loads no wheels and fetches no lock."""
    return {"info": json.loads((NODE_MODULES / "pyodide" / "pyodide-lock.json").read_text())["info"], "packages": {}}


def package_files(package_dir: Path) -> list[Path]:
    """The files of simulators/ that ship (Python sources and data files), in a fixed order."""
    return [
        p for p in sorted(package_dir.rglob("*")) if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def simulators_archive(package_dir: Path) -> tuple[str, bytes]:
    """A reproducible zip of simulators/ (package_files) and its hashed name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in package_files(package_dir):
            info = zipfile.ZipInfo(path.relative_to(package_dir.parent).as_posix(), date_time=(2024, 1, 1, 0, 0, 0))
            archive.writestr(info, path.read_bytes(), compress_type=zipfile.ZIP_DEFLATED)
    return hashed("simulators", buffer.getvalue(), ".zip")


def data_archive(archive: bytes) -> tuple[str, bytes]:
    """The simulators archive's non-Python files (catalogues, data tables) and its hashed name: what the
    worker unpacks after restoring the snapshot, which imported simulators/ already (30 kB, not 220 kB)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        keep = [name for name in source.namelist() if not name.endswith(".py")]
    return hashed("simulators-data", reduce_zip(archive, keep), ".zip")


def python_snapshot(archive: bytes, stdlib_zip: bytes, cache_dir: Path) -> tuple[str, bytes]:
    """The worker's start-up snapshot (Python initialised from `stdlib_zip`, the standard library
    the worker loads, and the simulators imported) and its hashed name. Made by Node.js from the
    pinned Pyodide (sitebuild/snapshot.mjs, about 3 s) and kept in cache_dir under the hash of its
    inputs: the archive, the standard library, package-lock.json (Pyodide's version) and the scripts."""
    scripts = SNAPSHOT_SCRIPT.read_bytes() + SNAPSHOT_FORMAT.read_bytes()
    inputs = archive + stdlib_zip + (ROOT / "package-lock.json").read_bytes() + scripts

    def make(work: Path) -> Path:
        archive_file, stdlib_file = work.with_suffix(".zip"), work.with_suffix(".stdlib")
        archive_file.write_bytes(archive)
        stdlib_file.write_bytes(stdlib_zip)
        what = "the Python start-up snapshot"
        try:
            args = (NODE_MODULES / "pyodide", archive_file, stdlib_file, work.with_suffix(".partial"))
            run_node(SNAPSHOT_SCRIPT, *args, purpose=f"make {what}", failed=f"making {what} failed")
        finally:
            archive_file.unlink()
            stdlib_file.unlink()
        return work.with_suffix(".partial")

    return hashed("python", cached(cache_dir, "python-snapshot", ".gz", inputs, make), ".snapshot")


def check_trace_types(figure: dict[str, Any]) -> None:
    if unknown := {trace.get("type", "scatter") for trace in figure.get("data", [])} - PLOTLY_TRACE_TYPES:
        raise ValueError(
            f"figure uses trace types {sorted(unknown)} that the vendored plotly.js "
            f"bundle lacks (it has {sorted(PLOTLY_TRACE_TYPES)}); switch package.json "
            "to plotly.js-cartesian-dist-min and update sitebuild/assets.py"
        )
