// Simulator widgets: controls built from the exported schema, coalesced runs in the worker,
// charts and figures updated in place, state in the address, downloads and a Python recipe.
// Nothing here knows a simulator by name: the schema and the answers carry everything.
import { onStatus, run, runtime, start } from "./client.js";
import { draw, preload } from "./charts.js";
import { formatMetric, formatNumber, KEY_FIGURES } from "./numbers.mjs";

// A change runs at once; a burst of changes (a slider dragged, a number typed) is coalesced by the
// client's queue: while a run is in flight, only the newest waiting request of a widget is kept
// (client.js). A fixed debounce would instead delay every single change; with runs this short
// the queue already keeps the worker from falling behind.
const BUSY_MS = 150;
// Once the runtime is ready, every widget runs its page's scenario once in the background (a
// reader's change goes first), exactly as its first change will ask for it (seed 0, its values and
// chart): the worker's session keeps that run's work, so the first change re-simulates only what
// it changes instead of the whole scenario. Every widget then runs its scenario up to WARM_UP_RUNS
// more times, so that the WebAssembly engine has compiled the hot paths with its optimising tier
// before the first change. Measured in Chromium (lesson 10, Python's own time per run): a scenario
// ran 82, 86, 87, then 54 ms, the same as every later run; a run already going keeps the code it
// started with, so a widget's own runs are what bring its scenario to speed. A run longer than
// WARM_ENOUGH_MS ends a widget's warm-up (a reader's change would wait behind the next). Those
// further runs draw other random samples (seed 1, 2, ...) and keep nothing: they must not push the
// reader's own scenario out of the session's memory.
const WARM_UP_RUNS = 4;
const WARM_ENOUGH_MS = 200;
const CUSTOM = "__custom__";
const mounted = new Set();
const ns = (globalThis.llmCourse ??= {});
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
  // Python starts at once, in its worker: the pre-computed charts are already in the page, drawn
  // without script, so nothing on the main thread waits for it.
  start().catch(() => {});
  schemas ??= fetch(new URL(`../generated/${runtimeConfig().schemas}`, import.meta.url)).then((r) => r.json());
  elements.forEach(mount);
  if (runtime.state === "ready") goLive(); // arrived by instant navigation: Python is already up
});

