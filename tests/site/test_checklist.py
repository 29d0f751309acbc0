"""The ```checklist block: an accessible list of boxes the reader ticks; a broken block names its line."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lesson_fixtures import COURSE, FRONT

from sitebuild import checklist_block, lesson_page
from sitebuild.course import load_course
from sitebuild.errors import BuildError
from sitebuild.sim_block import BlockError
from sitebuild.sims import Simulators

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
id: audit
title: What the benchmark states
items:
  - Open-loop arrivals, `--request-rate` swept past the knee
  - p50, p95 and p99 of TTFT and TPOT
  - An explicit SLO
"""


def test_a_checklist_renders_a_fieldset_of_labelled_boxes_with_a_status_and_a_reset() -> None:
    page = checklist_block.render(GOOD, {})
    assert '<fieldset class="checklist" id="checklist-audit" data-checklist="audit"' in page
    assert '<legend markdown="span">What the benchmark states</legend>' in page
    boxes = re.findall(r'<input type="checkbox" id="(checklist-audit-\d)" value="([0-9a-f]{8})">', page)
    assert [b[0] for b in boxes] == ["checklist-audit-1", "checklist-audit-2", "checklist-audit-3"]
    assert all(f'<label for="{box}">' in page for box, _ in boxes)
    assert "`--request-rate`" in page  # items stay Markdown; mkdocs renders them inside the label
    assert '<p class="checklist-status" role="status" aria-live="polite">0 of 3 checked</p>' in page
    assert '<button type="button" class="md-button checklist-reset">' in page


def test_a_box_is_saved_under_its_text_so_reordering_keeps_the_ticks() -> None:
    first = checklist_block.render(GOOD, {})
    lines = GOOD.splitlines()
    reordered = "\n".join([*lines[:3], lines[4], lines[3], lines[5]]) + "\n"
    second = checklist_block.render(reordered, {})
    values = lambda page: set(re.findall(r'value="([0-9a-f]{8})"', page))  # noqa: E731
    assert values(first) == values(second) and len(values(first)) == 3


# (case, block, line offset from the block's first line, words in the message)
BROKEN = [
    ("not YAML", "id: audit\nitems: [a, b\n", 1, "invalid YAML in checklist block"),  # where the [ opens
    ("not a mapping", "- a\n- b\n", 0, "is a YAML mapping"),
    ("unknown key", "id: audit\nitems: [a]\ncolour: red\n", 2, "unknown key 'colour'"),
    ("no id", "items: [a]\n", 0, "needs 'id:'"),
    ("bad id", "id: Audit Me\nitems: [a]\n", 0, "needs 'id:'"),
    ("no items", "id: audit\ntitle: T\n", 0, "needs 'items:'"),
    ("items not a list", "id: audit\ntitle: T\nitems: just one\n", 2, "needs 'items:'"),
    ("item not text", "id: audit\nitems:\n  - fine\n  - {a: 1}\n", 3, "item 2 must be a line of text"),
    ("duplicate item", "id: audit\nitems:\n  - same\n  - same\n", 1, "same text"),
]


@pytest.mark.parametrize(("case", "block", "offset", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_malformed_block_raises_with_its_line(case: str, block: str, offset: int, words: str) -> None:
    with pytest.raises(BlockError) as error:
        checklist_block.render(block, {})
    assert error.value.offset == offset, case
    assert words in str(error.value)


def test_an_id_used_twice_on_a_page_is_refused_naming_the_first_block() -> None:
    used: dict[str, int] = {}
    checklist_block.render(GOOD, used, 12)
    with pytest.raises(BlockError, match="already used by the block at line 12") as error:
        checklist_block.render(GOOD, used, 40)
    assert error.value.offset == 0


def build(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "course.yml").write_text(COURSE)
    (lessons / "01-kv-cache.md").write_text(FRONT + body)
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "site_build.py"),
            "build",
            "--lessons",
            str(lessons),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_lesson_with_a_checklist_builds_it(tmp_path: Path) -> None:
    done = build(tmp_path, "Text.\n\n```checklist\n" + GOOD + "```\n")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "lessons" / "01-kv-cache" / "index.html").read_text()
    assert 'data-checklist="audit"' in page
    assert '<label for="checklist-audit-1">Open-loop arrivals, <code>--request-rate</code> swept' in page
    assert "assets/js/checklist.js" in page


def test_a_malformed_block_fails_the_build_at_its_file_and_line(tmp_path: Path) -> None:
    # Line 11 is the first after the front matter: the fence opens on 13, `- {a: 1}` is on 17.
    body = textwrap.dedent("""\
        Text.

        ```checklist
        id: audit
        items:
          - fine
          - {a: 1}
        ```
        """)
    # Through what the build's hooks call (load the course, render the page), in this process: that
    # the build itself then stops, with the message and no site, is tests/site/test_site_build.py's.
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "course.yml").write_text(COURSE)
    (lessons / "01-kv-cache.md").write_text(FRONT + body)
    course = load_course(lessons)
    with pytest.raises(BuildError) as error:
        lesson_page.render(course.lessons[0], course, Simulators())
    assert "01-kv-cache.md:17: item 2 must be a line of text" in str(error.value), error.value
