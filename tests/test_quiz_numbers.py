"""A self-check answer can be a build-time number, so it never drifts from the cost model."""

from pathlib import Path

import pytest

from simulators import api
from sitebuild import lesson_page
from sitebuild.course import load_course, parse_lesson
from sitebuild.errors import LessonError
from sitebuild.sims import Simulators

LESSONS = Path(__file__).resolve().parent.parent / "lessons"

LESSON = """---
id: "01"
chapter: "01"
title: "KV Cache"
question: "Q?"
bottleneck: "B"
primary_metric: "M"
minutes: 5
summary: "S"
---

```quiz
- q: Bytes per token?
  type: number
  answer: {{ kv_cache.kv_bytes_per_token(model="llama-3-8b") }}
  tolerance: 0.01
  explanation: It is {{ kv_cache.kv_bytes_per_token(model="llama-3-8b") :,.0f }} bytes.
```
"""


def test_quiz_answer_is_computed_at_build_time(tmp_path):
    path = tmp_path / "01-kv-cache.md"
    path.write_text(LESSON)
    html = lesson_page.render(parse_lesson(path), load_course(LESSONS), Simulators())
    expected = api.evaluate("kv_cache", model="llama-3-8b")["metrics"]["kv_bytes_per_token"]
    assert f'data-answer="{float(expected)!r}"' in html
    assert f"It is {expected:,.0f} bytes." in html


TYPED = LESSON.replace('answer: {{ kv_cache.kv_bytes_per_token(model="llama-3-8b") }}', "answer: 131072")


def test_a_typed_numeric_key_fails_the_build_at_its_line(tmp_path):
    path = tmp_path / "01-kv-cache.md"
    path.write_text(TYPED)
    with pytest.raises(LessonError) as err:
        lesson_page.render(parse_lesson(path), load_course(LESSONS), Simulators())
    line = TYPED.splitlines().index("  answer: 131072") + 1
    assert f"01-kv-cache.md:{line}:" in str(err.value) and "typed, not computed" in str(err.value)


def test_a_definitional_key_may_be_typed_with_its_reason(tmp_path):
    path = tmp_path / "01-kv-cache.md"
    path.write_text(TYPED.replace("  tolerance: 0.01\n", '  tolerance: 0.01\n  definitional: "2 x 32 x 8 x 128 x 2"\n'))
    html = lesson_page.render(parse_lesson(path), load_course(LESSONS), Simulators())
    assert 'data-answer="131072"' in html
    empty = TYPED.replace("  tolerance: 0.01\n", '  tolerance: 0.01\n  definitional: ""\n')
    path.write_text(empty)
    with pytest.raises(LessonError, match="needs the reason"):
        lesson_page.render(parse_lesson(path), load_course(LESSONS), Simulators())
