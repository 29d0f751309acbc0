"""The glossary: one data file, the page written from it, and a link on each term's first use.

The linker is tested line by line on tiny lessons; the real data file and the real lessons are
checked for consistency (every anchor unique, every link pointing at an entry).
"""

import re
from pathlib import Path

import pytest

from sitebuild import glossary, lesson_page
from sitebuild.course import load_course
from sitebuild.errors import BuildError
from sitebuild.sims import Simulators

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "glossary.yml"
LINK = re.compile(r"\[([^\]]+)\]\(\.\./glossary\.md#([a-z0-9-]+)\)\{ \.glossary-link \}")

SMALL = """
terms:
  - term: KV cache
    forms: [KV cache]
    definition: Keys and values kept per token.
  - term: Prefill
    forms: [prefill]
    definition: The first pass over the prompt.
  - term: Chunked prefill
    forms: [chunked prefill]
    definition: Prefill in pieces.
  - term: FP8
    forms: [FP8]
    definition: Eight-bit floats.
"""


@pytest.fixture
def small(tmp_path: Path) -> glossary.Glossary:
    path = tmp_path / "glossary.yml"
    path.write_text(SMALL, encoding="utf-8")
    return glossary.load(path)


def link_all(g: glossary.Glossary, text: str) -> str:
    linker = g.linker("lessons/01-kv-cache.md")
    return "".join(linker.line(line) for line in text.splitlines(keepends=True))


def linked(text: str) -> list[tuple[str, str]]:
    return LINK.findall(text)


def test_first_use_only_and_relative_to_the_lesson(small):
    out = link_all(small, "The KV cache grows. The KV cache grows again.\n")
    assert out == "The [KV cache](../glossary.md#kv-cache){ .glossary-link } grows. The KV cache grows again.\n"


def test_first_use_is_per_page_not_per_line(small):
    out = link_all(small, "A prefill.\nAnother prefill.\n")
    assert linked(out) == [("prefill", "prefill")]


def test_case_rules_and_plurals(small):
    # lower-case forms match any case; a capital form only its own case; a plural s is allowed
    assert linked(link_all(small, "Prefills are fast.\n")) == [("Prefills", "prefill")]
    assert linked(link_all(small, "an fp8 value\n")) == []
    assert linked(link_all(small, "an FP8 value\n")) == [("FP8", "fp8")]
    assert linked(link_all(small, "two KV caches\n")) == [("KV caches", "kv-cache")]


def test_empty_forms_list_the_term_without_linking_it(tmp_path):
    path = tmp_path / "glossary.yml"
    path.write_text("terms:\n  - term: Token\n    forms: []\n    definition: A piece of text.\n", encoding="utf-8")
    g = glossary.load(path)
    assert link_all(g, "Per token: 128 KiB.\n") == "Per token: 128 KiB.\n"
    assert [t.anchor for t in g.terms] == ["token"]


def test_longest_form_wins(small):
    # "chunked prefill" is its own term; the "prefill" inside it is not linked separately
    out = link_all(small, "Use chunked prefill.\n")
    assert linked(out) == [("chunked prefill", "chunked-prefill")]


def test_whole_words_only(small):
    assert linked(link_all(small, "prefilled, unprefill, prefill-heavy\n")) == []


@pytest.mark.parametrize(
    "text",
    [
        "Run `prefill` in code.\n",
        "A number {{ generation.ttft_s(prompt_tokens=2000) :.2f }} and {{ prefill }}.\n",
        "Math $\\text{prefill}$ here.\n",
        "A [link about prefill](https://example.com) and ![prefill](a.png).\n",
        "## Prefill in a heading\n",
        '!!! note "Prefill in an admonition title"\n',
        "[^1]: Prefill in a reference definition.\n",
        'Inline <span class="x">prefill</span> HTML.\n',
        "See https://example.com/prefill for more.\n",
    ],
)
def test_protected_places_are_left_alone(small, text):
    assert link_all(small, text) == text


def test_display_math_and_html_blocks_are_skipped(small):
    text = "$$\nprefill = 1\n$$\n<div>\nprefill inside html\n</div>\nThen prefill.\n"
    out = link_all(small, text)
    assert "prefill = 1" in out and "prefill inside html" in out
    assert linked(out) == [("prefill", "prefill")]
    assert out.endswith("Then [prefill](../glossary.md#prefill){ .glossary-link }.\n")


