// One Pyodide worker per tab, kept across instant navigation (this module runs once per tab). Runs queue
// one at a time, only a widget key's newest waiting request kept; one past the time limit restarts the worker.

// Start-up has no fixed limit (a slow connection may take a minute). It fails when the download
// stalls (no byte for STALL_LIMIT_MS: a host that holds a request) or a later step (starting Python,
// unpacking, importing) takes over STEP_LIMIT_MS, as Pyodide can wait forever without an error:
// room for a phone 4-8x slower than a desktop, up to about 15 s from scratch (scripts/bench_site.py).
const STALL_LIMIT_MS = 15000;
const STEP_LIMIT_MS = 45000;
const STAGES = 3;
// The one global: window.llmCourse. `runtime` is read by widgets, tests and the benchmark.
export const ns = (globalThis.llmCourse ??= {});
// state: idle, waiting (for the reader to ask, on a data-saving or slow connection), starting, ready
// or failed; doneMB/totalMB: the download so far; `action`: a button a widget shows ({label, run}).
// startedAt/readyAt/stageAt (performance.now()) and fromSnapshot are read by the benchmark.
export const runtime = (ns.runtime = {
  state: "idle", text: "", step: 0, steps: STAGES, starts: 0, runLimitMs: 10000,
  startedAt: null, readyAt: null, stageAt: [], fromSnapshot: null, doneMB: 0, totalMB: 0, action: null,
  background: 0, // background runs waiting or running (the benchmark waits for the warm-up to end)
});

const listeners = new Set();
let worker = null;
let ready = null; // Promise of the running start-up, or null when none
let queue = []; // [{key, name, params, resolve, reject}]
let inFlight = null;
let nextId = 1;

export function onStatus(listener) {
  listeners.add(listener);
  listener(runtime);
}

function setStatus(state, text = "", step = runtime.step, action = null) {
  Object.assign(runtime, { state, text, step, action });
  for (const listener of listeners) listener(runtime);
}

export function config() {
  return JSON.parse(document.getElementById("course-runtime").textContent);
}

// A page that arrived compressed means its host compresses the runtime's files too: gzip sizes count.
function hostCompresses() {
  const [nav] = performance.getEntriesByType("navigation");
  return Boolean(nav && nav.transferSize > 0 && nav.encodedBodySize < nav.decodedBodySize);
}

function megabytes(bytes) {
  return (bytes / 1e6).toFixed(bytes >= 9.95e6 ? 0 : 1);
}

// Starts Python unless the connection asks to wait for the reader; `ask` is the reader's request.
// The returned promise resolves when Python is ready, however late, and rejects when it failed.
export function start({ ask = false } = {}) {
  if (ready) return ready;
  const cfg = config();
  // Wait for the reader to ask when the browser asks to save data or rates the connection 3G or slower
  // (the Network Information API; Chrome only). The worker decides on the snapshot from its own rate.
  const c = navigator.connection;
  let beginNow;
  ready = new Promise((resolve, reject) => (beginNow = () => begin(cfg, resolve, reject)));
  if (c && (c.saveData || /2g|3g/.test(c.effectiveType ?? "")) && !ask) {
    const compressed = hostCompresses(); // the transfer size of a start from scratch, as the host sends it
    const bytes = Object.values(startFiles(cfg, false)).reduce((sum, [raw, gz]) => sum + (compressed ? gz : raw), 0);
    const why = c.saveData ? "Your browser asks to save data" : "Your connection looks slow";
    setStatus("waiting", `${why}, so the Python runtime is not downloaded until you ask; the charts show pre-computed results.`, 0,
      { label: `Run the simulators here — ${megabytes(bytes)} MB`, run: beginNow });
  } else beginNow();
  return ready;
}

