"""A ```quiz fence → self-check questions with immediate feedback (`quiz.js` marks the answers).

    ```quiz
    - q: How many bytes does one token of Llama-3-8B's KV cache take in bf16?
      type: number
      answer: 131072
      tolerance: 0.02          # relative; default 0.01
      definitional: the product of the model's own shape figures, checked by hand
      explanation: 2 (K and V) × 32 layers × 8 KV heads × 128 × 2 bytes.
    - q: Which roof binds a batch-1 decode step?
      type: choice
      options:
        - text: Memory bandwidth
          correct: true
          why: Every weight is read once per token, for very few FLOPs per byte.
        - text: Compute
          why: At batch 1 the arithmetic intensity is far below the ridge point.
    ```

Question text, explanations and reasons are Markdown (math included).

A numeric answer is computed, not typed: `answer: {{ generation.ttft_s() * 1000 }}` under the
conditions the question states, so that it moves with the cost model and the page's widgets. A
literal number is refused unless the question says why it is definitional (`definitional:` a
reason, e.g. "2 of every 4 weights", or arithmetic on figures the question itself gives).
"""

import hashlib
import re
from typing import Any

import yaml

from sitebuild.block_yaml import BlockError, compose

NUMBER_KEYS = {"q", "type", "answer", "tolerance", "explanation", "definitional"}
CHOICE_KEYS = {"q", "type", "options"}
OPTION_KEYS = {"text", "correct", "why"}


def render(source: str, counter: list[int]) -> str:
    """HTML for the questions; `counter` numbers questions across the page (mutated)."""
    questions, node = compose(source, "quiz")
    if not isinstance(questions, list) or not questions or not isinstance(node, yaml.SequenceNode):
        raise BlockError(0, "a quiz block is a YAML list of questions (- q: …)")
    parts = ['<div class="quiz" markdown="1">']
    for question, item in zip(questions, node.value, strict=True):
        counter[0] += 1
        parts.append(_question(question, item.start_mark.line, counter[0]))
    return "\n".join([*parts, "</div>"])


_QUESTION = re.compile(r"^\s*-\s+q:")
_ANSWER = re.compile(r"^\s*(?:-\s+)?answer:\s*(.*?)\s*$")
_DEFINITIONAL = re.compile(r"^\s*definitional:\s*\S")
_NUMBER = re.compile(r"[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?")


def check_source(lines: list[str]) -> None:
    """Refuse a numeric answer typed as a literal (before `{{ … }}` is expanded) in a question
    without a `definitional:` reason: a typed key goes stale when the cost model moves."""
    starts = [i for i, line in enumerate(lines) if _QUESTION.match(line)] or [0]
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        item = lines[start:end]
        if any(_DEFINITIONAL.match(line) for line in item):
            continue
        for k, line in enumerate(item):
            match = _ANSWER.match(line)
            if match and _NUMBER.fullmatch(match.group(1)):
                raise BlockError(
                    start + k,
                    f"the answer {match.group(1)} is typed, not computed: write it as a {{{{ … }}}} expression "
                    "under the question's own conditions, or give 'definitional:' with the reason it cannot move",
                )


def _question(question: Any, line: int, number: int) -> str:
    if not isinstance(question, dict) or not isinstance(question.get("q"), str):
        raise BlockError(line, "each question needs 'q:' with the question text")
    kind = question.get("type")
    if kind not in ("number", "choice"):
        raise BlockError(line, f"question type must be 'number' or 'choice', not {kind!r}")
    _check_keys(question, NUMBER_KEYS if kind == "number" else CHOICE_KEYS, line)
    qid = f"quiz-{number}"
    attributes, body = (_number if kind == "number" else _choice)(question, line, qid)
    return "\n".join(
        [
            f'<div class="quiz-q" role="{"group" if kind == "number" else "radiogroup"}" aria-labelledby="{qid}-q" '
            f'data-question="{number}" data-type="{kind}"{attributes} markdown="1">',
            f'<p class="quiz-prompt" id="{qid}-q" markdown="span"><strong>Q{number}.</strong> {question["q"]}</p>',
            *body,
        ]
    )


def _number(question: dict[str, Any], line: int, qid: str) -> tuple[str, list[str]]:
    """The question's attributes and its HTML below the prompt (so does _choice)."""
    answer, tolerance = question.get("answer"), question.get("tolerance", 0.01)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (answer, tolerance)) or tolerance < 0:
        raise BlockError(line, "a number question needs a numeric 'answer' and a 'tolerance' >= 0")
    if not isinstance(question.get("explanation"), str):
        raise BlockError(line, "a number question needs an 'explanation'")
    if "definitional" in question and not (isinstance(question["definitional"], str) and question["definitional"]):
        raise BlockError(line, "'definitional:' needs the reason the answer cannot move")
    return f' data-answer="{answer!r}" data-tolerance="{tolerance!r}"', [
        f'<p class="quiz-entry"><label for="{qid}-input">Your answer</label> '
        f'<input id="{qid}-input" type="text" inputmode="decimal" autocomplete="off" '
        f'aria-describedby="{qid}-feedback"> '
        f'<button type="button" class="md-button quiz-check">Check</button></p>',
        f'<p class="quiz-feedback" id="{qid}-feedback" role="status" aria-live="polite"></p>',
        f'<div class="quiz-explanation" hidden markdown="1">\n{question["explanation"]}\n</div>',
        "</div>",
    ]


def _choice(question: dict[str, Any], line: int, qid: str) -> tuple[str, list[str]]:
    options = question.get("options")
    if not isinstance(options, list) or len(options) < 2:
        raise BlockError(line, "a choice question needs at least two 'options'")
    for option in options:
        if not isinstance(option, dict) or not isinstance(option.get("text"), str):
            raise BlockError(line, "each option needs 'text:'")
        _check_keys(option, OPTION_KEYS, line)
        if not isinstance(option.get("why"), str):
            raise BlockError(line, f"option {option['text']!r} needs a 'why:' explanation")
    if not any(option.get("correct") is True for option in options):
        raise BlockError(line, "mark at least one option 'correct: true'")
    # Shown in an order the question's id fixes (authors tend to write the right answer first), each
    # option keeping its index as its value (a saved answer stays the same option).
    order = sorted(range(len(options)), key=lambda i: hashlib.sha256(f"{qid}/{i}".encode()).digest())
    parts = []
    for index, option in ((i, options[i]) for i in order):
        correct = "true" if option.get("correct") is True else "false"
        parts += [
            f'<p class="quiz-option"><label><input type="radio" name="{qid}" value="{index}" '
            f'data-correct="{correct}"> {option["text"]}</label></p>',
            f'<div class="quiz-why" id="{qid}-why-{index}" hidden markdown="1">\n{option["why"]}\n</div>',
        ]
    return "", [*parts, '<p class="quiz-feedback" role="status" aria-live="polite"></p>\n</div>']


def _check_keys(mapping: dict[str, Any], allowed: set[str], line: int) -> None:
    if unknown := sorted(set(mapping) - allowed):
        raise BlockError(line, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
