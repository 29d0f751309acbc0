// The Pyodide worker (a module Web Worker). Start-up in stages, then request/response by id. It knows
// no simulator by name: (name, params JSON) go to one simulators.api.Session's run_json, which keeps
// recent results (a chart switch only draws again), or, for a run not to be kept (the widgets'
// warm-up), to simulators.api.run_json, which keeps nothing.
import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";
import { check, unpack } from "./snapshot_format.mjs";

let api = null;
let keepNothing = null; // simulators.api.run_json

self.onmessage = ({ data }) => {
  if (data.type === "start") start(data);
  else if (data.type === "run") run(data);
};

// Restoring the build's snapshot (Python initialised, the simulators imported) saves about 2 s on a
// desktop (scripts/bench_site.py) but downloads 2.2 MB more in all: it pays above about 9 Mbit/s on a
// desktop, lower on a slower CPU (measured: 10 Mbit/s 40 ms, 8.2 s against 8.4-11.6 s from scratch;
// 5 Mbit/s 100 ms, CPU 4x slower, 15.1 s and 18.7 s). So the snapshot is fetched only above this rate
// of the first download (the WebAssembly), read with 0-3 busy processes on 2 cores as 4.9-5.0 at 5
// Mbit/s and 7.3-9.4 at 10 (Chromium's throttling), so between the two; one in Cache Storage is always used.
const SNAPSHOT_MIN_MBPS = 6;
// The rate is taken from RATE_FROM_BYTES to RATE_SAMPLE_BYTES of the start-up's downloads: before
// that, latency, TCP's slow start and the page's files made 20 Mbit/s read as 9 (measured).
const RATE_FROM_BYTES = 0.5e6;
const RATE_SAMPLE_BYTES = 1.5e6;

// Every download of the start-up goes through watchedFetch (the client shows "MB of MB" and ends a
// stalled start-up). The global fetch is replaced to answer Pyodide's requests for the WebAssembly and
// the standard library from the worker's own downloads (the WebAssembly's rate decides on the snapshot).
const fetchUnwatched = globalThis.fetch.bind(globalThis);
const downloads = new Map(); // url -> Promise of {status, statusText, headers, bytes}
let received = 0; // bytes of every download so far
const rateMarks = []; // [performance.now(), received] when RATE_FROM_BYTES and RATE_SAMPLE_BYTES had arrived

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
      received += chunk.byteLength;
      const marks = [RATE_FROM_BYTES, RATE_SAMPLE_BYTES];
      if (rateMarks.length < 2 && received >= marks[rateMarks.length]) rateMarks.push([performance.now(), received]);
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
  return downloads.set(url, read(url)).get(url);
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

// Pyodide's .mjs arrives through import(), unseen by watchedFetch: its resource entry says when it is complete.
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const name = new URL(e.name).pathname.split("/").pop();
    if (name.endsWith(".mjs")) self.postMessage({ type: "bytes", name, done: e.decodedBodySize, length: e.transferSize, encoded: e.encodedBodySize < e.decodedBodySize, finished: true });
  }
}).observe({ type: "resource", buffered: true });

function stage(step, text) {
  self.postMessage({ type: "stage", step, text, at: performance.timeOrigin + performance.now() });
}

// The download rate in Mbit/s once RATE_SAMPLE_BYTES arrived, or over what arrived when `done` settles.
async function downloadRate(done) {
  const startedAt = performance.now();
  while (rateMarks.length < 2) {
    const finished = await Promise.race([done.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), 50))]);
    if (finished) break;
  }
  const [from, to] = [rateMarks[0] ?? [startedAt, 0], rateMarks[1] ?? [performance.now(), received]];
  return ((to[1] - from[1]) * 8) / 1e6 / Math.max((to[0] - from[0]) / 1000, 1e-3);
}

