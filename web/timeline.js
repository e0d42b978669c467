// The timeline: who held each lock, semaphore and read/write lock when,
// and who waited for it, over a window ending now. It reads the window
// from GET /v1/history, then follows the page's event stream;
// timelineholds.js turns the events into holds, timelinesvg.js draws them
// and busiest.js tabulates them.

import { api, clearProblem, showProblem } from "./api.js";
import { renderBusiest } from "./busiest.js";
import { now } from "./clock.js";
import { $, setText } from "./dom.js";
import { linkSets } from "./lockset.js";
import { coalesce } from "./schedule.js";
import { state } from "./state.js";
import { KINDS, heldHolds, isHoldEvent, laneHolds, readHolds, thingKey, thingLabel, thingOf, thingStats } from "./timelineholds.js";
import { drawTimeline } from "./timelinesvg.js";

// SPANS are the windows the zoom buttons choose, by their label. The
// button "fit", the first one, chooses the window from the data instead:
// from the oldest event a read of the last FIT_MAX reaches, within the
// budget, to now, and at least FIT_MIN. A new node's few minutes of holds
// then fill the chart rather than a corner of a fixed window, and a busy
// node's window is what the budget could read, with nothing unread in it.
const SPANS = { "1m": 60e3, "5m": 300e3, "15m": 900e3, "1h": 3600e3, "6h": 21600e3, "24h": 86400e3 };
const FIT_MIN = 10e3;
const FIT_MAX = 86400e3;

// budget is how much a window load reads: at most pages pages of size
// events. A filtered page may hold fewer events than asked (the server
// reads a bounded number of records per request), so the bound is on
// requests as well as events. index.html sets it on the chart
// (data-pages, data-page-size), where a test can make it small.
function budget() {
  const d = $("timeline-chart").dataset;
  const size = Number(d.pageSize) || 500;
  const pages = Number(d.pages) || 20;
  return { size, pages, events: size * pages };
}
const ROWS = 20; // things drawn, the busiest of the window

const tl = state.timeline;

// windowKey names the window chosen: a span, or "fit".
function windowKey() {
  return tl.fit ? "fit" : String(tl.span);
}

// windowFrom is where the window ending at to starts.
function windowFrom(to) {
  return tl.fit ? Math.min(to - FIT_MIN, tl.fitFrom) : to - tl.span;
}

// fitFrom is where a fitted window starts, given the oldest event read
// (Infinity for none): a little before it, so that its bar shows whole.
function fitFrom(oldest, to) {
  if (oldest === Infinity) return to - SPANS["15m"];
  return oldest - Math.max(1000, (to - oldest) / 20);
}

// markSets marks the bars of the lock set pointed at (class
// tl-set-linked), again after each redraw.
const markSets = linkSets($("timeline-svg"), '[data-testid="tl-hold"][data-set]', "tl-set-linked");

// filterOf is what the history's filters ask of the timeline: one lock
// (of kind lock, as the history's lock filter), one owner. The type
// filter does not apply: a hold needs both its ends.
function filterOf() {
  return { lock: $("history-lock").value.trim(), owner: $("history-owner").value.trim() };
}

function filterKey(f) {
  return JSON.stringify(f);
}

// matches says the event (or hold) e, of any kind, passes the filter f.
function matches(f, e) {
  const t = thingOf(e);
  return (!f.lock || (t.kind === "lock" && t.name === f.lock)) && (!f.owner || e.owner === f.owner);
}

// eventKey names an event: one revision can end several holds (a
// session's), of one thing or of several, of any kind.
function eventKey(e) {
  const t = thingOf(e);
  return `${e.revision}/${e.type}/${thingKey(t.kind, t.name)}/${e.token || 0}`;
}

// keep adds e to events if it grants or ends a hold the timeline draws;
// an election's and a fence's events draw nothing.
function keep(events, e) {
  if (!isHoldEvent(e)) return;
  const at = Date.parse(e.time);
  if (Number.isNaN(at)) return;
  events.set(eventKey(e), Object.assign({ at }, e));
}

// readWindow follows next_before from the newest event back to from,
// within the budget. It returns the events and whether the budget stopped
// it before the window's start. Without a lock filter it reads every
// kind at once (keep drops those it does not draw), so the budget bounds
// the requests of all kinds together.
async function readWindow(f, from) {
  const max = budget();
  const events = new Map();
  let before = 0;
  let pages = 0;
  let reachedStart = false;
  do {
    const q = new URLSearchParams({ limit: String(max.size), from: new Date(from).toISOString() });
    if (f.lock) {
      q.set("kind", "lock");
      q.set("name", f.lock);
    }
    if (f.owner) q.set("owner", f.owner);
    if (before) q.set("before", String(before));
    const page = await api(`/v1/history?${q}`);
    for (const e of page.events || []) keep(events, e);
    before = page.next_before || 0;
    pages++;
    const last = (page.events || []).at(-1);
    reachedStart = last !== undefined && Date.parse(last.time) < from;
  } while (before && !reachedStart && pages < max.pages && events.size < max.events);
  return { events, truncated: before !== 0 && !reachedStart };
}

