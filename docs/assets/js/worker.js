// The Pyodide worker (a module Web Worker). Start-up in stages, then request/response by id.
// It knows no simulator by name: it forwards (name, params JSON) to the run_json of one
// simulators.api.Session, which keeps recent results (a chart switch only draws again).
import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

let api = null;

self.onmessage = ({ data }) => {
  if (data.type === "start") start(data);
  else if (data.type === "run") run(data);
};

// Restoring the build's snapshot saves start-up time (Python initialised, the simulators imported:
// 2-3 s on a desktop, measured by scripts/bench_site.py, which times both ways of starting) but
// costs its download (5.0 MB): it pays only where those bytes arrive in less time. The worker
// measures the rate of its first downloads and fetches the snapshot only above this rate (5 MB in
// 2 s is 20 Mbit/s); a snapshot already in Cache Storage is always used.
const SNAPSHOT_MIN_MBPS = 20;
const RATE_SAMPLE_BYTES = 1.5e6; // bytes to receive before judging the rate (TCP has ramped up)

// Every download of the start-up goes through watchedFetch: the client shows "MB of MB" and ends a
// start-up whose download stalls. Pyodide's own requests for the WebAssembly and the standard
// library are answered from the worker's own downloads of them (fetched at once, so their rate
// decides on the snapshot): the global fetch is replaced for that.
const fetchUnwatched = globalThis.fetch.bind(globalThis);
const downloads = new Map(); // url -> Promise of {status, statusText, headers, bytes}
let received = 0; // bytes of every download so far
let firstByteAt = null;

globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input, self.location.href).href;
  const held = downloads.get(url);
  if (!held) return watchedFetch(input, init);
  const { bytes, status, statusText, headers } = await held;
  return new Response(bytes, { status, statusText, headers });
};

async function watchedFetch(input, init) {
  const url = new URL(input instanceof Request ? input.url : input, self.location.href);
  const entry = { type: "bytes", name: url.pathname.split("/").pop(), done: 0, length: 0, encoded: false, finished: false };
  self.postMessage(entry);
  const response = await fetchUnwatched(input, init);
  if (!response.ok || !response.body) {
    self.postMessage({ ...entry, finished: true });
    return response;
  }
  entry.length = Number(response.headers.get("content-length")) || 0;
  entry.encoded = Boolean(response.headers.get("content-encoding"));
  let postedAt = 0;
  const counter = new TransformStream({
    transform(chunk, controller) {
      firstByteAt ??= performance.now();
      received += chunk.byteLength;
      entry.done += chunk.byteLength;
      const now = performance.now();
      if (now - postedAt > 200) { postedAt = now; self.postMessage(entry); }
      controller.enqueue(chunk);
    },
    flush() { self.postMessage({ ...entry, finished: true }); },
  });
  const { status, statusText, headers } = response;
  return new Response(response.body.pipeThrough(counter), { status, statusText, headers });
}

// Downloads a file Pyodide will ask for, to answer its request; a failed answer ends the start-up
// at once, as does a .wasm of the wrong type (Pyodide would wait forever for it without an error).
function hold(url, read = fetchFile) {
  const held = read(url);
  downloads.set(url, held);
  return held;
}

async function fetchFile(url, type = null) {
  const response = await watchedFetch(url);
  const name = url.split("/").pop();
  if (!response.ok) throw new Error(`${name} answered ${response.status} ${response.statusText}`);
  const sent = response.headers.get("content-type") ?? "no type";
  if (type && !sent.startsWith(type)) throw new Error(`the host sent ${name} as ${sent}, not ${type}`);
  const { status, statusText, headers } = response;
  return { status, statusText, headers, bytes: await response.arrayBuffer() };
}

// The WebAssembly (9.6 MB) from the build's gzip copy beside it (3.5 MB), inflated here, so every
// host sends it compressed, python -m http.server included; without that copy, the .wasm itself.
async function fetchWasm(url) {
  const response = await watchedFetch(`${url}.gz`);
  if (!response.ok) return fetchFile(url, "application/wasm");
  const bytes = await gunzip(new Uint8Array(await response.arrayBuffer()));
  return { status: 200, statusText: "OK", headers: { "content-type": "application/wasm" }, bytes };
}

// The .mjs half of Pyodide arrives through import(), which watchedFetch cannot see: its resource
// entry says when it is complete.
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const name = new URL(e.name).pathname.split("/").pop();
    if (name.endsWith(".mjs")) self.postMessage({ type: "bytes", name, done: e.decodedBodySize, length: e.transferSize, encoded: e.encodedBodySize < e.decodedBodySize, finished: true });
  }
}).observe({ type: "resource", buffered: true });

