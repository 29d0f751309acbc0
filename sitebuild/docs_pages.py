"""Pages of docs/ that hold more than Markdown: tools, the glossary and the validation page.

- `tools/*.md`: ```sim and ```quiz blocks and `{{ … }}` numbers, exactly as in a lesson.
- `glossary.md`: the line `<!-- glossary-terms -->` becomes the entries of docs/glossary.yml.
- `validation.md`: `<!-- validation-band -->` becomes the error band and `<!-- validation-table -->`
  the table of simulators/benchmark/validation.py, both computed at build time, so the page is never stale.

Every other page passes through untouched (docs/contributing.md shows the syntax in prose), except
that on every page a link to a lesson missing from this build (`--lessons DIR`) keeps only its text.
"""

import posixpath
import re
from pathlib import Path

from simulators import api
from sitebuild import glossary as glossary_mod
from sitebuild import lesson_page
from sitebuild.course import Course
from sitebuild.errors import BuildError
from sitebuild.glossary import Glossary
from sitebuild.sims import Simulators

LESSON_LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<path>(?:\.\./)*lessons/[\w.-]+\.md)(?:#[\w-]*)?\)")
VALIDATION_PAGE = "validation.md"
TABLE_MARKER = "<!-- validation-table -->"
BAND_MARKER = "<!-- validation-band -->"
# The KV-capacity table against vLLM's start-up logs (simulators/benchmark/vllm_validation.py).
VLLM_MARKER = "<!-- vllm-kv-table -->"


def render(markdown: str, src_uri: str, path: Path, sims: Simulators, glossary: Glossary | None, course: Course) -> str:
    markdown = unlink_missing_lessons(markdown, src_uri, course)
    if src_uri.startswith("tools/"):
        return lesson_page.render_body(markdown, path, 1, sims)
    if src_uri == glossary_mod.PAGE and glossary is not None:
        # Definitions may hold build-time numbers too ({{ … }}), computed like a lesson's.
        return lesson_page.render_body(glossary_mod.render_page(markdown, glossary, course), path, 1, sims)
    if src_uri == VALIDATION_PAGE:  # its widget first (line numbers as in the file), then the generated tables
        return render_validation(lesson_page.render_body(markdown, path, 1, sims))
    return markdown


def unlink_missing_lessons(markdown: str, src_uri: str, course: Course) -> str:
    """A link to a lesson this build does not have (`--lessons DIR` with a subset) keeps its text only."""
    present = {x.src_uri for x in course.lessons}

    def keep(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), match.group("path")))
        return match.group(0) if target in present else match.group("text")

    return LESSON_LINK.sub(keep, markdown)


def render_validation(markdown: str) -> str:
    for marker in (TABLE_MARKER, BAND_MARKER):
        if marker not in markdown:
            raise BuildError(f"docs/{VALIDATION_PAGE} lacks the line {marker}")
    parts = api.validation_page()
    markdown = markdown.replace(VLLM_MARKER, parts["vllm_table"])
    return markdown.replace(BAND_MARKER, parts["band"]).replace(TABLE_MARKER, parts["table"])
