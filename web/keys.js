// The keys of coordination data (GET /v1/kv), browsed as a tree: the
// keys directly under the path shown, with their values, and a row for
// each folder below it with how many keys and members (keys bound to a
// session) it holds. The page's event stream brings every key's put and
// delete with its value (kind key): a change under the path changes its
// row in place. The listing says the revision it was read at, and the
// changes the stream brought during the read are applied after it when
// they are newer, so a change is never lost between the two.

import { api, clearProblem, showProblem } from "./api.js";
import { $, cell, el, keepRows, markFresh, setText } from "./dom.js";
import { coalesce, debounce } from "./schedule.js";
import { state } from "./state.js";

const PAGE = 500; // keys read per request
const MAX_PAGES = 4; // a path with more keys shows the first ones only
const VALUE_CHARS = 120; // a value's text in its cell; the title holds it all

const st = state.keys;
const prefix = () => $("keys-prefix").value.trim();

// read reads the keys under want, at most MAX_PAGES pages, and the
// revision of the first page's read.
async function read(want) {
  const list = [];
  let cursor = "";
  let revision = 0;
  let pages = 0;
  do {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (want) q.set("prefix", want);
    if (cursor) q.set("cursor", cursor);
    const page = await api(`/v1/kv?${q}`);
    list.push(...(page.keys || []));
    revision = revision || page.revision;
    cursor = page.next_cursor || "";
    pages++;
  } while (cursor && pages < MAX_PAGES);
  return { list, cursor, revision };
}

async function load() {
  const want = prefix();
  st.pending = [];
  let got;
  try {
    got = await read(want);
  } catch (err) {
    st.pending = null;
    showProblem($("keys-error"), err);
    if (err.status === 400) {
      st.list = []; // the path itself is wrong: it holds nothing
      st.loaded = true;
      st.truncated = false;
      render();
    }
    return;
  }
  const pending = st.pending;
  st.pending = null;
  if (want !== prefix()) {
    loadSoon(); // the path changed meanwhile: this answer is stale
    return;
  }
  clearProblem($("keys-error"));
  st.list = got.list;
  st.shownPrefix = want;
  st.loaded = true;
  st.truncated = got.cursor !== "";
  for (const e of pending) if (e.revision > got.revision) apply(e);
  render();
}

// loadSoon reads the keys again, once for a burst of calls.
export const loadKeysSoon = coalesce(load, 150);

// shown says whether key belongs on the page: under the path and, when
// the listing stopped short, among the keys it read.
function shown(key) {
  if (!key.startsWith(st.shownPrefix)) return false;
  return !st.truncated || st.list.length === 0 || key <= st.list[st.list.length - 1].key;
}

// keyEvent takes an event of the page's stream; a key's changes the
// page shows are applied in place.
export function keyEvent(e) {
  if (e.kind !== "key") return;
  if (st.pending) st.pending.push(e);
  if (!st.loaded || !shown(e.name)) return;
  if (e.type === "put" && e.value === undefined) {
    loadKeysSoon(); // a replayed put: the history keeps no values
    return;
  }
  apply(e);
  renderSoon();
}

// apply makes the list say what a put or a delete did.
function apply(e) {
  const i = st.list.findIndex((k) => k.key >= e.name);
  const here = i >= 0 && st.list[i].key === e.name;
  if (e.type === "delete") {
    if (here) st.list.splice(i, 1);
    return;
  }
  if (e.type !== "put") return;
  const k = { key: e.name, value: e.value, revision: e.revision, created_revision: e.created_revision, version: e.version, session: e.session };
  if (here) st.list[i] = k;
  else if (i < 0) st.list.push(k);
  else st.list.splice(i, 0, k);
  st.changed.add(e.name);
}

let renderTimer = 0;

// renderSoon renders once after the current task, however many events it
// applies (a session's end deletes its keys at once).
function renderSoon() {
  if (!renderTimer)
    renderTimer = setTimeout(() => {
      renderTimer = 0;
      render();
    }, 0);
}

