"""Every lesson has the anatomy of ../shared/LESSONS.md: front matter, the seven sections in
order, at least one simulator, 3-5 self-check questions that each carry an answer and an
explanation, references with links, and 1,200-2,500 words of prose."""

import re
from pathlib import Path

import pytest
import yaml
from kept import KeptSimulators

from simulators import api
from sitebuild import expressions, lesson_page
from sitebuild.course import estimated_minutes, load_course, prose_words

LESSONS_DIR = Path(__file__).resolve().parent.parent / "lessons"
COURSE = load_course(LESSONS_DIR)
SECTIONS = [
    "The bottleneck",
    "The mechanism",
    "Try it",
    "The metric that moves",
    "In real software",
    "Check yourself",
    "References",
]
FENCE = re.compile(r"^(`{3,})(\w*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
CORE_IDS = ["00.1", "00.2", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12"]


SIMS = KeptSimulators()  # the build's answers where it kept them (tests/kept.py)


def blocks(lesson, kind):
    """The YAML of every ```kind block, with build-time numbers expanded as the build does."""
    found = [m.group(3) for m in FENCE.finditer(lesson.body) if m.group(2) == kind]
    scenarios = lesson_page.resolve_scenarios(lesson, SIMS)
    return [yaml.safe_load(expressions.expand(text, SIMS, scenarios) if kind == "quiz" else text) for text in found]


def test_the_fourteen_lessons_of_the_course_map():
    ids = [lesson.id for lesson in COURSE.lessons]
    assert [i for i in ids if i in CORE_IDS] == CORE_IDS
    assert sum(1 for c in COURSE.chapters for _ in c.lessons) == len(ids)


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_sections_in_order(lesson):
    found = re.findall(r"^## (.+?)\s*$", lesson.body, re.M)
    positions = [found.index(s) if s in found else -1 for s in SECTIONS]
    assert -1 not in positions, (
        f"{lesson.src_uri} lacks {[s for s, p in zip(SECTIONS, positions, strict=True) if p < 0]}"
    )
    assert positions == sorted(positions), f"{lesson.src_uri}: sections out of order: {found}"


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_prose_length(lesson):
    words = prose_words(lesson.body)
    assert 1200 <= words <= 2500, f"{lesson.src_uri}: {words} words of prose"


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_at_least_one_known_simulator(lesson):
    sims = blocks(lesson, "sim")
    assert sims, f"{lesson.src_uri} embeds no simulator"
    for block in sims:
        assert block["sim"] in api.SIMULATORS


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_self_check_questions_have_answers_and_explanations(lesson):
    quizzes = blocks(lesson, "quiz")
    questions = [q for quiz in quizzes for q in quiz]
    assert 3 <= len(questions) <= 5, f"{lesson.src_uri}: {len(questions)} questions"
    for q in questions:
        assert q["q"].strip()
        if q["type"] == "number":
            assert isinstance(q["answer"], int | float) and q["explanation"].strip()
            assert 0 < q.get("tolerance", 0.01) < 1
        else:
            assert q["type"] == "choice"
            assert sum(1 for o in q["options"] if o.get("correct")) == 1
            assert all(o["why"].strip() for o in q["options"]), q["q"]


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_references_link_to_sources(lesson):
    refs = lesson.body.split("## References", 1)[1]
    links = re.findall(r"\]\((https?://[^)\s]+)\)", refs)
    assert len(links) >= 3, f"{lesson.src_uri}: {len(links)} linked references"


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_guided_experiments_follow_the_simulator(lesson):
    try_it = lesson.body.split("## Try it", 1)[1].split("\n## ", 1)[0]
    assert "```sim" in try_it
    assert len(re.findall(r'\?\?\?\+? note "Answer', try_it)) >= 2, (
        f"{lesson.src_uri}: fewer than 2 experiments with answers"
    )


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_no_regex_backreference_left_in_prose(lesson):
    """A `\\1` in prose is a replacement string that was pasted literally (a bulk edit went wrong),
    not a number: F5 once showed "\\1 sequences' worth" where a computed capacity belonged."""
    text = re.sub(r"\$\$.*?\$\$", " ", lesson.body, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " ", text)
    left = re.findall(r".{0,30}\\[1-9](?![0-9]).{0,30}", text)
    assert not left, f"{lesson.src_uri}: {left}"


NUMBER = re.compile(r"(?<![\w.])(-?\d{1,3}(?:[,\u2009\u202f\u00a0]\d{3})*(?:\.\d+)?|-?\d+(?:\.\d+)?)(\s*%)?")


def _numbers(text):
    """Every number written in `text` (thousands separators allowed; a percentage also as a fraction)."""
    found = []
    for digits, percent in NUMBER.findall(text.replace("{,}", ",")):
        value = float(re.sub(r"[,\u2009\u202f\u00a0]", "", digits))
        found += [value, value / 100] if percent else [value]
    return found


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_every_numeric_key_is_stated_in_its_explanation(lesson):
    """The key a reader is marked against is the figure the explanation works out: a key computed
    under other conditions than the explanation's (a stale literal, another scenario) fails here."""
    for q in (q for quiz in blocks(lesson, "quiz") for q in quiz if q["type"] == "number"):
        key, tol = float(q["answer"]), max(q.get("tolerance", 0.01), 0.005)
        stated = _numbers(q["explanation"])
        assert any(abs(n - key) <= tol * abs(key) for n in stated), (
            f"{lesson.src_uri}: key {key:g} not in the explanation of {q['q']!r} (it states {stated})"
        )


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_numbers_in_choice_options_are_the_pages_own(lesson):
    """An option that quotes a speed-up (N×) quotes one the page's prose states (widget answers
    included): a stale figure in a distractor misleads as much as in a key."""
    scenarios = lesson_page.resolve_scenarios(lesson, SIMS)
    page = expressions.expand(FENCE.sub(" ", lesson.body), SIMS, scenarios)
    quizzes = blocks(lesson, "quiz")
    said = [float(n) for n in re.findall(r"(\d+(?:\.\d+)?)\s*×", page)]
    for q in (q for quiz in quizzes for q in quiz if q["type"] == "choice"):
        for o in q["options"]:
            for n in re.findall(r"(\d+(?:\.\d+)?)\s*×", o["text"]):
                value = float(n)
                assert any(abs(v - value) <= 0.02 * value for v in said), (
                    f"{lesson.src_uri}: option {o['text']!r} quotes {n}×, which the page never states"
                )


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_the_minutes_shown_cover_a_careful_reading(lesson):
    """Review L-11: the minutes are at least words / 180 + 1.5 per widget + 1 per quiz question."""
    widgets, questions = lesson.body.count("```sim\n"), len(re.findall(r"^- q:", lesson.body, re.M))
    by_hand = prose_words(lesson.body) / 180 + 1.5 * widgets + 1.0 * questions
    assert widgets >= 1 and questions >= 3
    assert lesson.minutes >= round(by_hand) == estimated_minutes(lesson.body)
