// Drawing the timeline in SVG, as a trace viewer does: a row per lock,
// its name at left, a time axis on top, each hold a bar from its grant to
// its end labelled with its owner and token, the wait before it hatched.
// Colours come from app.css (classes tl-*), so they follow the theme.

import { absolute, elapsed } from "./clock.js";

const LABEL_W = 170; // px, the column of lock names
const LABEL_W_NARROW = 110; // the same, on a phone
const AXIS_H = 26; // px above the first row
// A row holds a lane of bars and, under it, a lane of waits: a wait
// mostly overlaps the hold before it, which stays readable above it.
const ROW_H = 32;
const BAR_TOP = 4; // px from the row's top
const BAR_H = 16;
const WAIT_TOP = 23;
const WAIT_H = 6;
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
  g.append(node("text", { class: "tl-head", x: 8, y: AXIS_H - 9 }, "Lock"));
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
  const lines = [`${h.lock}: ${h.owner || "?"}, token ${h.token || "?"}`];
  if (h.queued !== null) lines.push(`waited ${elapsed(h.start - h.queued)} from ${absolute(h.queued, iso(h.queued))}`);
  lines.push(h.clipped ? `granted before ${absolute(h.start, iso(h.start))}` : `granted ${absolute(h.start, iso(h.start))}`);
  if (h.end === null) lines.push("held now");
  else lines.push(`${h.ended.replace("_", " ")} ${absolute(h.end, iso(h.end))}, ${h.clipped ? "held at least" : "held"} ${elapsed(h.end - h.start)}`);
  if (h.session) lines.push(`session ${h.session}`);
  if (h.detail) lines.push(h.detail);
  return lines.join("\n");
}

function hold(h, x, y, to) {
  const x0 = x(h.start);
  const x1 = Math.max(x0 + 2, x(h.end === null ? to : h.end));
  const w = x1 - x0;
  const top = y + BAR_TOP;
  const cls = ["tl-hold", colour(h.owner), h.end === null ? "tl-open" : "", h.clipped ? "tl-clipped" : ""].filter(Boolean).join(" ");
  const g = node("g", { class: cls, "data-testid": "tl-hold", "data-lock": h.lock, "data-owner": h.owner, "data-token": h.token, "data-end": h.ended });
  g.append(node("title", {}, holdTitle(h)));
  if (h.queued !== null) {
    const wx = x(h.queued);
    g.append(node("rect", { class: "tl-wait", "data-testid": "tl-wait", x: wx, y: y + WAIT_TOP, width: Math.max(1, x0 - wx), height: WAIT_H }));
  }
  g.append(node("rect", { class: "tl-bar", x: x0, y: top, width: w, height: BAR_H, rx: 3 }));
  const mark = { expired: "tl-expired", session_expired: "tl-expired", revoked: "tl-revoked" }[h.ended];
  if (mark) g.append(node("rect", { class: `tl-cap ${mark}`, "data-testid": "tl-mark", x: x1 - 2, y: top - 3, width: 4, height: BAR_H + 6, rx: 1 }));
  const full = `${h.owner} #${h.token}`;
  const text = full.length * CHAR_W + 10 <= w ? full : (h.owner || "").length * CHAR_W + 10 <= w ? h.owner : "";
  if (text) g.append(node("text", { class: "tl-bar-label", x: x0 + 5, y: top + BAR_H - 4.5 }, text));
  return g;
}

function stripe(i, width) {
  return node("rect", { class: i % 2 ? "tl-stripe odd" : "tl-stripe", x: 0, y: AXIS_H + i * ROW_H, width, height: ROW_H });
}

function row(r, i, x, left, to) {
  const y = AXIS_H + i * ROW_H;
  const g = node("g", { class: "tl-row", "data-testid": "tl-row", "data-lock": r.name });
  g.append(node("text", { class: "tl-label", x: 8, y: y + BAR_TOP + BAR_H / 2 + 4 }, node("title", {}, r.name), fit(r.name, left - 16)));
  for (const h of r.holds) g.append(hold(h, x, y, to));
  return g;
}

// defs holds the hatching of wait bars (.tl-wait's fill in app.css).
function defs() {
  const hatch = node("pattern", { id: "tl-hatch", width: 4, height: 4, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
  hatch.append(node("rect", { class: "tl-hatch-line", width: 1.5, height: 4 }));
  return node("defs", {}, hatch);
}

// drawTimeline draws m ({from, to, horizon, rows: [{name, holds}]}) in
// svg, as wide as its box. Before horizon nothing was read: it is shaded.
export function drawTimeline(svg, m) {
  ns = svg.namespaceURI;
  const width = Math.max(320, svg.parentElement.clientWidth);
  const left = width < 600 ? LABEL_W_NARROW : LABEL_W;
  const height = AXIS_H + Math.max(1, m.rows.length) * ROW_H + 1;
  const plotW = width - left - PAD_R;
  const x = (t) => left + ((Math.min(Math.max(t, m.from), m.to) - m.from) / (m.to - m.from)) * plotW;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.dataset.from = String(Math.round(m.from));
  svg.dataset.to = String(Math.round(m.to));
  const kids = [defs(), ...m.rows.map((_, i) => stripe(i, width)), axis(x, left, m.from, m.to, plotW, height)];
  if (m.horizon > m.from) {
    const unread = node("rect", { class: "tl-unread", x: left, y: AXIS_H, width: x(m.horizon) - left, height: height - AXIS_H });
    unread.append(node("title", {}, "Not read: the window holds more events than the page reads at once"));
    kids.push(unread);
  }
  kids.push(node("line", { class: "tl-divider", x1: left - 0.5, x2: left - 0.5, y1: AXIS_H, y2: height }));
  kids.push(...m.rows.map((r, i) => row(r, i, x, left, m.to)));
  kids.push(node("line", { class: "tl-now", x1: x(m.to), x2: x(m.to), y1: AXIS_H - 4, y2: height }));
  svg.replaceChildren(...kids);
}
