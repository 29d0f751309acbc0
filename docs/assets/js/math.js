// Renders the page's math (pymdownx.arithmatex, generic mode) with the vendored KaTeX, offline.
import { loadScript } from "./dom.js";

document$.subscribe(async () => {
  const nodes = [...document.querySelectorAll(".arithmatex")];
  if (nodes.length === 0) return;
  await loadScript("../vendor/katex/katex.min.js");
  for (const node of nodes) {
    const source = node.textContent.trim(); // "\(…\)" inline or "\[…\]" display
    katex.render(source.slice(2, -2), node, { displayMode: source.startsWith("\\["), throwOnError: false });
  }
});
