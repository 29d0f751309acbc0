// Compiles a standard library zip's Python sources to bytecode in Pyodide (run by sitebuild/stdlib.py).
//
//   node sitebuild/compile_stdlib.mjs PYODIDE_DIR IN.zip OUT.zip
//
// Every FILE.py of IN.zip becomes FILE.pyc in OUT.zip (other members are copied): Python then
// imports it without compiling, which is most of what starting Python from scratch costs (about
// 1.5 s of a desktop's CPU for Pyodide's own start-up imports). Compiled by Pyodide's own Python,
// so the bytecode matches it, with docstrings and asserts left out (optimize=2, as `python -OO`,
// which the standard library supports) and without column tables (PYTHONNODEBUGRANGES): 1.06 MB
// instead of 1.63 MB, against 0.85 MB of sources. zipimport loads a .pyc with no .py beside it
// without checking a timestamp.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";

const [pyodideDir, inPath, outPath] = process.argv.slice(2);
const indexURL = path.resolve(pyodideDir) + "/";
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {};
const pyodide = await loadPyodide({
  indexURL,
  stdLibURL: path.resolve(inPath),
  lockFileContents: JSON.stringify(lock),
  env: { PYTHONNODEBUGRANGES: "1" },
});
pyodide.FS.writeFile("/tmp/in.zip", new Uint8Array(fs.readFileSync(inPath)));
pyodide.runPython(`
import zipfile
from importlib._bootstrap_external import _code_to_timestamp_pyc

with zipfile.ZipFile("/tmp/in.zip") as source, zipfile.ZipFile("/tmp/out.zip", "w") as target:
    for info in source.infolist():
        data = source.read(info)
        if info.filename.endswith(".py"):
            code = compile(data, info.filename, "exec", dont_inherit=True, optimize=2)
            compiled = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
            target.writestr(compiled, bytes(_code_to_timestamp_pyc(code, 0, len(data))), zipfile.ZIP_DEFLATED)
        else:
            target.writestr(info, data, compress_type=info.compress_type)
`);
fs.writeFileSync(outPath, pyodide.FS.readFile("/tmp/out.zip"));
