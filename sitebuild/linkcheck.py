"""`site_build.py check`: every local link and anchor in the built site resolves.

mkdocs --strict already checks Markdown links; this also covers what templates and hooks wrote
(the course map, lesson headers, widgets). Links to other sites are left alone: the site never
loads them, a reader follows them.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.ids |= {str(values[name]) for name in ("id", "name") if values.get(name)}
        if not (tag == "link" and values.get("rel") in ("canonical", "alternate")):
            self.links += [str(values[name]) for name in ("href", "src") if values.get(name)]


def check(site_dir: Path) -> list[str]:
    """Problems as `page: message` lines; empty when every local link resolves."""
    pages: dict[str, _Page] = {}
    for path in sorted(site_dir.rglob("*.html")):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(site_dir).as_posix()] = page
    problems = []
    for name, page in pages.items():
        if name == "404.html":
            continue  # served at any depth, so its relative links are written for the root only
        for link in page.links:
            if urlsplit(link).scheme or link.startswith("//"):
                continue
            target = urlsplit(urljoin(f"/{name}", link))
            path = unquote(target.path).lstrip("/")
            if path == "" or path.endswith("/"):
                path += "index.html"
            if not (site_dir / path).is_file():
                problems.append(f"{name}: broken link {link!r}")
            elif target.fragment and path in pages and target.fragment not in pages[path].ids:
                problems.append(f"{name}: missing anchor {link!r}")
    return problems
