// Times on the page: relative to the server's clock, counting live.

import { el, setText } from "./dom.js";

// skew is how far this browser's clock is behind the server's, from the
// Date header of the API's answers. The header has whole seconds, so
// only a skew of more than 2 s is corrected; a synchronised clock is used
// as it is.
let skew = 0;

// now is the server's time, in ms since the epoch.
export function now() {
  return Date.now() + skew;
}

// learnSkew reads the server's clock off an answer of the API.
export function learnSkew(resp) {
  const date = Date.parse(resp.headers.get("Date") || "");
  if (Number.isNaN(date)) return;
  const est = date + 500 - Date.now();
  skew = Math.abs(est) > 2000 ? est : 0;
}

function span(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} m` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

// elapsed renders a short length of time precisely (waits, holds): ms
// under a second, tenths of a second under a minute, then as span does.
export function elapsed(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} m ${String(Math.floor(ms / 1000) % 60).padStart(2, "0")} s`;
  return span(ms);
}

// duration renders a Go duration ("1m0s", "1h30m0s", "500ms") like span,
// with the seconds of one under an hour ("1m30s": "1 m 30 s").
export function duration(d) {
  const units = { h: 3600000, m: 60000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, ns: 0.000001 };
  let ms = 0;
  let rest = String(d || "");
  const re = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/;
  for (let m = re.exec(rest); m; m = re.exec(rest)) {
    ms += Number(m[1]) * units[m[2]];
    rest = rest.slice(m[0].length);
  }
  if (rest !== "" || ms < 1000) return d;
  // A TTL is asked for to the second: under an hour, keep its seconds.
  const s = Math.round(ms / 1000);
  if (s >= 60 && s < 3600 && s % 60) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return span(ms);
}

// left counts down by the second while under an hour, so that it visibly
// moves; past that, minutes are precise enough.
function left(ms) {
  if (ms <= 0) return "expiring…";
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s left`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s left`;
  return `${span(ms)} left`;
}

function relative(kind, at, now) {
  switch (kind) {
    case "left":
      return left(at - now);
    case "held":
      return `held ${span(Math.max(0, now - at))}`;
    case "waiting":
      return `waiting ${span(Math.max(0, now - at))}`;
    case "leading":
      return `leading ${span(Math.max(0, now - at))}`;
    default: // "ago"
      return now - at < 1000 ? "just now" : `${span(now - at)} ago`;
  }
}

// absolute is a time's hover text: local time and the API's own UTC string.
export function absolute(at, iso) {
  return `${new Date(at).toLocaleString()} (${iso})`;
}

// timeEl shows a time relative to now (kind is "left", "held", "waiting",
// "leading" or "ago") and, on hover, absolute. tick keeps the text current.
export function timeEl(kind, iso, attrs) {
  const at = Date.parse(iso);
  const t = el("time", Object.assign({ datetime: iso, "data-rel": kind, "data-at": at }, attrs || {}));
  if (Number.isNaN(at)) {
    t.textContent = iso || "—";
    return t;
  }
  t.title = absolute(at, iso);
  t.textContent = relative(kind, at, now());
  return t;
}

// tick brings every relative time on the page up to date; it runs every
// second.
export function tick() {
  const t0 = now();
  for (const t of document.querySelectorAll("time[data-rel]")) {
    const at = Number(t.dataset.at);
    if (Number.isNaN(at)) continue;
    setText(t, relative(t.dataset.rel, at, t0));
    if (t.dataset.rel === "left") t.classList.toggle("soon", at - t0 < 10000);
  }
}
