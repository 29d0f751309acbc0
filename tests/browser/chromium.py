"""Where Debian's Chromium lives, for the browser tests and scripts/bench_site.py; Playwright's own
browser download does not work here."""

import shutil
from pathlib import Path

CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")


def executable() -> str:
    for candidate in CANDIDATES:
        if Path(candidate).is_file():
            return candidate
    if found := shutil.which("chromium"):
        return found
    raise RuntimeError("Chromium is missing: apt-get install -y chromium (./dev test does it as root)")
