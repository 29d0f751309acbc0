"""ruff's lint rules and its formatter (pyproject.toml) hold for every Python file of the project."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    out = subprocess.run(
        [ruff, "check", "simulators", "sitebuild", "site_build.py", "scripts", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    out = subprocess.run(
        [ruff, "format", "--check", "simulators", "sitebuild", "site_build.py", "scripts", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, "run `ruff format` on:\n" + out.stdout + out.stderr
