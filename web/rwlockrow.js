// One held read/write lock in the table: its row (its mode: how many
// readers, or the writer), a row per hold (oldest first) and the row of
// its waiters, each with the mode it waits for.

import { timeEl } from "./clock.js";
import { cell, el, linkClass, markFresh, setText } from "./dom.js";
import { updateExpiry } from "./semaphorerow.js";
import { state } from "./state.js";

const COLUMNS = 10;
const LINE_SHOWN = 3; // waiters named in the row's summary of the line

let built = 0; // tbodies built, to keep the ids of their waiter lists apart

// buildRWLock makes the tbody of the read/write lock s; its waiters button
// calls toggle(s.name). updateRWLock fills it in.
export function buildRWLock(s, { toggle }) {
  const tb = el("tbody", { "data-rwlock": s.name });
  const listID = `rw-waiters-${++built}`;
  const toggleButton = el("button", {
    type: "button",
    class: "link-button",
    "data-testid": "rw-waiters-toggle",
    "aria-expanded": "false",
    "aria-controls": listID,
  });
  toggleButton.addEventListener("click", () => toggle(s.name));
  const row = el(
    "tr",
    { class: "rwlock-row", "data-testid": "rwlock-row", "data-rwlock": s.name },
    cell("Name", el("span", { class: linkClass(s.name, "name") }, s.name)),
    cell("Mode", el("span", { class: "rw-mode", "data-testid": "rw-mode" })),
    el("td", { colspan: 6 }),
    el(
      "td",
      { "data-label": "Waiters", class: "waiters-cell" },
      el("span", { class: "queue-summary", "data-testid": "rw-waiters-count" }, "…"),
      el("span", { class: "rw-line", "data-testid": "rw-waiters-line" }),
      toggleButton,
    ),
    el("td", { class: "actions" }),
  );
  const list = el(
    "tr",
    { class: "queue-row", id: listID, "data-testid": "rw-waiters-detail", hidden: true },
    el("td", { colspan: COLUMNS }, el("div", { class: "queue" })),
  );
  tb.append(row, list);
  return tb;
}

// buildHold makes the row of the hold h; its Revoke button calls
// revoke(h).
function buildHold(h, revoke) {
  const session = h.session
    ? el("code", { title: `session ${h.session}: the hold lives as long as this session` }, h.session)
    : el("span", { class: "none", title: "no session: the hold has a lease of its own" }, "—");
  const revokeButton = el(
    "button",
    {
      type: "button",
      class: "danger small",
      "data-testid": "rw-revoke",
      "aria-label": `Revoke the ${h.mode} hold of ${h.owner} on ${h.name} (token ${h.token})`,
    },
    "Revoke",
  );
  revokeButton.addEventListener("click", () => revoke(h));
  return el(
    "tr",
    { class: "permit-row rw-hold-row", "data-testid": "rw-hold-row", "data-rwlock": h.name, "data-token": h.token, "data-owner": h.owner, "data-mode": h.mode },
    el("td", { colspan: 2, class: "permit-of" }, el("span", { class: "visually-hidden" }, `A hold of ${h.name}`)),
    cell("Owner", el("span", { class: "owner", "data-testid": "rw-owner" }, h.owner)),
    cell("Hold", el("span", { class: `rw-hold-mode ${h.mode}`, "data-testid": "rw-hold-mode" }, h.mode)),
    cell("Token", el("code", { "data-testid": "token" }, h.token)),
    cell("Session", session),
    cell("Held", timeEl("held", h.acquired_at, { "data-testid": "since" })),
    cell("Time left", el("span", { class: "left-cell" })),
    el("td", {}),
    el("td", { class: "actions" }, revokeButton),
  );
}

// modeText says how s is held: by its writer, or by how many readers.
function modeText(s) {
  if (s.mode === "write") return "write";
  const n = s.holders.length;
  return n === 1 ? "1 reader" : `${n} readers`;
}

