"""The contributor guide's worked example is real: following docs/extending.md adds a simulator.

In a throwaway copy of the `simulators` package: write the module from the guide's code block,
register it in api.py exactly as the guide says (its name in the `from . import (` list, its entry
in the `SIMULATORS` dict), then `python -m simulators list` must show it and `run NAME --json` must
answer ok=true.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "extending.md"
BLOCK = re.compile(r'^```python title="(?P<title>[^"]+)"\n(?P<code>.*?)^```$', re.M | re.S)


def guide_blocks() -> dict[str, str]:
    return {m.group("title"): m.group("code") for m in BLOCK.finditer(GUIDE.read_text(encoding="utf-8"))}


def module_block() -> tuple[str, str]:
    """(module name, source) of the guide's example module: the block titled simulators/sims/<name>.py."""
    found = [(t, c) for t, c in guide_blocks().items() if re.fullmatch(r"simulators/sims/\w+\.py", t)]
    assert len(found) == 1, f"expected one example module block in {GUIDE.name}, found {[t for t, _ in found]}"
    title, code = found[0]
    return Path(title).stem, code


def registration_lines() -> list[str]:
    found = [c for t, c in guide_blocks().items() if t.startswith("simulators/api.py")]
    assert len(found) == 1, "expected one registration block titled simulators/api.py…"
    return [line for line in found[0].splitlines() if line.strip()]


def register(api_source: str, name: str, lines: list[str]) -> str:
    """Apply the guide's two lines: the import into `from .sims import (`, the entry into SIMULATORS."""
    import_line = next(line for line in lines if line.strip() == f"{name},")
    entry_line = next(line for line in lines if line.strip().startswith(f'"{name}":'))
    opening_import, opening_dict = "from .sims import (\n", "SIMULATORS: dict[str, ModuleType] = {\n"
    assert opening_import in api_source and opening_dict in api_source, (
        "api.py no longer has the shape the guide describes"
    )
    api_source = api_source.replace(opening_import, opening_import + import_line + "\n", 1)
    return api_source.replace(opening_dict, opening_dict + entry_line + "\n", 1)


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -P would be cleaner, but 3.11 lacks it; running from cwd puts the copy first on sys.path.
    return subprocess.run(
        [sys.executable, "-m", "simulators", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_guide_example_builds_a_working_simulator(tmp_path: Path) -> None:
    name, code = module_block()
    package = tmp_path / "simulators"
    shutil.copytree(ROOT / "simulators", package, ignore=shutil.ignore_patterns("__pycache__"))
    assert not (package / "sims" / f"{name}.py").exists(), f"{name} is already a real simulator; pick another name"
    (package / "sims" / f"{name}.py").write_text(code, encoding="utf-8")
    api = package / "api.py"
    api.write_text(register(api.read_text(encoding="utf-8"), name, registration_lines()), encoding="utf-8")

    listed = run_cli(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert re.search(rf"^{name}\s", listed.stdout, re.M), listed.stdout

    ran = run_cli(tmp_path, "run", name, "--json")
    assert ran.returncode == 0, ran.stderr
    answer = json.loads(ran.stdout)
    assert answer["ok"] is True
    assert answer["metrics"] and answer["figure"]["data"] and answer["summary"]

    # The guide's other commands work too, and bad input is named, not crashed on.
    assert run_cli(tmp_path, "describe", name).returncode == 0
    assert run_cli(tmp_path, "run", name, "--set", "weight_dtype=int4").returncode == 0
    bad = run_cli(tmp_path, "run", name, "--set", "weight_dtype=int3")
    assert bad.returncode == 2 and "weight_dtype" in bad.stderr


def test_the_example_copy_is_isolated_from_the_real_package() -> None:
    from simulators import api

    name, _ = module_block()
    assert name not in api.SIMULATORS
