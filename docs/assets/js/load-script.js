// Loads a classic script (plotly.js, KaTeX) once per tab, when a page first needs it.
const loading = new Map();

export function loadScript(url) {
  const href = new URL(url, import.meta.url).href;
  if (!loading.has(href)) {
    loading.set(href, new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = href;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${href}`));
      document.head.appendChild(script);
    }));
  }
  return loading.get(href);
}
