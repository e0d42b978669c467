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

// built holds, for each row keepRows built, its item's key and what the
// row showed when built.
const built = new WeakMap();

// keepRows makes the children of parent one row per item, in order. A row
// is kept while its item says the same (say(item), a string) as when it
// was built, and built anew by build(item) only when that changes: lists
// that a refresh or an event redraws do not take the focus from a button
// or a link, nor the element from under a click. key(item) names an
// item's row; rows of items no longer there are removed. Only keepRows
// puts children in parent.
export function keepRows(parent, items, key, say, build) {
  const old = new Map();
  for (const row of parent.children) {
    const b = built.get(row);
    if (b) old.set(b.key, row);
  }
  let prev = null;
  for (const item of items) {
    const k = key(item);
    const says = say(item);
    let row = old.get(k);
    old.delete(k);
    if (!row || built.get(row).says !== says) {
      const fresh = build(item);
      built.set(fresh, { key: k, says });
      if (row) row.replaceWith(fresh);
      row = fresh;
    }
    if (prev === null) {
      if (parent.firstElementChild !== row) parent.prepend(row);
    } else if (prev.nextElementSibling !== row) prev.after(row);
    prev = row;
  }
  for (const row of old.values()) row.remove();
}
