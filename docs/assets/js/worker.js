// The Pyodide worker (a module Web Worker). Start-up in stages, then request/response by id.
// It knows no simulator by name: it forwards (name, params JSON) to the run_json of one
// simulators.api.Session, which keeps recent results (a chart switch only draws again).
import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

let api = null;

self.onmessage = ({ data }) => {
  if (data.type === "start") start(data);
  else if (data.type === "run") run(data);
};

function stage(step, text) {
  self.postMessage({ type: "stage", step, text, at: performance.timeOrigin + performance.now() });
}

async function start({ indexURL, archiveURL, snapshotURL, lockFileContents }) {
  try {
    stage(1, "Downloading the Python runtime and the simulators");
    const archive = download(archiveURL);
    const snapshot = snapshotURL ? snapshotMemory(snapshotURL) : null;
    snapshot?.catch(() => {}); // a failed download is handled where it is awaited
    // lockFileContents with no packages: no lock file is fetched and no wheel is ever loaded.
    const options = { indexURL, lockFileContents, packageBaseUrl: indexURL };
    let pyodide;
    try {
      // The build's snapshot: Python already initialised and the simulators imported (saves ~2 s).
      // loadPyodide fetches the WebAssembly meanwhile, but compiles it once the snapshot is in memory.
      pyodide = snapshot && (await loadPyodide({ ...options, _loadSnapshot: snapshot }));
    } catch (error) {
      console.warn(`Python start-up snapshot not used (${error?.message ?? error}); starting Python from scratch.`);
    }
    const fromSnapshot = Boolean(pyodide);
    pyodide ||= await loadPyodide(options);
    stage(2, "Unpacking the simulators");
    pyodide.unpackArchive(await archive, "zip", { extractDir: "/home/pyodide/course" });
    stage(3, "Importing the simulators");
    pyodide.runPython("import sys\nif '/home/pyodide/course' not in sys.path: sys.path.insert(0, '/home/pyodide/course')");
    api = pyodide.pyimport("simulators.api").Session();
    self.postMessage({ type: "ready", fromSnapshot });
  } catch (error) {
    self.postMessage({ type: "failed", message: String(error?.message ?? error) });
  }
}

// The snapshot's inflated bytes are kept in the Cache Storage, so a returning reader skips the
// inflating (a few hundred ms on a slow machine). Only the newest snapshot is kept. Cache Storage
// exists only in secure contexts (https, localhost): elsewhere every start inflates.
const SNAPSHOT_CACHE = "llm-course-python-snapshot";

async function snapshotMemory(url) {
  const cache = await globalThis.caches?.open(SNAPSHOT_CACHE).catch(() => null);
  const hit = await cache?.match(url).catch(() => null);
  if (hit) {
    try {
      return expand(new Uint8Array(await hit.arrayBuffer()));
    } catch {
      await cache.delete(url); // damaged: fetch it again
    }
  }
  const stripped = await gunzip(await download(url));
  const memory = expand(stripped);
  if (cache) {
    (async () => {
      for (const old of await cache.keys()) if (old.url !== url) await cache.delete(old);
      await cache.put(url, new Response(stripped));
    })().catch(() => {}); // a full or refused cache costs only the next start's inflating
  }
  return memory;
}

async function download(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// The snapshot is stored without its pages of zeros, gzip-compressed (31 MB → 6.5 MB; see
// sitebuild/snapshot.mjs). A host that serves it with Content-Encoding: gzip hands over the
// inflated bytes already; only gzip's magic number tells.
async function gunzip(bytes) {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// The memory back from the segments that hold non-zero bytes (format: sitebuild/snapshot.mjs).
function expand(bytes) {
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, 3);
  if (words[0] !== 0x50594e53) throw new Error("the snapshot file is not in the expected format");
  const [, size, count] = words;
  const table = new Uint32Array(bytes.slice(12, 12 + 8 * count).buffer);
  const memory = new Uint8Array(size);
  let at = 12 + 8 * count;
  for (let i = 0; i < count; i++) {
    const [offset, length] = [table[2 * i], table[2 * i + 1]];
    memory.set(bytes.subarray(at, at + length), offset);
    at += length;
  }
  return memory;
}

function run({ id, name, params, seed }) {
  try {
    self.postMessage({ type: "result", id, json: api.run_json(name, params, seed) });
  } catch (error) {
    self.postMessage({ type: "result", id, error: String(error?.message ?? error) });
  }
}
