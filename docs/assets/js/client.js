// One Pyodide worker per tab, kept across instant navigation (this module runs once per tab).
// Runs are queued one at a time; per widget key only the newest waiting request is kept. A run
// past the time limit is cancelled by terminating the worker and starting a fresh one.

const STARTUP_LIMIT_MS = 15000;
const STAGES = 3;

// The one global: window.llmCourse. `runtime` is read by widgets, tests and the benchmark.
const ns = (globalThis.llmCourse ??= {});
// startedAt/readyAt/stageAt: performance.now() of the latest start-up and of its stages, and
// whether it restored the build's snapshot: read by the benchmark.
export const runtime = (ns.runtime = {
  state: "idle", text: "", step: 0, steps: STAGES, starts: 0, runLimitMs: 10000,
  startedAt: null, readyAt: null, stageAt: [], fromSnapshot: null,
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

function setStatus(state, text = "", step = runtime.step) {
  Object.assign(runtime, { state, text, step });
  for (const listener of listeners) listener(runtime);
}

export function start() {
  if (ready) return ready;
  const { archive, snapshot, pyodideLock } = JSON.parse(document.getElementById("course-runtime").textContent);
  const assets = new URL("../", import.meta.url);
  ready = new Promise((resolve, reject) => {
    const fail = (message) => {
      clearTimeout(timer);
      worker.terminate();
      setStatus("failed", message);
      reject(new Error(message));
    };
    const timer = setTimeout(
      () => fail(`The Python runtime did not start within ${STARTUP_LIMIT_MS / 1000} s, so the controls stay off; the charts show pre-computed results.`),
      STARTUP_LIMIT_MS,
    );
    worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    runtime.starts += 1;
    runtime.startedAt = performance.now();
    runtime.stageAt = [];
    worker.onerror = (event) => fail(`The Python runtime could not load (${event.message || "worker error"}); the charts show pre-computed results.`);
    worker.onmessage = ({ data }) => {
      if (data.type === "stage") {
        runtime.stageAt[data.step] = data.at - performance.timeOrigin;
        setStatus("starting", data.text, data.step);
      }
      else if (data.type === "failed") fail(`The Python runtime could not load (${data.message}); the charts show pre-computed results.`);
      else if (data.type === "result") finish(data);
      else if (data.type === "ready") {
        clearTimeout(timer);
        runtime.readyAt = performance.now();
        runtime.fromSnapshot = data.fromSnapshot;
        setStatus("ready", "", STAGES);
        resolve();
        pump();
      }
    };
    setStatus("starting", "Starting the Python runtime", 0);
    worker.postMessage({
      type: "start",
      indexURL: new URL("vendor/pyodide/", assets).href,
      archiveURL: new URL(`generated/${archive}`, assets).href,
      snapshotURL: snapshot ? new URL(`generated/${snapshot}`, assets).href : null,
      lockFileContents: JSON.stringify(pyodideLock),
    });
  });
  return ready;
}

// Resolves with run_json's answer exactly as Python wrote it (a JSON string), or with null when a newer request for `key` replaced
// this one before it ran. Rejects when the run failed or ran past the time limit.
// A `background` run (the widgets' warm-up) waits until no reader's request is waiting. `seed`
// picks the random sample (0, the one every page and test shows, unless a warm-up asks otherwise).
export function run(key, name, params, { background = false, seed = 0 } = {}) {
  const waiting = queue.find((job) => job.key === key);
  if (waiting) {
    queue = queue.filter((job) => job !== waiting);
    waiting.resolve(null);
  }
  return new Promise((resolve, reject) => {
    queue.push({ key, name, params, background, seed, resolve, reject });
    pump();
  });
}

function pump() {
  runtime.background = queue.filter((job) => job.background).length + (inFlight?.background ? 1 : 0);
  if (inFlight || runtime.state !== "ready" || queue.length === 0) return;
  inFlight = queue.find((job) => !job.background) ?? queue[0];
  queue = queue.filter((job) => job !== inFlight);
  inFlight.id = nextId++;
  inFlight.timer = setTimeout(cancel, runtime.runLimitMs);
  worker.postMessage({ type: "run", id: inFlight.id, name: inFlight.name, params: JSON.stringify(inFlight.params), seed: inFlight.seed });
}

function finish({ id, json, error }) {
  if (!inFlight || inFlight.id !== id) return;
  const job = inFlight;
  inFlight = null;
  clearTimeout(job.timer);
  if (error) job.reject(new Error(error));
  else job.resolve(json);
  pump();
}

function cancel() {
  const job = inFlight;
  inFlight = null;
  worker.terminate();
  ready = null;
  job.reject(new Error(`The simulation ran longer than ${runtime.runLimitMs / 1000} s and was stopped; the Python runtime is restarting.`));
  start().catch(() => {});
}
