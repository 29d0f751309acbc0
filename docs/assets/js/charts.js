// Plotly drawing for the live charts, in the light/dark palette. The bundle loads once the runtime is
// ready and replaces the static SVG drawn at build time (sitebuild/static_chart/). Plotly's global
// rules live in a stylesheet every page links (overrides/main.html): no inline <style>.
import { loadScript } from "./dom.js";

const PLOTLY = "../vendor/plotly/plotly.min.js";

export async function draw(element, figure) {
  await loadScript(PLOTLY);
  element.querySelector(":scope > .sim-static-chart")?.remove(); // the first live chart replaces it
  const width = element.clientWidth;
  const layout = fitAxisTitles(fitLegend(fitTitle(themed(figure.layout), width), width), width);
  if (element.grown?.width === width) layout.height = element.grown.height;
  await Plotly.react(element, fitNames(inked(figure.data), layout, width), layout, { responsive: true, displaylogo: false });
  // On a phone a long legend and a title of several lines took most of the chart's height (lesson 08:
  // a plot 75 px high): the chart grows until its plot keeps MIN_PLOT_PX, and keeps that height for
  // the next draws at this width, so a slider's redraw does not lay it out twice.
  const short = width < NARROW_PX ? MIN_PLOT_PX - element._fullLayout._size.h : 0;
  if (short > 1) {
    element.grown = { width, height: Math.ceil(element._fullLayout.height + short) };
    await Plotly.relayout(element, { height: element.grown.height });
  }
}

// `text` broken between words into lines of at most `fits` letters (a longer word keeps its line).
function wrapped(text, fits) {
  const lines = [""];
  for (const word of text.split(" ")) {
    const line = lines[lines.length - 1];
    if (line && line.length + 1 + word.length > fits) lines.push(word);
    else lines[lines.length - 1] = line ? `${line} ${word}` : word;
  }
  return lines;
}

// Plotly cuts a one-line title off at a narrow (phone) chart's edges: a long one is broken between words
// into lines that fit. Plotly places a title by its first line (lines from the third on run into the plot),
// so it hangs from the chart's top edge instead (its top anchor 0.7 em too high with several lines,
// measured), the top margin holding every line. A letter is taken as 0.55 em wide, a line as 1.3 em high.
const TITLE_EM = 0.55;
const TITLE_PAD_PX = 10;

function fitTitle(layout, width) {
  let title = typeof layout.title === "string" ? { text: layout.title } : layout.title;
  if (!title?.text || !width) return layout;
  // Plotly does not break a subtitle either: on a narrow chart it joins the title (lesson 10 lost both ends).
  const { subtitle, ...rest } = title;
  if (width < NARROW_PX && subtitle?.text) title = { ...rest, text: `${title.text}: ${subtitle.text}` };
  const size = title.font?.size ?? 1.4 * (layout.font?.size ?? 12); // plotly's default title size
  const fits = Math.max(10, Math.floor((width - 16) / (TITLE_EM * size)));
  if (title.text.length <= fits) return title === layout.title ? layout : { ...layout, title };
  const lines = wrapped(title.text, fits);
  const pad = { t: TITLE_PAD_PX + (lines.length > 1 ? 0.7 * size : 0) };
  const hung = { ...title, text: lines.join("<br>"), yref: "container", y: 1, yanchor: "top", pad };
  const high = Math.ceil(TITLE_PAD_PX + lines.length * 1.3 * size + TITLE_PAD_PX);
  return { ...layout, title: hung, margin: { ...layout.margin, t: Math.max(layout.margin?.t ?? 100, high) } };
}

// Plotly puts a horizontal legend a share of the plot's height below it: on a short (phone) chart, on
// the x axis's title and tick labels. Anchored to the chart's bottom edge it pushes the margin and sits
// below both. Only on narrow charts: the push costs a second layout pass (redraws past the 200 ms
// long-task limit of tests/browser/test_robustness.py at 1280 px, measured on a busy machine).
const NARROW_PX = 600;
const MIN_PLOT_PX = 200;

