"""Blocks inside admonitions, content tabs and lists render in place, or fail at their file and line.

Python-Markdown wraps indented raw HTML in a paragraph, so such a block used to come out as its
YAML in a code block while the build passed. Each case below checks where the block's HTML ends
up in the built page: inside its container, not as text.
"""

import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from lesson_fixtures import COURSE, FRONT
from test_site_build import site_build

from sitebuild import fences, lesson_page
from sitebuild.errors import LessonError
from sitebuild.sims import Simulators

NESTED = textwrap.dedent("""\
    Text before.

    !!! note "A widget in a note"

        The note's text.

        ```sim
        sim: kv_cache
        params: {context_tokens: 4096}
        controls: [context_tokens]
        ```

    ??? question "A quiz in a collapsible note"

        ```quiz
        - q: How many bytes does one token's KV take for Llama-3-8B (bf16)?
          type: number
          answer: {{ kv_cache.kv_bytes_per_token(model="llama-3-8b") }}
          explanation: "**2** (K and V) x 32 layers x 8 heads x 128 x 2 bytes."
        ```

    === "First tab"

        ```checklist
        id: tabbed
        items: [Read the **chart**, Change the context]
        ```

    === "Second tab"

        Nothing here.

    1. A step with a widget:

        ```sim
        sim: gpu_memory
        id: in-a-list
        ```

    2. The next step.
    """)


class _Ancestry(HTMLParser):
    """For each element with one of `wanted` classes: the classes of its ancestors, outermost first."""

    VOID = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, wanted: set[str]) -> None:
        super().__init__()
        self.wanted, self.stack, self.found = wanted, [], []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        for c in classes & self.wanted:
            self.found.append((c, [x for x in self.stack if x]))
        if tag not in self.VOID:
            self.stack.append(" ".join(sorted(classes)) or tag)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()


def test_blocks_inside_an_admonition_a_details_a_tab_and_a_list_render_in_place(tmp_path: Path) -> None:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "course.yml").write_text(COURSE)
    (lessons / "01-kv-cache.md").write_text(FRONT + NESTED)
    done = site_build("build", "--lessons", str(lessons), "--site-dir", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "lessons" / "01-kv-cache" / "index.html").read_text()
    parser = _Ancestry({"sim", "quiz", "checklist"})
    parser.feed(page)
    where = {}
    for kind, ancestors in parser.found:
        where.setdefault(kind, []).append(" / ".join(ancestors))
    sims, quizzes, checklists = where["sim"], where["quiz"], where["checklist"]
    assert len(sims) == 2 and len(quizzes) == 1 and len(checklists) == 1, where
    assert "admonition note" in sims[0] and sims[0].endswith("admonition note")  # directly inside the note
    assert sims[1].endswith("li"), sims[1]  # directly inside the list item, not in a paragraph
    assert quizzes[0].endswith("question"), quizzes[0]  # the <details class="question">
    assert checklists[0].endswith("tabbed-block"), checklists[0]
    assert "sim: kv_cache" not in page and "SITEBUILDNESTEDBLOCK" not in page and "sitebuild-block" not in page
    assert "131072" in page  # the quiz's answer, computed at build time: 2 x 32 x 8 x 128 x 2 bytes
    assert "<strong>2</strong> (K and V)" in page and "<strong>chart</strong>" in page  # Markdown inside, rendered


def test_a_broken_block_in_an_admonition_fails_at_its_file_and_line(tmp_path: Path) -> None:
    body = "Text.\n\n!!! note\n\n    ```sim\n    sim: kv_cache\n    params: {context_tokens: -1}\n    ```\n"
    with pytest.raises(LessonError) as caught:
        lesson_page.render_body(body, tmp_path / "x.md", 10, Simulators())
    assert caught.value.line == 16 and "context_tokens" in caught.value.message  # 10 + 6 lines down
    unclosed = "- item\n\n    ```quiz\n    - q: Which?\n"
    with pytest.raises(LessonError, match="block opened at line 3 has no closing fence") as caught:
        lesson_page.render_body(unclosed, tmp_path / "x.md", 1, Simulators())
    assert caught.value.line == 3


def test_a_nested_block_leaves_a_placeholder_of_its_own_and_the_html_at_the_end() -> None:
    out = lesson_page.render_body(
        "!!! tip\n\n    ```checklist\n    id: a\n    items: [one]\n    ```\n", Path("x.md"), 1, Simulators()
    )
    assert out.startswith("!!! tip\n\n\n    SITEBUILDNESTEDBLOCK0\n\n")
    assert '\n\n<!--sitebuild-block 0-->\n<fieldset class="checklist"' in out


def test_indented_fences_of_other_languages_are_not_prose() -> None:
    text = "Prose.\n\n!!! note\n\n    ```python\n    x = '{{ not a number }}'\n    ```\n\nMore.\n"
    assert fences.prose_lines(text) == ["Prose.\n", "\n", "!!! note\n", "\n", "\n", "More.\n"]
    out = lesson_page.render_body(text, Path("x.md"), 1, Simulators())
    assert out == text  # neither expanded nor changed


def test_no_two_sitebuild_modules_import_each_other() -> None:
    # glossary.py used to import lesson_page.py (inside a function, to dodge the cycle) while
    # lesson_page.py imported glossary.py; both now take fences from sitebuild/fences.py.
    import ast

    root = Path(__file__).resolve().parents[2] / "sitebuild"
    imports: dict[str, set[str]] = {}
    for path in root.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "sitebuild":
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sitebuild."):
                found.add(node.module.removeprefix("sitebuild."))
        imports[path.stem] = found
    assert "lesson_page" in imports["docs_pages"]  # the check sees imports of both forms
    cycles = sorted((a, b) for a, deps in imports.items() for b in deps if a < b and a in imports.get(b, set()))
    assert cycles == []


def test_choice_options_are_shown_in_an_order_the_question_fixes_not_the_authors():
    """Learner review: the right answer came first in 46 of the course's 51 choice questions. The build
    shows each question's options in an order fixed by its id; each option keeps its index as its value."""
    import re

    from sitebuild import quiz_block

    options = [{"text": f"option {i}", "correct": i == 0, "why": "because"} for i in range(4)]

    def shown(qid: str) -> list[int]:
        _, parts = quiz_block._choice({"q": "?", "options": options}, 1, qid)
        return [int(v) for v in re.findall(r'value="(\d+)"', "".join(parts))]

    orders = [shown(f"quiz-x-{n}") for n in range(12)]
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders) and orders == [shown(f"quiz-x-{n}") for n in range(12)]
    assert len({o[0] for o in orders}) > 1  # the right answer (0) is not always first