def test_an_autolink_at_line_start_is_not_an_html_block(small):
    out = link_all(small, "<https://example.com/prefill>\nThen prefill.\n")
    assert out.startswith("<https://example.com/prefill>\n")
    assert linked(out) == [("prefill", "prefill")]


def test_references_section_is_not_linked(small):
    out = link_all(small, "## References\n\n- Paper on the KV cache.\n")
    assert linked(out) == []


def test_fenced_blocks_never_reach_the_linker(small, tmp_path):
    body = "Text.\n\n```python\nprefill = 1\n```\n\nThe prefill.\n"
    out = lesson_page.render_body(body, tmp_path / "x.md", 1, Simulators(), small.linker("lessons/x.md"))
    assert "prefill = 1" in out
    assert linked(out) == [("prefill", "prefill")]


@pytest.mark.parametrize(
    "yaml_text, words",
    [
        ("terms: [{term: X}]", "needs a 'definition'"),
        ("terms: [{term: X, definition: d, colour: red}]", "unknown key"),
        ("terms: [{term: X, definition: d}, {term: x, definition: e}]", "must be unique"),
        (
            "terms: [{term: A, forms: [same], definition: d}, {term: B, forms: [same], definition: e}]",
            "already belongs",
        ),
        ("terms: {}", "list under 'terms'"),
    ],
)
def test_bad_data_is_named(tmp_path, yaml_text, words):
    path = tmp_path / "glossary.yml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(BuildError, match=re.escape(words)):
        glossary.load(path)


# --- the real data file, page and lessons


def test_the_data_file_loads_and_covers_the_course_vocabulary():
    g = glossary.load(DATA)
    anchors = {t.anchor for t in g.terms}
    for needed in (
        "ttft", "tpot", "itl", "e2e-latency", "goodput", "slo", "prefill", "decode", "kv-cache", "gqa", "mqa",
        "mla", "mha", "pagedattention", "block", "block-size", "block-table", "ref-cnt", "prefix-caching",
        "radixattention", "continuous-batching", "chunked-prefill", "preemption", "speculative-decoding",
        "acceptance-rate", "draft-model", "roofline", "arithmetic-intensity", "ridge-point", "hbm", "tensor-core",
        "tensor-parallelism", "quantization", "w4a16", "fp8", "int4", "group-scale", "sparsity-2-4",
        "compressed-tensors", "disaggregation", "router", "open-loop", "poisson-arrivals", "warm-up",
        "percentile", "kl-divergence", "perplexity", "moe",
    ):  # fmt: skip
        assert needed in anchors, needed


def test_every_lesson_links_only_to_real_entries_and_each_at_most_once(kept_sims):
    g = glossary.load(DATA)
    anchors = {t.anchor for t in g.terms}
    course = load_course(ROOT / "lessons")
    sims = kept_sims
    total = 0
    for lesson in course.lessons:
        out = lesson_page.render(lesson, course, sims, g)
        found = [anchor for _, anchor in linked(out)]
        assert set(found) <= anchors, (lesson.id, set(found) - anchors)
        assert len(found) == len(set(found)), lesson.id
        total += len(found)
    assert total > 100  # the lessons do use the vocabulary


def test_the_page_lists_every_term_with_its_anchor():
    g = glossary.load(DATA)
    course = load_course(ROOT / "lessons")
    page = glossary.render_page((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"), g, course)
    assert glossary.MARKER not in page
    for t in g.terms:
        assert f"{{ #{t.anchor} }}" in page
    with pytest.raises(BuildError, match="glossary-terms"):
        glossary.render_page("# Glossary\n", g, course)


def test_indented_code_blocks_are_not_linked_but_indented_answers_are(small):
    # Four spaces after a paragraph and a blank line: a code block (lesson 01's vLLM log lines).
    code = "It logs\n\n    GPU KV cache size: 456,784 tokens\n    more log\n\nThe KV cache.\n"
    out = link_all(small, code)
    assert "    GPU KV cache size: 456,784 tokens\n" in out
    assert out.endswith("The [KV cache](../glossary.md#kv-cache){ .glossary-link }.\n")
    # The same indentation inside an admonition or a list item is prose and is linked.
    for opening in ('??? note "Answer"\n', "1. **A question.**\n"):
        out = link_all(small, opening + "\n    The KV cache grows.\n")
        assert linked(out) == [("KV cache", "kv-cache")], out