// rows are the table's rows: a key directly under the path, or a folder
// with the keys and members below it, in key order.
function rows() {
  const out = [];
  const folders = new Map();
  for (const k of st.list) {
    const rest = k.key.slice(st.shownPrefix.length);
    const slash = rest.indexOf("/");
    if (slash < 0) {
      out.push({ key: k });
      continue;
    }
    const name = rest.slice(0, slash);
    let f = folders.get(name);
    if (!f) {
      f = { folder: name, keys: 0, members: 0 };
      folders.set(name, f);
      out.push(f);
    }
    f.keys++;
    if (k.session) f.members++;
  }
  return out;
}

function render() {
  const members = st.list.filter((k) => k.session).length;
  setText($("keys-count"), st.loaded ? `${st.list.length}${members ? ` · ${members} member${members === 1 ? "" : "s"}` : ""}` : "");
  renderPath();
  const table = $("keys-table");
  table.hidden = st.list.length === 0;
  $("keys-empty").hidden = !(st.loaded && st.list.length === 0 && !st.shownPrefix);
  const nomatch = $("keys-nomatch");
  nomatch.hidden = !(st.loaded && st.list.length === 0 && st.shownPrefix);
  if (!nomatch.hidden) setText(nomatch, `No key is stored under “${st.shownPrefix}”.`);
  const trunc = $("keys-truncated");
  trunc.hidden = !st.truncated;
  if (st.truncated) setText(trunc, `Showing the first ${st.list.length} keys under this path. Open a folder, or narrow the path, for the rest.`);
  let body = table.tBodies[0];
  if (!body) body = table.appendChild(el("tbody"));
  keepRows(
    body,
    rows(),
    (r) => (r.key ? `k:${r.key.key}` : `f:${r.folder}`),
    (r) => (r.key ? `${r.key.revision}:${r.key.session || ""}` : `${r.keys}:${r.members}`),
    (r) => (r.key ? keyRow(r.key) : folderRow(r)),
  );
  st.changed.clear();
}

function keyRow(k) {
  const text = JSON.stringify(k.value);
  const shortText = text && text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS - 1)}…` : text;
  const tr = el(
    "tr",
    { "data-testid": "key-row", "data-key": k.key },
    cell("Key", el("span", { class: "key-name" }, k.key.slice(st.shownPrefix.length))),
    cell("Value", el("code", { class: "key-value", title: text, "data-testid": "key-value" }, shortText ?? "")),
    cell("Revision", String(k.revision)),
    cell("Version", String(k.version)),
    cell("Session", k.session ? el("span", { class: "badge member", title: "A member: the key goes when its session ends", "data-testid": "key-member" }, `member · ${k.session}`) : ""),
  );
  if (st.changed.has(k.key)) markFresh(tr);
  return tr;
}

function folderRow(f) {
  const open = el("button", { type: "button", class: "link-button folder", "data-testid": "key-folder", "data-folder": f.folder }, `${f.folder}/`);
  open.addEventListener("click", () => go(`${st.shownPrefix}${f.folder}/`));
  const what = `${f.keys} key${f.keys === 1 ? "" : "s"}${f.members ? `, ${f.members} member${f.members === 1 ? "" : "s"}` : ""}`;
  return el("tr", { "data-testid": "folder-row" }, cell("Key", open), cell("Value", el("span", { class: "detail" }, what)), cell("Revision", ""), cell("Version", ""), cell("Session", ""));
}

// renderPath shows where the table is, each step a way back up.
function renderPath() {
  const nav = $("keys-path");
  const steps = [["all keys", ""]];
  const parts = st.shownPrefix.split("/").filter(Boolean);
  parts.forEach((p, i) => steps.push([p, `${parts.slice(0, i + 1).join("/")}/`]));
  nav.replaceChildren(
    ...steps.flatMap(([label, to], i) => {
      const last = i === steps.length - 1;
      const step = last ? el("span", { "aria-current": "location" }, label) : el("button", { type: "button", class: "link-button" }, label);
      if (!last) step.addEventListener("click", () => go(to));
      return i === 0 ? [step] : [" / ", step];
    }),
  );
}

// go shows the keys under to.
function go(to) {
  $("keys-prefix").value = to;
  loadKeysSoon();
}

export function initKeys() {
  $("keys-filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("keys-prefix").addEventListener("input", debounce(loadKeysSoon, 250));
}