// updateRWLock refreshes the tbody of s: its mode, a row per hold (a new
// hold's row flashes when fresh), and the waiters.
export function updateRWLock(tb, s, { revoke, fresh }) {
  const mode = tb.querySelector('[data-testid="rw-mode"]');
  setText(mode, modeText(s));
  mode.classList.toggle("write", s.mode === "write");
  mode.title = s.mode === "write" ? "Held by one writer: every acquire waits" : "Shared by readers: a writer waits for them all";

  const old = new Map();
  for (const tr of tb.querySelectorAll(".rw-hold-row")) old.set(tr.dataset.token, tr);
  let prev = tb.rows[0];
  for (const h of s.holders) {
    let tr = old.get(String(h.token));
    old.delete(String(h.token));
    if (!tr) {
      tr = buildHold(h, revoke);
      if (fresh) markFresh(tr);
    }
    updateExpiry(tr, h);
    if (prev.nextElementSibling !== tr) prev.after(tr);
    prev = tr;
  }
  for (const tr of old.values()) tr.remove();
  updateWaiters(tb, s);
}

// lineText is the line of waiters, first served first, with their modes:
// a writer in it holds up every reader behind it.
function lineText(waiters, max) {
  const shown = waiters.slice(0, max).map((x) => `${x.owner} (${x.mode})`);
  return shown.join(" · ") + (waiters.length > max ? " · …" : "");
}

// updateWaiters shows how many wait for s and, in order with their
// modes, the first few; opened, all of them.
function updateWaiters(tb, s) {
  const w = state.rwlocks.waiters.get(s.name);
  const summary = tb.querySelector(".queue-summary");
  const line = tb.querySelector(".rw-line");
  const toggle = tb.querySelector('[data-testid="rw-waiters-toggle"]');
  const open = state.rwlocks.expanded.has(s.name);
  let text = "…";
  let title = "";
  let first = "";
  if (w && w.error) {
    text = "?";
    title = w.error;
  } else if (w) {
    const n = w.waiters.length;
    text = n === 0 ? "none" : `${n}${n >= 1000 ? "+" : ""} waiting`;
    title = w.waiters.map((x) => `#${x.position} ${x.owner} (${x.mode})`).join(", ");
    first = lineText(w.waiters, LINE_SHOWN);
  }
  setText(summary, text);
  summary.title = title;
  setText(line, first);
  line.hidden = first === "";
  setText(toggle, open ? "Hide waiters" : "Show waiters");
  toggle.setAttribute("aria-expanded", String(open));
  toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the waiters of ${s.name}`);

  const listRow = tb.querySelector(".queue-row");
  if (listRow !== tb.lastElementChild) tb.append(listRow); // below the holds
  listRow.hidden = !open;
  if (open) renderWaiters(listRow.querySelector(".queue"), s, w || null);
}

// waiterItem is the list item of waiter x; a writer with readers behind
// it says that they wait for it.
function waiterItem(x, readersBehind) {
  return el(
    "li",
    { "data-testid": "rw-waiter", "data-owner": x.owner, "data-position": x.position, "data-mode": x.mode },
    el("span", { class: "pos" }, `#${x.position}`),
    el("span", { class: "owner" }, x.owner),
    el("span", { class: `rw-hold-mode ${x.mode}`, "data-testid": "rw-waiter-mode" }, x.mode),
    x.mode === "write" && readersBehind > 0
      ? el("span", { class: "hint", "data-testid": "rw-blocks" }, readersBehind === 1 ? "the reader behind waits for it" : `the ${readersBehind} readers behind wait for it`)
      : null,
    x.since ? timeEl("waiting", x.since) : null,
    x.session ? el("code", { title: `session ${x.session}` }, x.session) : null,
  );
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

// renderWaiters lists the waiters of s in box, first served first; w is
// null while they load.
function renderWaiters(box, s, w) {
  const kids = [];
  if (!w) {
    kids.push(el("p", { class: "hint" }, "Loading the waiters…"));
  } else if (w.error) {
    kids.push(el("p", { class: "problem" }, w.error));
  } else if (w.waiters.length === 0) {
    kids.push(el("p", { class: "hint" }, `Nobody is waiting for ${s.name}.`));
  } else {
    const behind = readersBefore(w.waiters);
    kids.push(
      el(
        "ol",
        { class: "waiters", "aria-label": `Waiting for ${s.name}, first served first` },
        w.waiters.map((x, i) => waiterItem(x, behind[i])),
      ),
    );
  }
  // Rebuild only when the content changed, so the waiting times tick in place.
  const key = JSON.stringify(w);
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(...kids);
  }
}
