"""The Content-Security-Policy every page carries: same origin only, plus the theme's inline scripts.

The template writes a placeholder meta tag; after the build this fills in one policy for all pages,
with the SHA-256 of each inline <script> the theme emits. The policy must be identical on every
page: instant navigation keeps the first page's policy and adds the next one's.
"""

import base64
import hashlib
import re
from pathlib import Path

PLACEHOLDER = "__CONTENT_SECURITY_POLICY__"
INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def policy(inline_scripts: set[str]) -> str:
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in sorted(inline_scripts)
    )
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src 'self' 'wasm-unsafe-eval' {hashes}".rstrip(),
            "worker-src 'self'",  # the Pyodide worker is a module file of the site
            "style-src 'self'",
            "img-src 'self' data: blob:",
            "font-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
        ]
    )


def apply(site_dir: Path) -> None:
    texts = {p: p.read_text(encoding="utf-8") for p in site_dir.rglob("*.html") if p.is_file()}
    meta = policy({s for text in texts.values() for s in INLINE_SCRIPT.findall(text)})
    for path, text in texts.items():
        if PLACEHOLDER in text:
            path.write_text(text.replace(PLACEHOLDER, meta), encoding="utf-8")
