// Drawing the timeline in SVG, as a trace viewer does: a row per thing (a
// lock, a semaphore, a read/write lock), its name at left, a time axis on
// top, each hold a bar from its grant to its end labelled with its owner
// and token (and mode, for a read/write lock), the wait before it hatched.
// Holds of one thing that overlap (permits, readers) take a lane each
// within its row. Colours come from app.css (classes tl-*), so they
// follow the theme.

import { absolute, elapsed } from "./clock.js";
import { setTitle } from "./lockset.js";

const LABEL_W = 170; // px, the column of names
const LABEL_W_NARROW = 110; // the same, on a phone
const AXIS_H = 26; // px above the first row
// A lane holds a strip of bars and, under it, a strip of waits: a wait
// mostly overlaps the hold before it, which stays readable above it. A
// row is as many lanes high as it has.
const ROW_H = 38;
const BAR_TOP = 4; // px from the row's top
const BAR_H = 21;
const WAIT_TOP = 28;
const WAIT_H = 7;
const PAD_R = 16;
const CHAR_W = 6.7; // px, a character of the bar labels' font, a little generously
const TICK_MIN = 90; // px between ticks, at least
const COLOURS = 6; // owner colours tl-c0 … tl-c5

// Tick steps, ms: whole seconds, minutes and hours a reader counts in.
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600].map((s) => s * 1000);

let ns = "";

// node builds an SVG element; kids are nodes or text.
function node(tag, attrs, ...kids) {
  const n = document.createElementNS(ns, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null && v !== false) n.setAttribute(k, String(v));
  for (const k of kids.flat()) if (k !== undefined && k !== null && k !== false) n.append(k instanceof Node ? k : String(k));
  return n;
}

// colour gives each owner one of the palette's colours, the same on every
// row and every redraw.
function colour(owner) {
  let h = 0;
  for (const c of owner || "") h = (h * 31 + c.codePointAt(0)) >>> 0;
  return `tl-c${h % COLOURS}`;
}

function clock(ms, step) {
  const o = { hour: "2-digit", minute: "2-digit", hour12: false };
  if (step < 60000) o.second = "2-digit";
  return new Date(ms).toLocaleTimeString([], o);
}

function fit(text, width) {
  const n = Math.floor(width / CHAR_W);
  if (text.length <= n) return text;
  return n > 1 ? `${text.slice(0, n - 1)}…` : "";
}

// ticks are the axis's times in [from, to], on whole steps of local time.
function ticks(from, to, plotW) {
  const span = to - from;
  const step = STEPS.find((s) => (s * plotW) / span >= TICK_MIN) || STEPS.at(-1);
  const tz = new Date(from).getTimezoneOffset() * 60000;
  const out = [];
  for (let t = Math.ceil((from - tz) / step) * step + tz; t <= to; t += step) out.push(t);
  return { step, out };
}

function axis(x, left, from, to, plotW, height) {
  const { step, out } = ticks(from, to, plotW);
  const g = node("g", { class: "tl-axis" });
  g.append(node("text", { class: "tl-head", x: 8, y: AXIS_H - 9 }, "Name"));
  for (const t of out) {
    const px = x(t);
    if (px - left < 24) continue; // its label would not fit, and its line would double the name column's edge
    g.append(node("line", { class: "tl-grid", x1: px, x2: px, y1: AXIS_H - 4, y2: height }));
    if (x(to) - px > 44)
      g.append(node("text", { class: "tl-tick", "data-testid": "tl-tick", x: px, y: AXIS_H - 9, "text-anchor": "middle" }, clock(t, step)));
  }
  g.append(node("text", { class: "tl-tick tl-now-label", x: x(to), y: AXIS_H - 9, "text-anchor": "end" }, "now"));
  g.append(node("line", { class: "tl-baseline", x1: left, x2: x(to), y1: AXIS_H - 0.5, y2: AXIS_H - 0.5 }));
  return g;
}

