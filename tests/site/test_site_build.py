"""The build: strict and link-checked on the real lessons; a broken lesson fails at its file and line."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lesson_fixtures import COURSE, FRONT

from simulators import api
from sitebuild import glossary, lesson_page
from sitebuild.course import load_course
from sitebuild.errors import BuildError
from sitebuild.sims import Simulators

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = glossary.load(ROOT / "docs" / "glossary.yml")


def site_build(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "site_build.py"), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_strict_build_and_link_check_pass(tmp_path: Path) -> None:
    done = site_build("check", "--site-dir", str(tmp_path / "site"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every local link and anchor" in done.stdout
    assert (tmp_path / "site" / "index.html").is_file()
    assert not (tmp_path / "site.partial").exists()


GOOD_BLOCK = """\
```sim
sim: kv_cache
params: {context_tokens: 4096}
controls: [context_tokens]
```
"""

# (case, lesson text, expected line, expected words in the message). Line 11 is the first line
# after the front matter, so a sim block opened there has its `sim:` line at 12.
BROKEN = [
    ("missing front matter key", FRONT.replace("minutes: 8\n", ""), 1, "lacks 'minutes'"),
    ("front matter not YAML", FRONT.replace("title: KV Cache", "title: [KV"), 5, "invalid YAML"),
    (
        "unknown front matter key",
        FRONT.replace("minutes: 8", "minutes: 8\nauthor: me"),
        9,
        "unknown front matter key 'author'",
    ),
    ("chapter not in course.yml", FRONT.replace('chapter: "01"', 'chapter: "07"'), 3, "chapter '07'"),
    ("unknown simulator", FRONT + GOOD_BLOCK.replace("kv_cache", "kv_cash"), 12, "unknown simulator 'kv_cash'"),
    ("unknown parameter", FRONT + GOOD_BLOCK.replace("context_tokens: 4096", "context: 4096"), 13, "unknown parameter"),
    ("parameter out of range", FRONT + GOOD_BLOCK.replace("4096", "-3"), 13, "must be between"),
    (
        "unknown control",
        FRONT + GOOD_BLOCK.replace("controls: [context_tokens]", "controls: [colour]"),
        14,
        "unknown controls ['colour']",
    ),
    (  # at the line the unclosed { opens on, not the next one where YAML gave up
        "sim block not YAML",
        FRONT + GOOD_BLOCK.replace("params: {context_tokens: 4096}", "params: {context_tokens: 4096"),
        13,
        "invalid YAML in sim block: expected ',' or '}', but got ':' in the { opened on this line",
    ),
    (
        "unknown parameter, the known ones listed with view",
        FRONT + GOOD_BLOCK.replace("context_tokens: 4096", "context: 4096"),
        13,
        "known: " + ", ".join(p["name"] for p in api.schema("kv_cache")["params"]),  # view: a choice of chart
    ),
    (
        "id used twice",
        FRONT + "```sim\nsim: kv_cache\nid: memory\n```\n\ntext\n\n```sim\nsim: kv_cache\nid: memory\n```\n",
        20,
        "id 'memory' is already used by the block at line 11",
    ),
    (
        "sim block never closed",
        FRONT + "text\n```sim\nsim: kv_cache\n",
        12,
        "```sim block opened at line 12 has no closing fence",
    ),
    (  # the next block's closing fence closed it: not YAML errors in the prose between
        "sim block closed by the next block's fence",
        FRONT + "```sim\nsim: kv_cache\n\nProse: it reads.\n\n```quiz\n- q: Which?\n  type: choice\n```\n",
        11,
        "```sim block opened at line 11 has no closing fence before the ```quiz at line 16",
    ),
    (
        "unknown metric in prose",
        FRONT + 'Each token takes {{ kv_cache.kv_bytes(model="llama-3-8b") :,.0f }} bytes.\n',
        11,
        "no metric 'kv_bytes'",
    ),
    (
        "bad parameter in prose",
        FRONT + '\n\nIt is {{ kv_cache.kv_bytes_per_token(modle="x") }}.\n',
        13,
        "unknown parameter",
    ),
    ("code in prose", FRONT + "{{ __import__('os').getcwd() }}\n", 11, "unsupported expression"),
    (
        "quiz option without why",
        FRONT
        + textwrap.dedent("""\
        ```quiz
        - q: Which roof binds?
          type: choice
          options:
            - text: Memory
              correct: true
              why: Bytes per FLOP.
            - text: Compute
        ```
        """),
        12,
        "needs a 'why:'",
    ),
    (
        "quiz of an unknown type",
        FRONT + "```quiz\n- q: Which roof binds?\n  type: essay\n```\n",
        12,
        "question type must be 'number' or 'choice'",
    ),
    ("quiz block never closed", FRONT + "text\n```quiz\n- q: Which?\n  type: choice\n", 12, "has no closing fence"),
    (
        "sim block without its simulator",
        FRONT + "```sim\nparams: {context_tokens: 4096}\n```\n",
        12,
        "unknown simulator",
    ),
    (
        "knife-edge capacity in prose",
        FRONT + '\nFour GPUs hold {{ kv_cache.max_concurrent_sequences(model="llama-3.1-70b", '
        "context_tokens=90000, num_gpus=4) }} sequences.\n",
        12,
        "knife edge",
    ),
    ("front matter never closed", FRONT.removesuffix("---\n") + "\nbody\n", 1, "missing YAML front matter"),
]


def write_lesson(tmp_path: Path, text: str) -> Path:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "course.yml").write_text(COURSE)
    (lessons / "01-kv-cache.md").write_text(text)
    return lessons


@pytest.fixture(scope="module")
def sims() -> Simulators:
    return Simulators()


@pytest.mark.parametrize(("case", "text", "line", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_lesson_fails_with_file_and_line(
    tmp_path: Path, sims: Simulators, case: str, text: str, line: int, words: str
) -> None:
    """Each case through the functions the build's hooks call (sitebuild/hooks.py: on_config loads
    the course, on_page_markdown renders the page with the glossary), in this process: a build per
    case took 9 s of CPU each. The test below runs the build itself on one case of each stage."""
    lessons = write_lesson(tmp_path, text)
    with pytest.raises(BuildError) as error:
        course = load_course(lessons)
        for lesson in course.lessons:
            lesson_page.render(lesson, course, sims, GLOSSARY)
    assert f"01-kv-cache.md:{line}: " in str(error.value), f"{case}: {error.value}"
    assert words in str(error.value), f"{case}: {error.value}"


# One case raised while the course loads (on_config), one while a page renders (on_page_markdown).
BUILT = [b for b in BROKEN if b[0] in ("front matter not YAML", "unknown parameter")]


@pytest.mark.parametrize(("case", "text", "line", "words"), BUILT, ids=[b[0] for b in BUILT])
def test_the_build_stops_at_a_broken_lesson_with_its_file_and_line_and_leaves_no_site(
    tmp_path: Path, case: str, text: str, line: int, words: str
) -> None:
    lessons = write_lesson(tmp_path, text)
    done = site_build("build", "--lessons", str(lessons), "--site-dir", str(tmp_path / "site"))
    assert done.returncode != 0, f"{case}: the build succeeded"
    assert f"01-kv-cache.md:{line}: " in done.stderr, done.stderr
    assert done.stderr.count(words) == 1, done.stderr  # printed once: not by mkdocs ("Error reading page") too
    assert not (tmp_path / "site").exists() and not (tmp_path / "site.partial").exists()


# The build with a key typo in a gpus.toml entry (hbm_bandwidth_GBp), made where the catalogue is read.
TYPO_IN_GPUS = """\
import sys
from simulators.core import data_files
read = data_files.data_file
def data_file(name):
    entries = dict(read(name))
    if name == "gpus.toml":
        entry = dict(entries["h100-sxm"])
        entries["h100-sxm"] = entry | {"hbm_bandwidth_GBp": entry.pop("hbm_bandwidth_GBps")}
    return entries
data_files.data_file = data_file
import site_build
sys.exit(site_build.main(sys.argv[1:]))
"""


def test_a_catalogue_typo_stops_the_build_with_one_line_naming_the_data_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TYPO_IN_GPUS, "build", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(
        "error: simulators/data/gpus.toml: GPU 'h100-sxm': unknown key(s) hbm_bandwidth_GBp; allowed: memory_GiB,"
    ), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def test_a_good_lesson_builds_its_widget_and_numbers(tmp_path: Path) -> None:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "course.yml").write_text(COURSE)
    prose = 'Per token: {{ kv_cache.kv_bytes_per_token(model="llama-3-8b") / 1024 :,.0f }} KiB.\n\n'
    (lessons / "01-kv-cache.md").write_text(FRONT + prose + GOOD_BLOCK)
    done = site_build("build", "--lessons", str(lessons), "--site-dir", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "lessons" / "01-kv-cache" / "index.html").read_text()
    assert "Per token: 128 KiB." in page  # 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 B
    assert 'data-sim="kv_cache"' in page and 'data-answer="{' in page
    assert '"context_tokens": 4096' in page.replace("&quot;", '"')
