// Small DOM helpers. Every value that comes from the API is put on the page
// as text (textContent, text nodes), never parsed as HTML: lock names,
// owners and metadata are chosen by clients.

export const $ = (id) => document.getElementById(id);

// el builds an element; attrs are attributes (class via "class"), kids are
// nodes or strings (added as text, never parsed as HTML).
export function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    n.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    n.append(k instanceof Node ? k : String(k));
  }
  return n;
}

export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

// cell is a table cell that names its column, for the narrow layout that
// shows rows as cards.
export function cell(label, ...kids) {
  return el("td", { "data-label": label }, ...kids);
}

// linkClass keeps a lock name on one line (names break at hyphens
// otherwise) unless it is too long for any column.
export function linkClass(name, extra) {
  return ["lock-link", name.length > 32 ? "long" : "", extra || ""].filter(Boolean).join(" ");
}

// markFresh flashes a new row once. The class goes when the flash ends,
// so that moving the row later does not flash it again.
export function markFresh(node) {
  node.classList.add("fresh");
  setTimeout(() => node.classList.remove("fresh"), 2000);
}
