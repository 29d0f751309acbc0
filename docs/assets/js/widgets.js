// Simulator widgets: controls built from the exported schema, coalesced runs in the worker,
// charts and figures updated in place, state in the address, downloads and a Python recipe.
// Nothing here knows a simulator by name: the schema and the answers carry everything.
import { config, ns, onStatus, run, runtime, start } from "./client.js";
import { draw } from "./charts.js";
import { tag, setText } from "./dom.js";
import { addExports, isFile, showAnswer } from "./results.js";

// A change runs at once (a debounce would delay every change): a burst of changes (a slider dragged)
// is coalesced by client.js's queue, which keeps only a widget's newest waiting request.
const BUSY_MS = 150;
// Once the runtime is ready, each widget runs its page's scenario in the background (a reader's change
// goes first) as its first change will ask for it (seed 0): the worker's session keeps that work, so
// the first change re-simulates only what it changes. Up to WARM_UP_RUNS more runs let the WebAssembly
// engine's optimising tier compile the hot paths (Chromium, lesson 10: 82, 86, 87, then 54 ms as every
// later run; a run keeps the code it started with, so each widget warms its own). A run over
// WARM_ENOUGH_MS ends a warm-up (a change would wait behind the next). Those runs draw other samples
// (seeds 1, 2, ...) and keep nothing, so the reader's scenario stays in the session's memory.
const WARM_UP_RUNS = 4;
const WARM_ENOUGH_MS = 200;
const mounted = new Set();
const idle = () => new Promise((resolve) => (window.requestIdleCallback ?? setTimeout)(resolve));
let goingLive = null; // the running replacement of static charts by live ones, if any
let schemas = null;

onStatus((status) => {
  mounted.forEach((w) => showStatus(w, status));
  if (status.state === "ready") goLive();
});

document$.subscribe(() => {
  for (const w of mounted) if (!w.el.isConnected) mounted.delete(w); // left behind by navigation
  const elements = document.querySelectorAll("figure.sim:not([data-mounted])");
  if (elements.length === 0) return;
  // Python starts at once, in its worker; nothing on the page waits for it (the charts are static SVG).
  start().catch(() => {});
  schemas ??= fetch(new URL(`../generated/${config().schemas}`, import.meta.url)).then((r) => r.json());
  elements.forEach(mount);
  if (runtime.state === "ready") goLive(); // arrived by instant navigation: Python is already up
});

// Once Python is ready, plotly.js replaces each static chart with the live one (hover, zoom), one per
// idle moment, so that loading plotly.js and its first draws are not left to the reader's first change.
function goLive() {
  goingLive ??= (async () => {
    ns.chartsLive = false;
    for (const w of mounted) {
      await idle();
      if (!w.live && w.el.isConnected) await draw(w.chart, w.answer.figure).then(() => (w.live = true));
    }
    ns.chartsLive = true; // read by the benchmark and the tests
  })()
    .catch(() => {}) // the static charts stay; a reader's change reports a failure to draw
    .finally(() => (goingLive = null));
}

// The static pre-computed charts follow the palette through CSS; live ones are redrawn.
new MutationObserver(() => mounted.forEach((w) => w.live && draw(w.chart, w.answer.figure)))
  .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

async function mount(el) {
  el.dataset.mounted = "";
  const w = {
    el, id: el.dataset.widget, key: `${location.pathname}#${el.dataset.widget}`, name: el.dataset.sim,
    chart: el.querySelector(".sim-chart"), base: JSON.parse(el.dataset.params), controls: JSON.parse(el.dataset.controls),
    answer: JSON.parse(el.dataset.answer), fields: new Map(), issued: 0, shown: 0,
  };
  mounted.add(w);
  showAnswer(w, w.answer, false); // its chart is already in the page, drawn at build time
  w.schema = (await schemas)[w.name];
  w.defaults = { ...Object.fromEntries(w.schema.params.map((p) => [p.name, p.default])), ...w.base };
  w.values = { ...w.defaults, ...readAddress(w) };
  buildControls(w);
  addExports(w);
  showStatus(w, runtime);
}

// ---- controls from the schema: a slider and a box for a number, a list (with a pasted JSON object for a
// custom entry), a checkbox, a file, a text; each change goes to change(), which runs the simulator ----

const CUSTOM = "__custom__";

function buildControls(w) {
  const box = w.el.querySelector(".sim-controls");
  box.replaceChildren(...w.controls.map((name) => field(w, w.schema.params.find((p) => p.name === name))));
  box.removeAttribute("aria-busy");
}

