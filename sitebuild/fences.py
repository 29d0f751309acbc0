"""Fenced code blocks in a page's Markdown, at any indentation: the one scanner the build uses.

A fence opens with three or more backticks or tildes and an optional language (```` ```sim ````),
and closes with at least as many of the same character on a line of their own. Inside an
admonition (`!!! note`, `??? tip`), a content tab (`=== "Tab"`) or a list item, the fence and its
content are indented; `Fence.indent` is that indentation and `Fence.content` the lines without it,
so a block reads the same wherever it stands.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w-]*)")


@dataclass(frozen=True)
class Fence:
    # Index of the opening line in the page's lines, and of the closing one (None: never closed).
    start: int
    end: int | None
    # The whitespace before the opening fence, and the language after it ("" for none).
    indent: str
    lang: str
    # The lines between the fences with `indent` taken off each (a shorter indent: its whitespace).
    content: list[str]


def scan(lines: list[str]) -> Iterator[str | Fence]:
    """The page's lines outside fences (as strings) and its fences (as Fence), in order."""
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            yield lines[i]
            i += 1
            continue
        indent, fence = match.group("indent"), match.group("fence")
        # The closing line: the fence's character at least as many times, indented as the fence's
        # container allows (its own indentation, plus up to three spaces as CommonMark permits).
        closing = re.compile(rf"^ {{0,{len(indent.expandtabs(4)) + 3}}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j].rstrip("\n"))), None)
        stop = end if end is not None else len(lines)
        content = [x[len(indent) :] if x.startswith(indent) else x.lstrip(" \t") for x in lines[i + 1 : stop]]
        yield Fence(i, end, indent, match.group("lang"), content)
        i = stop + 1


def prose_lines(text: str) -> list[str]:
    """The lines of a page outside every fenced block, in order (what the glossary linker sees)."""
    return [x for x in scan(text.splitlines(keepends=True)) if isinstance(x, str)]
