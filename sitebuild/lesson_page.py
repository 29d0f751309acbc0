"""A lesson's Markdown → the Markdown mkdocs renders: header, widgets, quizzes, computed numbers.

Fences of a kind in sitebuild/blocks.py (```sim, ```quiz, ```checklist) become their HTML, at the
top level or inside an admonition, a tab or a list; other fences pass through untouched, and
`{{ … }}` is only expanded outside fences and inside the blocks that ask for it (a quiz, so a
numeric answer can be computed), so code samples can show the syntax itself. With a glossary,
the first use of each term in a lesson's prose links to its entry (sitebuild/glossary.py).
"""

import html
import sys
from pathlib import Path

from sitebuild import block_yaml, blocks, expressions, fences, figure_checks
from sitebuild.course import Course, Lesson
from sitebuild.errors import LessonError, display_path
from sitebuild.glossary import Glossary, Linker
from sitebuild.sims import Simulators


def render(lesson: Lesson, course: Course, sims: Simulators, glossary: Glossary | None = None) -> str:
    """The lesson page: header, body (each glossary term linked at its first use), completion."""
    linker = glossary.linker(lesson.src_uri) if glossary is not None else None
    scenarios = resolve_scenarios(lesson, sims)
    body = render_body(lesson.body, lesson.path, lesson.body_line, sims, linker, scenarios)
    e = html.escape
    chapter = next(c for c in course.chapters if c.id == lesson.chapter)
    header = (
        f"# {lesson.title}\n\n"
        f'<div class="lesson-head" data-lesson="{e(lesson.id)}">\n'
        f'<p class="lesson-kicker">Lesson {e(lesson.id)} · Chapter {e(chapter.id)} '
        f"{e(chapter.name)} · {lesson.minutes} min</p>\n"
        f'<p class="lesson-question">{e(lesson.question)}</p>\n'
        f'<dl class="lesson-facts"><div><dt>Bottleneck</dt><dd>{e(lesson.bottleneck)}</dd></div>'
        f"<div><dt>Primary metric</dt><dd>{e(lesson.primary_metric)}</dd></div></dl>\n"
        "</div>\n\n"
    )
    completion = (
        f'\n\n<div class="lesson-complete" data-lesson="{e(lesson.id)}">\n'
        '<button type="button" class="md-button md-button--primary lesson-complete-button" '
        'aria-pressed="false">Mark lesson complete</button>\n'
        '<p class="lesson-complete-status" role="status" aria-live="polite"></p>\n</div>\n'
    )
    return header + body + completion


def resolve_scenarios(lesson: Lesson, sims: Simulators) -> expressions.Scenarios:
    """The lesson's scenarios with every `"{{ expression }}"` value computed (earlier ones usable)."""
    resolved: expressions.Scenarios = {}
    for name, params in lesson.scenarios.items():
        line = lesson.lines[f"scenarios.{name}"]
        if name in sims.schemas:
            raise LessonError(lesson.path, line, f"scenario {name!r} is a simulator's name")
        values = {}
        for param, value in params.items():
            match = expressions.EXPRESSION.fullmatch(value.strip()) if isinstance(value, str) else None
            try:
                values[param] = expressions.raw_value(match.group(1), sims, resolved) if match else value
            except ValueError as exc:
                raise LessonError(lesson.path, line, f"scenario {name!r}: {exc}") from None
        resolved[name] = values
    return resolved


def render_body(
    text: str,
    path: Path,
    first_line: int,
    sims: Simulators,
    linker: Linker | None = None,
    scenarios: expressions.Scenarios | None = None,
) -> str:
    """Widgets, quizzes and build-time numbers of any page (a lesson's body, a tool page)."""
    scenarios = scenarios or {}
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    page = blocks.Page(sims, scenarios)
    line_no = first_line
    for item in fences.scan(lines):
        if isinstance(item, str):
            prose = linker.line(item) if linker is not None else item
            out.append(_expand(prose, path, line_no, sims, scenarios, _paragraph(lines, line_no - first_line)))
            line_no += 1
            continue
        line_no = first_line + item.start
        end = item.end if item.end is not None else len(lines)
        kind = blocks.BLOCKS.get(item.lang)
        if kind is None:
            out.extend(lines[item.start : end + 1])
        elif item.end is None or (inner := _opening_fence(item, lines)) is not None:
            # A missing closing fence: the block runs to the page's end, or to the next block's closing fence.
            before = "" if item.end is None else f" before the {lines[inner].strip()} at line {first_line + inner}"
            raise LessonError(
                path, line_no, f"```{item.lang} block opened at line {line_no} has no closing fence{before}"
            )
        else:
            body, page.line = item.content, line_no
            try:
                if kind.check_source is not None:
                    kind.check_source(body)
                if kind.numbers:  # quiz answers and explanations may hold build-time numbers: `answer: {{ … }}`
                    body = [_expand(text, path, line_no + 1 + k, sims, scenarios, text) for k, text in enumerate(body)]
                html = kind.render("".join(body), page)
            except block_yaml.BlockError as exc:
                raise LessonError(path, line_no + 1 + exc.offset, str(exc)) from None
            out.append(blocks.placeholder(page, html, item.indent) if item.indent else f"\n{html}\n\n")
        line_no = first_line + end + 1
    return "".join(out) + blocks.stash(page)


def _opening_fence(item: fences.Fence, lines: list[str]) -> int | None:
    """The index of a line inside the block that opens a fence of its own (```quiz): the block was
    not closed where it should have been, and the page's next closing fence closed it."""
    opening = fences.FENCE.match(lines[item.start])
    assert opening is not None  # scan() found the fence on this line
    for index in range(item.start + 1, item.end or item.start):
        inner = fences.FENCE.match(lines[index])
        if inner and inner.group("lang") and inner.group("fence").startswith(opening.group("fence")):
            return index
    return None


def _paragraph(lines: list[str], i: int) -> str:
    """The run of non-blank lines around line i: the context a figure's sentence is read in."""
    start = next((k + 1 for k in range(i - 1, -1, -1) if not lines[k].strip()), 0)
    end = next((k for k in range(i + 1, len(lines)) if not lines[k].strip()), len(lines))
    return "".join(lines[start:end])


def _expand(
    line: str, path: Path, line_no: int, sims: Simulators, scenarios: expressions.Scenarios, paragraph: str
) -> str:
    try:
        expanded, figures = expressions.expand_figures(line, sims, scenarios)
    except ValueError as exc:
        raise LessonError(path, line_no, str(exc)) from None
    if figures:
        try:
            context = expressions.expand(paragraph, sims, scenarios)
        except ValueError:  # a broken expression elsewhere in the paragraph fails at its own line
            context = paragraph
        problems = figure_checks.check(context, line, expanded, figures, sims)
        pending = figure_checks.PENDING.get(Path(display_path(path)).as_posix())
        for problem in problems if pending else problems[:1]:
            if not pending:
                raise LessonError(path, line_no, problem)
            print(f"warning: {display_path(path)}:{line_no}: {problem} [{pending}]", file=sys.stderr)
    return expanded