function fitLegend(layout, width) {
  const legend = layout.legend;
  if (width >= NARROW_PX || legend?.orientation !== "h" || legend.y === undefined || legend.y >= 0 || legend.yref) return layout;
  return { ...layout, legend: { ...legend, yref: "container", y: 0, yanchor: "bottom" } };
}

// A long axis title on a narrow chart is broken between words too: an x title is centred on the plot,
// right of the y labels, so it has about half the chart's width; a y title has the plot's height, at
// least MIN_PLOT_PX (lesson 04's 43-letter title ran into the chart's title at 390 px).
function fitAxisTitles(layout, width) {
  if (!width || width >= NARROW_PX) return layout;
  const out = { ...layout };
  for (const [key, axis] of Object.entries(layout)) {
    if (!/^[xy]axis\d*$/.test(key) || !axis?.title?.text) continue;
    const room = key[0] === "x" ? width / 2 : MIN_PLOT_PX;
    out[key] = { ...axis, title: { ...axis.title, text: broken(axis.title.text, Math.floor(room / (TITLE_EM * 12))) } };
  }
  return out;
}

// Plotly cuts off a legend entry wider than the chart (a phone: "… (prefill or decode) (so fa"):
// on a narrow chart a long name is broken between words, past its symbol (about 40 px), and so are a
// horizontal bar's category names (diagnose's levers), which would otherwise leave the bars no width.
const CATEGORY_FITS = 20; // letters: two lines at most for the course's names ("Token budget 512 (chunked prefill)")
const broken = (text, fits) => (typeof text === "string" && text.length > fits && !text.includes("<br>") ? wrapped(text, fits).join("<br>") : text);

function fitNames(data, layout, width) {
  if (!width || width >= NARROW_PX) return data;
  const fits = Math.max(12, Math.floor((width - 56) / (TITLE_EM * (layout.legend?.font?.size ?? layout.font?.size ?? 12))));
  return data.map((t) => {
    const out = { ...t, name: broken(t.name, fits) };
    if (t.orientation === "h" && Array.isArray(t.y)) out.y = t.y.map((c) => broken(c, CATEGORY_FITS));
    return out;
  });
}

// The palette's colours, read once per colour scheme: reading computed styles recalculates the whole
// page's (~8 ms per redraw on a long lesson).
let palette = null;
const reducedMotion = matchMedia("(prefers-reduced-motion: reduce)");

function colours() {
  const scheme = document.body.getAttribute("data-md-color-scheme");
  if (palette?.scheme !== scheme) {
    const css = getComputedStyle(document.body);
    const read = (name) => css.getPropertyValue(name).trim();
    palette = { scheme, fg: read("--md-default-fg-color"), grid: read("--md-default-fg-color--lightest"), light: read("--md-default-fg-color--light") };
  }
  return palette;
}

// The palette's black (simulators/plotting.py: reference lines) in the text colour: visible on the dark background.
function inked(data) {
  const { fg } = colours();
  const ink = (style) => (style?.color === "#000000" ? { ...style, color: fg } : style);
  return data.map((trace) => {
    const out = { ...trace };
    if (trace.line) out.line = ink(trace.line);
    if (trace.marker) out.marker = ink(trace.marker);
    return out;
  });
}

function themed(layout) {
  const { fg, grid, light } = colours();
  // ticklabeloverflow "allow": plotly's default measures every tick label on every redraw, laying the
  // page out again for each (a third of a redraw or more); the margins leave room for the labels.
  const axis = (a) => ({ ticklabeloverflow: "allow", ...a, gridcolor: grid, zerolinecolor: grid, linecolor: grid });
  const out = { ...layout, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { ...layout.font, color: fg } };
  // The toolbar's icons in the palette's colours (plotly's default grey vanishes on the dark one).
  out.modebar = { bgcolor: "rgba(0,0,0,0)", color: light, activecolor: fg, ...layout.modebar };
  if (reducedMotion.matches) out.transition = { duration: 0 };
  for (const key of Object.keys(layout)) if (/^[xy]axis\d*$/.test(key)) out[key] = axis(layout[key]);
  return out;
}
