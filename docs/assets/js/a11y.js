// A box whose content scrolls sideways (a wide table in the theme's .md-typeset__scrollwrap, display
// math) takes a Tab stop, so the arrow keys scroll it (axe: scrollable-region-focusable). Rechecked on
// every page and whenever the window's width changes.
const SCROLLERS = ".md-typeset__scrollwrap, .md-typeset div.arithmatex";

function focusable() {
  for (const box of document.querySelectorAll(SCROLLERS)) {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls && !box.hasAttribute("tabindex")) {
      box.tabIndex = 0;
      box.dataset.scrollStop = "";
    } else if (!scrolls && box.hasAttribute("data-scroll-stop")) {
      box.removeAttribute("tabindex");
      box.removeAttribute("data-scroll-stop");
    }
  }
}

// After the theme has wrapped the tables of the new page (it does so on the same document$ event).
document$.subscribe(() => requestAnimationFrame(focusable));
let timer;
addEventListener("resize", () => {
  clearTimeout(timer);
  timer = setTimeout(focusable, 150);
});
