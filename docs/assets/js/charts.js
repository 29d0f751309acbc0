// Plotly drawing for the widgets: the bundle loads on the first page with a chart, and figures
// follow the light/dark palette. Plotly's global rules live in a stylesheet every page links
// (overrides/main.html), so they survive instant navigation and need no inline <style>.
import { loadScript } from "./load-script.js";

export async function draw(element, figure) {
  await loadScript("../vendor/plotly/plotly.min.js");
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
