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
import statistics
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
# Quantities that are speeds (higher is better) and times (lower is better); the rest are sizes.
RATES = ("decode_tokens_per_s", "decode_tokens_per_s_per_gpu")
TIMES = ("decode_step_ms", "prefill_ms")


def render(markdown: str, src_uri: str, path: Path, sims: Simulators, glossary: Glossary | None, course: Course) -> str:
    markdown = unlink_missing_lessons(markdown, src_uri, course)
    if src_uri.startswith("tools/"):
        return lesson_page.render_body(markdown, path, 1, sims)
    if src_uri == glossary_mod.PAGE and glossary is not None:
        return glossary_mod.render_page(markdown, glossary, course)
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
    """The spread of the validation table, in words: computed from its rows, never typed."""
    from simulators import validation

    quantity = {e["id"]: e["quantity"] for e in validation.measurements()}
    speed, size, claims = [], [], []
    for row in validation.rows():
        if row.kind.startswith("course claim") or "derived check" in row.kind:
            claims.append(row)
        elif quantity[row.id] in RATES or quantity[row.id] in TIMES:
            speed.append(row)
        else:
            size.append(row)

    def achieved(row: validation.Row) -> float:
        """Real speed over predicted speed: 1 means the defaults describe the system; < 1 slower."""
        return row.ratio if quantity[row.id] in RATES else 1 / row.ratio

    lines = []
    if speed:
        ratios = sorted(achieved(r) for r in speed)
        slowest = min(speed, key=achieved)
        lines.append(
            f"- **Speed.** Across the {len(speed)} published speed measurements, the real systems ran at "
            f"**{ratios[0]:.0%} to {ratios[-1]:.0%}** of the speed the default efficiencies predict "
            f"(median {statistics.median(ratios):.0%}). The widest gap is *{slowest.what}*."
        )
    if size:
        worst = max(size, key=lambda r: abs(r.ratio - 1))
        lines.append(
            f"- **Sizes and shapes.** The {len(size)} published sizes and counts agree to within "
            f"**{abs(worst.ratio - 1):.0%}** (the largest difference: *{worst.what}*)."
        )
    if claims:
        exact = sum(1 for r in claims if abs(r.ratio - 1) < 0.005)
        lines.append(
            f"- **The course's own figures.** {exact} of {len(claims)} are derived from a model's shape or a "
            f"GPU's data sheet and match exactly; the other {len(claims) - exact} are round figures from the "
            "course's sources, not measurements, shown with their ratio rather than silently corrected."
        )
    return "\n".join(lines)
