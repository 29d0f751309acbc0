"""Precompressed copies of the site's large files, and the sizes the client shows and the guide quotes.

A host set up to serve precompressed files (nginx `gzip_static on`, see docs/instructors.md) sends
`pyodide.asm.wasm.gz` with `Content-Encoding: gzip` when the browser asks for `pyodide.asm.wasm`:
9.6 MB become 3.6 MB, compressed once at build time at gzip's highest level instead of at each
request. Only gzip: Python's standard library has no Brotli, and nginx needs an extra module to
serve `.br` files.

The start-up downloads (`downloads`) are listed with their size as sent by a host that does not
compress and by one that does, for the client's progress line and its "Run the simulators here — N
MB" button. Zip archives and the gzip snapshot are compressed already: hosts send them as they are.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

# Text and WebAssembly files of at least this size get a .gz copy.
MIN_BYTES = 16_000
SUFFIXES = {".wasm", ".mjs", ".js", ".css", ".json", ".html", ".svg", ".xml", ".txt"}


_compressed: dict[bytes, bytes] = {}  # sha256 -> gzip bytes: the wasm is compressed once per process


def gzip_bytes(data: bytes) -> bytes:
    key = hashlib.sha256(data).digest()
    if key not in _compressed:
        _compressed[key] = gzip.compress(data, compresslevel=9, mtime=0)
    return _compressed[key]


def write_copies(site_dir: Path) -> int:
    """Write FILE.gz beside every large compressible file of the built site; the bytes written."""
    written = 0
    for path in sorted(site_dir.rglob("*")):
        if path.suffix in SUFFIXES and path.is_file() and path.stat().st_size >= MIN_BYTES:
            copy = gzip_bytes(path.read_bytes())
            if len(copy) < path.stat().st_size:
                path.with_name(path.name + ".gz").write_bytes(copy)
                written += len(copy)
    return written


def downloads(vendored: dict[str, Path], generated: dict[str, bytes]) -> dict[str, list[int]]:
    """{file name: [bytes as stored, bytes gzip-compressed]} for the worker's start-up downloads:
    the vendored Pyodide files it fetches and the generated files (sent as they are)."""
    sizes = {}
    for name, path in vendored.items():
        data = path.read_bytes()
        sizes[name] = [len(data), len(gzip_bytes(data))]
    for name, data in generated.items():
        sizes[name] = [len(data), len(data)]
    return sizes