async function loadTimeline() {
  const f = filterOf();
  const key = windowKey();
  const from = tl.fit ? now() - FIT_MAX : now() - tl.span;
  tl.pending = [];
  let read;
  try {
    read = await readWindow(f, from);
  } catch (err) {
    tl.pending = null;
    showProblem($("timeline-error"), err);
    if (filterKey(f) !== tl.filter || key !== tl.shown) {
      // What is drawn is of another filter or window: show only the
      // problem until a reconnection, a sign-in or another filter reads
      // again.
      $("timeline-body").hidden = true;
      tl.filter = filterKey(f);
      tl.loaded = false;
    }
    return;
  }
  const live = tl.pending;
  tl.pending = null;
  if (filterKey(f) !== filterKey(filterOf()) || key !== windowKey()) {
    loadTimelineSoon(); // the filter or the window changed meanwhile
    return;
  }
  clearProblem($("timeline-error"));
  $("timeline-body").hidden = false;
  for (const e of live) keep(read.events, e);
  tl.events = read.events;
  tl.filter = filterKey(f);
  tl.shown = key;
  const oldest = [...read.events.values()].reduce((m, e) => Math.min(m, e.at), Infinity);
  if (tl.fit) {
    // The window starts where the read did: nothing in it is unread.
    tl.fitFrom = fitFrom(oldest, now());
    tl.truncated = false;
    tl.horizon = 0;
  } else {
    tl.truncated = read.truncated;
    // Past the budget, what is known starts at the oldest event read (or,
    // when no page had any, at the read itself).
    tl.horizon = read.truncated ? Math.min(oldest, now()) : 0;
  }
  tl.loaded = true;
  drawNow();
}

// loadTimelineSoon reads the window again, once for a burst of calls.
export const loadTimelineSoon = coalesce(loadTimeline, 300);

const POLL_GAP = 30000; // ms between window reads while the stream is down
let polledAt = 0;

// pollTimeline reads the window again while the event stream is down,
// less often than the rest of the page: a read may take many requests.
export function pollTimeline() {
  if (Date.now() - polledAt < POLL_GAP) return;
  polledAt = Date.now();
  loadTimelineSoon();
}

// timelineEvent adds an event of the stream to the window.
export function timelineEvent(e) {
  if (!matches(filterOf(), e)) return;
  if (tl.pending) tl.pending.push(e); // a load is reading the window: it keeps this too
  keep(tl.events, e);
  drawSoon();
}

const DRAW_GAP = 250; // ms between redraws, at least, however fast events come

let drawTimer = 0;
let drawnAt = 0;
let hovering = false;

function drawSoon() {
  if (!drawTimer)
    drawTimer = setTimeout(
      () => {
        drawTimer = 0;
        drawNow();
      },
      Math.max(0, drawnAt + DRAW_GAP - Date.now()),
    );
}

// forget drops the events before from, and the oldest past the budget
// (moving the horizon up to what is kept), so that a page left open on a
// busy cluster stays small.
function forget(from) {
  const max = budget().events;
  for (const [k, e] of tl.events) if (e.at < from) tl.events.delete(k);
  if (tl.events.size <= max) return;
  const sorted = [...tl.events.entries()].sort((a, b) => a[1].revision - b[1].revision);
  for (const [k] of sorted.slice(0, sorted.length - max)) tl.events.delete(k);
  tl.truncated = true;
  tl.horizon = sorted[sorted.length - max][1].at;
}

// filterChanged reads the window again if the history's filters are not
// those it was read with (a lock link sets them without an input event).
function filterChanged() {
  if (tl.filter === filterKey(filterOf())) return false;
  loadTimelineSoon();
  return true;
}

function drawNow() {
  if (!tl.loaded || filterChanged()) return;
  const to = now();
  const from = windowFrom(to);
  forget(from);
  if (tl.truncated && tl.horizon <= from) tl.truncated = false; // the window has moved past what was not read
  const horizon = tl.truncated ? tl.horizon : from;
  const f = filterOf();
  const events = [...tl.events.values()].sort((a, b) => a.revision - b.revision);
  const byThing = readHolds(events, horizon);
  heldHolds(byThing, heldNow().filter((h) => matches(f, h)), horizon);
  const things = [...byThing.values()];
  const busiest = things.sort((a, b) => b.events - a.events || byRow(a, b)).slice(0, ROWS);
  const waiting = waitingNow(f);
  const rows = busiest.sort(byRow).map((t) => ({
    kind: t.kind,
    name: t.name,
    label: thingLabel(t),
    holds: t.holds,
    lanes: laneHolds(t.holds),
    waits: waiting.get(thingKey(t.kind, t.name)) || [],
  }));
  drawTimeline($("timeline-svg"), { from, to, horizon, rows });
  markSets();
  renderBusiest(thingStats(events, from).slice(0, ROWS));
  renderNotes(things.length, rows.length, events.length, from);
  drawnAt = Date.now();
}

