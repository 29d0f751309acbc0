// Plotly drawing for the live charts. The bundle loads once the runtime is ready: the charts a page
// opens with are static SVG drawn at build time (sitebuild/static_chart.py), which plotly then
// replaces. Figures follow the light/dark palette. Plotly's global rules live in a stylesheet every
// page links (overrides/main.html), so they survive instant navigation and need no inline <style>.
import { loadScript } from "./load-script.js";

const PLOTLY = "../vendor/plotly/plotly.min.js";

export function preload() {
  return loadScript(PLOTLY);
}

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
