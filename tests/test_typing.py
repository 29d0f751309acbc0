"""simulators/ type-checks under mypy --strict (STYLE.md: strict typing on the package)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_on_simulators():
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "simulators"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