function stage(step, text) {
  self.postMessage({ type: "stage", step, text, at: performance.timeOrigin + performance.now() });
}

// Resolves with the download rate in Mbit/s once RATE_SAMPLE_BYTES arrived, or when `done` settles.
async function downloadRate(done) {
  const startedAt = performance.now();
  while (received < RATE_SAMPLE_BYTES) {
    const finished = await Promise.race([done.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), 50))]);
    if (finished) break;
  }
  const seconds = (performance.now() - (firstByteAt ?? startedAt)) / 1000;
  return (received * 8) / 1e6 / Math.max(seconds, 1e-3);
}

async function start({ indexURL, archiveURL, stdLibURL, snapshotURL, startWith, lockFileContents }) {
  try {
    stage(1, "Downloading the Python runtime and the simulators");
    const asmURL = new URL("pyodide.asm.mjs", indexURL).href;
    const wasm = hold(new URL("pyodide.asm.wasm", indexURL).href, fetchWasm);
    const stdlib = hold(stdLibURL);
    const archive = download(archiveURL);
    import(asmURL).catch(() => {}); // loaded now, in parallel; loadPyodide's import reuses it
    const first = Promise.all([wasm, stdlib, archive]);
    first.catch(() => {}); // awaited below
    // startWith ("snapshot" or "plain") is the benchmark's choice; readers get the measured one.
    const cached = snapshotURL && startWith !== "plain" ? await cachedSnapshot(snapshotURL) : null;
    let useSnapshot = false;
    if (snapshotURL) useSnapshot = startWith ? startWith === "snapshot" : Boolean(cached) || (await downloadRate(first)) >= SNAPSHOT_MIN_MBPS;
    self.postMessage({ type: "plan", snapshot: useSnapshot });
    const snapshot = useSnapshot ? (cached ? Promise.resolve(cached) : snapshotMemory(snapshotURL)) : null;
    snapshot?.catch(() => {}); // a failed download is handled where it is awaited
    await first; // a download that failed (or a .wasm of the wrong type) ends the start-up here
    // lockFileContents with no packages: no lock file is fetched and no wheel is ever loaded.
    // stdLibURL: the build's standard library holding only what the simulators import
    // as bytecode (sitebuild/stdlib.py; 1.06 MB instead of 2.5 MB); the snapshot was made from it.
    const options = { indexURL, lockFileContents, packageBaseUrl: indexURL, stdLibURL };
    let pyodide;
    try {
      // The build's snapshot: Python already initialised and the simulators imported.
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
    downloads.clear(); // Pyodide has what it asked for
    self.postMessage({ type: "ready", fromSnapshot });
  } catch (error) {
    self.postMessage({ type: "failed", message: String(error?.message ?? error) });
  }
}

// The snapshot's inflated bytes are kept in the Cache Storage, so a returning reader skips the
// inflating (a few hundred ms on a slow machine). Only the newest snapshot is kept. Cache Storage
// exists only in secure contexts (https, localhost): elsewhere every start inflates.
const SNAPSHOT_CACHE = "llm-course-python-snapshot";

// The snapshot's memory from Cache Storage, or null when it is not there or damaged.
async function cachedSnapshot(url) {
  const cache = await globalThis.caches?.open(SNAPSHOT_CACHE).catch(() => null);
  const hit = await cache?.match(url).catch(() => null);
  if (!hit) return null;
  try {
    const memory = expand(new Uint8Array(await hit.arrayBuffer()));
    self.postMessage({ type: "bytes", name: url.split("/").pop(), cached: true, done: 0, finished: true });
    return memory;
  } catch {
    await cache.delete(url); // damaged: fetch it again
    return null;
  }
}

async function snapshotMemory(url) {
  const cache = await globalThis.caches?.open(SNAPSHOT_CACHE).catch(() => null);
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

// The snapshot is stored without its pages of zeros, gzip-compressed (31 MB → 5.0 MB; see
// sitebuild/snapshot.mjs), and the WebAssembly as a gzip copy. A host that serves them with
// Content-Encoding: gzip hands over the inflated bytes already; only gzip's magic number tells.
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

// A chart that streams (a sweep, point by point) posts each growing chart as a "partial" message
// before the result; the result is run_json's answer, the same with or without them.
function run({ id, name, params, seed }) {
  try {
    const post = (json) => self.postMessage({ type: "partial", id, json });
    self.postMessage({ type: "result", id, json: api.run_json_stream(name, params, seed, post) });
  } catch (error) {
    self.postMessage({ type: "result", id, error: String(error?.message ?? error) });
  }
}