async function start({ indexURL, archiveURL, dataURL, stdLibURL, snapshotURL, startWith, lockFileContents }) {
  try {
    stage(1, "Downloading the Python runtime and the simulators");
    const wasm = hold(new URL("pyodide.asm.wasm", indexURL).href, fetchWasm);
    import(new URL("pyodide.asm.mjs", indexURL).href).catch(() => {}); // loaded now, in parallel; loadPyodide's import reuses it
    wasm.catch(() => {}); // awaited below
    // startWith ("snapshot" or "plain") is the benchmark's choice; readers get the measured one.
    const cached = snapshotURL && startWith !== "plain" ? await cachedSnapshot(snapshotURL) : null;
    const rate = snapshotURL && !startWith && !cached ? await downloadRate(wasm) : null;
    const useSnapshot = Boolean(snapshotURL) && (startWith ? startWith === "snapshot" : Boolean(cached) || rate >= SNAPSHOT_MIN_MBPS);
    self.postMessage({ type: "plan", snapshot: useSnapshot, rateMbps: rate });
    // The snapshot holds the standard library's and simulators/'s modules (sitebuild/snapshot.mjs):
    // then Pyodide gets an empty zip and only the data files are unpacked; else the zip and the archive.
    const stdlib = hold(stdLibURL, useSnapshot ? emptyZip : fetchFile);
    let archive = download(useSnapshot ? dataURL : archiveURL);
    archive.catch(() => {}); // awaited below
    const snapshot = useSnapshot ? Promise.all([cached ?? snapshotFile(snapshotURL), wasm]).then(([bytes, { bytes: wasmBytes }]) => unpack(bytes, wasmBytes)) : null;
    snapshot?.catch(() => {}); // a failed download is handled where it is awaited
    await Promise.all([wasm, stdlib, archive]); // a download that failed (or a .wasm of the wrong type) ends the start-up here
    // lockFileContents with no packages: no lock file is fetched, no wheel loaded. stdLibURL: only what
    // the simulators import, as bytecode (sitebuild/stdlib.py; 1.06 MB, not 2.5); the snapshot's base.
    const options = { indexURL, lockFileContents, packageBaseUrl: indexURL, stdLibURL };
    let pyodide;
    try {
      pyodide = snapshot && (await loadPyodide({ ...options, _loadSnapshot: snapshot }));
    } catch (error) {
      console.warn(`Python start-up snapshot not used (${error?.message ?? error}); starting Python from scratch.`);
      await hold(stdLibURL); // the real standard library, in place of the empty zip,
      archive = download(archiveURL); // and the simulators' Python files
    }
    const fromSnapshot = Boolean(pyodide);
    pyodide ||= await loadPyodide(options);
    stage(2, "Unpacking the simulators");
    pyodide.unpackArchive(await archive, "zip", { extractDir: "/home/pyodide/course" });
    stage(3, "Importing the simulators");
    pyodide.runPython("import sys\nif '/home/pyodide/course' not in sys.path: sys.path.insert(0, '/home/pyodide/course')");
    const module = pyodide.pyimport("simulators.api");
    api = module.Session();
    keepNothing = module.run_json;
    downloads.clear(); // Pyodide has what it asked for
    self.postMessage({ type: "ready", fromSnapshot });
  } catch (error) {
    self.postMessage({ type: "failed", message: String(error?.message ?? error) });
  }
}

// A zip with no members (its end record only): the standard library for a restored snapshot, which has it all.
async function emptyZip() {
  const bytes = new Uint8Array(22);
  bytes.set([0x50, 0x4b, 0x05, 0x06]);
  return { status: 200, statusText: "OK", headers: { "content-type": "application/zip" }, bytes };
}

// The newest snapshot, inflated, is kept in Cache Storage (secure contexts only: https, localhost), so
// a returning reader skips its download and inflating (a few hundred ms on a slow machine).
const SNAPSHOT_CACHE = "llm-course-python-snapshot";

// The snapshot file (inflated) from Cache Storage, or null when it is not there or damaged.
async function cachedSnapshot(url) {
  const cache = await globalThis.caches?.open(SNAPSHOT_CACHE).catch(() => null);
  const hit = await cache?.match(url).catch(() => null);
  if (!hit) return null;
  try {
    const bytes = new Uint8Array(await hit.arrayBuffer());
    check(bytes);
    self.postMessage({ type: "bytes", name: url.split("/").pop(), cached: true, done: 0, finished: true });
    return bytes;
  } catch {
    await cache.delete(url); // damaged: fetch it again
    return null;
  }
}

async function snapshotFile(url) {
  const cache = await globalThis.caches?.open(SNAPSHOT_CACHE).catch(() => null);
  const bytes = await gunzip(await download(url));
  check(bytes);
  cache?.keys().then(async (keys) => {
    for (const old of keys) if (old.url !== url) await cache.delete(old);
    await cache.put(url, new Response(bytes));
  }).catch(() => {}); // a full or refused cache costs only the next start's inflating
  return bytes;
}

async function download(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// The snapshot (snapshot_format.mjs: 31 MB of memory in 3.5 MB) and the WebAssembly are gzip files; a
// host that sends them with Content-Encoding: gzip hands over inflated bytes: only the magic number tells.
async function gunzip(bytes) {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// A chart that streams (a sweep) posts each growing chart as a "partial" message before the result:
// run_json's answer, the same with or without them, and the ms Python took (read by the warm-up).
function run({ id, name, params, seed, keep = true }) {
  try {
    const post = (json) => self.postMessage({ type: "partial", id, json });
    const started = performance.now();
    const json = keep ? api.run_json_stream(name, params, seed, post) : keepNothing(name, params, seed);
    self.postMessage({ type: "result", id, json, ms: performance.now() - started });
  } catch (error) {
    self.postMessage({ type: "result", id, error: String(error?.message ?? error) });
  }
}
