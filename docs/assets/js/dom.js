// The two DOM helpers every widget module uses.

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
