// The semaphores that have permits held: read from GET /v1/semaphores a
// page at a time, kept on the page in place, changed by the stream's
// semaphore events as they come, with each shown semaphore's permits as
// they are now and its waiters from GET /v1/semaphores/{name}.

import { api, clearProblem, semaphorePath, showProblem } from "./api.js";
import { $, markFresh, setText } from "./dom.js";
import { buildSemaphore, updateSemaphore } from "./semaphorerow.js";
import { coalesce, debounce } from "./schedule.js";
import { state } from "./state.js";

const LIST_PAGE = 1000; // the API's largest page
const LIST_MAX_PAGES = 5; // read at most 5 pages of semaphores
const WAITERS_FOR_ALL = 20; // fetch every semaphore's waiters when this few are shown
const ENDED = new Set(["released", "expired", "session_expired", "revoked"]);

const ss = state.semaphores;
const table = $("semaphores-table");

// hooks are set by initSemaphores: revoke(p) opens the revoke dialog for
// a permit, rendered() runs after every render.
const hooks = { revoke: () => {}, rendered: () => {} };

function prefix() {
  return $("semaphores-prefix").value.trim();
}

// Events change the list while reads of it are under way: applied counts
// the semaphore events applied, and changed holds, for each name, the
// count at its latest event, so that an answer to a read sent before it
// is not taken over it. reads counts the reads under way; changed is
// cleared when none is.
let applied = 0;
const changed = new Map();
let reads = 0;

// read runs fn(since), where since is the event count when it started,
// as one read.
async function read(fn) {
  reads++;
  try {
    return await fn(applied);
  } finally {
    if (--reads === 0) changed.clear();
  }
}

// newer says whether an event about name was applied after since.
function newer(name, since) {
  return (changed.get(name) || 0) > since;
}

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

// merge is the list read, except for the names an event changed after
// since, which keep what the events made of them.
function merge(list, since) {
  const out = list.filter((s) => !newer(s.name, since));
  for (const s of ss.list) if (newer(s.name, since)) out.push(s);
  return out.sort(byName);
}

