// Holds from events: each grant (acquired) to its end (released, expired,
// session_expired, revoked), with the wait before it, and the figures of
// the busiest-locks table.

export const ENDS = new Set(["released", "expired", "revoked", "session_expired"]);

function lockOf(byLock, name) {
  let l = byLock.get(name);
  if (!l) {
    l = { events: 0, holds: [] };
    byLock.set(name, l);
  }
  return l;
}

// hold is a hold of e's lock, owner and token from start (ms), not ended
// yet; queued is when its acquirer began waiting (null for no wait);
// clipped says it was granted before start.
function hold(e, start, queued, clipped) {
  return { lock: e.lock, owner: e.owner, token: e.token, session: e.session, start, queued, end: null, ended: "open", detail: "", clipped };
}

// readHolds turns events, oldest first, into each lock's holds. A hold
// whose grant came before start (the window's start, or the oldest event
// read) starts there, clipped; one not ended yet has end null.
export function readHolds(events, start) {
  const byLock = new Map();
  const open = new Map(); // lock -> token -> hold
  for (const e of events) {
    if (e.type !== "acquired" && !ENDS.has(e.type)) continue;
    const l = lockOf(byLock, e.lock);
    l.events++;
    if (!open.has(e.lock)) open.set(e.lock, new Map());
    const held = open.get(e.lock);
    if (e.type === "acquired") {
      const queued = Date.parse(e.queued_at || "");
      const h = hold(e, e.at, Number.isNaN(queued) ? null : queued, false);
      held.set(e.token, h);
      l.holds.push(h);
      continue;
    }
    // An end names its hold's token; one without (none is known to) ends
    // the newest hold open.
    let h = held.get(e.token) || (e.token ? undefined : [...held.values()].at(-1));
    if (!h) {
      h = hold(e, start, null, true);
      l.holds.push(h);
    }
    held.delete(h.token);
    h.end = e.at;
    h.ended = e.type;
    h.detail = e.detail || "";
  }
  return byLock;
}

// heldHolds adds the holds of locks (GET /v1/locks) that no event in the
// window shows: a hold granted before it and held since, which is what a
// stuck job looks like.
export function heldHolds(byLock, locks, start) {
  for (const lk of locks) {
    const l = lockOf(byLock, lk.name);
    if (l.holds.some((h) => h.token === lk.token)) continue;
    const at = Date.parse(lk.acquired_at);
    l.events++; // it is busy now, so it competes for a row
    l.holds.push(hold({ lock: lk.name, owner: lk.owner, token: lk.token, session: lk.session }, Math.max(at, start), null, !(at >= start)));
  }
}

// p99 is the 99th percentile of ms by nearest rank.
function p99(ms) {
  const sorted = ms.slice().sort((a, b) => a - b);
  return sorted[Math.ceil(0.99 * sorted.length) - 1];
}

// lockStats sums, per lock, the events since from: grants, waits (from
// queued_at to the grant), expiries and revokes; busiest (most grants)
// first.
export function lockStats(events, from) {
  const by = new Map();
  for (const e of events) {
    if (e.at < from || (e.type !== "acquired" && !ENDS.has(e.type))) continue;
    let s = by.get(e.lock);
    if (!s) {
      s = { name: e.lock, grants: 0, waits: [], expiries: 0, revokes: 0 };
      by.set(e.lock, s);
    }
    if (e.type === "acquired") {
      s.grants++;
      const queued = Date.parse(e.queued_at || "");
      if (!Number.isNaN(queued)) s.waits.push(Math.max(0, e.at - queued));
    } else if (e.type === "expired" || e.type === "session_expired") s.expiries++;
    else if (e.type === "revoked") s.revokes++;
  }
  const out = [...by.values()].map((s) => ({
    name: s.name,
    grants: s.grants,
    waited: s.waits.length,
    totalWait: s.waits.reduce((a, b) => a + b, 0),
    p99Wait: s.waits.length ? p99(s.waits) : null,
    expiries: s.expiries,
    revokes: s.revokes,
  }));
  return out.sort((a, b) => b.grants - a.grants || b.expiries + b.revokes - (a.expiries + a.revokes) || (a.name < b.name ? -1 : 1));
}
