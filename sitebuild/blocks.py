"""The block kinds a page may hold, in one registry: adding a kind is one module and one line here.

    ```quiz                      a fence whose language is a key of BLOCKS: its YAML body becomes
    - q: ...                     the HTML its kind renders (sim_block, quiz_block, checklist_block)
    ```

Every kind reads its YAML with block_yaml (so errors carry the line), and gets the page's shared
state (`Page`: the simulators, the ids already used, the quiz counter). A block may stand at the
top level or inside an admonition (`!!! note`, `??? tip`), a content tab (`=== "Tab"`) or a list
item. Python-Markdown would wrap indented raw HTML in a paragraph and mangle it, so a nested block
is written twice: where it stands, as a placeholder paragraph (`BLOCK_TOKEN`), and at the end of
the page, between two comments, as top-level HTML that Markdown renders as it renders any block
(md_in_html included). Once the page is HTML, `place_nested` moves each rendered block into its
placeholder's place; a placeholder that did not end up as a paragraph of its own fails the build.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sitebuild import checklist_block, quiz_block, sim_block
from sitebuild.errors import BuildError
from sitebuild.sims import Simulators


@dataclass
class Page:
    """What the blocks of one page share."""

    sims: Simulators
    # The page's named scenarios (front matter `scenarios:`), values computed; a sim block may name one.
    scenarios: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Widget and checklist ids already on the page, with the line of the block that took each (a
    # block adds its own), and the line of the block being rendered (its opening fence).
    used_ids: dict[str, int] = field(default_factory=dict)
    line: int = 0
    # Quizzes numbered so far (questions are numbered across the page).
    quiz_counter: list[int] = field(default_factory=lambda: [0])
    # HTML of the blocks that stand inside an admonition, a tab or a list, in page order.
    nested: list[str] = field(default_factory=list)


class Block(NamedTuple):
    # The block's YAML source and the page's shared state -> the block's HTML (BlockError if bad).
    render: Callable[[str, Page], str]
    # Whether `{{ … }}` build-time numbers are expanded in the YAML first (a quiz's answers).
    numbers: bool = False
    # A check of the source lines before that expansion (BlockError if bad): a quiz's answers computed, not typed.
    check_source: Callable[[list[str]], None] | None = None


BLOCKS: dict[str, Block] = {
    "sim": Block(lambda source, page: sim_block.render(source, page.sims, page.used_ids, page.scenarios, page.line)),
    "quiz": Block(
        lambda source, page: quiz_block.render(source, page.quiz_counter),
        numbers=True,
        check_source=quiz_block.check_source,
    ),
    "checklist": Block(lambda source, page: checklist_block.render(source, page.used_ids, page.line)),
}

BLOCK_TOKEN = "SITEBUILDNESTEDBLOCK{}"
_STASH = re.compile(r"<!--sitebuild-block (\d+)-->\n(.*?)\n<!--/sitebuild-block \1-->\n?", re.S)


def placeholder(page: Page, html: str, indent: str) -> str:
    """The Markdown that stands where a nested block is: a paragraph of its own at its indentation."""
    page.nested.append(html)
    return f"\n{indent}{BLOCK_TOKEN.format(len(page.nested) - 1)}\n\n"


def stash(page: Page) -> str:
    return "".join(
        f"\n\n<!--sitebuild-block {n}-->\n{html}\n<!--/sitebuild-block {n}-->\n" for n, html in enumerate(page.nested)
    )


def place_nested(html: str, where: str) -> str:
    blocks = {int(m.group(1)): m.group(2) for m in _STASH.finditer(html)}
    html = _STASH.sub("", html)
    for n, block in blocks.items():
        spot = f"<p>{BLOCK_TOKEN.format(n)}</p>"
        if html.count(spot) != 1:
            raise BuildError(
                f"{where}: a ```block inside an admonition, tab or list could not be placed (is it "
                "separated from the text around it by blank lines, and indented like its container?)"
            )
        html = html.replace(spot, block)
    if BLOCK_TOKEN.format("") in html:
        raise BuildError(f"{where}: a ```block inside an admonition, tab or list was left unrendered")
    return html
