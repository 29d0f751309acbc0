// The engine benchmark (scripts/bench_engine.py) inside Pyodide, the browser's Python, run by
// Node.js (V8, the JavaScript engine of Chromium). Prints figures; not a test.
//
//   node scripts/bench_engine_pyodide.mjs        (after `npm ci`, which site_build.py runs)
//   node scripts/bench_engine_pyodide.mjs scripts/bench_simulators.py --widgets 11,F2   (another script)
//
// Compare with `python scripts/bench_engine.py` in one sitting to get the Pyodide/CPython ratio.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const indexURL = path.join(root, "node_modules", "pyodide") + "/";
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {}; // standard library only, as in the site's worker
const py = await loadPyodide({ indexURL, lockFileContents: JSON.stringify(lock) });
py.FS.mkdirTree("/repo");
py.mountNodeFS("/repo", root);
const [script = "scripts/bench_engine.py", ...args] = process.argv.slice(2);
py.globals.set("argv", py.toPy([`/repo/${script}`, ...args]));
py.runPython(`
import runpy, sys
print("Pyodide", sys.version.split()[0])
sys.argv = list(argv)
runpy.run_path(sys.argv[0], run_name="__main__")
`);