// The worker's downloads ({name: [bytes, gzip bytes]}) for a start from scratch (the standard library
// zip and the simulators archive) or from the build's snapshot (it and the simulators' data files).
function startFiles(cfg, withSnapshot) {
  const files = { ...cfg.downloads };
  for (const name of withSnapshot ? [cfg.stdlib, cfg.archive] : [cfg.snapshot, cfg.data]) delete files[name];
  return files;
}

function begin(cfg, resolve, reject) {
  const assets = new URL("../", import.meta.url);
  let expected = startFiles(cfg, false); // the files of the other start if the worker restores the snapshot
  const files = {}; // name -> {done, length, encoded, finished} as the worker reports them
  let lastByteAt = performance.now();
  let planned = false; // the worker said whether it fetches the snapshot
  let downloadedAt = null; // then: when the latest step after the download began
  let shownAt = 0;
  const fail = (message) => {
    clearInterval(watchdog);
    worker.terminate();
    setStatus("failed", message, runtime.step, { label: "Try again", run: retry });
    reject(new Error(message));
  };
  const watchdog = setInterval(() => {
    const now = performance.now();
    if (downloadedAt === null && now - lastByteAt > STALL_LIMIT_MS) {
      fail(`The download of the Python runtime stopped (no data for ${STALL_LIMIT_MS / 1000} s), so the controls stay off; the charts show pre-computed results.`);
    } else if (downloadedAt !== null && now - downloadedAt > STEP_LIMIT_MS) {
      fail(`The Python runtime stopped starting (a step took over ${STEP_LIMIT_MS / 1000} s), so the controls stay off; the charts show pre-computed results.`);
    }
  }, 500);
  // MB done and in all, as sent: a file's share done (decoded bytes over its size at build time)
  // times its transfer size (Content-Length, else the build's figure for a compressing host or not).
  const progress = () => {
    const compressed = Object.values(files).some((f) => f.encoded) || hostCompresses();
    let done = 0, total = 0;
    for (const [name, [raw, gz]] of Object.entries(expected)) {
      const f = files[name];
      if (f?.cached) continue;
      const size = f?.length || (f?.encoded || (!f && compressed) ? gz : raw);
      total += size;
      done += f ? (f.finished ? size : Math.min(1, f.done / raw) * size) : 0;
    }
    Object.assign(runtime, { doneMB: done / 1e6, totalMB: total / 1e6 });
    if (downloadedAt !== null) return `Starting Python (${megabytes(total)} MB downloaded)`;
    return `Downloading the Python runtime: ${megabytes(done)} of ${megabytes(total)} MB`;
  };
  // Downloaded once the worker has planned and every file but the .mjs is in (the .mjs is an
  // import, not a fetch: it reports only when complete); the stall limit gives way to the step limit.
  const checkDownloaded = () => {
    const waiting = Object.keys(expected).filter((name) => !files[name]?.finished); // a cached file reports finished
    if (planned && downloadedAt === null && waiting.every((name) => name.endsWith(".mjs"))) downloadedAt = performance.now();
  };
  worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  Object.assign(runtime, { starts: runtime.starts + 1, startedAt: performance.now(), stageAt: [], doneMB: 0, totalMB: 0 });
  worker.onerror = (event) => fail(`The Python runtime could not load (${event.message || "worker error"}); the charts show pre-computed results.`);
  worker.onmessage = ({ data }) => {
    if (data.type === "bytes") {
      const before = files[data.name]?.done ?? -1;
      files[data.name] = data;
      if (data.done !== before || data.finished) lastByteAt = performance.now();
      checkDownloaded();
      const now = performance.now();
      if (runtime.step <= 1 && (now - shownAt > 1000 || downloadedAt !== null)) { // a polite status, not a stream
        shownAt = now;
        setStatus("starting", progress(), 1);
      } else progress();
    } else if (data.type === "stage") {
      runtime.stageAt[data.step] = data.at - performance.timeOrigin;
      if (downloadedAt !== null) downloadedAt = performance.now();
      setStatus("starting", data.step === 1 ? progress() : data.text, data.step);
    } else if (data.type === "plan") {
      planned = true;
      runtime.rateMbps = data.rateMbps; // the rate the worker measured, when it chose (for the benchmark)
      if (data.snapshot) expected = startFiles(cfg, true);
      checkDownloaded();
    } else if (data.type === "failed") fail(`The Python runtime could not load (${data.message}); the charts show pre-computed results.`);
    else if (data.type === "result") finish(data);
    else if (data.type === "partial" && inFlight?.id === data.id) {
      // A streaming run that posts a point is alive: its time limit starts again from here.
      clearTimeout(inFlight.timer);
      inFlight.timer = setTimeout(cancel, inFlight.limitMs);
      inFlight.onPartial?.(data.json);
    } else if (data.type === "ready") {
      clearInterval(watchdog);
      Object.assign(runtime, { readyAt: performance.now(), fromSnapshot: data.fromSnapshot });
      setStatus("ready", "", STAGES);
      resolve();
      pump();
    }
  };
  setStatus("starting", "Starting the Python runtime", 0);
  worker.postMessage({
    type: "start",
    indexURL: new URL("vendor/pyodide/", assets).href,
    archiveURL: new URL(`generated/${cfg.archive}`, assets).href,
    dataURL: new URL(`generated/${cfg.data}`, assets).href,
    stdLibURL: new URL(`generated/${cfg.stdlib}`, assets).href,
    snapshotURL: cfg.snapshot ? new URL(`generated/${cfg.snapshot}`, assets).href : null,
    startWith: ns.startWith, // the benchmark's "snapshot" or "plain"; unset for readers
    lockFileContents: JSON.stringify(cfg.pyodideLock),
  });
}

