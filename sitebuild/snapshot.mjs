// Makes the Python runtime's start-up snapshot at build time (run by sitebuild/assets.py).
//
//   node sitebuild/snapshot.mjs PYODIDE_DIR ARCHIVE.zip STDLIB.zip OUT
//
// Boots Pyodide exactly as the browser worker does (no packages, the reduced standard library of
// sitebuild/stdlib.py, which must be the zip the worker loads, the simulators archive unpacked at
// /home/pyodide/course), imports simulators.api and every simulator module, and writes the WebAssembly
// memory as a gzip-compressed snapshot. The worker restores it instead of initialising Python and
// importing the simulators, which is most of the start-up time. Files are not in the snapshot (the
// file system lives in JavaScript), so the worker unpacks the same archive again after restoring.
//
// Half of the 31 MB of memory is pages of zeros: the file keeps only the other pages, then gzip
// (worker.js's expand() reverses it). Little-endian uint32s: MAGIC, the memory's length, the number
// of segments, then (offset, length) per segment, then the segments' bytes one after the other.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const [pyodideDir, archivePath, stdLibPath, outPath] = process.argv.slice(2);
const indexURL = path.resolve(pyodideDir) + "/";
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {}; // as the worker: the standard library only
const pyodide = await loadPyodide({
  indexURL,
  stdLibURL: path.resolve(stdLibPath),
  lockFileContents: JSON.stringify(lock),
  _makeSnapshot: true,
});
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(archivePath)), "zip", { extractDir: "/home/pyodide/course" });
pyodide.runPython(`
import sys
sys.path.insert(0, "/home/pyodide/course")
import simulators.api
for name in simulators.api.SIMULATORS:
    # Imports its module (catalogues are read on first run: running them here adds 1.2 MB).
    simulators.api.schema(name)
`);
const MAGIC = 0x50594e53; // "PYNS"
const PAGE = 4096;

function dropZeroPages(memory) {
  const segments = []; // [offset, length] of runs of pages holding a non-zero byte
  for (let page = 0; page < memory.length; page += PAGE) {
    if (!memory.subarray(page, page + PAGE).some((byte) => byte !== 0)) continue;
    const last = segments.at(-1);
    const length = Math.min(PAGE, memory.length - page);
    if (last && last[0] + last[1] === page) last[1] += length;
    else segments.push([page, length]);
  }
  const header = new Uint32Array([MAGIC, memory.length, segments.length, ...segments.flat()]);
  return Buffer.concat([Buffer.from(header.buffer), ...segments.map(([at, n]) => memory.subarray(at, at + n))]);
}

const snapshot = pyodide.makeMemorySnapshot();
fs.writeFileSync(outPath, zlib.gzipSync(dropZeroPages(snapshot), { level: 6 }));
