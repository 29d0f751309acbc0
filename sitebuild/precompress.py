"""Precompressed copies of the site's large files, and the sizes the client shows and the guide quotes.

The worker downloads `pyodide.asm.wasm.gz` itself and inflates it (9.6 MB become 3.5 MB on every
host, `python -m http.server` included). For the other files, a host set up to serve precompressed
files (nginx `gzip_static on`, see docs/instructors.md) sends FILE.gz with `Content-Encoding: gzip`
when the browser asks for FILE, compressed once at build time at gzip's highest level. Only gzip:
Python's standard library has no Brotli, and nginx needs an extra module to serve `.br` files.

The start-up downloads (`downloads`) are listed with their size as sent by a host that does not
compress and by one that does, for the client's progress line and its "Run the simulators here — N
MB" button. Zip archives and the gzip snapshot are compressed already: hosts send them as they are.
"""

import gzip
from functools import cache
from pathlib import Path

# Text and WebAssembly files of at least this size get a .gz copy.
MIN_BYTES = 16_000
SUFFIXES = {".wasm", ".mjs", ".js", ".css", ".json", ".html", ".svg", ".xml", ".txt"}
# File name -> [bytes as stored, bytes gzip-compressed].
Sizes = dict[str, list[int]]


@cache  # the wasm is compressed once per process
def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def write_copies(site_dir: Path) -> None:
    """Write FILE.gz beside every large compressible file of the built site."""
    for path in sorted(site_dir.rglob("*")):
        if path.suffix in SUFFIXES and path.is_file() and path.stat().st_size >= MIN_BYTES:
            copy = gzip_bytes(path.read_bytes())
            if len(copy) < path.stat().st_size:
                path.with_name(path.name + ".gz").write_bytes(copy)


def downloads(vendored: dict[str, Path], generated: dict[str, bytes]) -> Sizes:
    """The sizes of the worker's start-up downloads: the vendored Pyodide files it fetches (the
    WebAssembly as its .gz copy, which hosts send as it is) and the generated files."""
    sizes = {}
    for name, path in vendored.items():
        data = path.read_bytes()
        sizes[name] = [len(data), len(gzip_bytes(data))]
        if name.endswith(".wasm"):
            sizes[f"{name}.gz"] = [sizes.pop(name)[1]] * 2
    return sizes | {name: [len(data)] * 2 for name, data in generated.items()}


SIZES_MARKER = "<!-- download-sizes -->"
CLASS_SIZE = 30


def paths(runtime: dict) -> dict[bool, set[str]]:
    """{restoring the snapshot: the downloads that way of starting skips}. From scratch: the snapshot and
    the data archive (the whole archive holds it); restoring the snapshot, which imported every module of
    the standard library zip and of simulators/: that zip and the whole archive (it unpacks the data one)."""
    return {
        False: {runtime["snapshot"], runtime["data"]},
        True: {runtime["stdlib"], runtime["archive"]},
    }


def start_files(sizes: Sizes, skipped: dict[bool, set[str]], with_snapshot: bool) -> Sizes:
    """The downloads of one way of starting (`skipped` as `paths` gives it)."""
    return {name: size for name, size in sizes.items() if name not in skipped[with_snapshot]}


def sizes_table(sizes: Sizes, skipped: dict[bool, set[str]]) -> str:
    """The instructors' guide's table: what one reader and a class download to start Python, from
    a host that compresses (with the build's .gz copies) and from one that does not."""
    rows = []
    for label, with_snapshot in (("from scratch (slow connections)", False), ("restoring the snapshot (fast)", True)):
        raw, gz = map(sum, zip(*start_files(sizes, skipped, with_snapshot).values(), strict=True))
        rows.append(
            f"| {label} | {gz / 1e6:.1f} MB | {gz * CLASS_SIZE / 1e6:.0f} MB "
            f"| {raw / 1e6:.1f} MB | {raw * CLASS_SIZE / 1e6:.0f} MB |"
        )
    return "\n".join(
        [
            f"| Python starts | compressing host: one reader | {CLASS_SIZE} readers "
            f"| `python -m http.server`: one reader | {CLASS_SIZE} readers |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )


CLASS_MARKER = "<!-- class-download -->"
SHARED_MBPS = 40  # an access point's useful throughput shared by a class (an assumption, said so)


def class_sentence(sizes: Sizes, skipped: dict[bool, set[str]]) -> str:
    raw, gz = (total * CLASS_SIZE for total in map(sum, zip(*start_files(sizes, skipped, False).values(), strict=True)))
    return (
        f"{CLASS_SIZE} starts from scratch download {gz / 1e6:.0f} MB from a compressing host "
        f"({raw / 1e6:.0f} MB from `python -m http.server`): about {gz * 8 / 1e6 / SHARED_MBPS:.0f} s "
        f"({raw * 8 / 1e6 / SHARED_MBPS:.0f} s) of an access point that gives the room "
        f"{SHARED_MBPS} Mbit/s in all, if everyone starts at once."
    )
