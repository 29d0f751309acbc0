// What a widget shows of an answer: the key figures, the summary, the data table, the downloads
// (CSV, JSON, the schema's exports) and the recipes that reproduce it in Python.
import { run } from "./client.js";
import { draw } from "./charts.js";
import { tag, setText } from "./dom.js";
import { formatMetric, formatNumber, KEY_FIGURES } from "./numbers.mjs";

// A file's text stays out of the address and out of the recipes.
export const isFile = (w, name) => Boolean(w.schema?.params.find((p) => p.name === name)?.file);

export async function showAnswer(w, answer, redraw = true) {
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

// The key figures, in the schema's order: the first KEY_FIGURES in the table, the rest in "More figures"
// under "Data table". The same metrics as last time are updated in place: less to lay out again.
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

// A trace's plotted points as [x, y] pairs (a pie's are its labels and values).
const points = (t) => (t.x ?? t.labels ?? []).map((x, j) => [x, (t.y ?? t.values ?? [])[j]]);

// The title of a trace's own axis: one on a second y axis ("y2") is headed by layout.yaxis2's.
function axisTitle(layout, trace, axis) {
  const title = layout?.[`${axis}axis${(trace[`${axis}axis`] ?? axis).slice(1)}`]?.title;
  return (typeof title === "string" ? title : title?.text) || axis;
}

function dataTable(w) {
  const tables = w.answer.figure.data.map((trace, i) => {
    const titles = ["x", "y"].map((axis) => axisTitle(w.answer.figure.layout, trace, axis));
    const head = tag("tr", {}, ...titles.map((title) => tag("th", { scope: "col" }, title)));
    const body = points(trace).map((point) => tag("tr", {}, ...point.map((v) => tag("td", {}, formatNumber(v)))));
    return tag("table", {}, tag("caption", {}, trace.name || `Series ${i + 1}`), tag("thead", {}, head), tag("tbody", {}, ...body));
  });
  w.el.querySelector(".sim-data-table").replaceChildren(...tables);
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
  const rows = figure.data.flatMap((t, i) => points(t).map((point) => [t.name || `series ${i + 1}`, ...point].map(csvCell).join(",")));
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

// Files the simulator makes only when asked (its schema's `exports`, e.g. load_test's GuideLLM report),
// on click, in the worker: a sweep of 2,000-request runs takes longer than a chart, so its own limit.
const EXPORT_LIMIT_MS = 180000;

export function addExports(w) {
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