function holdTitle(h) {
  const iso = (ms) => new Date(ms).toISOString();
  const what = h.kind === "lock" ? h.name : `${h.kind} ${h.name}`;
  const lines = [`${what}: ${h.owner || "?"}, token ${h.token || "?"}${h.mode ? `, ${h.mode}` : ""}`];
  if (h.set) lines.push(`one of a ${setTitle(h.set)}, taken with one token`);
  if (h.queued !== null) lines.push(`waited ${elapsed(h.start - h.queued)} from ${absolute(h.queued, iso(h.queued))}`);
  lines.push(h.clipped ? `granted before ${absolute(h.start, iso(h.start))}` : `granted ${absolute(h.start, iso(h.start))}`);
  if (h.end === null) lines.push("held now");
  else lines.push(`${h.ended.replace("_", " ")} ${absolute(h.end, iso(h.end))}, ${h.clipped ? "held at least" : "held"} ${elapsed(h.end - h.start)}`);
  if (h.session) lines.push(`session ${h.session}`);
  if (h.detail) lines.push(h.detail);
  return lines.join("\n");
}

// hold draws h at least 2 px wide, so that a short hold shows, but no
// further than next (the x of the next bar in its lane): bars of a lane
// never overlap.
function hold(h, x, y, to, next) {
  const x0 = x(h.start);
  const x1 = Math.max(x0 + Math.max(0, Math.min(2, next - x0)), x(h.end === null ? to : h.end));
  const w = x1 - x0;
  const top = y + BAR_TOP;
  const cls = ["tl-hold", colour(h.owner), h.end === null ? "tl-open" : "", h.clipped ? "tl-clipped" : "", h.mode ? `tl-${h.mode}` : "", h.set ? "tl-set" : ""]
    .filter(Boolean)
    .join(" ");
  const g = node("g", {
    class: cls,
    "data-testid": "tl-hold",
    "data-lock": h.kind === "lock" ? h.name : null,
    "data-kind": h.kind,
    "data-name": h.name,
    "data-mode": h.mode || null,
    "data-set": h.set ? h.set.join(" ") : null,
    "data-lane": h.lane || 0,
    "data-owner": h.owner,
    "data-token": h.token,
    "data-end": h.ended,
  });
  g.append(node("title", {}, holdTitle(h)));
  if (h.queued !== null) {
    const wx = x(h.queued);
    g.append(node("rect", { class: "tl-wait", "data-testid": "tl-wait", x: wx, y: y + WAIT_TOP, width: Math.max(1, x0 - wx), height: WAIT_H }));
  }
  g.append(node("rect", { class: "tl-bar", x: x0, y: top, width: w, height: BAR_H, rx: 3 }));
  // A lock set's members are marked where they begin, as they are
  // granted: at one instant, with one token.
  if (h.set) g.append(node("rect", { class: "tl-set-mark", "data-testid": "tl-set-mark", x: x0 - 1, y: top - 3, width: 3, height: BAR_H + 6, rx: 1 }));
  const mark = { expired: "tl-expired", session_expired: "tl-expired", revoked: "tl-revoked" }[h.ended];
  if (mark) g.append(node("rect", { class: `tl-cap ${mark}`, "data-testid": "tl-mark", x: x1 - 2, y: top - 3, width: 4, height: BAR_H + 6, rx: 1 }));
  const text = barLabel(h, w);
  if (text) g.append(node("text", { class: "tl-bar-label", x: x0 + 5, y: top + BAR_H - 4.5 }, text));
  return g;
}

// barLabel is the longest of a hold's labels that fits a bar w px wide:
// its mode (a read/write lock's) or "set" (a lock set member's), owner
// and token; then without the token; then the mode or "set" alone; else
// nothing.
function barLabel(h, w) {
  const what = h.mode || (h.set ? "set" : "");
  const mode = what ? `${what} ` : "";
  const fits = (t) => t.length * CHAR_W + 10 <= w;
  return [`${mode}${h.owner} #${h.token}`, `${mode}${h.owner || ""}`, what].find((t) => t && fits(t)) || "";
}

function stripe(i, y, height, width) {
  return node("rect", { class: i % 2 ? "tl-stripe odd" : "tl-stripe", x: 0, y, width, height });
}

