"""The offline copy: after each build, Workbox (npm `workbox-build`, run by Node.js) writes sw.js
and offline.json into the site (sitebuild/service_worker.mjs). Instructors turn it off in
mkdocs.yml with `extra: offline: false`; the build then writes neither file."""

import json
from pathlib import Path
from typing import Any

from sitebuild.errors import BuildError
from sitebuild.processes import run_node

SCRIPT = Path(__file__).resolve().with_suffix(".mjs")


def enabled(extra: dict[str, Any]) -> bool:
    value = extra.get("offline", True)
    if not isinstance(value, bool):
        raise BuildError(f"mkdocs.yml: extra.offline must be true or false, not {value!r}")
    return value


def generate(site_dir: Path) -> dict[str, Any]:
    """Write site_dir/sw.js and site_dir/offline.json; returns {version, files, bytes}."""
    what = "the offline service worker"
    out = run_node(SCRIPT, site_dir, purpose=f"generate {what}", failed=f"generating {what} failed", timeout=300)
    return json.loads(out.strip().splitlines()[-1])
