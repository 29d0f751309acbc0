// Plotly drawing for the live charts: the bundle loads once the runtime is ready (the charts a page
// opens with are static SVG drawn at build time, see sitebuild/static_chart.py), and figures follow
// the light/dark palette. Plotly's global rules live in a stylesheet every page links
// (overrides/main.html), so they survive instant navigation and need no inline <style>.
import { loadScript } from "./load-script.js";

const PLOTLY = "../vendor/plotly/plotly.min.js";

// Loads plotly.js and draws a few throw-away charts off screen, one per idle moment: the first
// draws after a load run plotly's code unoptimised and take several times longer, which the
// reader would otherwise meet on the first changes of a control.
export async function preload() {
  try {
    await loadScript(PLOTLY);
  } catch {
    return; // draw() reports the failure when a chart needs the bundle
  }
  const idle = () => new Promise((resolve) => (window.requestIdleCallback ?? setTimeout)(resolve));
  const box = document.createElement("div");
  box.className = "sim-warm-up";
  box.setAttribute("aria-hidden", "true");
  document.body.append(box);
  for (let i = 0; i < WARM_UP_DRAWS; i++) {
    await idle();
    const data = [
      { type: "scatter", mode: "lines", x: [1, 2, 3], y: [i, 2, 1], name: "a" },
      { type: "bar", x: [1, 2, 3], y: [1, i, 2], name: "b" },
    ];
    const layout = { title: { text: "warm-up" }, xaxis: { automargin: true }, yaxis: { automargin: true, type: i % 2 ? "log" : "linear" } };
    await Plotly.react(box, data, layout, { displayModeBar: false });
  }
  Plotly.purge(box);
  box.remove();
  (globalThis.llmCourse ??= {}).chartsWarm = true; // read by the benchmark
}

const WARM_UP_DRAWS = 3;

export async function draw(element, figure) {
  await loadScript(PLOTLY);
  element.querySelector(":scope > .sim-static-chart")?.remove(); // the first live chart replaces it
  await Plotly.react(element, figure.data, themed(figure.layout), { responsive: true, displaylogo: false });
}
function themed(layout) {
  const css = getComputedStyle(document.body);
  const fg = css.getPropertyValue("--md-default-fg-color").trim();
  const grid = css.getPropertyValue("--md-default-fg-color--lightest").trim();
  const axis = (a) => ({ ...a, gridcolor: grid, zerolinecolor: grid, linecolor: grid });
  const out = { ...layout, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { ...layout.font, color: fg } };
  // The toolbar's icons in the palette's colours (plotly's default grey vanishes on the dark one).
  out.modebar = { bgcolor: "rgba(0,0,0,0)", color: css.getPropertyValue("--md-default-fg-color--light").trim(), activecolor: fg, ...layout.modebar };
  // No animated transitions when the reader asks for reduced motion.
  if (matchMedia("(prefers-reduced-motion: reduce)").matches) out.transition = { duration: 0 };
  for (const key of Object.keys(layout)) if (/^[xy]axis\d*$/.test(key)) out[key] = axis(layout[key]);
  return out;
}
