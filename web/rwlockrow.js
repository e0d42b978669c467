// One held read/write lock in the table (holdrow.js draws the rows): its
// row (its mode: how many readers, or the writer), a row per hold (oldest
// first) and the row of its waiters, each with the mode it waits for.

import { cell, el, setText } from "./dom.js";
import { holdRows } from "./holdrow.js";
import { state } from "./state.js";

const LINE_SHOWN = 3; // waiters named in the row's summary of the line

// modeText says how s is held: by its writer, or by how many readers.
function modeText(s) {
  if (s.mode === "write") return "write";
  const n = s.holders.length;
  return n === 1 ? "1 reader" : `${n} readers`;
}

// lineText is the line of waiters, first served first, with their modes:
// a writer in it holds up every reader behind it.
function lineText(waiters, max) {
  const shown = waiters.slice(0, max).map((x) => `${x.owner} (${x.mode})`);
  return shown.join(" · ") + (waiters.length > max ? " · …" : "");
}

// readersBefore counts, for each waiter, the readers behind it up to the
// next writer.
function readersBefore(waiters) {
  const out = new Array(waiters.length).fill(0);
  let readers = 0;
  for (let i = waiters.length - 1; i >= 0; i--) {
    out[i] = readers;
    readers = waiters[i].mode === "write" ? 0 : readers + 1;
  }
  return out;
}

// modeOf is the mode of the hold or waiter x, as its item shows it.
const modeOf = (x, testid) => el("span", { class: `rw-hold-mode ${x.mode}`, "data-testid": testid }, x.mode);

// waiterMore is, for each waiter, its mode and, for a writer with
// readers behind it, that they wait for it.
function waiterMore(waiters) {
  return readersBefore(waiters).map((behind, i) => {
    const x = waiters[i];
    return [
      modeOf(x, "rw-waiter-mode"),
      x.mode === "write" && behind > 0
        ? el("span", { class: "hint", "data-testid": "rw-blocks" }, behind === 1 ? "the reader behind waits for it" : `the ${behind} readers behind wait for it`)
        : null,
    ];
  });
}

const rows = holdRows({
  kind: "rwlock",
  prefix: "rw",
  columns: 10,
  state: state.rwlocks,
  head: () => cell("Mode", el("span", { class: "rw-mode", "data-testid": "rw-mode" })),
  updateHead(tb, s) {
    const mode = tb.querySelector('[data-testid="rw-mode"]');
    setText(mode, modeText(s));
    mode.classList.toggle("write", s.mode === "write");
    mode.title = s.mode === "write" ? "Held by one writer: every acquire waits" : "Shared by readers: a writer waits for them all";
  },
  // The first few waiters, in order with their modes; opened, all of them.
  line: () => el("span", { class: "rw-line", "data-testid": "rw-waiters-line" }),
  updateLine(tb, waiters) {
    const line = tb.querySelector(".rw-line");
    const first = lineText(waiters, LINE_SHOWN);
    setText(line, first);
    line.hidden = first === "";
  },
  noun: "hold",
  holdClass: "permit-row rw-hold-row",
  holdTestid: "rw-hold-row",
  ownerTestid: "rw-owner",
  revokeTestid: "rw-revoke",
  revokeLabel: (h) => `Revoke the ${h.mode} hold of ${h.owner} on ${h.name} (token ${h.token})`,
  holdCells: (h) => [cell("Hold", modeOf(h, "rw-hold-mode"))],
  data: (x) => ({ "data-mode": x.mode }),
  waiterTitle: (x) => `#${x.position} ${x.owner} (${x.mode})`,
  waitingFor: (s) => s.name,
  waiterMore,
});

// buildRWLock makes the tbody of the read/write lock s; its waiters
// button calls toggle(s.name). updateRWLock fills it in: its mode, a row
// per hold (a new hold's row flashes when fresh), and the waiters.
export const buildRWLock = rows.build;
export const updateRWLock = rows.update;
