"""Precompressed copies and the download sizes the client and the instructors' guide show."""

from __future__ import annotations

import gzip
from pathlib import Path

from sitebuild import precompress


def test_copies_are_written_for_large_compressible_files_only(tmp_path: Path) -> None:
    (tmp_path / "big.js").write_text("let x = 1;\n" * 5000)  # 55 kB of repetition
    (tmp_path / "small.js").write_text("let y = 2;\n")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG" + b"\x00" * 50_000)  # not a text type
    precompress.write_copies(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.gz")) == ["big.js.gz"]
    assert gzip.decompress((tmp_path / "big.js.gz").read_bytes()) == (tmp_path / "big.js").read_bytes()


def test_the_wasm_is_listed_as_its_gzip_copy_and_generated_files_as_they_are(tmp_path: Path) -> None:
    wasm = tmp_path / "pyodide.asm.wasm"
    wasm.write_bytes(b"\x00asm" + bytes(range(256)) * 400)
    mjs = tmp_path / "pyodide.asm.mjs"
    mjs.write_text("export default 1;\n" * 1000)
    sizes = precompress.downloads({"pyodide.asm.wasm": wasm, "pyodide.asm.mjs": mjs}, {"a.zip": b"z" * 10})
    wasm_gz = len(gzip.compress(wasm.read_bytes(), compresslevel=9, mtime=0))
    mjs_gz = len(gzip.compress(mjs.read_bytes(), compresslevel=9, mtime=0))
    assert sizes == {
        "pyodide.asm.wasm.gz": [wasm_gz, wasm_gz],
        "pyodide.asm.mjs": [mjs.stat().st_size, mjs_gz],
        "a.zip": [10, 10],
    }


def test_the_guide_table_counts_the_snapshot_in_place_of_the_standard_library() -> None:
    sizes = {
        "w.wasm.gz": [3_000_000, 3_000_000],
        "m.mjs": [1_000_000, 200_000],
        "l.zip": [1_000_000, 1_000_000],
        "s.snapshot": [6_000_000] * 2,
    }
    table = precompress.sizes_table(sizes, "s.snapshot", "l.zip").splitlines()
    # from scratch: 4.2 MB compressed (x30 = 126 MB), 5.0 MB not (150 MB); restoring the
    # snapshot: its 6 MB in place of the zip's 1 MB.
    assert table[2] == "| from scratch (slow connections) | 4.2 MB | 126 MB | 5.0 MB | 150 MB |"
    assert table[3] == "| restoring the snapshot (fast) | 9.2 MB | 276 MB | 10.0 MB | 300 MB |"
    # 126 MB over 40 Mbit/s: 25.2 s; 150 MB: 30 s.
    assert "download 126 MB" in precompress.class_sentence(sizes, "s.snapshot", "l.zip")
    assert "about 25 s (30 s)" in precompress.class_sentence(sizes, "s.snapshot", "l.zip")
