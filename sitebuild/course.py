"""The course as data: chapters and synthesis from `lessons/course.yml`, lessons from front matter.

Every check here fails with `lessons/<file>:<line>: <message>`, so a contributor knows where to look.
"""

import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml

from sitebuild.errors import LessonError

# The same front matter pattern mkdocs uses (mkdocs.utils.meta), so both read the same block.
FRONT_MATTER = re.compile(r"\A-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.S)
LESSON_ID = re.compile(r"^(\d\d(\.\d+)?|F\d+)$")
FIELDS: dict[str, type] = {
    **dict.fromkeys(("id", "chapter", "title", "question", "bottleneck", "primary_metric"), str),
    "minutes": int,
    "summary": str,
}
# Optional: named sets of simulator parameters that prose and widgets share (docs/contributing.md).
OPTIONAL_FIELDS: dict[str, type] = {"scenarios": dict}
SCENARIO_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
CHAPTER_FIELDS = ("id", "name", "stage", "journey_question", "question", "summary")


@dataclass(frozen=True)
class Lesson:
    path: Path
    id: str
    chapter: str
    title: str
    question: str
    bottleneck: str
    primary_metric: str
    minutes: int
    summary: str
    body: str
    # 1-based line of the first body line in the file, for error messages.
    body_line: int
    # name -> {parameter: literal, or "{{ expression }}" computed at build time}.
    scenarios: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False, compare=False)
    # The line of each front matter key, and of each scenario (`scenarios.<name>`), for error messages.
    lines: dict[str, int] = field(default_factory=dict, hash=False, compare=False)

    @property
    def src_uri(self) -> str:
        return f"lessons/{self.path.name}"

    @property
    def url(self) -> str:
        return f"lessons/{self.path.stem}/"


@dataclass(frozen=True)
class Chapter:
    id: str
    name: str
    # One word for the journey strip ("Memory") and the question that stage answers.
    stage: str
    journey_question: str
    question: str
    summary: str
    lessons: tuple[Lesson, ...]


@dataclass(frozen=True)
class Synthesis:
    bottleneck: str
    lessons: tuple[Lesson, ...]
    note: str


@dataclass(frozen=True)
class Course:
    chapters: tuple[Chapter, ...]
    lessons: tuple[Lesson, ...]
    synthesis: tuple[Synthesis, ...]

    @property
    def core(self) -> tuple[Lesson, ...]:
        """The numbered lessons of the course map (00.1 … 12), without the frontier pages (F…)."""
        return tuple(x for x in self.lessons if not x.id.startswith("F"))

    @property
    def frontier(self) -> tuple[Lesson, ...]:
        return tuple(x for x in self.lessons if x.id.startswith("F"))

    @property
    def total_minutes(self) -> int:
        """Reading time of the numbered lessons, experiments included."""
        return sum(lesson.minutes for lesson in self.core)

    @property
    def frontier_minutes(self) -> int:
        return sum(lesson.minutes for lesson in self.frontier)


def id_order(lesson_id: str) -> tuple[int, tuple[int, ...]]:
    """00.1 < 00.2 < 01 < … < 12 < F1 < F2: numbered lessons first, then the frontier."""
    return (int(lesson_id.startswith("F")), tuple(int(part) for part in lesson_id.removeprefix("F").split(".")))


def load_course(lessons_dir: Path) -> Course:
    course_file = lessons_dir / "course.yml"
    data, _ = _load_yaml(course_file, course_file.read_text(encoding="utf-8"), 1)
    lessons = sorted(map(parse_lesson, sorted(lessons_dir.glob("*.md"))), key=lambda x: id_order(x.id))
    for first, lesson in pairwise(lessons):  # sorted by id: one id's lessons are neighbours
        if lesson.id == first.id:
            raise LessonError(lesson.path, lesson.lines["id"], f"id {lesson.id!r} is already used by {first.path.name}")
    chapters = []
    for entry in data.get("chapters") or []:
        if missing := [key for key in CHAPTER_FIELDS if not entry.get(key)]:
            raise LessonError(course_file, 1, f"chapter {entry.get('id')!r} lacks {missing}")
        fields = {key: str(entry[key]) for key in CHAPTER_FIELDS}
        chapters.append(Chapter(**fields, lessons=tuple(x for x in lessons if x.chapter == fields["id"])))
    known = {c.id for c in chapters}
    if stray := next((x for x in lessons if x.chapter not in known), None):
        message = f"chapter {stray.chapter!r} is not in {course_file.name} (chapters: {', '.join(sorted(known))})"
        raise LessonError(stray.path, stray.lines["chapter"], message)
    by_id = {x.id: x for x in lessons}
    synthesis = []
    for row in data.get("synthesis") or []:
        if missing := [i for i in row["lessons"] if str(i) not in by_id]:
            raise LessonError(course_file, 1, f"synthesis row {row['bottleneck']!r} names unknown lessons {missing}")
        synthesis.append(Synthesis(row["bottleneck"], tuple(by_id[str(i)] for i in row["lessons"]), row["note"]))
    return Course(tuple(chapters), tuple(lessons), tuple(synthesis))


