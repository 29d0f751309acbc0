// The DOM helpers the page scripts share.

// Only a different text is written: an unchanged one would still make the browser lay the page out again.
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

export function tag(name, attrs = {}, ...children) {
  const el = document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

// Loads a classic script (plotly.js, KaTeX) once per tab, when a page first needs it.
const loading = new Map();

export function loadScript(url) {
  const href = new URL(url, import.meta.url).href;
  if (!loading.has(href)) {
    loading.set(href, new Promise((resolve, reject) => {
      const script = tag("script", { src: href });
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${href}`));
      document.head.appendChild(script);
    }));
  }
  return loading.get(href);
}