// byRow orders the rows: locks, then semaphores, then read/write locks,
// each kind by name.
function byRow(a, b) {
  return KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

// heldNow lists the holds the page knows are held now, of every kind the
// timeline draws, as heldHolds takes them.
function heldNow() {
  const out = state.locks.map((l) => ({ kind: "lock", name: l.name, lock: l.name, owner: l.owner, token: l.token, session: l.session, set: l.set, acquired_at: l.acquired_at }));
  for (const [kind, list] of [
    ["semaphore", state.semaphores.list],
    ["rwlock", state.rwlocks.list],
  ])
    for (const t of list) for (const h of t.holders || []) out.push(Object.assign({}, h, { kind, name: t.name, limit: t.limit || 0 }));
  return out;
}

// waitingNow lists, by thingKey, the acquires waiting now that the page
// last read with each thing's holders (its queues, polled: joining a
// queue makes no event), in line order, as the timeline draws them:
// {owner, since (ms), position, mode}. The owner filter applies.
function waitingNow(f) {
  const out = new Map();
  const add = (kind, name, entry) => {
    const ws = (entry && entry.waiters) || [];
    const drawn = ws.filter((w) => !f.owner || w.owner === f.owner).map((w) => ({ owner: w.owner, since: Date.parse(w.since), position: w.position, mode: w.mode || "" }));
    const known = drawn.filter((w) => !Number.isNaN(w.since));
    if (known.length) out.set(thingKey(kind, name), known);
  };
  for (const [name, q] of state.queues) if (!f.lock || name === f.lock) add("lock", name, q);
  if (!f.lock) {
    for (const [name, w] of state.semaphores.waiters) add("semaphore", name, w);
    for (const [name, w] of state.rwlocks.waiters) add("rwlock", name, w);
  }
  return out;
}

function renderNotes(things, rows, events, from) {
  const when = tl.fit ? `since ${new Date(from).toLocaleTimeString([], { hour12: false })}` : `in the last ${Object.keys(SPANS).find((k) => SPANS[k] === tl.span)}`;
  $("timeline-empty").hidden = rows !== 0;
  setText(
    $("timeline-empty"),
    tl.fit && events === 0
      ? "No lock, semaphore or read/write lock was taken, released or lost in the last 24h. Holds appear here as they are taken."
      : `No lock, semaphore or read/write lock was taken, released or lost ${when}.`,
  );
  $("timeline-svg").classList.toggle("tl-none", rows === 0);
  const more = things > rows ? `The ${rows} busiest of ${things} locks, semaphores and read/write locks ${when}.` : "";
  setText($("timeline-scope"), more);
  $("timeline-scope").hidden = more === "";
  const trunc = $("timeline-truncated");
  trunc.hidden = !tl.truncated;
  if (tl.truncated)
    trunc.textContent = `Showing the newest ${events} events of this window: older ones were not read (shaded). Filter the history by lock or owner to see further back.`;
}

// tickTimeline keeps the window ending now: it redraws when now has moved
// by a pixel's worth of time, except while the pointer rests on the chart
// (a redraw would take its tooltip away).
export function tickTimeline() {
  if (!tl.loaded || filterChanged()) return;
  const width = $("timeline-svg").clientWidth || 1000;
  // 900 ms, not 1000: the tick that calls this comes every second, give
  // or take a few ms, and must not skip every other redraw.
  const to = now();
  if (hovering || Date.now() - drawnAt < Math.max(900, (to - windowFrom(to)) / width)) return;
  drawNow();
}

function zoom(label) {
  tl.fit = label === "fit";
  if (!tl.fit) tl.span = SPANS[label];
  for (const b of $("timeline-zoom").querySelectorAll("button")) b.setAttribute("aria-pressed", String(b.dataset.span === label));
  tl.loaded = false;
  loadTimelineSoon();
}

// initTimeline wires the zoom buttons and redraws on resizing.
export function initTimeline() {
  for (const b of $("timeline-zoom").querySelectorAll("button")) b.addEventListener("click", () => zoom(b.dataset.span));
  const svg = $("timeline-svg");
  svg.addEventListener("pointerenter", () => (hovering = true));
  svg.addEventListener("pointerleave", () => {
    hovering = false;
    tickTimeline();
  });
  new ResizeObserver(drawSoon).observe($("timeline-chart"));
}
