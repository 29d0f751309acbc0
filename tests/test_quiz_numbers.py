"""A self-check answer can be a build-time number, so it never drifts from the cost model."""

from pathlib import Path

from simulators import api
from sitebuild import lesson_page
from sitebuild.course import load_course, parse_lesson
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