async function readList(since) {
  const want = prefix();
  const list = [];
  let cursor = "";
  let pages = 0;
  try {
    do {
      const q = new URLSearchParams({ limit: String(LIST_PAGE) });
      if (want) q.set("prefix", want);
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/semaphores?${q}`);
      list.push(...(page.semaphores || []));
      cursor = page.next_cursor || "";
      pages++;
    } while (cursor && pages < LIST_MAX_PAGES);
  } catch (err) {
    showProblem($("semaphores-error"), err);
    if (err.status === 400) {
      ss.list = []; // the filter itself is wrong: it matches nothing
      ss.loaded = true;
      ss.truncated = false;
      renderSemaphores();
    }
    return;
  }
  if (want !== prefix()) {
    loadSemaphoresSoon(); // the filter changed meanwhile: this answer is stale
    return;
  }
  clearProblem($("semaphores-error"));
  ss.list = merge(list, since);
  ss.loaded = true;
  ss.truncated = cursor !== "";
  renderSemaphores();
  loadWaitersSoon();
}

// loadSemaphoresSoon reads the semaphores again, once for a burst of calls.
export const loadSemaphoresSoon = coalesce(() => read(readList), 150);

let renderTimer = 0;

// renderSoon renders once after the current task, however many events
// it applies (a session's end ends many permits at once).
function renderSoon() {
  if (!renderTimer)
    renderTimer = setTimeout(() => {
      renderTimer = 0;
      renderSemaphores();
    }, 0);
}

// renderSemaphores brings the table up to date with state.
export function renderSemaphores() {
  setText($("semaphores-count"), ss.loaded ? `${ss.list.length}` : "");
  renderRows();
  table.hidden = ss.list.length === 0;
  $("semaphores-empty").hidden = !(ss.loaded && ss.list.length === 0 && !prefix());
  const nomatch = $("semaphores-nomatch");
  nomatch.hidden = !(ss.loaded && ss.list.length === 0 && prefix());
  if (!nomatch.hidden) setText(nomatch, `No semaphore whose name starts with “${prefix()}” has a permit held.`);
  const trunc = $("semaphores-truncated");
  trunc.hidden = !ss.truncated;
  if (ss.truncated) trunc.textContent = `Showing the first ${ss.list.length} semaphores by name. Narrow the list with a name prefix.`;
  hooks.rendered();
}

// renderRows keeps one tbody per semaphore (its row, a row per permit and
// the row of its waiters), keyed by name, updated in place: a refresh
// does not take the focus from a button.
function renderRows() {
  const old = new Map();
  for (const tb of table.tBodies) old.set(tb.dataset.semaphore, tb);
  let prev = table.tHead;
  for (const s of ss.list) {
    let tb = old.get(s.name);
    old.delete(s.name);
    if (!tb) {
      tb = buildSemaphore(s, { toggle: toggleWaiters });
      if (table.dataset.ready) markFresh(tb);
    }
    updateSemaphore(tb, s, { revoke: revokeShown, fresh: table.dataset.ready === "1" });
    if (prev.nextElementSibling !== tb) prev.after(tb);
    prev = tb;
  }
  for (const tb of old.values()) tb.remove();
  if (ss.loaded) table.dataset.ready = "1";
}

// revokeShown opens the revoke dialog for permit p as the page shows it
// now.
function revokeShown(p) {
  const s = ss.list.find((x) => x.name === p.name);
  hooks.revoke((s && s.holders.find((x) => x.token === p.token)) || p);
}

// shown says whether the semaphore name belongs on the page: under the
// prefix and, when the list stopped short, within the names read.
function shown(name) {
  if (!name.startsWith(prefix())) return false;
  return !ss.truncated || ss.list.length === 0 || name <= ss.list[ss.list.length - 1].name;
}

// put places the semaphore s in the list, in name order.
function put(s) {
  const i = ss.list.findIndex((x) => x.name >= s.name);
  if (i < 0) ss.list.push(s);
  else if (ss.list[i].name === s.name) ss.list[i] = s;
  else ss.list.splice(i, 0, s);
}

function drop(name) {
  const i = ss.list.findIndex((x) => x.name === name);
  if (i >= 0) ss.list.splice(i, 1);
}

// semaphoreEvent applies an event of the stream at once, then reads the
// semaphore for what the event does not say (expiry, metadata, waiters).
export function semaphoreEvent(e) {
  if (e.kind !== "semaphore" || !ss.loaded || !shown(e.name)) return;
  const cur = ss.list.find((x) => x.name === e.name);
  if (e.type === "acquired") {
    const s = cur || { name: e.name, limit: e.limit, holders: [] };
    if (e.limit) s.limit = e.limit;
    if (!s.holders.some((p) => p.token === e.token))
      s.holders.push({ name: e.name, owner: e.owner, token: e.token, limit: s.limit, session: e.session, acquired_at: e.time, metadata: {} });
    put(s);
  } else if (ENDED.has(e.type)) {
    if (cur) {
      cur.holders = cur.holders.filter((p) => e.token && p.token !== e.token);
      if (cur.holders.length === 0) drop(e.name);
    }
  } else return;
  changed.set(e.name, ++applied);
  refresh(e.name);
  renderSoon();
}

const stale = new Set(); // names to read again with GET /v1/semaphores/{name}
const readStale = coalesce(() => {
  const names = [...stale];
  stale.clear();
  return loadDetails(names);
}, 150);

function refresh(name) {
  stale.add(name);
  readStale();
}

// loadDetails reads GET /v1/semaphores/{name} for each of names, four at
// a time: the permits held now, and the waiters.
function loadDetails(names) {
  return read(async (since) => {
    const work = names.slice();
    const one = async () => {
      for (let name = work.shift(); name !== undefined; name = work.shift()) await loadOne(name, since);
    };
    await Promise.all([one(), one(), one(), one()]);
    renderSemaphores();
  });
}

async function loadOne(name, since) {
  try {
    const s = await api(semaphorePath(name));
    if (newer(name, since)) {
      refresh(name); // an event overtook the answer: read it again
      return;
    }
    ss.waiters.set(name, { waiters: Array.isArray(s.waiters) ? s.waiters : [] }); // none is left out
    if (shown(name)) put({ name: s.name, limit: s.limit, holders: s.holders || [] });
  } catch (err) {
    if (newer(name, since)) refresh(name);
    else if (err.status === 404) {
      // No permit is held now: the event that says so is on its way, or
      // was applied already.
      ss.waiters.delete(name);
      drop(name);
    } else ss.waiters.set(name, { error: err.message });
  }
}

function toggleWaiters(name) {
  if (ss.expanded.has(name)) ss.expanded.delete(name);
  else ss.expanded.add(name);
  renderSemaphores();
  if (ss.expanded.has(name)) loadDetails([name]);
}

function detailNames() {
  if (ss.list.length <= WAITERS_FOR_ALL) return ss.list.map((s) => s.name);
  return ss.list.filter((s) => ss.expanded.has(s.name)).map((s) => s.name);
}

// loadWaitersSoon reads the shown semaphores (those opened, when many are
// shown) again: a waiter joining the line makes no event, and a renewal
// moves an expiry without one.
export const loadWaitersSoon = coalesce(() => loadDetails(detailNames()), 1000);

// initSemaphores wires the filter. revoke(p) opens the revoke dialog for
// the permit p; rendered() runs after each render of the table.
export function initSemaphores({ revoke, rendered }) {
  hooks.revoke = revoke;
  hooks.rendered = rendered;
  $("semaphores-filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("semaphores-prefix").addEventListener("input", debounce(loadSemaphoresSoon, 250));
}
