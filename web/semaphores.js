// The semaphores that have permits held (holdspanel.js runs the panel):
// each semaphore with its limit, its permits and its waiters from
// GET /v1/semaphores/{name}.

import { semaphorePath } from "./api.js";
import { holdsPanel } from "./holdspanel.js";
import { buildSemaphore, updateSemaphore } from "./semaphorerow.js";
import { state } from "./state.js";

const panel = holdsPanel({
  kind: "semaphore",
  id: "semaphores",
  state: state.semaphores,
  path: semaphorePath,
  build: buildSemaphore,
  update: updateSemaphore,
  // A permit's event says the limit, and the page keeps the permit until
  // a read of the semaphore says its expiry and metadata.
  acquired(cur, e) {
    const s = cur || { name: e.name, limit: e.limit, holders: [] };
    if (e.limit) s.limit = e.limit;
    if (!s.holders.some((p) => p.token === e.token))
      s.holders.push({ name: e.name, owner: e.owner, token: e.token, limit: s.limit, session: e.session, acquired_at: e.time, metadata: {} });
    return s;
  },
  read: (s) => ({ name: s.name, limit: s.limit, holders: s.holders || [] }),
  nomatch: (prefix) => `No semaphore whose name starts with “${prefix}” has a permit held.`,
  plural: "semaphores",
});

export const loadSemaphoresSoon = panel.loadSoon;
export const renderSemaphores = panel.render;
export const semaphoreEvent = panel.event;
export const loadWaitersSoon = panel.loadWaitersSoon;
export const initSemaphores = panel.init;
