"""Pages of docs/ that hold more than Markdown: tools, the glossary and the validation page.

- `tools/*.md`: ```sim and ```quiz blocks and `{{ … }}` numbers, exactly as in a lesson.
- `glossary.md`: the line `<!-- glossary-terms -->` becomes the entries of docs/glossary.yml.
- `validation.md`: `<!-- validation-band -->` becomes the error band and `<!-- validation-table -->`
  the table of simulators/validation.py, both computed at build time, so the page is never stale.

Every other page passes through untouched (docs/contributing.md shows the syntax in prose), except
that on every page a link to a lesson missing from this build (`--lessons DIR`) keeps only its text.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

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
# The KV-capacity table against vLLM's start-up logs (simulators/vllm_validation.py).
VLLM_MARKER = "<!-- vllm-kv-table -->"


def render(markdown: str, src_uri: str, path: Path, sims: Simulators, glossary: Glossary | None, course: Course) -> str:
    markdown = unlink_missing_lessons(markdown, src_uri, course)
    if src_uri.startswith("tools/"):
        return lesson_page.render_body(markdown, path, 1, sims)
    if src_uri == glossary_mod.PAGE and glossary is not None:
        # Definitions may hold build-time numbers too ({{ … }}), computed like a lesson's.
        return lesson_page.render_body(glossary_mod.render_page(markdown, glossary, course), path, 1, sims)
    if src_uri == VALIDATION_PAGE:
        return render_validation(markdown)
    return markdown


def unlink_missing_lessons(markdown: str, src_uri: str, course: Course) -> str:
    """A link to a lesson this build does not have (`--lessons DIR` with a subset) keeps its text only."""
    present = {x.src_uri for x in course.lessons}

    def keep(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), match.group("path")))
        return match.group(0) if target in present else match.group("text")

    return LESSON_LINK.sub(keep, markdown)


def render_validation(markdown: str) -> str:
    from simulators import validation

    for marker in (TABLE_MARKER, BAND_MARKER):
        if marker not in markdown:
            raise BuildError(f"docs/{VALIDATION_PAGE} lacks the line {marker}")
    from simulators import vllm_validation

    table = validation.render_markdown().split("\n", 1)[1]  # without the "generated, do not edit" comment
    markdown = markdown.replace(VLLM_MARKER, vllm_validation.render_markdown())
    return markdown.replace(BAND_MARKER, error_band()).replace(TABLE_MARKER, table)


def error_band() -> str:
    """The band of the validation table, in words, computed on the held-out rows only (never typed)."""
    from simulators import validation

    held, calib, twins = (validation.band(r) for r in ("held_out", "calibration", "same_source"))
    every = validation.rows()
    checks = [r for r in every if r.role == "check" and not r.is_speed]
    worst = max((r for r in every if r.role == "held_out" and r.is_speed), key=lambda r: abs(r.error), default=None)
    lines = [
        "- **Speed, held out.** "
        + validation.band_text(held)
        + (f" The largest miss is *{worst.what}* ({worst.error:+.0%})." if worst else ""),
        f"- **Speed, calibration.** The {calib.points} rows the factors were fitted on land within "
        f"{calib.median_abs_error:.0%} (median |error|); they are shown apart and do not count in the band.",
        f"- **Speed, same source as a calibration row.** {twins.points} rows were not fitted on but come from "
        f"the submission, campaign or table of a row that was; they land within {twins.median_abs_error:.0%} "
        "(median |error|), which says how much closer a twin of the fit lands than an independent source.",
    ]
    if checks:
        off = max(checks, key=lambda r: abs(r.error))
        lines.append(
            f"- **Sizes and shapes.** The {len(checks)} sizes, counts and course figures agree to within "
            f"**{abs(off.error):.0%}** (the largest difference: *{off.what}*)."
        )
    return "\n".join(lines)