function field(w, p) {
  const id = `sim-${w.id}-${p.name}`;
  const label = tag("label", { for: id, id: `${id}-label` }, p.label + (p.unit ? ` (${p.unit})` : ""));
  const message = tag("p", { class: "sim-field-message", id: `${id}-message` });
  const help = p.help ? tag("p", { class: "sim-help", id: `${id}-help` }, p.help) : null;
  const describedBy = [message.id, help?.id].filter(Boolean).join(" ");
  const inputs = [];
  let setValue;
  if (p.type === "int" || p.type === "float") {
    const box = tag("input", { id, type: "text", inputmode: "decimal", autocomplete: "off", "aria-describedby": describedBy });
    const slider = tag("input", { type: "range", "aria-labelledby": label.id, ...sliderRange(p) }); // a Tab stop: arrow keys step it
    slider.addEventListener("input", () => { box.value = fromSlider(p, slider.value); change(w, p, box.value); });
    box.addEventListener("input", () => { setSlider(p, slider, box.value); change(w, p, box.value); });
    setValue = (v) => { box.value = v; setSlider(p, slider, v); };
    inputs.push(slider, box);
  } else if (p.type === "choice") {
    const select = tag("select", { id, "aria-describedby": describedBy }, ...p.choices.map((c) => tag("option", { value: c.value }, c.label)));
    if (p.custom) select.append(tag("option", { value: CUSTOM }, `Custom ${p.custom === "gpu" ? "GPU" : p.custom} (paste JSON)…`));
    const area = tag("textarea", { rows: "4", hidden: "", "aria-label": `${p.label}: JSON object`, "aria-describedby": describedBy });
    select.addEventListener("change", () => {
      area.hidden = select.value !== CUSTOM;
      if (area.hidden) change(w, p, select.value);
    });
    area.addEventListener("input", () => change(w, p, area.value, true));
    setValue = (v) => {
      const custom = typeof v === "object";
      select.value = custom ? CUSTOM : v;
      area.hidden = !custom;
      if (custom) area.value = JSON.stringify(v, null, 1);
    };
    inputs.push(select, area);
  } else if (p.type === "bool") {
    const box = tag("input", { id, type: "checkbox", "aria-describedby": describedBy });
    box.addEventListener("change", () => change(w, p, box.checked));
    setValue = (v) => { box.checked = v; };
    inputs.push(box);
  } else if (p.file) {
    // A file the reader picks: read here, its text passed as the value; it never leaves the page.
    const input = tag("input", { id, type: "file", accept: p.file, "aria-describedby": describedBy });
    const clear = tag("button", { type: "button", class: "md-button" }, "Clear");
    const status = tag("span", { class: "sim-file-status", "aria-live": "polite" });
    // With `lines`, a box to paste into as well; a file read fills it.
    const area = p.lines ? tag("textarea", { rows: String(p.lines), "aria-label": `${p.label}: paste`, "aria-describedby": describedBy }) : null;
    area?.addEventListener("input", () => change(w, p, area.value));
    input.addEventListener("change", async () => {
      const f = input.files?.[0];
      const text = f ? await f.text() : "";
      if (area) area.value = text;
      setText(status, f ? `${f.name}: ${Math.max(1, Math.round(f.size / 1024))} KB, read in this page only` : "");
      change(w, p, text);
    });
    setValue = (v) => { if (area) area.value = v; if (!v) { input.value = ""; setText(status, ""); } };
    clear.addEventListener("click", () => { setValue(""); change(w, p, ""); });
    inputs.push(input, clear, status, ...(area ? [area] : []));
  } else { // a text: several lines with `lines`
    const box = p.lines
      ? tag("textarea", { id, rows: String(p.lines), spellcheck: "false", "aria-describedby": describedBy })
      : tag("input", { id, type: "text", "aria-describedby": describedBy });
    box.addEventListener("input", () => change(w, p, box.value));
    setValue = (v) => { box.value = v; };
    inputs.push(box);
  }
  setValue(w.values[p.name]);
  w.fields.set(p.name, { inputs, message, setValue });
  return tag("div", { class: "sim-field" }, label, tag("div", { class: "sim-inputs" }, ...inputs), ...(help ? [help] : []), message);
}

// A log slider may start at 0 when 0 means "the default" (e.g. vLLM's batch limits for the GPU):
// its first notch, a 50th of the track left of the smallest positive value (the step), is 0.
const logLow = (p) => (p.min > 0 ? p.min : p.step > 0 ? p.step : 1);
const logScale = (p) => p.log && p.min >= 0 && p.max > logLow(p);
const zeroNotch = (p) => Math.log10(logLow(p)) - (Math.log10(p.max) - Math.log10(logLow(p))) / 50;

