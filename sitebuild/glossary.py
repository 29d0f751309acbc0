"""The glossary: docs/glossary.yml → the glossary page, and a link on each term's first use in every lesson.

    terms:
      - term: KV cache               # the heading on the glossary page
        anchor: kv-cache             # optional; default: the term in lower case, dashes for spaces
        forms: [KV cache, KV-cache]  # what to match in lessons (default: [term]; []: never linked); plural s/es allowed
        definition: >-               # Markdown, one short paragraph
          …

A form with a capital letter matches with that exact case (`MLA`, `FP8`); an all-lower-case form
matches in any case (`prefill`, `Prefill`). Only prose is linked: never inside code, math, `{{ }}`,
links, headings, HTML blocks, admonition titles or reference lists, and never twice in one lesson.
"""

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from sitebuild.errors import BuildError
from sitebuild.fences import prose_lines

if TYPE_CHECKING:
    from sitebuild.course import Course, Lesson

PAGE = "glossary.md"
MARKER = "<!-- glossary-terms -->"
TERM_KEYS = {"term", "anchor", "forms", "definition"}
ANCHOR = re.compile(r"^[a-z0-9][a-z0-9-]*$")

# Spans of a prose line the linker leaves alone, tried left to right.
PROTECTED = re.compile(
    "|".join(
        [
            r"(`+).*?\1",  # inline code
            r"\{\{.*?\}\}",  # build-time numbers
            r"\$\$.*?\$\$",  # display math on one line
            r"(?<![\\$])\$(?!\s)[^$\n]*?(?<![\s\\])\$",  # inline math
            r"\\\(.*?\\\)|\\\[.*?\\\]",  # math in \( \) and \[ \]
            r"!?\[(?:[^\[\]]|\[[^\]]*\])*\](?:\([^)]*\)|\[[^\]]*\])(?:\{[^}]*\})?",  # links, images
            r"\[\^[^\]]+\]",  # footnote references
            r"<(a|code|kbd|abbr|span|sup|sub|em|strong)\b[^>]*>.*?</\2\s*>",  # inline HTML with text
            r"<[^>\n]*>",  # any other tag, autolinks
            r"https?://\S+",  # bare addresses
        ]
    )
)
SKIP_LINE = re.compile(
    r"^\s{0,3}(#{1,6}\s|[=-]{3,}\s*$)"  # headings, setext underlines, rules
    r"|^\s*(!!!|\?\?\?)"  # admonition titles
    r"|^\s*\[[^\]]+\]:"  # reference and footnote definitions
    r"|^\s*\|?\s*:?-{3,}"  # table separators
)
NESTING = re.compile(r"^\s*([-*+]|\d+[.)]|!!!|\?\?\?\+?)(\s|$)")  # a list item or an admonition opens
HTML_START = re.compile(r"^\s{0,3}<(!--|[A-Za-z][\w-]*(?=[\s/>]|$))")  # not <https://…> autolinks
REFERENCES = re.compile(r"^\s{0,3}#{1,6}\s+(references|sources|further reading)\b", re.I)


@dataclass(frozen=True)
class Term:
    term: str
    anchor: str
    definition: str


@dataclass(frozen=True)
class Glossary:
    terms: tuple[Term, ...]
    pattern: re.Pattern[str] = field(repr=False)
    # surface form (lower case for case-free forms) -> anchor
    by_form: dict[str, str] = field(repr=False)

    def anchor_of(self, text: str) -> str | None:
        for key in (text, text.lower()):
            for stem in (key, key[:-1], key[:-2]):
                if stem in self.by_form and (stem == key or key[len(stem) :] in ("s", "es")):
                    return self.by_form[stem]
        return None

    def linker(self, src_uri: str) -> "Linker":
        return Linker(self, posixpath.relpath(PAGE, posixpath.dirname(src_uri) or "."))