function row(r, y, x, left, to) {
  const g = node("g", { class: "tl-row", "data-testid": "tl-row", "data-lock": r.kind === "lock" ? r.name : null, "data-kind": r.kind, "data-name": r.name, "data-lanes": r.lanes });
  g.append(node("text", { class: "tl-label", x: 8, y: y + BAR_TOP + BAR_H / 2 + 4 }, node("title", {}, r.label), fit(r.label, left - 16)));
  const next = new Map(); // hold -> the x where the next bar of its lane starts
  const last = new Map(); // lane -> its latest hold so far
  for (const h of r.holds.slice().sort((a, b) => a.start - b.start)) {
    const lane = h.lane || 0;
    if (last.has(lane)) next.set(last.get(lane), x(h.start));
    last.set(lane, h);
  }
  for (const h of r.holds) g.append(hold(h, x, y + (h.lane || 0) * ROW_H, to, next.get(h) ?? Infinity));
  for (const w of r.waits || []) g.append(waiting(r, w, x, y, to));
  return g;
}

// waiting draws an acquire that waits now: a wait bar from when it joined
// the line to now, in the wait strip of the row's first lane, under the
// hold it waits for. Waiters overlap there; each bar's title names its
// waiter and place.
function waiting(r, w, x, y, to) {
  const x0 = x(w.since);
  const what = r.kind === "lock" ? r.name : `${r.kind} ${r.name}`;
  const g = node("g", { class: "tl-waiting", "data-testid": "tl-waiting", "data-owner": w.owner, "data-position": w.position });
  g.append(node("title", {}, `${what}: ${w.owner || "?"}${w.mode ? ` (${w.mode})` : ""} waits, ${ordinal(w.position)} in line, since ${absolute(w.since, new Date(w.since).toISOString())} (${elapsed(to - w.since)} so far)`));
  g.append(node("rect", { class: "tl-wait", x: x0, y: y + WAIT_TOP, width: Math.max(1, x(to) - x0), height: WAIT_H }));
  return g;
}

function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th";
  return `${n}${s}`;
}

// defs holds the hatching of wait bars (.tl-wait's fill in app.css).
function defs() {
  const hatch = node("pattern", { id: "tl-hatch", width: 4, height: 4, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
  hatch.append(node("rect", { class: "tl-hatch-line", width: 1.5, height: 4 }));
  return node("defs", {}, hatch);
}

// drawTimeline draws m ({from, to, horizon, rows: [{kind, name, label,
// holds, lanes, waits}]}, each hold with its lane, waits those waiting
// now) in svg, as wide as its box.
// Before horizon nothing was read: it is shaded.
export function drawTimeline(svg, m) {
  ns = svg.namespaceURI;
  const width = Math.max(320, svg.parentElement.clientWidth);
  const left = width < 600 ? LABEL_W_NARROW : LABEL_W;
  const tops = []; // each row's y
  let y = AXIS_H;
  for (const r of m.rows) {
    tops.push(y);
    y += (r.lanes || 1) * ROW_H;
  }
  const height = Math.max(y, AXIS_H + ROW_H) + 1;
  const plotW = width - left - PAD_R;
  const x = (t) => left + ((Math.min(Math.max(t, m.from), m.to) - m.from) / (m.to - m.from)) * plotW;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.dataset.from = String(Math.round(m.from));
  svg.dataset.to = String(Math.round(m.to));
  const kids = [defs(), ...m.rows.map((r, i) => stripe(i, tops[i], (r.lanes || 1) * ROW_H, width)), axis(x, left, m.from, m.to, plotW, height)];
  if (m.horizon > m.from) {
    const unread = node("rect", { class: "tl-unread", x: left, y: AXIS_H, width: x(m.horizon) - left, height: height - AXIS_H });
    unread.append(node("title", {}, "Not read: the window holds more events than the page reads at once"));
    kids.push(unread);
  }
  kids.push(node("line", { class: "tl-divider", x1: left - 0.5, x2: left - 0.5, y1: AXIS_H, y2: height }));
  kids.push(...m.rows.map((r, i) => row(r, tops[i], x, left, m.to)));
  kids.push(node("line", { class: "tl-now", x1: x(m.to), x2: x(m.to), y1: AXIS_H - 4, y2: height }));
  svg.replaceChildren(...kids);
}