// "Try again": a fresh worker and a fresh start-up; widgets come alive when it is ready.
export function retry() {
  ready = null;
  start({ ask: true }).catch(() => {});
}

// Resolves with run_json's answer as Python wrote it (a JSON string), or null when a newer request for
// `key` replaced it before it ran; rejects when the run failed or ran past the time limit (`limitMs`).
// `background` (the warm-up) waits while a reader's request waits; `seed` 0 is the sample every page
// shows; `onPartial` gets each partial answer ({"ok", "partial", "figure"}) of a chart that streams;
// `onTimed`, Python's own ms; `keep: false` leaves the worker's session (and the reader's scenario) alone.
export function run(key, name, params, { background = false, seed = 0, limitMs = runtime.runLimitMs, onPartial = null, onTimed = null, keep = true } = {}) {
  queue.find((job) => job.key === key)?.resolve(null); // at most one waits per key
  queue = queue.filter((job) => job.key !== key);
  return new Promise((resolve, reject) => {
    queue.push({ key, name, params, background, seed, limitMs, onPartial, onTimed, keep, resolve, reject });
    pump();
  });
}

function pump() {
  runtime.background = queue.filter((job) => job.background).length + (inFlight?.background ? 1 : 0);
  if (inFlight || runtime.state !== "ready" || queue.length === 0) return;
  inFlight = queue.find((job) => !job.background) ?? queue[0];
  queue = queue.filter((job) => job !== inFlight);
  inFlight.id = nextId++;
  inFlight.timer = setTimeout(cancel, inFlight.limitMs);
  worker.postMessage({ type: "run", id: inFlight.id, name: inFlight.name, params: JSON.stringify(inFlight.params), seed: inFlight.seed, keep: inFlight.keep });
}

function finish({ id, json, error, ms }) {
  if (inFlight?.id !== id) return;
  const job = inFlight;
  inFlight = null;
  clearTimeout(job.timer);
  if (error) job.reject(new Error(error));
  else {
    job.onTimed?.(ms);
    job.resolve(json);
  }
  pump();
}

function cancel() {
  const job = inFlight;
  inFlight = null;
  worker.terminate();
  job.reject(new Error(`The simulation ran longer than ${job.limitMs / 1000} s and was stopped; the Python runtime is restarting.`));
  retry();
}
