// Following GET /v1/events live, and saying so in the live status.
//
// The stream is read with fetch() rather than EventSource, which cannot
// send the Authorization header, and a token must never travel in a URL
// (logs, history, Referer). Resuming works as EventSource's does: the
// Last-Event-ID header names the last event seen.

import { needToken } from "./auth.js";
import { learnSkew } from "./clock.js";
import { $, setText } from "./dom.js";
import { readEvents } from "./sse.js";
import { state } from "./state.js";
import { authHeaders, storedToken } from "./token.js";

const IDLE_MAX = 45000; // ms of silence (3 missed heartbeats) before the stream counts as dead
const POLL_EVERY = 5000; // ms between reloads while the event stream is down
const RECONNECT_MAX = 15000; // ms, the longest wait before reopening the stream

let stream = null; // the AbortController of the stream being read
let reconnectWait = 1000;
let reconnectTimer = 0;
let pollTimer = 0;

// hooks are set by initStream: reload() reads again what may have changed,
// event(e) applies one event before that reload, connected() runs when
// the stream (re)opens and polled() on each reload while it is down.
const hooks = { reload: () => {}, event: () => {}, connected: () => {}, polled: () => {} };

const titles = {
  live: "Following /v1/events: changes show as they happen.",
  signedout: "baton asks for a token: sign in, and the page follows changes live.",
};

function setLive(s) {
  const box = $("live-status");
  box.dataset.state = s;
  const text = {
    live: "live",
    connecting: "connecting…",
    disconnected: "disconnected — reconnecting",
    signedout: "sign in to follow live",
  }[s];
  setText(box, text);
  box.title = titles[s] || "The event stream is down. The page reloads every 5 s meanwhile, and reconnects by itself.";
  // While the stream is down, poll, so the page never goes silently
  // stale; without a token polling would only be refused.
  if (s === "live" || s === "signedout") {
    clearInterval(pollTimer);
    pollTimer = 0;
  } else if (!pollTimer) {
    pollTimer = setInterval(() => {
      hooks.reload();
      hooks.polled();
    }, POLL_EVERY);
  }
}

// connect (re)opens the event stream.
export function connect() {
  clearTimeout(reconnectTimer);
  reconnectTimer = 0;
  if (stream) stream.abort();
  const ctl = new AbortController();
  stream = ctl;
  if ($("live-status").dataset.state !== "disconnected") setLive("connecting");
  follow(ctl).catch((err) => {
    if (!ctl.signal.aborted) console.warn(err); // follow handles its failures; this is a bug
  });
}

// dropped schedules a reconnection after the stream ctl broke, backing
// off while it keeps failing.
function dropped(ctl) {
  if (stream !== ctl || ctl.signal.aborted) return;
  stream = null;
  setLive("disconnected");
  if (!reconnectTimer) {
    reconnectTimer = setTimeout(connect, reconnectWait);
    reconnectWait = Math.min(reconnectWait * 2, RECONNECT_MAX);
  }
}

// open sends GET /v1/events for the stream ctl. It returns the answer if
// it is the stream, and otherwise (a 401, an error) handles it and
// returns null.
async function open(ctl) {
  const headers = authHeaders({ Accept: "text/event-stream" });
  if (state.lastEventID) headers["Last-Event-ID"] = state.lastEventID;
  const sent = headers.Authorization ? storedToken() : "";
  let resp;
  try {
    resp = await fetch("/v1/events", { headers, cache: "no-store", signal: ctl.signal });
  } catch {
    dropped(ctl);
    return null;
  }
  if (resp.status === 401) {
    resp.body?.cancel();
    if (stream === ctl) stream = null;
    setLive("signedout");
    needToken(sent); // signing in reconnects
    return null;
  }
  const type = resp.headers.get("Content-Type") || "";
  if (!resp.ok || !type.startsWith("text/event-stream") || !resp.body) {
    resp.body?.cancel();
    dropped(ctl);
    return null;
  }
  return resp;
}

async function follow(ctl) {
  const resp = await open(ctl);
  if (!resp) return;
  learnSkew(resp);
  reconnectWait = 1000;
  setLive("live");
  hooks.reload(); // catch up on whatever happened before the stream (re)opened
  hooks.connected();

  // The server sends a comment every 15 s: silence for much longer
  // means a connection that died without a word (a sleeping laptop, a
  // proxy): drop it and reconnect.
  let idle = 0;
  const watch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => ctl.abort(), IDLE_MAX);
  };
  watch();
  try {
    await readEvents(resp.body, {
      chunk: watch,
      message: onMessage,
      retry: (ms) => {
        reconnectWait = Math.max(1000, ms);
      },
    });
  } catch {
    // The connection broke, or the watchdog (or a sign-in) aborted it.
  } finally {
    clearTimeout(idle);
  }
  if (stream === ctl && ctl.signal.aborted) {
    stream = null; // the watchdog's abort: reconnect below
    setLive("disconnected");
    reconnectTimer = setTimeout(connect, reconnectWait);
    return;
  }
  dropped(ctl);
}

function onMessage(msg) {
  if (msg.lastEventId) state.lastEventID = msg.lastEventId;
  let e = null;
  try {
    e = JSON.parse(msg.data);
  } catch {
    e = null;
  }
  if (e && typeof e === "object") hooks.event(e);
  hooks.reload();
}

// initStream sets what the stream changes: reload() reads again what may
// have changed (after each event, on (re)connecting, and every 5 s while
// the stream is down); event(e) applies one event first. connected() runs
// on each (re)connection, polled() with each reload while the stream is
// down, for what only needs reading again then.
export function initStream({ reload, event, connected, polled }) {
  hooks.reload = reload;
  hooks.event = event;
  if (connected) hooks.connected = connected;
  if (polled) hooks.polled = polled;
}
