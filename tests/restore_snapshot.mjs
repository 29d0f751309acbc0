// Restores the build's start-up snapshot in Node.js exactly as the browser worker does, for
// tests/test_snapshot_restore.py:
//
//   node tests/restore_snapshot.mjs PYODIDE_DIR SNAPSHOT_FILE DATA.zip
//
// The snapshot file is inflated and unpacked with the data segments of pyodide.asm.wasm
// (docs/assets/js/snapshot_format.mjs); Pyodide gets an empty standard library zip and only the
// simulators' data files, as on the worker's snapshot path. Runs every simulator at its defaults
// and once with a bad parameter, and prints JSON: {simulator: [ok at defaults, ok with a bad one]}.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { unpack } from "../docs/assets/js/snapshot_format.mjs";

const [pyodideDir, snapshotPath, dataPath] = process.argv.slice(2);
const indexURL = path.resolve(pyodideDir) + "/";
const wasm = fs.readFileSync(path.join(indexURL, "pyodide.asm.wasm"));
const memory = unpack(new Uint8Array(zlib.gunzipSync(fs.readFileSync(snapshotPath))), wasm);
const emptyZip = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "restore-")), "empty.zip");
fs.writeFileSync(emptyZip, Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array(18).fill(0)]));
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {};
const pyodide = await loadPyodide({
  indexURL,
  stdLibURL: emptyZip,
  lockFileContents: JSON.stringify(lock),
  _loadSnapshot: memory,
});
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(dataPath)), "zip", { extractDir: "/home/pyodide/course" });
const session = pyodide.pyimport("simulators.api").Session();
const answers = {};
for (const name of pyodide.pyimport("simulators.api").SIMULATORS.keys()) {
  answers[name] = [
    JSON.parse(session.run_json(name, "{}", 0)).ok,
    JSON.parse(session.run_json(name, '{"no_such_parameter": 1}', 0)).ok,
  ];
}
process.stdout.write(JSON.stringify(answers));
