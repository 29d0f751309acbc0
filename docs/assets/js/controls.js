// A widget's controls, built from the simulator's exported schema: a slider and a box for a
// number, a list (with a pasted JSON object for a custom entry), a checkbox, a file, a text.
// Each change is handed to `change(w, p, raw, json)` (widgets.js), which runs the simulator.
import { tag, setText } from "./dom.js";

const CUSTOM = "__custom__";

export function buildControls(w, change) {
  const box = w.el.querySelector(".sim-controls");
  box.replaceChildren();
  for (const name of w.controls) box.append(field(w, change, w.schema.params.find((p) => p.name === name)));
  box.removeAttribute("aria-busy");
}

function field(w, change, p) {
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
  } else { // a text: several lines with `lines`
    const box = p.lines
      ? tag("textarea", { id, rows: String(p.lines), spellcheck: "false", "aria-describedby": describedBy })
      : tag("input", { id, type: "text", "aria-describedby": describedBy });
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

export function setDisabled(f, disabled) {
  f.inputs.forEach((input) => (input.disabled = disabled));
}