def parse_lesson(path: Path) -> Lesson:
    text = path.read_text(encoding="utf-8")
    match = FRONT_MATTER.match(text)
    if match is None:
        raise LessonError(path, 1, "missing YAML front matter (a block between '---' lines)")
    data, node = _load_yaml(path, match.group(1), 2)
    raw = {key.value: value for key, value in node.value}
    lines = {key.value: key.start_mark.line + 2 for key, _ in node.value}
    if unknown := [key for key in data if key not in FIELDS and key not in OPTIONAL_FIELDS]:
        allowed = ", ".join([*FIELDS, *OPTIONAL_FIELDS])
        raise LessonError(path, lines[unknown[0]], f"unknown front matter key {unknown[0]!r} (allowed: {allowed})")
    scenarios = {}
    if "scenarios" in data:
        scenarios = data.pop("scenarios")
        lines |= _scenario_lines(path, raw["scenarios"], scenarios, lines["scenarios"])
    for key, kind in FIELDS.items():
        if key not in data:
            raise LessonError(path, 1, f"front matter lacks {key!r}")
        # Ids are read as written: YAML would turn `00.1` into the float 0.1.
        value = raw[key].value if kind is str and isinstance(raw[key], yaml.ScalarNode) else data[key]
        if not isinstance(value, kind) or isinstance(value, bool) or value in ("", None):
            raise LessonError(path, lines[key], f"{key!r} must be a non-empty {kind.__name__}")
        data[key] = value
    if not LESSON_ID.match(data["id"]):
        raise LessonError(path, lines["id"], f"id {data['id']!r} must look like 00.1, 07 or F2")
    if not path.name.startswith(data["id"] + "-"):
        raise LessonError(path, lines["id"], f"file name must start with the id: {data['id']}-….md")
    if data["minutes"] <= 0:
        raise LessonError(path, lines["minutes"], "'minutes' must be positive")
    body = text[match.end() :]
    # The minutes shown are never fewer than the reading estimate (review L-11: the typed minutes
    # were about two thirds of a careful reading); a larger typed figure wins.
    data["minutes"] = max(data["minutes"], estimated_minutes(body))
    body_line = text.count("\n", 0, match.end()) + 1
    return Lesson(path=path, body=body, body_line=body_line, scenarios=scenarios, lines=lines, **data)


FENCE = re.compile(r"^(`{3,})(\w*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
WORDS_PER_MINUTE = 180  # technical prose with formulas, read to be understood
MINUTES_PER_WIDGET = 1.5  # run it, move a control or two, read the answer
MINUTES_PER_QUESTION = 1.0  # most send the reader back to a widget or a figure


def prose_words(body: str) -> int:
    """Words of prose in a lesson body: code, math and widget blocks out, a {{ }} number one word."""
    text = FENCE.sub(" ", body)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " x ", text)
    text = re.sub(r"\{\{.*?\}\}", " 1 ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\]\([^)]*\)", "] ", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’.-]*", text))


def estimated_minutes(body: str) -> int:
    """Reading time of a lesson body: its prose at WORDS_PER_MINUTE, each widget and each quiz question."""
    widgets = sum(1 for m in FENCE.finditer(body) if m.group(2) == "sim")
    questions = sum(len(re.findall(r"^- q:", m.group(3), re.M)) for m in FENCE.finditer(body) if m.group(2) == "quiz")
    return round(prose_words(body) / WORDS_PER_MINUTE + MINUTES_PER_WIDGET * widgets + MINUTES_PER_QUESTION * questions)


def _scenario_lines(path: Path, node: yaml.Node | None, scenarios: Any, line: int) -> dict[str, int]:
    """Check `scenarios:` (name: {param: scalar}) and return the line of each scenario (`scenarios.<name>`)."""
    if not isinstance(scenarios, dict) or not isinstance(node, yaml.MappingNode):
        raise LessonError(path, line, "'scenarios' must map a name to {parameter: value, …}")
    found = {}
    for key, _node in node.value:
        name, at = key.value, key.start_mark.line + 2
        if not SCENARIO_NAME.match(str(name)):
            raise LessonError(path, at, f"scenario name {name!r} must be lower-case letters, digits or _")
        if name in ("heldout", "profile"):  # sitebuild/expressions.py: the held-out band, the engine profile
            raise LessonError(path, at, f"scenario name {name!r} is reserved (sitebuild/expressions.py)")
        params = scenarios[name]
        if not isinstance(params, dict) or not params:
            raise LessonError(path, at, f"scenario {name!r} must be a non-empty mapping of parameter: value")
        if bad := [param for param, v in params.items() if not isinstance(v, (int, float, str, bool))]:
            raise LessonError(path, at, f"scenario {name!r}: {bad[0]} must be a number, a string or true/false")
        found[f"scenarios.{name}"] = at
    return found


def _load_yaml(path: Path, text: str, first_line: int) -> tuple[dict[str, Any], yaml.Node]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark else 0)
        raise LessonError(path, line, f"invalid YAML: {exc.problem or exc}") from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise LessonError(path, first_line, "expected a YAML mapping of key: value lines")
    return data, node