function sliderRange(p) {
  if (logScale(p)) return { min: String(p.min > 0 ? Math.log10(p.min) : zeroNotch(p)), max: String(Math.log10(p.max)), step: "any" };
  return { min: String(p.min), max: String(p.max), step: String(p.step ?? "any") };
}

// A log slider's step (an arrow key moves 1% of its track: x1.07 to x1.13) reads as 2 significant
// digits, 2,300 not 2,250 (learner review), within its bounds; its ends are its bounds (131,072, not 130,000).
function fromSlider(p, position) {
  const [x, lo, hi] = [Number(position), logLow(p), p.max];
  if (logScale(p) && p.min === 0 && x < Math.log10(lo)) return 0;
  const near = (bound) => Math.abs(x - Math.log10(bound)) < 1e-9; // an end's position, to the last digits
  const round = () => (near(hi) ? hi : near(lo) ? lo : Math.min(hi, Math.max(lo, Number((10 ** x).toPrecision(2)))));
  const value = logScale(p) ? round() : x;
  return p.type === "int" ? Math.round(value) : Number(value.toPrecision(4));
}

// A linear slider follows any number, 0 included (tool review: a box at 0 beside a thumb mid-track).
function setSlider(p, slider, value) {
  const n = Number(value);
  if (!Number.isFinite(n) || String(value).trim() === "") return;
  if (!logScale(p)) slider.value = n;
  else if (n > 0) slider.value = Math.log10(n);
  else if (n === 0 && p.min === 0) slider.value = zeroNotch(p);
}

// ---- state in the address: ?sim-<widget id>=<JSON of the values that differ from the page's> ----

function readAddress(w) {
  const raw = new URLSearchParams(location.search).get(`sim-${w.id}`);
  if (raw === null) return {};
  try {
    const state = JSON.parse(raw);
    const known = new Set(w.schema.params.map((p) => p.name));
    if (state === null || typeof state !== "object" || Array.isArray(state) || !Object.keys(state).every((k) => known.has(k))) throw new Error();
    w.pending = true; // run the shared scenario as soon as the runtime is ready
    return state;
  } catch {
    ignoreAddress(w);
    return {};
  }
}

function ignoreAddress(w) {
  w.notice = "The scenario in this page's address could not be read, so it was ignored; showing the page's own scenario.";
  writeAddress(w, {});
}

function writeAddress(w, values) {
  const changed = Object.fromEntries(Object.entries(values).filter(([k, v]) => !isFile(w, k) && JSON.stringify(v) !== JSON.stringify(w.defaults[k])));
  const url = new URL(location.href);
  if (Object.keys(changed).length) url.searchParams.set(`sim-${w.id}`, JSON.stringify(changed));
  else url.searchParams.delete(`sim-${w.id}`);
  history.replaceState(history.state, "", url);
}

function change(w, p, raw, json = false) {
  w.notice = null;
  let value = raw;
  if (json) {
    try { value = JSON.parse(raw); } catch (error) { return showFieldErrors(w, [{ field: p.name, message: `not valid JSON: ${error.message}` }]); }
  } else if ((p.type === "int" || p.type === "float") && String(raw).trim() !== "" && Number.isFinite(Number(raw))) {
    value = Number(raw); // anything else goes to Python as text, which answers with the message
  }
  w.values = { ...w.values, [p.name]: value };
  clearTimeout(w.timer); // events of one task (the slider and its box) make one run
  w.timer = setTimeout(() => rerun(w, true), 0);
}

async function rerun(w, fromUser) {
  const issued = ++w.issued;
  const values = w.values;
  let json;
  // A run still going after BUSY_MS marks the chart busy (dimmed, aria-busy) until it answers.
  const busy = setTimeout(() => w.chart.setAttribute("aria-busy", "true"), BUSY_MS);
  try {
    json = await run(w.key, w.name, values, { onPartial: (part) => drawPartial(w, issued, part) });
    await w.partialDrawing; // the answer's chart is drawn after the partial ones
  } catch (error) {
    // Kept as the widget's notice, which the runtime's restart messages (showStatus) do not wipe out.
    w.notice = error.message;
    return setText(w.el.querySelector(".sim-status"), error.message);
  } finally {
    clearTimeout(busy);
    if (issued === w.issued) w.chart.removeAttribute("aria-busy");
  }
  if (json === null || issued < w.shown) return; // replaced by a newer request, or stale
  const answer = JSON.parse(json);
  w.shown = issued;
  if (!answer.ok && !fromUser) { // a shared scenario that no longer validates: fall back to the page's own
    ignoreAddress(w);
    w.values = { ...w.defaults };
    w.fields.forEach((f, name) => f.setValue(w.values[name]));
    showStatus(w, runtime);
    return rerun(w, false);
  }
  showFieldErrors(w, answer.ok ? [] : answer.errors);
  if (!answer.ok) return;
  // w.values is left alone: it holds the newest input, which a late answer must not put back.
  await showAnswer(w, answer);
  // After the redraw (the reader waits for the chart), unless a newer answer wrote its own.
  if (fromUser && issued === w.shown) writeAddress(w, values);
}

