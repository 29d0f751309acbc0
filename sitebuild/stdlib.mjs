// Lists the standard-library files the simulators need in Pyodide (run by sitebuild/stdlib.py).
//
//   node sitebuild/stdlib.mjs PYODIDE_DIR ARCHIVE.zip [STDLIB.zip]
//
// Boots Pyodide as the browser worker does (no packages, the simulators archive unpacked at
// /home/pyodide/course, simulators.api imported through pyimport), runs every simulator at its
// defaults and once with a bad parameter (the error path), and prints JSON: {"files": [the stdlib
// zip's members that were imported], "answers": {simulator: true when its run answered ok}}.
// With STDLIB.zip, Python starts from that zip instead of Pyodide's full one: the check that a
// reduced zip still holds everything every simulator imports.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";

const [pyodideDir, archivePath, stdLibURL] = process.argv.slice(2);
const indexURL = path.resolve(pyodideDir) + "/";
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {}; // as the worker: the standard library only
const options = { indexURL, lockFileContents: JSON.stringify(lock) };
if (stdLibURL) options.stdLibURL = path.resolve(stdLibURL);
const pyodide = await loadPyodide(options);
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(archivePath)), "zip", { extractDir: "/home/pyodide/course" });
pyodide.runPython("import sys\nif '/home/pyodide/course' not in sys.path: sys.path.insert(0, '/home/pyodide/course')");
const api = pyodide.pyimport("simulators.api");
const answers = {};
for (const name of api.SIMULATORS.keys()) {
  answers[name] = JSON.parse(api.run_json(name, "{}", 0)).ok;
  JSON.parse(api.run_json(name, '{"no_such_parameter": 1}', 0)); // the error path imports too
}
const files = pyodide.runPython(`
import sys
zip_path = next(p for p in sys.path if p.endswith(".zip"))
sorted({m.__file__[len(zip_path) + 1:] for m in list(sys.modules.values())
        if (getattr(m, "__file__", None) or "").startswith(zip_path + "/")})
`).toJs();
process.stdout.write(JSON.stringify({ files, answers }));
