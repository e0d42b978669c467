// One semaphore with permits held in the table: its row, a row per permit
// held (oldest first) and the row of its waiters.

import { duration, timeEl } from "./clock.js";
import { cell, el, linkClass, markFresh, setText } from "./dom.js";
import { state } from "./state.js";

const COLUMNS = 9;

let built = 0; // tbodies built, to keep the ids of their waiter lists apart

// buildSemaphore makes the tbody of the semaphore s; its waiters button
// calls toggle(s.name). updateSemaphore fills it in.
export function buildSemaphore(s, { toggle }) {
  const tb = el("tbody", { "data-semaphore": s.name });
  const listID = `sem-waiters-${++built}`;
  const toggleButton = el("button", {
    type: "button",
    class: "link-button",
    "data-testid": "sem-waiters-toggle",
    "aria-expanded": "false",
    "aria-controls": listID,
  });
  toggleButton.addEventListener("click", () => toggle(s.name));
  const row = el(
    "tr",
    { class: "semaphore-row", "data-testid": "semaphore-row", "data-semaphore": s.name },
    cell("Name", el("span", { class: linkClass(s.name, "name") }, s.name)),
    cell("Permits", el("span", { class: "held-of", "data-testid": "held" })),
    el("td", { colspan: 5 }),
    el("td", { "data-label": "Waiters", class: "waiters-cell" }, el("span", { class: "queue-summary", "data-testid": "sem-waiters-count" }, "…"), toggleButton),
    el("td", { class: "actions" }),
  );
  const list = el(
    "tr",
    { class: "queue-row", id: listID, "data-testid": "sem-waiters-detail", hidden: true },
    el("td", { colspan: COLUMNS }, el("div", { class: "queue" })),
  );
  tb.append(row, list);
  return tb;
}

// buildPermit makes the row of the permit p; its Revoke button calls
// revoke(p).
function buildPermit(p, revoke) {
  const session = p.session
    ? el("code", { title: `session ${p.session}: the permit lives as long as this session` }, p.session)
    : el("span", { class: "none", title: "no session: the permit has a lease of its own" }, "—");
  const revokeButton = el(
    "button",
    { type: "button", class: "danger small", "data-testid": "permit-revoke", "aria-label": `Revoke the permit of ${p.owner} on ${p.name} (token ${p.token})` },
    "Revoke",
  );
  revokeButton.addEventListener("click", () => revoke(p));
  return el(
    "tr",
    { class: "permit-row", "data-testid": "permit-row", "data-semaphore": p.name, "data-token": p.token, "data-owner": p.owner },
    el("td", { colspan: 2, class: "permit-of" }, el("span", { class: "visually-hidden" }, `A permit of ${p.name}`)),
    cell("Owner", el("span", { class: "owner", "data-testid": "permit-owner" }, p.owner)),
    cell("Token", el("code", { "data-testid": "token" }, p.token)),
    cell("Session", session),
    cell("Held", timeEl("held", p.acquired_at, { "data-testid": "since" })),
    cell("Time left", el("span", { class: "left-cell" })),
    el("td", {}),
    el("td", { class: "actions" }, revokeButton),
  );
}

// updateSemaphore refreshes the tbody of s: held/limit, a row per permit
// (a new permit's row flashes when fresh), and the waiters.
export function updateSemaphore(tb, s, { revoke, fresh }) {
  const held = tb.querySelector('[data-testid="held"]');
  const n = s.holders.length;
  setText(held, `${n}/${s.limit}`);
  held.title = `${n} of ${s.limit} permits held`;
  held.classList.toggle("full", n >= s.limit);

  const old = new Map();
  for (const tr of tb.querySelectorAll(".permit-row")) old.set(tr.dataset.token, tr);
  let prev = tb.rows[0];
  for (const p of s.holders) {
    let tr = old.get(String(p.token));
    old.delete(String(p.token));
    if (!tr) {
      tr = buildPermit(p, revoke);
      if (fresh) markFresh(tr);
    }
    updateExpiry(tr, p);
    if (prev.nextElementSibling !== tr) prev.after(tr);
    prev = tr;
  }
  for (const tr of old.values()) tr.remove();
  updateWaiters(tb, s);
}

// updateExpiry shows when p expires, once a read of the semaphore says
// (an event does not). etcd reports a lease's time left in whole seconds,
// so expires_at moves by up to a second from one read to the next: only
// a renew, which moves it further, is worth redrawing.
export function updateExpiry(tr, p) {
  const box = tr.querySelector(".left-cell");
  const left = box.querySelector("time");
  if (!p.expires_at) {
    if (!left && !box.firstChild) box.append(el("span", { class: "none", "data-testid": "time-left" }, "…"));
    return;
  }
  if (left && Math.abs(Date.parse(p.expires_at) - Number(left.dataset.at)) < 1000) return;
  box.replaceChildren(timeEl("left", p.expires_at, { "data-testid": "time-left" }), el("span", { class: "ttl" }, ` of ${duration(p.ttl)}`));
}

// updateWaiters shows how many wait for a permit of s, in order on hover
// and, when opened, listed.
function updateWaiters(tb, s) {
  const w = state.semaphores.waiters.get(s.name);
  const summary = tb.querySelector(".queue-summary");
  const toggle = tb.querySelector('[data-testid="sem-waiters-toggle"]');
  const open = state.semaphores.expanded.has(s.name);
  let text = "…";
  let title = "";
  if (w && w.error) {
    text = "?";
    title = w.error;
  } else if (w) {
    const n = w.waiters.length;
    text = n === 0 ? "none" : `${n}${n >= 1000 ? "+" : ""} waiting`;
    title = w.waiters.map((x) => `#${x.position} ${x.owner}`).join(", ");
  }
  setText(summary, text);
  summary.title = title;
  setText(toggle, open ? "Hide waiters" : "Show waiters");
  toggle.setAttribute("aria-expanded", String(open));
  toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the waiters of ${s.name}`);

  const listRow = tb.querySelector(".queue-row");
  if (listRow !== tb.lastElementChild) tb.append(listRow); // below the permits
  listRow.hidden = !open;
  if (open) renderWaiters(listRow.querySelector(".queue"), s, w || null);
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
    kids.push(el("p", { class: "hint" }, `Nobody is waiting for a permit of ${s.name}.`));
  } else {
    kids.push(
      el(
        "ol",
        { class: "waiters", "aria-label": `Waiting for a permit of ${s.name}, first served first` },
        w.waiters.map((x) =>
          el(
            "li",
            { "data-testid": "sem-waiter", "data-owner": x.owner, "data-position": x.position },
            el("span", { class: "pos" }, `#${x.position}`),
            el("span", { class: "owner" }, x.owner),
            x.since ? timeEl("waiting", x.since) : null,
            x.session ? el("code", { title: `session ${x.session}` }, x.session) : null,
          ),
        ),
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