// Once Python is ready, plotly.js replaces each static chart with the live one (hover, zoom), one
// chart per idle moment, so a reader's first change only updates a chart. Loading plotly.js and
// its first draws take the longest; doing them now keeps them off the reader's first change.
function goLive() {
  goingLive ??= (async () => {
    ns.chartsLive = false;
    await idle();
    await preload();
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

function runtimeConfig() {
  return JSON.parse(document.getElementById("course-runtime").textContent);
}

async function mount(el) {
  el.dataset.mounted = "";
  const w = {
    el, id: el.dataset.widget, name: el.dataset.sim, chart: el.querySelector(".sim-chart"),
    base: JSON.parse(el.dataset.params), controls: JSON.parse(el.dataset.controls),
    answer: JSON.parse(el.dataset.answer), fields: new Map(), issued: 0, shown: 0,
  };
  w.key = `${location.pathname}#${w.id}`;
  mounted.add(w);
  showAnswer(w, w.answer, false); // its chart is already in the page, drawn at build time
  w.schema = (await schemas)[w.name];
  w.defaults = { ...Object.fromEntries(w.schema.params.map((p) => [p.name, p.default])), ...w.base };
  w.values = { ...w.defaults, ...readAddress(w) };
  buildControls(w);
  addExports(w);
  showStatus(w, runtime);
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

// A file's text stays out of the address and out of the recipes.
const isFile = (w, name) => Boolean(w.schema?.params.find((p) => p.name === name)?.file);

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

// ---- controls ----

function buildControls(w) {
  const box = w.el.querySelector(".sim-controls");
  box.replaceChildren();
  for (const name of w.controls) box.append(field(w, w.schema.params.find((p) => p.name === name)));
  box.removeAttribute("aria-busy");
}

function field(w, p) {
  const id = `sim-${w.id}-${p.name}`;
  const wrap = tag("div", { class: "sim-field" });
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
    const select = tag("select", { id, "aria-describedby": describedBy });
    for (const c of p.choices) select.append(tag("option", { value: c.value }, c.label));
    if (p.custom) select.append(tag("option", { value: CUSTOM }, `Custom ${p.custom} (paste JSON)…`));
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
    clear.addEventListener("click", () => { input.value = ""; if (area) area.value = ""; setText(status, ""); change(w, p, ""); });
    setValue = (v) => { if (area) area.value = v; if (!v) { input.value = ""; setText(status, ""); } };
    inputs.push(input, clear, status, ...(area ? [area] : []));
  } else if (p.lines) {
    const area = tag("textarea", { id, rows: String(p.lines), spellcheck: "false", "aria-describedby": describedBy });
    area.addEventListener("input", () => change(w, p, area.value));
    setValue = (v) => { area.value = v; };
    inputs.push(area);
  } else {
    const box = tag("input", { id, type: "text", "aria-describedby": describedBy });
    box.addEventListener("input", () => change(w, p, box.value));
    setValue = (v) => { box.value = v; };
    inputs.push(box);
  }
  setValue(w.values[p.name]);
  wrap.append(label, tag("div", { class: "sim-inputs" }, ...inputs), ...(help ? [help] : []), message);
  w.fields.set(p.name, { inputs, message, setValue });
  setDisabled(w.fields.get(p.name), true);
  return wrap;
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

function fromSlider(p, position) {
  if (logScale(p) && p.min === 0 && Number(position) < Math.log10(logLow(p))) return 0;
  const value = logScale(p) ? 10 ** Number(position) : Number(position);
  return p.type === "int" ? Math.round(value) : Number(value.toPrecision(4));
}

function setSlider(p, slider, value) {
  const n = Number(value);
  if (Number.isFinite(n) && n > 0) slider.value = logScale(p) ? Math.log10(n) : n;
  else if (n === 0 && String(value).trim() !== "" && logScale(p) && p.min === 0) slider.value = zeroNotch(p);
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
    // Kept as the widget's notice, so the runtime's restart messages (showStatus) do not wipe it
    // out within a moment; the reader's next change clears it.
    w.notice = error.message;
    return setText(w.el.querySelector(".sim-status"), error.message);
  } finally {
    clearTimeout(busy);
    if (issued === w.issued) w.chart.removeAttribute("aria-busy");
  }
  if (json === null || issued < w.shown) return; // replaced by a newer request, or stale
  const answer = JSON.parse(json);
  w.shown = issued;
  if (!answer.ok) {
    if (!fromUser) { // a shared scenario that no longer validates: fall back to the page's own
      ignoreAddress(w);
      w.values = { ...w.defaults };
      w.fields.forEach((f, name) => f.setValue(w.values[name]));
      showStatus(w, runtime);
      return rerun(w, false);
    }
    return showFieldErrors(w, answer.errors);
  }
  showFieldErrors(w, []);
  // w.values is left alone: it already holds the newest input, and an older run answering late
  // must not put its values back (the next change would then rerun with half-stale values).
  await showAnswer(w, answer);
  // After the redraw (the reader waits for the chart, not the address), unless a newer answer
  // was shown meanwhile and wrote its own.
  if (fromUser && issued === w.shown) writeAddress(w, values);
}

// A chart that streams (a sweep, point by point) is redrawn as its points come, while it stays
// busy (aria-busy); the figures, the words and the data table wait for the whole answer. Only the
// newest partial chart is drawn, one draw at a time; data-partial says which run it belongs to.
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
  setText(status, errors.filter((e) => !w.fields.has(e.field)).map((e) => e.message).join(" "));
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
  w.fields.forEach((f) => setDisabled(f, !ready));
  w.el.classList.toggle("sim-live", ready);
  const box = w.el.querySelector(".sim-status");
  box.replaceChildren();
  if (status.state === "starting") {
    const [value, max] = status.step <= 1 && status.totalMB ? [status.doneMB, status.totalMB] : [status.step, status.steps];
    box.append(tag("progress", { max: String(max), value: String(value), "aria-label": "Loading the Python runtime" }), ` ${status.text}…`);
  } else if (status.state === "failed" || status.state === "waiting") {
    box.append(status.text);
  }
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

function setDisabled(f, disabled) {
  f.inputs.forEach((input) => (input.disabled = disabled));
}

// ---- results: chart, key figures, text alternative, data table, downloads, Python recipe ----

async function showAnswer(w, answer, redraw = true) {
  w.answer = answer;
  showMetrics(w, answer.metrics);
  setText(w.el.querySelector(".sim-summary"), answer.summary);
  const details = w.el.querySelector(".sim-data");
  details.ontoggle = () => details.open && dataTable(w);
  if (details.open) dataTable(w);
  actions(w);
  if (redraw) {
    await draw(w.chart, answer.figure);
    w.live = true;
  }
  w.el.dataset.drawn = String(w.shown);
}

// The key figures, in the schema's order: the first KEY_FIGURES in the table, the rest (if any) in
// "More figures" under "Data table". The same metrics as last time (the usual case) are updated in
// place: fewer changes to the page, so less for the browser to lay out again before the chart redraws.
function showMetrics(w, metrics) {
  const order = w.schema?.metrics.map((m) => m.name) ?? [...w.el.querySelectorAll("tr[data-metric]")].map((r) => r.dataset.metric);
  const keys = [...order.filter((k) => k in metrics), ...Object.keys(metrics).filter((k) => !order.includes(k))];
  fillMetrics(w, w.el.querySelector(".sim-metrics tbody"), metrics, keys.slice(0, KEY_FIGURES));
  const more = w.el.querySelector(".sim-more-figures tbody");
  if (more) fillMetrics(w, more, metrics, keys.slice(KEY_FIGURES));
}

function fillMetrics(w, body, metrics, keys) {
  const known = keys.map((k) => w.schema?.metrics.find((m) => m.name === k) ?? builtRow(w, k));
  const shown = keys.map((k, i) => formatMetric(metrics[k], known[i].unit ?? ""));
  const rows = [...body.rows];
  if (rows.length === keys.length && rows.every((row, i) => row.dataset.metric === keys[i])) {
    rows.forEach((row, i) => (setText(row.cells[1], shown[i][0]), setText(row.cells[2], shown[i][1])));
    return;
  }
  body.replaceChildren(...keys.map((k, i) => tag("tr", { "data-metric": k, "data-unit": known[i].unit ?? "" },
    tag("th", { scope: "row" }, known[i].label), tag("td", {}, shown[i][0]), tag("td", {}, shown[i][1]))));
}

// Before the schema arrives: the label and the declared unit of the build's row.
function builtRow(w, key) {
  const row = w.el.querySelector(`tr[data-metric="${key}"]`);
  return { label: row?.cells[0].textContent ?? key, unit: row?.dataset.unit ?? "" };
}

function dataTable(w) {
  const tables = w.answer.figure.data.map((trace, i) => {
    const x = trace.x ?? trace.labels ?? [];
    const y = trace.y ?? trace.values ?? [];
    const head = tag("tr", {}, tag("th", { scope: "col" }, axisTitle(w, "xaxis") || "x"), tag("th", { scope: "col" }, axisTitle(w, "yaxis") || "y"));
    const body = x.map((xv, j) => tag("tr", {}, tag("td", {}, formatNumber(xv)), tag("td", {}, formatNumber(y[j]))));
    return tag("table", {}, tag("caption", {}, trace.name || `Series ${i + 1}`), tag("thead", {}, head), tag("tbody", {}, ...body));
  });
  w.el.querySelector(".sim-data-table").replaceChildren(...tables);
}

function axisTitle(w, axis) {
  const title = w.answer.figure.layout?.[axis]?.title;
  return typeof title === "string" ? title : title?.text;
}

function actions(w) {
  const sets = Object.entries(w.values ?? w.base).filter(([k, v]) => !isFile(w, k) && JSON.stringify(v) !== JSON.stringify(w.schema?.params.find((p) => p.name === k)?.default));
  const cli = ["python -m simulators run", w.name, ...sets.map(([k, v]) => `--set ${shellQuote(`${k}=${typeof v === "object" ? JSON.stringify(v) : v}`)}`)].join(" ");
  const imports = sets.some(([, v]) => typeof v === "object") ? "import json\n" : "";
  const call = `${imports}from simulators import api\nanswer = api.evaluate(${[JSON.stringify(w.name), ...sets.map(([k, v]) => `${k}=${pythonLiteral(v)}`)].join(", ")})\nprint(answer["metrics"])`;
  // Built once; later runs only rewrite the two recipes (and a reader's open "Reproduce" stays open).
  w.recipes ??= buildActions(w);
  setText(w.recipes[0], cli);
  setText(w.recipes[1], call);
}

function buildActions(w) {
  const cli = tag("code"), call = tag("code");
  w.el.querySelector(".sim-actions").replaceChildren(
    download(`${w.id}.csv`, "text/csv", () => csv(w.answer.figure), "Download data (CSV)"),
    download(`${w.id}.json`, "application/json", () => JSON.stringify({ simulator: w.name, params: w.values, ...w.answer }, null, 2), "Download data (JSON)"),
    tag("details", { class: "sim-reproduce" }, tag("summary", {}, "Reproduce in Python"),
      tag("p", {}, "From the repository root, the command line:"), tag("pre", {}, cli),
      tag("p", {}, "or the API:"), tag("pre", {}, call)),
  );
  return [cli, call];
}

// One row per plotted point: series, x, y.
function csv(figure) {
  const rows = figure.data.flatMap((t, i) =>
    (t.x ?? t.labels ?? []).map((x, j) => [t.name || `series ${i + 1}`, x, (t.y ?? t.values)[j]].map(csvCell).join(",")));
  return ["series,x,y", ...rows].join("\n");
}

// The file's text is made on click, not on every run.
function download(name, type, text, label) {
  const button = tag("button", { type: "button", class: "md-button" }, label);
  button.addEventListener("click", () => save(name, type, text()));
  return button;
}

function save(name, type, text) {
  const a = tag("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// Files the simulator makes only when asked (its schema's `exports`, e.g. load_test's GuideLLM
// report): Python computes the file for the current values, in the worker, on click. A whole
// sweep of 2,000-request runs takes longer than a chart, so it gets its own time limit.
const EXPORT_LIMIT_MS = 180000;

function addExports(w) {
  const buttons = (w.schema.exports ?? []).map(({ kind, label, file }) => {
    const button = tag("button", { type: "button", class: "md-button", "data-export": kind }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      button.textContent = `${label}: preparing…`;
      try {
        const json = await run(`${w.key}#export-${kind}`, w.name, { ...w.values, export: kind }, { limitMs: EXPORT_LIMIT_MS });
        const answer = json === null ? null : JSON.parse(json);
        if (answer?.ok) save(`${w.id}-${answer.export.file}`, "application/json", answer.export.text);
        else if (answer) button.title = answer.errors.map((e) => e.message).join("; ");
      } catch (error) {
        button.title = String(error?.message ?? error);
      } finally {
        button.disabled = false;
        button.removeAttribute("aria-busy");
        button.textContent = label;
      }
    });
    return button;
  });
  w.el.querySelector(".sim-reproduce")?.before(...buttons);
}

const csvCell = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : String(v));
const shellQuote = (s) => (/^[\w.,:=\/+-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);

function pythonLiteral(v) {
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "object") return `json.loads(${JSON.stringify(JSON.stringify(v))})`;
  return JSON.stringify(v);
}

// Only a different text is written: an unchanged one would still replace the text node and
// make the browser lay the page out again before the chart redraws.
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function tag(name, attrs = {}, ...children) {
  const el = document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}
