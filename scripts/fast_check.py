"""The contributor's fast loop (`./dev test --fast`): check only what the work tree changed.

    python scripts/fast_check.py [--base REF]     # changes against REF (default: HEAD) and untracked files

- each changed lesson is rendered as the build renders it (numbers, widgets and quizzes run, so a
  wrong expression or a typed quiz key fails with file:line), then its anatomy and claim tests run
  (tests/test_lessons.py, tests/test_lesson_claims.py, selected by the lesson's id);
- each changed simulator module runs its own tests/test_sim_<name>.py and the contract tests;
- a change to a catalogue (simulators/data) runs the catalogue and contract tests;
- a change below the simulators (core, engine, benchmark, data) is reminded that the committed
  validation runs need refreshing (scripts/validation_table.py), which CI requires;
- ruff checks the changed Python files.
The full suite (`./dev test`, browser tests included) stays what CI runs.
"""

import argparse
import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GUIDELLM_IMPORT = re.compile(r"^(from|import) guidellm\b", re.MULTILINE)


def changed(base: str) -> list[str]:
    def git(*args: str) -> list[str]:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line]

    return sorted(set(git("diff", "--name-only", base)) | set(git("ls-files", "--others", "--exclude-standard")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="git reference to compare with (default: HEAD)")
    args = parser.parse_args()
    start = time.perf_counter()
    files = [f for f in changed(args.base) if (ROOT / f).exists()]
    print(f"changed against {args.base}: {len(files)} file(s)")
    lessons = [Path(f).stem.split("-")[0] for f in files if f.startswith("lessons/") and f.endswith(".md")]
    sims = [Path(f).stem for f in files if f.startswith("simulators/") and f.endswith(".py")]
    data = any(f.startswith("simulators/data/") for f in files)
    tests: list[str] = [f for f in files if f.startswith("tests/test_") and f.endswith(".py")]
    selectors: list[str] = []
    if lessons:
        from sitebuild import assets, lesson_page
        from sitebuild.course import load_course
        from sitebuild.errors import BuildError
        from sitebuild.sims import Simulators, cache_file, committed_runs

        # The build's kept answers (build/, keyed by the simulators' hash): after one build or fast
        # check, an edit re-runs only the widgets and numbers it changed.
        archive_name, _ = assets.simulators_archive(ROOT / "simulators")
        course, sims_cache = (
            load_course(ROOT / "lessons"),
            Simulators(cache_file(ROOT, archive_name), committed_runs(ROOT)),
        )
        for lesson in course.lessons:
            if lesson.id in lessons:
                try:
                    lesson_page.render(lesson, course, sims_cache)
                except BuildError as e:
                    print(f"error: {e}", file=sys.stderr)
                    return 1
                finally:
                    sims_cache.save()  # runs are deterministic: those done before an error are kept too
                print(f"rendered lesson {lesson.id}")
        tests += ["tests/test_lessons.py", "tests/test_lesson_claims.py"]
        selectors += [lid.replace(".", "_") for lid in lessons] + lessons
    for name in sims:
        own = f"tests/test_sim_{name}.py"
        tests += [own] if (ROOT / own).exists() else []
    if sims or data:
        tests += ["tests/test_simulator_contract.py"] + (["tests/test_catalog.py"] if data else [])
    py = [f for f in files if f.endswith(".py")]
    if py and subprocess.run([sys.executable, "-m", "ruff", "check", *py], cwd=ROOT).returncode:
        return 1
    tests = sorted(set(tests))
    if tests and importlib.util.find_spec("guidellm") is None:
        # GuideLLM and its torch are an extra of their own (pyproject.toml); CI installs and runs them.
        needs = [t for t in tests if GUIDELLM_IMPORT.search((ROOT / t).read_text(encoding="utf-8"))]
        for t in needs:
            print(f"not run here: {t} needs GuideLLM (pip install -e '.[guidellm]'); CI runs it")
        tests = [t for t in tests if t not in needs]
    if tests:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
        if selectors and not sims and not data:
            cmd += ["-k", " or ".join(dict.fromkeys(selectors))]
        code = subprocess.run(cmd, cwd=ROOT).returncode
        if code not in (0, 5):
            return code
    from sitebuild.sims import VALIDATION_LAYERS, VALIDATION_RUNS, committed_runs

    below = [f for f in files if f.startswith("simulators/") and Path(f).parts[1] in VALIDATION_LAYERS]
    if below and not committed_runs(ROOT):
        print(
            f"note: {VALIDATION_RUNS} was made by other code: run python scripts/validation_table.py before you commit"
        )
    print(f"fast check done in {time.perf_counter() - start:.0f} s (the full suite: ./dev test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
