// Makes the Python runtime's start-up snapshot at build time (run by sitebuild/assets.py).
//
//   node sitebuild/snapshot.mjs PYODIDE_DIR ARCHIVE.zip STDLIB.zip OUT
//
// Boots Pyodide exactly as the browser worker does (no packages, the reduced standard library of
// sitebuild/stdlib.py, which must be the zip the worker loads, the simulators archive unpacked at
// /home/pyodide/course), imports simulators.api and every simulator module, and writes the WebAssembly
// memory as a gzip-compressed snapshot. The worker restores it instead of initialising Python and
// importing the simulators, which is most of the start-up time. Files are not in the snapshot (the
// file system lives in JavaScript), so the worker unpacks the simulators' data files after restoring.
//
// The worker restores it without the standard library zip and without the simulators' Python files:
// every module of that zip and of simulators/ is imported here (but __main__ modules), so none is
// looked for after restoring; the worker gives Pyodide an empty zip in place of the standard
// library and unpacks only the simulators' data files (1.25 MB less on this path). The file is
// written in the format of docs/assets/js/snapshot_format.mjs (no pages of zeros, nor the bytes
// the memory shares with pyodide.asm.wasm) and gzip-compressed; the script checks that unpacking
// it gives Pyodide's snapshot back, byte for byte.
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { pack, unpack } from "../docs/assets/js/snapshot_format.mjs";

const [pyodideDir, archivePath, stdLibPath, outPath] = process.argv.slice(2);
const indexURL = path.resolve(pyodideDir) + "/";
const lock = JSON.parse(fs.readFileSync(path.join(indexURL, "pyodide-lock.json"), "utf8"));
lock.packages = {}; // as the worker: the standard library only
const pyodide = await loadPyodide({
  indexURL,
  stdLibURL: path.resolve(stdLibPath),
  lockFileContents: JSON.stringify(lock),
  _makeSnapshot: true,
  // No column tables in the code the simulators compile to (as the build's stdlib zip): the memory,
  // so the snapshot, is smaller; tracebacks keep their line numbers.
  env: { PYTHONNODEBUGRANGES: "1" },
});
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(archivePath)), "zip", { extractDir: "/home/pyodide/course" });
pyodide.runPython(`
import ast, os, sys
from importlib._bootstrap_external import _code_to_timestamp_pyc

# The simulators' modules as bytecode without docstrings or the annotations of functions (the
# browser never reads them; asserts are kept, unlike python -OO; the fields of a class keep theirs,
# which dataclasses read): each FILE.py becomes FILE.pyc, which Python imports without its source.
# The snapshot, which holds every imported code object (an annotated function's own __annotate__
# too, since Python 3.14), is ~50 kB (gzip) smaller without docstrings and ~80 kB without annotations.
def _without_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg):
                if arg is not None:
                    arg.annotation = None
    return ast.fix_missing_locations(tree)

for folder, _, files in os.walk("/home/pyodide/course/simulators"):
    for name in files:
        if name.endswith(".py"):
            source_path = os.path.join(folder, name)
            with open(source_path, "rb") as handle:
                source = handle.read()
            code = compile(_without_docstrings(ast.parse(source, source_path)), source_path, "exec", dont_inherit=True)
            with open(source_path + "c", "wb") as handle:
                handle.write(_code_to_timestamp_pyc(code, 0, len(source)))
            os.remove(source_path)

sys.path.insert(0, "/home/pyodide/course")
import simulators.api
for name in simulators.api.SIMULATORS:
    # Imports its module (catalogues are read on first run: running them here adds 1.2 MB).
    simulators.api.schema(name)

# Every other module of the standard library zip and of simulators/, so that no Python file is read
# after restoring: the worker then unpacks only the simulators' data files.
import gc, importlib, os, zipimport
zip_path = next(p for p in sys.path if p.endswith(".zip"))
members = list(zipimport._zip_directory_cache[zip_path])
for folder, _, files in os.walk("/home/pyodide/course/simulators"):
    members += [os.path.join(folder, f).removeprefix("/home/pyodide/course/") for f in files]
# Build-time modules (the validation page's tables, run by site_build.py), never run by a widget:
# left out, which keeps the snapshot under the 8 MB budget to interactive
# (tests/browser/test_slow_network.py).
# (validation and served_benchmarks are imported all the same, by the published simulator.)
BUILD_ONLY = {
    "simulators.benchmark.validation", "simulators.benchmark.served_benchmarks", "simulators.benchmark.vllm_validation",
    "simulators.benchmark.crossval", "simulators.benchmark.fitting",  # leave-one-group-out: the page's table
}
for member in sorted(members):
    if member.endswith((".py", ".pyc")) and not member.removesuffix("c").endswith("__main__.py"):
        name = member.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
        if name in BUILD_ONLY:
            continue
        try:
            importlib.import_module(name)
        except Exception as error:  # as at run time: the module cannot be imported in the browser
            print(f"not importable in Pyodide: {name} ({error})", file=sys.stderr)
# What this script itself held (the member list, the last module's source) and the standard
# library zip's directory (the worker restores with an empty zip, which Python reads again if it
# ever looks): measured, the gzip file 50 kB smaller.
del members, member, name, folder, files, source, code, _without_docstrings
zipimport._zip_directory_cache.clear()
gc.collect()
`);
// Freed memory still holds what it held (the zip members Python read, the archive it unpacked):
// claim every free block of the C heap (malloc's; not the free slots inside Python's own small-object
// pools) without growing the memory, zero it and free it again. Measured: 2.7 MB in 4,800 blocks,
// and the gzip file 0.34 MB smaller.
function zeroFreeMemory(module) {
  const heap = () => module.HEAPU8;
  let top = module._sbrk(0);
  const claimed = [];
  let zeroed = 0;
  for (let size = 1 << 20; size >= 8; size >>= 1) {
    for (;;) {
      const at = module._malloc(size);
      if (at === 0) break;
      if (module._sbrk(0) !== top) { // the heap grew: no free block of this size is left
        module._free(at);
        top = module._sbrk(0);
        break;
      }
      claimed.push(at);
      const end = at + module._malloc_usable_size(at);
      heap().fill(0, at, end);
      zeroed += end - at;
    }
  }
  for (const at of claimed) module._free(at);
  return zeroed;
}
const before = pyodide._module.HEAPU8.length;
zeroFreeMemory(pyodide._module);
if (pyodide._module.HEAPU8.length !== before) {
  throw new Error("zeroing the free memory grew the WebAssembly memory: sitebuild/snapshot.mjs needs a look");
}
const snapshot = pyodide.makeMemorySnapshot();
const wasm = fs.readFileSync(path.join(indexURL, "pyodide.asm.wasm"));
const packed = pack(snapshot, wasm);
if (Buffer.compare(Buffer.from(unpack(packed, wasm)), Buffer.from(snapshot)) !== 0) {
  throw new Error("unpacking the snapshot does not give Pyodide's snapshot back");
}
fs.writeFileSync(outPath, zlib.gzipSync(packed, { level: 9 }));
