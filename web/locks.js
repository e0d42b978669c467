// The held locks: read from GET /v1/locks (with the locks under
// lock-delay), filtered, and kept on the page in place, with each shown
// lock's queue from GET /v1/locks/{name}.

import { api, clearProblem, lockPath, showProblem } from "./api.js";
import { renderDelays } from "./delays.js";
import { $, markFresh, setText } from "./dom.js";
import { buildLock, updateLock } from "./lockrow.js";
import { linkSets } from "./lockset.js";
import { coalesce, debounce } from "./schedule.js";
import { state } from "./state.js";

const LIST_PAGE = 1000; // the API's largest page
const LIST_MAX_PAGES = 5; // show at most 5,000 locks
const WAITERS_FOR_ALL = 20; // fetch every lock's queue when this few are shown

const holdersTable = $("holders-table");
// markSets marks the rows of the set pointed at or focused in the table
// (class set-linked): again after each render, so that a member that
// arrives meanwhile is marked too.
const markSets = linkSets(holdersTable, "tbody[data-set]", "set-linked");

// hooks are set by initLocks: revoke(l) opens the revoke dialog for a
// hold, rendered() runs after every render.
const hooks = { revoke: () => {}, rendered: () => {} };

async function loadLocks() {
  const prefix = $("filter-prefix").value.trim();
  const locks = [];
  const delays = [];
  let cursor = "";
  let pages = 0;
  try {
    do {
      const q = new URLSearchParams({ limit: String(LIST_PAGE) });
      if (prefix) q.set("prefix", prefix);
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/locks?${q}`);
      locks.push(...(page.locks || []));
      delays.push(...(page.delayed || []));
      cursor = page.next_cursor || "";
      pages++;
    } while (cursor && pages < LIST_MAX_PAGES);
  } catch (err) {
    showProblem($("holders-error"), err);
    if (err.status === 400) {
      // The filter itself is wrong (say, a character no lock name has):
      // the list it would have shown is empty.
      state.locks = [];
      state.loaded = true;
      state.truncated = false;
      renderHolders();
    }
    return;
  }
  if (prefix !== $("filter-prefix").value.trim()) {
    loadLocksSoon(); // the filter changed meanwhile: this answer is stale
    return;
  }
  clearProblem($("holders-error"));
  state.locks = locks;
  state.delays = delays;
  state.loaded = true;
  state.truncated = cursor !== "";
  renderHolders();
  loadQueuesSoon();
}

// loadLocksSoon reloads the held locks, once for a burst of calls.
export const loadLocksSoon = coalesce(loadLocks, 150);

let renderTimer = 0;

// renderHoldersSoon renders once after the current task, however many
// holds it drops.
function renderHoldersSoon() {
  if (!renderTimer)
    renderTimer = setTimeout(() => {
      renderTimer = 0;
      renderHolders();
    }, 0);
}

function shownLocks() {
  const owner = $("filter-owner").value.trim().toLowerCase();
  return owner ? state.locks.filter((l) => (l.owner || "").toLowerCase().includes(owner)) : state.locks;
}

// renderHolders brings the table up to date with state.
export function renderHolders() {
  const shown = shownLocks();
  const filtered = $("filter-prefix").value.trim() !== "" || $("filter-owner").value.trim() !== "";
  const count = $("holders-count");
  setText(count, state.loaded ? (shown.length === state.locks.length ? `${shown.length}` : `${shown.length} of ${state.locks.length}`) : "");
  renderRows(shown);

  holdersTable.hidden = shown.length === 0;
  $("holders-empty").hidden = !(state.loaded && state.locks.length === 0 && !filtered);
  $("holders-nomatch").hidden = !(state.loaded && shown.length === 0 && filtered);
  const trunc = $("holders-truncated");
  trunc.hidden = !state.truncated;
  if (state.truncated) trunc.textContent = `Showing the first ${state.locks.length} locks by name. Narrow the list with a name prefix.`;
  hooks.rendered();
  renderDelays(state.delays, loadLocksSoon);
}

// renderRows keeps one tbody per lock (its row and the row of its queue),
// keyed by name, updated in place: a refresh does not take the focus from
// a button.
function renderRows(shown) {
  const old = new Map();
  for (const tb of holdersTable.tBodies) old.set(tb.dataset.lock, tb);
  let prev = holdersTable.tHead;
  for (const l of shown) {
    let tb = old.get(l.name);
    old.delete(l.name);
    if (tb && tb.dataset.token !== String(l.token)) {
      tb.remove(); // a new holder: a new row
      tb = undefined;
    }
    if (!tb) {
      tb = buildLock(l, { revoke: hooks.revoke, toggle: toggleQueue });
      if (state.loaded && holdersTable.dataset.ready) markFresh(tb);
    }
    updateLock(tb, l);
    if (prev.nextElementSibling !== tb) prev.after(tb);
    prev = tb;
  }
  for (const tb of old.values()) tb.remove();
  holdersTable.dataset.ready = "1";
  markSets();
}

// dropHold removes a hold that an event ended, before the reload confirms
// it: only that token's row, never a newer holder's.
export function dropHold(name, token) {
  const i = state.locks.findIndex((l) => l.name === name && (!token || l.token === token));
  if (i >= 0) {
    state.locks.splice(i, 1);
    renderHoldersSoon(); // a session's end drops many at once: render once
  }
}

function toggleQueue(name) {
  if (state.expanded.has(name)) state.expanded.delete(name);
  else state.expanded.add(name);
  renderHolders();
  if (state.expanded.has(name)) loadQueues([name]);
}

// loadQueues reads GET /v1/locks/{name} for its waiters, four at a time.
async function loadQueues(names) {
  const work = names.slice();
  const one = async () => {
    for (let name = work.shift(); name !== undefined; name = work.shift()) {
      try {
        const l = await api(lockPath(name));
        // An empty queue is left out of the answer.
        state.queues.set(name, { token: l.token, waiters: Array.isArray(l.waiters) ? l.waiters : [] });
      } catch (err) {
        if (err.status === 404) state.queues.delete(name); // it just ended; an event follows
        else {
          const held = state.locks.find((x) => x.name === name);
          state.queues.set(name, { token: held ? held.token : 0, error: err.message });
        }
      }
    }
  };
  await Promise.all([one(), one(), one(), one()]);
  renderHolders();
}

function queueNames() {
  const shown = shownLocks();
  if (shown.length <= WAITERS_FOR_ALL) return shown.map((l) => l.name);
  return shown.filter((l) => state.expanded.has(l.name)).map((l) => l.name);
}

// loadQueuesSoon reloads the queues of the shown locks (of those opened,
// when many are shown).
export const loadQueuesSoon = coalesce(() => loadQueues(queueNames()), 1000);

// initLocks wires the filters. revoke(l) opens the revoke dialog for the
// hold l; rendered() runs after each render of the table.
export function initLocks({ revoke, rendered }) {
  hooks.revoke = revoke;
  hooks.rendered = rendered;
  $("holders-filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("filter-prefix").addEventListener("input", debounce(loadLocksSoon, 250));
  $("filter-owner").addEventListener("input", () => {
    renderHolders();
    loadQueuesSoon();
  });
  $("holders-clear").addEventListener("click", () => {
    $("filter-prefix").value = "";
    $("filter-owner").value = "";
    loadLocksSoon();
    renderHolders();
  });
}
