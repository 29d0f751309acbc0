// The Pyodide worker (a module Web Worker). Start-up in stages, then request/response by id.
// It knows no simulator by name: it forwards (name, params JSON) to simulators.api.run_json.
import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

let api = null;

self.onmessage = ({ data }) => {
  if (data.type === "start") start(data);
  else if (data.type === "run") run(data);
};

function stage(step, text) {
  self.postMessage({ type: "stage", step, text, at: performance.now() });
}

async function start({ indexURL, archiveURL, lockFileContents }) {
  try {
    stage(1, "Downloading the Python runtime and the simulators");
    const archive = fetch(archiveURL).then((response) => {
      if (!response.ok) throw new Error(`${archiveURL} answered ${response.status}`);
      return response.arrayBuffer();
    });
    // lockFileContents with no packages: no lock file is fetched and no wheel is ever loaded.
    const pyodide = await loadPyodide({ indexURL, lockFileContents, packageBaseUrl: indexURL });
    stage(2, "Unpacking the simulators");
    pyodide.unpackArchive(await archive, "zip", { extractDir: "/home/pyodide/course" });
    stage(3, "Importing the simulators");
    pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/course')");
    api = pyodide.pyimport("simulators.api");
    self.postMessage({ type: "ready" });
  } catch (error) {
    self.postMessage({ type: "failed", message: String(error?.message ?? error) });
  }
}

function run({ id, name, params, seed }) {
  try {
    self.postMessage({ type: "result", id, json: api.run_json(name, params, seed) });
  } catch (error) {
    self.postMessage({ type: "result", id, error: String(error?.message ?? error) });
  }
}
