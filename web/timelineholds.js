// Holds from events, for the timeline: each thing held (a lock, a
// semaphore, a read/write lock) with its holds, each from its grant
// (acquired) to its end (released, expired, session_expired, revoked),
// with the wait before it; the lanes that keep overlapping holds of one
// thing (permits, readers) apart; and the figures of the busiest table.

import { inSet } from "./lockset.js";

// ENDS are the event types that end a hold.
export const ENDS = new Set(["released", "expired", "revoked", "session_expired"]);

// KINDS are the kinds of things the timeline draws, in the order of its
// rows: each has holds with tokens that acquired and end events name.
export const KINDS = ["lock", "semaphore", "rwlock"];

// thingOf is what e is about: its kind and name. A lock's events name it
// in lock (and name); records without a kind are a lock's.
export function thingOf(e) {
  const kind = e.kind || "lock";
  return { kind, name: kind === "lock" ? e.lock || e.name : e.name };
}

// thingKey names a thing among all kinds: a name never holds a "/".
export function thingKey(kind, name) {
  return `${kind}/${name}`;
}

// isHoldEvent says e grants or ends a hold of a kind the timeline draws.
export function isHoldEvent(e) {
  return KINDS.includes(e.kind || "lock") && (e.type === "acquired" || ENDS.has(e.type));
}

function thingIn(byThing, kind, name) {
  const key = thingKey(kind, name);
  let t = byThing.get(key);
  if (!t) {
    t = { kind, name, limit: 0, events: 0, holds: [] };
    byThing.set(key, t);
  }
  return t;
}

// hold is a hold of e's thing, owner and token from start (ms), not ended
// yet; queued is when its acquirer began waiting (null for no wait);
// clipped says it was granted before start. mode is a read/write lock
// hold's ("read" or "write"), "" for other kinds; set a lock set member's
// names (null for a lock on its own).
function hold(t, e, start, queued, clipped) {
  return {
    kind: t.kind,
    name: t.name,
    lock: t.kind === "lock" ? t.name : "",
    mode: e.mode || "",
    set: inSet(e) ? e.set : null,
    owner: e.owner,
    token: e.token,
    session: e.session,
    start,
    queued,
    end: null,
    ended: "open",
    detail: "",
    clipped,
  };
}

// readHolds turns events, oldest first, into each thing's holds, by
// thingKey. A hold whose grant came before start (the window's start, or
// the oldest event read) starts there, clipped; one not ended yet has end
// null.
export function readHolds(events, start) {
  const byThing = new Map();
  const open = new Map(); // thingKey -> token -> hold
  for (const e of events) {
    if (!isHoldEvent(e)) continue;
    const { kind, name } = thingOf(e);
    const t = thingIn(byThing, kind, name);
    t.events++;
    const key = thingKey(kind, name);
    if (!open.has(key)) open.set(key, new Map());
    const held = open.get(key);
    if (e.type === "acquired") {
      if (e.limit) t.limit = e.limit;
      const queued = Date.parse(e.queued_at || "");
      const h = hold(t, e, e.at, Number.isNaN(queued) ? null : queued, false);
      held.set(e.token, h);
      t.holds.push(h);
      continue;
    }
    // An end names its hold's token; one without (none is known to) ends
    // the newest hold open.
    let h = held.get(e.token) || (e.token ? undefined : [...held.values()].at(-1));
    if (!h) {
      h = hold(t, e, start, null, true);
      t.holds.push(h);
    }
    held.delete(h.token);
    h.end = e.at;
    h.ended = e.type;
    h.detail = e.detail || "";
  }
  return byThing;
}

// heldHolds adds the holds held now (holders: {kind, name, owner, token,
// session, mode, set, limit, acquired_at}, from GET /v1/locks, /v1/semaphores
// and /v1/rwlocks) that no event in the window shows: a hold granted
// before it and held since, which is what a stuck job looks like.
export function heldHolds(byThing, holders, start) {
  for (const hd of holders) {
    const t = thingIn(byThing, hd.kind, hd.name);
    if (hd.limit) t.limit = t.limit || hd.limit;
    if (t.holds.some((h) => h.token === hd.token)) continue;
    const at = Date.parse(hd.acquired_at);
    t.events++; // it is busy now, so it competes for a row
    t.holds.push(hold(t, hd, Math.max(at, start), null, !(at >= start)));
  }
}

// laneHolds sets each hold's lane so that no two holds of one lane
// overlap in time (an open hold lasts to the end of time), and returns
// how many lanes there are: as many as holds overlap at most, one for a
// lock. A hold that starts when another ends may share its lane.
export function laneHolds(holds) {
  const ends = []; // lane -> when its last hold ends
  const sorted = holds.slice().sort((a, b) => a.start - b.start || (a.token || 0) - (b.token || 0));
  for (const h of sorted) {
    let lane = ends.findIndex((end) => end <= h.start);
    if (lane < 0) lane = ends.push(0) - 1;
    ends[lane] = h.end === null ? Infinity : h.end;
    h.lane = lane;
  }
  return Math.max(1, ends.length);
}

// p99 is the 99th percentile of ms by nearest rank.
function p99(ms) {
  const sorted = ms.slice().sort((a, b) => a - b);
  return sorted[Math.ceil(0.99 * sorted.length) - 1];
}

// thingStats sums, per thing, the events since from: grants, waits (from
// queued_at to the grant), expiries and revokes; busiest (most grants)
// first. limit is a semaphore's, from its newest grant (0 for others).
export function thingStats(events, from) {
  const by = new Map();
  for (const e of events) {
    if (e.at < from || !isHoldEvent(e)) continue;
    const { kind, name } = thingOf(e);
    const key = thingKey(kind, name);
    let s = by.get(key);
    if (!s) {
      s = { kind, name, limit: 0, grants: 0, waits: [], expiries: 0, revokes: 0 };
      by.set(key, s);
    }
    if (e.type === "acquired") {
      s.grants++;
      if (e.limit) s.limit = e.limit;
      const queued = Date.parse(e.queued_at || "");
      if (!Number.isNaN(queued)) s.waits.push(Math.max(0, e.at - queued));
    } else if (e.type === "expired" || e.type === "session_expired") s.expiries++;
    else if (e.type === "revoked") s.revokes++;
  }
  const out = [...by.values()].map((s) => ({
    kind: s.kind,
    name: s.name,
    limit: s.limit,
    grants: s.grants,
    waited: s.waits.length,
    totalWait: s.waits.reduce((a, b) => a + b, 0),
    p99Wait: s.waits.length ? p99(s.waits) : null,
    expiries: s.expiries,
    revokes: s.revokes,
  }));
  return out.sort(
    (a, b) =>
      b.grants - a.grants ||
      b.expiries + b.revokes - (a.expiries + a.revokes) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind)),
  );
}

// thingLabel names a thing as the timeline and the table show it: a lock
// by its name, another thing with its kind first, a semaphore with its
// limit after ("semaphore heavy-jobs (3)").
export function thingLabel(t) {
  if (t.kind === "lock") return t.name;
  return t.kind === "semaphore" && t.limit ? `${t.kind} ${t.name} (${t.limit})` : `${t.kind} ${t.name}`;
}
