// The history: GET /v1/history, filtered, a page of events at a time,
// newest first.

import { api, clearProblem, showProblem } from "./api.js";
import { timeEl } from "./clock.js";
import { $, cell, el, linkClass, markFresh, setText } from "./dom.js";
import { inSet, setNote, setTitle, withNote } from "./lockset.js";
import { coalesce, debounce } from "./schedule.js";
import { state } from "./state.js";

const HISTORY_PAGE = 25;

const historyRows = $("history-rows");

function historyQuery() {
  const q = new URLSearchParams({ limit: String(HISTORY_PAGE) });
  const lock = $("history-lock").value.trim();
  const owner = $("history-owner").value.trim();
  const type = $("history-type").value;
  if (lock) q.set("lock", lock);
  if (owner) q.set("owner", owner);
  if (type) q.set("type", type);
  if (state.history.before) q.set("before", String(state.history.before));
  return q.toString();
}

async function loadHistory() {
  const query = historyQuery();
  let page;
  try {
    page = await api(`/v1/history?${query}`);
  } catch (err) {
    showProblem($("history-error"), err);
    // A refused filter (a lock the credential may not read, say) shows
    // no rows: those of another filter would pass for its answer.
    if (err.status === 400 || err.status === 403) {
      renderRows([]);
      $("history-table").hidden = true;
      $("history-empty").hidden = true;
    }
    return;
  }
  if (query !== historyQuery()) {
    loadHistorySoon(); // filters or page changed meanwhile
    return;
  }
  clearProblem($("history-error"));
  state.history.next = page.next_before || 0;
  renderHistory(page.events || []);
}

// loadHistorySoon reloads the page of history shown, once for a burst of
// calls.
export const loadHistorySoon = coalesce(loadHistory, 150);

// resetHistoryPaging goes back to the newest page.
export function resetHistoryPaging() {
  state.history.before = 0;
  state.history.older = [];
}

// eventKey names an event among those of a page: one revision can end
// several holds (a session's), of locks or of other kinds.
function eventKey(e) {
  return `${e.revision}/${e.type}/${e.kind || "lock"}/${e.name || e.lock}`;
}

function renderHistory(events) {
  renderRows(events);
  $("history-table").hidden = events.length === 0;
  $("history-empty").hidden = events.length !== 0;
  const filtered = ["history-lock", "history-owner", "history-type"].some((id) => $(id).value.trim() !== "");
  setText(
    $("history-empty"),
    filtered || state.history.before
      ? "No events match these filters."
      : "Nothing has happened yet. Every acquire, release, expiry and revoke will show here, newest first.",
  );
  const h = state.history;
  $("history-newer").disabled = h.before === 0;
  $("history-older").disabled = h.next === 0;
  setText($("history-page"), h.before === 0 ? "newest" : `page ${h.older.length + 1}`);
}

// renderRows keeps one row per event, keyed, in the answer's order; rows
// new to the same page and filters flash.
function renderRows(events) {
  const fresh = historyRows.dataset.page === String(state.history.before) && historyRows.dataset.filter === historyQuery();
  const old = new Map();
  for (const tr of historyRows.rows) old.set(tr.dataset.key, tr);
  let prev = null;
  for (const e of events) {
    const key = eventKey(e);
    let tr = old.get(key);
    old.delete(key);
    if (!tr) {
      tr = buildEvent(e);
      if (fresh) markFresh(tr);
    }
    if (prev === null) {
      if (historyRows.firstElementChild !== tr) historyRows.prepend(tr);
    } else if (prev.nextElementSibling !== tr) prev.after(tr);
    prev = tr;
  }
  for (const tr of old.values()) tr.remove();
  historyRows.dataset.page = String(state.history.before);
  historyRows.dataset.filter = historyQuery();
}

function buildEvent(e) {
  // Another primitive's event (an election's, say) names no lock: it shows
  // its name and kind, with no link to follow a lock by.
  const link =
    e.kind && e.kind !== "lock"
      ? el("span", { class: linkClass(e.name || ""), "data-testid": "history-name" }, e.name || "", " ", el("span", { class: "kind" }, e.kind))
      : el(
          "a",
          { href: `#lock=${encodeURIComponent(e.lock)}`, class: linkClass(e.lock), title: `Show ${e.lock}: its history, and its row if held` },
          e.lock,
        );
  return el(
    "tr",
    { "data-testid": "history-row", "data-key": eventKey(e), "data-type": e.type, "data-lock": e.lock, "data-kind": e.kind || "lock", "data-name": e.name || e.lock },
    cell("When", timeEl("ago", e.time)),
    cell("Event", el("span", { class: `badge ${e.type}`, "data-testid": "history-type" }, e.type.replace("_", " "))),
    cell("Lock", inSet(e) ? withNote(link, setNote(e.set, e.lock, `One of a ${setTitle(e.set)}, with token ${e.token}`, "history-set")) : link),
    // The owner is what the client said; the credential, what auth proved.
    cell("Owner", el("span", { class: "owner", title: e.credential ? `credential ${e.credential}` : undefined, "data-credential": e.credential }, e.owner || "—")),
    cell("Token", e.token ? el("code", {}, e.token) : el("span", { class: "none" }, "—")),
    // A request to yield says why in reason; its owner is the asker's.
    el("td", { "data-label": "Detail", class: "detail" }, e.detail || e.reason || ""),
    cell("Revision", el("code", { class: "rev" }, e.revision)),
  );
}

// initHistory wires the filters and the pager. filtered runs when a filter
// changes, after paging is reset and before the reload.
export function initHistory(filtered) {
  const filter = () => {
    resetHistoryPaging();
    filtered();
    loadHistorySoon();
  };
  $("history-filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("history-lock").addEventListener("input", debounce(filter, 250));
  $("history-owner").addEventListener("input", debounce(filter, 250));
  $("history-type").addEventListener("change", filter);
  $("history-older").addEventListener("click", () => {
    const h = state.history;
    if (!h.next) return;
    h.older.push(h.before);
    h.before = h.next;
    loadHistorySoon();
  });
  $("history-newer").addEventListener("click", () => {
    const h = state.history;
    h.before = h.older.pop() || 0;
    loadHistorySoon();
  });
}
