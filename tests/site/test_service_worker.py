"""The offline copy's service worker (sitebuild/service_worker.mjs, Workbox): one cache per build,
named after the content, so a new build never mixes with the old one; instructors can turn it off."""

import json
import re
from pathlib import Path

import pytest

from sitebuild import service_worker
from sitebuild.errors import BuildError


def make_site(root: Path, page: str) -> Path:
    (root / "lessons" / "one").mkdir(parents=True)
    (root / "index.html").write_text("<h1>Course</h1>")
    (root / "lessons" / "one" / "index.html").write_text(page)
    (root / "app.js.map").write_text("{}")  # for developer tools: not saved for readers
    return root


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    """Three builds: two of the same content, one with a page changed (Node.js runs Workbox)."""
    root = tmp_path_factory.mktemp("sw")
    out = {}
    for name, page in (("first", "<p>first</p>"), ("again", "<p>first</p>"), ("changed", "<p>second</p>")):
        site = make_site(root / name, page)
        out[name] = (site, service_worker.generate(site))
    return out


def test_every_file_is_precached_under_a_cache_named_after_the_build(builds: dict[str, tuple[Path, dict]]) -> None:
    site, summary = builds["first"]
    manifest = json.loads((site / "offline.json").read_text())
    assert summary["version"] == manifest["version"] and len(manifest["version"]) == 12
    assert manifest["files"] == 3  # two pages and offline.json itself
    worker = (site / "sw.js").read_text()
    listed = set(re.findall(r'url:"([^"]+)"', worker))
    assert listed == {"index.html", "lessons/one/index.html", "offline.json"}
    assert f"llm-course-offline-{manifest['version']}" in worker


def test_a_changed_page_gives_a_new_cache_and_an_unchanged_build_the_same(
    builds: dict[str, tuple[Path, dict]],
) -> None:
    first, again, changed = (builds[name][1]["version"] for name in ("first", "again", "changed"))
    assert first == again != changed


def test_instructors_turn_it_off_in_mkdocs_yml() -> None:
    assert service_worker.enabled({}) is True
    assert service_worker.enabled({"offline": False}) is False
    with pytest.raises(BuildError, match="extra.offline must be true or false"):
        service_worker.enabled({"offline": "no"})
