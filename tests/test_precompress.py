"""Precompressed copies and the download sizes the client and the instructors' guide show."""

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


def test_the_guide_table_counts_each_way_of_starting_with_its_own_files() -> None:
    sizes = {
        "w.wasm.gz": [3_000_000, 3_000_000],
        "m.mjs": [1_000_000, 200_000],
        "l.zip": [1_000_000, 1_000_000],
        "a.zip": [200_000, 200_000],
        "d.zip": [30_000, 30_000],
        "s.snapshot": [6_000_000] * 2,
    }
    skipped = precompress.paths({"snapshot": "s.snapshot", "data": "d.zip", "stdlib": "l.zip", "archive": "a.zip"})
    table = precompress.sizes_table(sizes, skipped).splitlines()
    # from scratch: w + m + l + a = 4.4 MB compressed (x30 = 132 MB), 5.2 MB not (156 MB);
    # restoring the snapshot: w + m + d + s = 9.23 MB compressed (277 MB), 10.03 MB not (301 MB).
    assert table[2] == "| from scratch (slow connections) | 4.4 MB | 132 MB | 5.2 MB | 156 MB |"
    assert table[3] == "| restoring the snapshot (fast) | 9.2 MB | 277 MB | 10.0 MB | 301 MB |"
    # 132 MB over 40 Mbit/s: 26.4 s; 156 MB: 31.2 s.
    assert "download 132 MB" in precompress.class_sentence(sizes, skipped)
    assert "about 26 s (31 s)" in precompress.class_sentence(sizes, skipped)
