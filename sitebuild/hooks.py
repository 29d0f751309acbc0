"""mkdocs hooks (listed in mkdocs.yml): lessons from lessons/, widgets, the home page, assets, CSP.

State lives for one build in `_build`, set by on_config; everything else is a pure function of it.
"""

import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from sitebuild import assets, blocks, csp, docs_pages, glossary, lesson_page, precompress, service_worker, stdlib
from sitebuild.course import Course, load_course
from sitebuild.sims import Simulators, cache_file, committed_runs

# docs/*.md that are not pages of their own (excluded in mkdocs.yml's exclude_docs).
PARTIALS = ("validation-table.md",)
SIZES_PAGE = "instructors.md"
# config.extra["runtime"]'s entries for the Node.js-made files (names, all download sizes), and the files by name.
RuntimeFiles = tuple[dict[str, Any], dict[str, bytes]]


@dataclass
class _Build:
    course: Course
    sims: Simulators
    generated: dict[str, bytes]
    # The standard library zip and the start-up snapshot, made by Node.js (about 12 s when not
    # cached) while the pages render; joined by the page that lists the download sizes, or on_env.
    runtime_files: Future[RuntimeFiles]
    glossary: glossary.Glossary | None


_build: _Build | None = None


def _runtime_files(root: Path, archive: bytes, downloads: dict[str, bytes]) -> RuntimeFiles:
    """The standard library zip and the start-up snapshot, and the sizes of every start-up download:
    Pyodide's, those two and `downloads` (the worker's other generated files, by name)."""
    stdlib_name, stdlib_zip = stdlib.stdlib_zip(root / "simulators", archive, root / "build")
    snapshot_name, snapshot = assets.python_snapshot(archive, stdlib_zip, root / "build")
    made = {stdlib_name: stdlib_zip, snapshot_name: snapshot}
    sizes = precompress.downloads(
        {name: assets.NODE_MODULES / "pyodide" / name for name in assets.PYODIDE_DOWNLOADS}, downloads | made
    )
    return {"downloads": sizes, "stdlib": stdlib_name, "snapshot": snapshot_name}, made


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _build
    root, docs = Path(config.config_file_path).parent, Path(config.docs_dir)
    course = load_course(root / config.extra["lessons_dir"])
    archive_name, archive = assets.simulators_archive(root / "simulators")
    sims = Simulators(cache_file(root, archive_name), committed_runs(root))
    schemas = json.dumps(sims.schemas, sort_keys=True, separators=(",", ":")).encode()
    schemas_name, schemas = stdlib.hashed("schemas", schemas, ".json")
    data_name, data = assets.data_archive(archive)
    pool = ThreadPoolExecutor(1)
    runtime_files = pool.submit(_runtime_files, root, archive, {archive_name: archive, data_name: data})
    pool.shutdown(wait=False)  # the thread ends when its work does
    terms = docs / "glossary.yml"
    generated = {archive_name: archive, schemas_name: schemas, data_name: data}
    _build = _Build(course, sims, generated, runtime_files, glossary.load(terms) if terms.is_file() else None)
    config.extra["runtime"] = {
        "archive": archive_name,
        "schemas": schemas_name,
        "data": data_name,
        "pyodideLock": assets.pyodide_lock(),
    }
    config.nav = _nav(course, docs)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    assert _build is not None
    sources = {x.src_uri: x.path for x in _build.course.lessons} | assets.vendor_files()
    for src_uri, path in sources.items():
        files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    for name, content in _build.generated.items():
        files.append(File.generated(config, f"assets/generated/{name}", content=content))
    # The download sizes' page renders last: the others render while Node.js makes the files it measures.
    if (sizes_page := files.get_file_from_path(SIZES_PAGE)) is not None:
        files.remove(sizes_page)
        files.append(sizes_page)
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    assert _build is not None
    lesson = next((x for x in _build.course.lessons if x.src_uri == page.file.src_uri), None)
    if page.file.src_uri == SIZES_PAGE:  # the download sizes of this build
        runtime = config.extra["runtime"] | _build.runtime_files.result()[0]
        sizes, skipped = runtime["downloads"], precompress.paths(runtime)
        markdown = markdown.replace(precompress.SIZES_MARKER, precompress.sizes_table(sizes, skipped))
        markdown = markdown.replace(precompress.CLASS_MARKER, precompress.class_sentence(sizes, skipped))
    if lesson is None:
        path = Path(page.file.abs_src_path or page.file.src_uri)
        return docs_pages.render(markdown, page.file.src_uri, path, _build.sims, _build.glossary, _build.course)
    return lesson_page.render(lesson, _build.course, _build.sims, _build.glossary)


def on_env(env: Any, config: MkDocsConfig, files: Files) -> Any:
    """The Node.js-made files join the site before mkdocs copies its files and renders templates."""
    assert _build is not None
    runtime, made = _build.runtime_files.result()
    config.extra["runtime"] |= runtime
    for name, data in made.items():
        files.append(File.generated(config, f"assets/generated/{name}", content=data))
    return env


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Blocks inside admonitions, tabs and lists, moved from the page's end to their places."""
    return blocks.place_nested(html, page.file.src_uri)


def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Any) -> dict[str, Any]:
    assert _build is not None
    return context | {"course": _build.course}


def on_post_build(config: MkDocsConfig) -> None:
    assert _build is not None
    _build.sims.save()
    csp.apply(Path(config.site_dir))
    precompress.write_copies(Path(config.site_dir))
    if service_worker.enabled(config.extra):
        service_worker.generate(Path(config.site_dir))  # last: it lists every file of the site


def on_build_error(error: Exception) -> None:
    # Runs are deterministic, so those done before the error are worth keeping for the next try.
    if _build is not None:
        _build.sims.save()


DIAGNOSE = "tools/diagnose.md"


def _nav(course: Course, docs_dir: Path) -> list[Any]:
    chapters = [{f"{c.id} · {c.name}": [x.src_uri for x in c.lessons]} for c in course.chapters if c.lessons]
    others = sorted(p.name for p in docs_dir.glob("*.md") if p.name not in ("index.md", *PARTIALS))
    # "Why is my model slow?" first: the tools' entry for a reader who starts from a deployment.
    tools = sorted((f"tools/{p.name}" for p in (docs_dir / "tools").glob("*.md")), key=lambda t: (t != DIAGNOSE, t))
    return [{"Course map": "index.md"}, *chapters, *([{"Tools": tools}] if tools else []), {"About this site": others}]
