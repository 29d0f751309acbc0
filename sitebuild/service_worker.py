"""The offline copy: after each build, Workbox (npm `workbox-build`, run by Node.js) writes sw.js
and offline.json into the site (sitebuild/service_worker.mjs). Instructors turn it off in
mkdocs.yml with `extra: offline: false`; the build then writes neither file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sitebuild.errors import BuildError

SCRIPT = Path(__file__).resolve().with_suffix(".mjs")


def enabled(extra: dict[str, Any]) -> bool:
    value = extra.get("offline", True)
    if not isinstance(value, bool):
        raise BuildError(f"mkdocs.yml: extra.offline must be true or false, not {value!r}")
    return value


def generate(site_dir: Path) -> dict[str, Any]:
    """Write site_dir/sw.js and site_dir/offline.json; returns {version, files, bytes}."""
    node = shutil.which("node")
    if node is None:
        raise BuildError("Node.js is needed to generate the offline service worker: apt-get install -y nodejs")
    done = subprocess.run(
        [node, str(SCRIPT), str(site_dir)], cwd=SCRIPT.parent.parent, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise BuildError(f"generating the offline service worker failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
