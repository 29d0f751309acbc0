#!/usr/bin/env python3
"""The site's one entry point.

    python site_build.py build [--lessons DIR] [--site-dir DIR] [--site-url URL]
    python site_build.py serve [--port 8000]     build, serve on localhost, rebuild on change
    python site_build.py check                   build, then check every local link and anchor

`build` installs the pinned browser assets (npm ci), bundles simulators/ for the browser,
pre-renders every widget in CPython and runs `mkdocs build --strict`. The site appears in site/
only when everything succeeded; any failure exits non-zero with a message.
"""

import argparse
import logging
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from sitebuild import assets, serve
from sitebuild.errors import BuildError

ROOT = Path(__file__).resolve().parent
WATCHED = ("lessons", "docs", "simulators", "overrides", "sitebuild", "mkdocs.yml")


def build(site_dir: Path, lessons_dir: Path, site_url: str | None) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort, ConfigurationError

    try:
        from simulators import api  # noqa: F401  the catalogues (simulators/data/*.toml) load with it
    except ValueError as exc:  # a broken catalogue: its CatalogError names the file and the entry
        if type(exc).__name__ != "CatalogError":  # any other error keeps its traceback
            raise
        raise BuildError(str(exc)) from None
    assets.npm_ci()
    partial = site_dir.with_name(site_dir.name + ".partial")
    overrides = {"site_dir": str(partial), "strict": True} | ({"site_url": site_url} if site_url else {})
    try:
        config = load_config(str(ROOT / "mkdocs.yml"), **overrides)
        config.extra["lessons_dir"] = str(lessons_dir.resolve())
        mkdocs_build(config)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, (Abort, ConfigurationError)):
            raise BuildError(f"mkdocs build --strict failed: {exc}") from None
        raise
    old = site_dir.with_name(site_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if site_dir.exists():
        site_dir.rename(old)
    partial.rename(site_dir)
    shutil.rmtree(old, ignore_errors=True)


def watch_and_serve(port: int) -> None:
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, str(Path(__file__).resolve()), "build", "--site-url", url]
    if subprocess.run(command).returncode != 0:
        raise BuildError("the first build failed; fix it and start serve again")
    server = serve.start(ROOT / "site", port)
    print(f"serving {url} (rebuilds when {', '.join(WATCHED)} change; Ctrl-C stops)", flush=True)
    seen = _mtimes()
    try:
        while True:
            time.sleep(1)
            if (now := _mtimes()) != seen:
                seen = now
                print("change seen: rebuilding…", flush=True)
                ok = subprocess.run(command).returncode == 0
                print("rebuilt" if ok else "build failed: still serving the last good site", flush=True)
    except KeyboardInterrupt:
        server.shutdown()
        server.server_close()


def _mtimes() -> dict[str, float]:
    paths = [p for top in (ROOT / name for name in WATCHED) for p in (top.rglob("*") if top.is_dir() else [top])]
    return {str(p): p.stat().st_mtime for p in paths if p.is_file() and "__pycache__" not in p.parts}


class _Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.ids |= {str(values[name]) for name in ("id", "name") if values.get(name)}
        if not (tag == "link" and values.get("rel") in ("canonical", "alternate")):
            self.links += [str(values[name]) for name in ("href", "src") if values.get(name)]


def check_links(site_dir: Path) -> list[str]:
    """`check`: problems as `page: message` lines, empty when every local link and anchor resolves.
    mkdocs --strict already checks Markdown links; this also covers what templates and hooks wrote
    (the course map, lesson headers, widgets). Links to other sites are left alone: the site never
    loads them, a reader follows them."""
    pages = {
        p.relative_to(site_dir).as_posix(): _Page(p.read_text(encoding="utf-8"))
        for p in sorted(site_dir.rglob("*.html"))
    }
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="site_build.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "check"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--lessons", type=Path, default=ROOT / "lessons")
        cmd.add_argument("--site-dir", type=Path, default=ROOT / "site")
        cmd.add_argument("--site-url", help="the address the site is served from")
    sub.add_parser("serve").add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    # mkdocs logs a page's error ("Error reading page …") before raising it: ours prints once, below, at its line.
    logging.getLogger("mkdocs.commands.build").addFilter(lambda _: not isinstance(sys.exc_info()[1], BuildError))
    started = time.monotonic()
    try:
        if args.command == "serve":
            watch_and_serve(args.port)
            return 0
        site_dir = args.site_dir.resolve()
        build(site_dir, args.lessons, args.site_url)
        if args.command == "check":
            if problems := check_links(site_dir):
                raise BuildError("link check failed:\n  " + "\n  ".join(problems))
            print(f"link check: every local link and anchor in {site_dir.name}/ resolves")
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.site_dir} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