def load(path: Path) -> Glossary:
    """Read and check the data file; BuildError names the entry at fault."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BuildError(f"{path}: cannot read the glossary: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("terms"), list):
        raise BuildError(f"{path}: expected a mapping with a list under 'terms'")
    terms: list[Term] = []
    by_form: dict[str, str] = {}
    for n, entry in enumerate(data["terms"], 1):
        where = f"{path}: term {n}"
        if not isinstance(entry, dict) or not isinstance(entry.get("term"), str):
            raise BuildError(f"{where}: each entry needs a 'term'")
        where += f" ({entry['term']!r})"
        if unknown := set(entry) - TERM_KEYS:
            raise BuildError(f"{where}: unknown key(s) {sorted(unknown)} (allowed: {sorted(TERM_KEYS)})")
        if not isinstance(entry.get("definition"), str) or not entry["definition"].strip():
            raise BuildError(f"{where}: needs a 'definition'")
        anchor = entry.get("anchor") or re.sub(r"[^a-z0-9]+", "-", entry["term"].lower()).strip("-")
        if not ANCHOR.match(anchor) or anchor in (t.anchor for t in terms):
            raise BuildError(f"{where}: anchor {anchor!r} must be unique, lower-case letters, digits and -")
        forms = entry.get("forms", [entry["term"]])  # [] lists the term without linking it
        if not isinstance(forms, list) or not all(isinstance(f, str) and f.strip() for f in forms):
            raise BuildError(f"{where}: 'forms' must be a list of text")
        for form in forms:
            if form in by_form and by_form[form] != anchor:
                raise BuildError(f"{where}: form {form!r} already belongs to #{by_form[form]}")
            by_form[form] = anchor
        terms.append(Term(entry["term"], anchor, entry["definition"].strip()))
    parts = [re.escape(f) if f != f.lower() else f"(?i:{re.escape(f)})" for f in sorted(by_form, key=len, reverse=True)]
    pattern = rf"(?<![\w-])(?:{'|'.join(parts)})(?:e?s)?(?![\w-])" if parts else r"(?!)"  # (?!) matches nothing
    return Glossary(tuple(terms), re.compile(pattern), by_form)


class Linker:
    """Links the first use of each term in one page; feed it the page's prose lines in order."""

    def __init__(self, glossary: Glossary, href: str) -> None:
        self.glossary = glossary
        self.href = href
        self.linked: list[str] = []  # anchors, in order of first use
        self._math = False
        self._html: str | None = None  # the closing text that ends the HTML block we are in
        self._html_depth = 0
        self._done = False  # past a References heading
        self._blank = True  # the previous line was blank (or there was none)
        self._nested = False  # inside a list item or an admonition, whose body is indented
        self._code = False  # inside an indented code block

    def line(self, text: str) -> str:
        in_block = self._html is not None or self._math  # their own tracking sees every line
        if (not in_block and self._indented_code(text)) or self._skip(text):
            return text
        out, pos = [], 0
        for span in PROTECTED.finditer(text):
            out += [self._link(text[pos : span.start()]), span.group(0)]
            pos = span.end()
        return "".join([*out, self._link(text[pos:])])

    def _indented_code(self, text: str) -> bool:
        """True on the lines of an indented code block (four spaces after a blank line, outside a list
        item or admonition): Markdown shows them verbatim, so a link there would show as raw Markdown."""
        stripped = text.strip()
        indent = len(text) - len(text.lstrip(" "))
        blank, self._blank = self._blank, not stripped
        if not stripped:
            return self._code
        if indent >= 4 and not self._nested and (blank or self._code):
            self._code = True
            return True
        self._code = False
        self._nested = bool(NESTING.match(text)) or (self._nested and indent > 0)
        return False

    def _skip(self, text: str) -> bool:
        stripped = text.strip()
        if self._done or REFERENCES.match(text):
            self._done = True
            return True
        if self._math:
            self._math = not stripped.endswith(("$$", "\\]"))
            return True
        if stripped in ("$$", "\\[") or (stripped.startswith("$$") and not stripped.endswith("$$", 2)):
            self._math = True
            return True
        if self._html is None and (start := HTML_START.match(text)):
            self._html, self._html_depth = ("-->" if start.group(1) == "!--" else start.group(1).lower()), 0
        if self._html is not None:
            self._track_html(text)
            return True
        return bool(SKIP_LINE.match(text)) or stripped.startswith("$$")

    def _track_html(self, text: str) -> None:
        """Stay in the HTML block until its outermost element (or comment) closes."""
        if self._html == "-->":
            self._html = None if "-->" in text else "-->"
            return
        tag = self._html or ""
        self._html_depth += len(re.findall(rf"<{tag}\b", text, re.I)) - len(re.findall(rf"</{tag}\s*>", text, re.I))
        if self._html_depth <= 0 or re.search(rf"<{tag}\b[^>]*/>", text, re.I) and self._html_depth <= 1:
            self._html, self._html_depth = None, 0

    def _link(self, prose: str) -> str:
        def replace(match: re.Match[str]) -> str:
            anchor = self.glossary.anchor_of(match.group(0))
            if anchor is None or anchor in self.linked:
                return match.group(0)
            self.linked.append(anchor)
            return f"[{match.group(0)}]({self.href}#{anchor}){{ .glossary-link }}"

        return self.glossary.pattern.sub(replace, prose)


def render_page(markdown: str, glossary: Glossary, course: "Course") -> str:
    """The glossary page: each entry a heading with its anchor, the definition, where it is used."""
    if MARKER not in markdown:
        raise BuildError(f"docs/{PAGE} lacks the line {MARKER} where the terms go")
    used: dict[str, list[Lesson]] = {t.anchor: [] for t in glossary.terms}  # the lessons using each, in order
    for lesson in course.lessons:
        linker = glossary.linker(lesson.src_uri)
        for text in prose_lines(lesson.body):
            linker.line(text)
        for anchor in linker.linked:
            used[anchor].append(lesson)
    parts = []
    for t in sorted(glossary.terms, key=lambda t: t.term.lower()):
        where = ", ".join(f'[{x.id}]({x.src_uri} "{x.title.replace(chr(34), "")}")' for x in used[t.anchor])
        parts.append(f"## {t.term} {{ #{t.anchor} }}\n\n{t.definition}\n")
        if where:
            parts.append(f'<p class="glossary-uses" markdown="1">Used in lessons {where}.</p>\n')
    return markdown.replace(MARKER, "\n".join(parts))
