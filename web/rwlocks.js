// The read/write locks that are held (holdspanel.js runs the panel): each
// lock with its mode, its holds and its waiters, each with the mode it
// waits for, from GET /v1/rwlocks/{name}.

import { rwlockPath } from "./api.js";
import { holdsPanel } from "./holdspanel.js";
import { buildRWLock, updateRWLock } from "./rwlockrow.js";
import { state } from "./state.js";

const panel = holdsPanel({
  kind: "rwlock",
  id: "rwlocks",
  state: state.rwlocks,
  path: rwlockPath,
  build: buildRWLock,
  update: updateRWLock,
  // The lock's mode is its holds': an acquire of the other mode than the
  // holds shown means that those ended first (their events come before
  // it in the stream), so only holds of the event's mode are kept.
  acquired(cur, e) {
    const s = cur || { name: e.name, mode: e.mode, holders: [] };
    if (e.mode && s.mode !== e.mode) {
      s.mode = e.mode;
      s.holders = s.holders.filter((h) => h.mode === e.mode);
    }
    if (!s.holders.some((h) => h.token === e.token))
      s.holders.push({ name: e.name, mode: e.mode, owner: e.owner, token: e.token, session: e.session, acquired_at: e.time, metadata: {} });
    return s;
  },
  read: (s) => ({ name: s.name, mode: s.mode, holders: s.holders || [] }),
  nomatch: (prefix) => `No read/write lock whose name starts with “${prefix}” is held.`,
  plural: "read/write locks",
});

export const loadRWLocksSoon = panel.loadSoon;
export const renderRWLocks = panel.render;
export const rwlockEvent = panel.event;
export const loadRWWaitersSoon = panel.loadWaitersSoon;
export const initRWLocks = panel.init;