// A streaming chart (a sweep) is redrawn as its points come, still aria-busy (the figures, words and data
// table wait for the whole answer): only the newest partial chart, one at a time; data-partial names its run.
function drawPartial(w, issued, json) {
  if (issued !== w.issued) return; // a newer change is coming
  w.partial = json;
  w.partialDrawing ??= (async () => {
    while (w.partial !== null && issued === w.issued) {
      const { figure } = JSON.parse(w.partial);
      w.partial = null;
      await draw(w.chart, figure);
      w.live = true;
      w.el.dataset.partial = String(issued);
    }
  })()
    .catch(() => {}) // the whole answer is drawn next, or reports its own failure
    .finally(() => { w.partialDrawing = null; w.partial = null; });
}

function showFieldErrors(w, errors) {
  const status = w.el.querySelector(".sim-status");
  // An error on a setting this widget does not show names it (lesson 00.1: "use more GPUs" with no such
  // control), each as a sentence of its own.
  const label = (e) => w.schema.params.find((p) => p.name === e.field)?.label;
  const general = errors
    .filter((e) => !w.fields.has(e.field))
    .map((e) => `${e.message.replace(/[^.!?]$/, "$&.")}${label(e) ? ` (${label(e)} is not among this widget's controls.)` : ""}`);
  if (errors.length) general.push("The chart and figures still show the last values that ran.");
  setText(status, general.join(" "));
  // A notice about the address stays until the reader changes a control (see change()).
  if (w.notice) status.append(tag("span", { class: "sim-notice" }, ` ${w.notice}`));
  w.fields.forEach((f, name) => {
    const error = errors.find((e) => e.field === name);
    setText(f.message, error ? error.message : "");
    f.inputs.forEach((input) => (error ? input.setAttribute("aria-invalid", "true") : input.removeAttribute("aria-invalid")));
  });
}

function showStatus(w, status) {
  const ready = status.state === "ready";
  w.fields.forEach((f) => f.inputs.forEach((input) => (input.disabled = !ready)));
  w.el.classList.toggle("sim-live", ready);
  const box = w.el.querySelector(".sim-status");
  box.replaceChildren();
  if (status.state === "starting") {
    const [value, max] = status.step <= 1 && status.totalMB ? [status.doneMB, status.totalMB] : [status.step, status.steps];
    box.append(tag("progress", { max: String(max), value: String(value), "aria-label": "Loading the Python runtime" }), ` ${status.text}…`);
  } else if (status.state === "failed" || status.state === "waiting") box.append(status.text);
  if (status.action) { // "Try again", "Run the simulators here — N MB" (client.js)
    const button = tag("button", { type: "button", class: "md-button sim-runtime-action" }, status.action.label);
    button.addEventListener("click", status.action.run);
    box.append(" ", button);
  }
  if (w.notice) box.append(tag("span", { class: "sim-notice" }, ` ${w.notice}`));
  if (ready && w.pending) {
    w.pending = false;
    rerun(w, false);
  }
  if (ready && !w.warmed) {
    w.warmed = true;
    warmUp(w);
  }
}

// Python's own time per run is kept in llmCourse.warmUps ([widget, seed, ms]) for the benchmark.
async function warmUp(w) {
  for (let seed = 0; seed <= WARM_UP_RUNS; seed++) {
    let took = 0;
    try {
      await run(`${w.key}#warm-up`, w.name, w.values, { background: true, seed, keep: seed === 0, onTimed: (ms) => (took = ms) });
    } catch {
      return; // the runtime failed or was replaced: the reader's own runs report it
    }
    (ns.warmUps ??= []).push([w.key, seed, Math.round(took)]);
    if (took > WARM_ENOUGH_MS) return;
  }
}
