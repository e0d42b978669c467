// One semaphore with permits held in the table (holdrow.js draws the
// rows): its row says held/limit, a row per permit held (oldest first)
// and the row of its waiters.

import { cell, el, setText } from "./dom.js";
import { holdRows } from "./holdrow.js";
import { state } from "./state.js";

const rows = holdRows({
  kind: "semaphore",
  prefix: "sem",
  columns: 9,
  state: state.semaphores,
  head: () => cell("Permits", el("span", { class: "held-of", "data-testid": "held" })),
  updateHead(tb, s) {
    const held = tb.querySelector('[data-testid="held"]');
    const n = s.holders.length;
    setText(held, `${n}/${s.limit}`);
    held.title = `${n} of ${s.limit} permits held`;
    held.classList.toggle("full", n >= s.limit);
  },
  noun: "permit",
  holdClass: "permit-row",
  holdTestid: "permit-row",
  ownerTestid: "permit-owner",
  revokeTestid: "permit-revoke",
  revokeLabel: (p) => `Revoke the permit of ${p.owner} on ${p.name} (token ${p.token})`,
  holdCells: () => [],
  data: () => ({}),
  waiterTitle: (x) => `#${x.position} ${x.owner}`,
  waitingFor: (s) => `a permit of ${s.name}`,
  waiterMore: (waiters) => waiters.map(() => null),
});

// buildSemaphore makes the tbody of the semaphore s; its waiters button
// calls toggle(s.name). updateSemaphore fills it in: held/limit, a row
// per permit (a new permit's row flashes when fresh), and the waiters.
export const buildSemaphore = rows.build;
export const updateSemaphore = rows.update;
