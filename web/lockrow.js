// One held lock in the table: its row and, below it, the row of its queue.

import { absolute, duration, timeEl } from "./clock.js";
import { cell, el, linkClass, setText } from "./dom.js";
import { inSet, setNote, setTitle, withNote } from "./lockset.js";
import { state } from "./state.js";

// buildLock makes the tbody of the hold l. Its Revoke button calls
// revoke(l), its queue button toggle(l.name). A member of a lock set
// carries data-set (its set's names) and says which locks it was taken
// with; its token is the set's, which links it to the others.
export function buildLock(l, { revoke, toggle }) {
  const set = inSet(l) ? l.set : null;
  const tb = el("tbody", { "data-lock": l.name, "data-token": l.token, "data-set": set ? set.join(" ") : null });
  const queueID = `queue-${l.token}`;
  const meta = Object.entries(l.metadata || {});
  const metaCell = meta.length
    ? el("ul", { class: "meta" }, meta.map(([k, v]) => el("li", { title: `${k}=${v}` }, el("span", { class: "k" }, k), "=", v)))
    : el("span", { class: "none" }, "—");
  const session = l.session
    ? el("code", { title: `session ${l.session}: the lock lives as long as this session` }, l.session)
    : el("span", { class: "none", title: "no session: the lock has a lease of its own" }, "—");
  const revokeButton = el(
    "button",
    { type: "button", class: "danger small", "data-testid": "revoke-button", "aria-label": `Revoke ${l.name}` },
    "Revoke",
  );
  revokeButton.addEventListener("click", () => revoke(l));
  const toggleButton = el("button", {
    type: "button",
    class: "link-button",
    "data-testid": "waiters-toggle",
    "aria-expanded": "false",
    "aria-controls": queueID,
  });
  toggleButton.addEventListener("click", () => toggle(l.name));
  const link = el("a", { href: `#lock=${encodeURIComponent(l.name)}`, class: linkClass(l.name, "name"), title: `Show the history of ${l.name}` }, l.name);
  const row = el(
    "tr",
    { class: "lock-row", "data-testid": "holder-row", "data-lock": l.name, "data-token": l.token },
    cell(
      "Name",
      set
        ? withNote(link, setNote(set, l.name, `Taken in one ${setTitle(set)}, all or nothing, with token ${l.token}: point at or focus it to mark the others`, "lock-set"))
        : link,
    ),
    cell("Owner", el("span", { class: "owner" }, l.owner)),
    cell("Token", el("code", { "data-testid": "token" }, l.token)),
    cell("Session", session),
    cell("Metadata", metaCell),
    cell("Held", timeEl("held", l.acquired_at)),
    cell("Time left", el("span", {}, timeEl("left", l.expires_at, { "data-testid": "time-left" }), el("span", { class: "ttl" }, ` of ${duration(l.ttl)}`))),
    el("td", { "data-label": "Waiters", class: "waiters-cell" }, el("span", { class: "queue-summary", "data-testid": "waiters-count" }, "…"), toggleButton),
    el("td", { class: "actions" }, revokeButton),
  );
  const queue = el(
    "tr",
    { class: "queue-row", id: queueID, "data-testid": "waiters-detail", hidden: true },
    el("td", { colspan: 9 }, el("div", { class: "queue" })),
  );
  tb.append(row, queue);
  return tb;
}

// updateLock refreshes what changes while one hold lasts: its expiry (a
// renew), its queue and whether a history link points at it.
export function updateLock(tb, l) {
  // etcd reports a lease's time left in whole seconds, so expires_at
  // moves by up to a second from one read to the next: only a renew,
  // which moves it further, is worth showing.
  const left = tb.querySelector('time[data-rel="left"]');
  const at = Date.parse(l.expires_at);
  if (Math.abs(at - Number(left.dataset.at)) >= 1000) {
    left.dataset.at = String(at);
    left.setAttribute("datetime", l.expires_at);
    left.title = absolute(at, l.expires_at);
  }
  tb.classList.toggle("highlight", state.highlight === l.name);

  const q = state.queues.get(l.name);
  const known = q && q.token === l.token;
  const summary = tb.querySelector(".queue-summary");
  const toggle = tb.querySelector('[data-testid="waiters-toggle"]');
  const open = state.expanded.has(l.name);
  let text = "…";
  let title = "";
  if (known && q.error) {
    text = "?";
    title = q.error;
  } else if (known) {
    text = q.waiters.length === 0 ? "none" : `${q.waiters.length} waiting`;
  }
  setText(summary, text);
  summary.title = title;
  setText(toggle, open ? "Hide queue" : "Show queue");
  toggle.setAttribute("aria-expanded", String(open));
  toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the queue of ${l.name}`);

  const queueRow = tb.querySelector(".queue-row");
  queueRow.hidden = !open;
  if (open) renderQueue(queueRow.querySelector(".queue"), l, known ? q : null);
}

// renderQueue lists the waiters of l in box, first served first; q is
// null while they load.
function renderQueue(box, l, q) {
  const kids = [];
  if (!q) {
    kids.push(el("p", { class: "hint" }, "Loading the queue…"));
  } else if (q.error) {
    kids.push(el("p", { class: "problem" }, q.error));
  } else if (q.waiters.length === 0) {
    kids.push(el("p", { class: "hint" }, `Nobody is waiting for ${l.name}.`));
  } else {
    kids.push(
      el(
        "ol",
        { class: "waiters", "aria-label": `Waiting for ${l.name}, first served first` },
        q.waiters.map((w) =>
          el(
            "li",
            { "data-testid": "waiter", "data-owner": w.owner, "data-position": w.position },
            el("span", { class: "pos" }, `#${w.position}`),
            el("span", { class: "owner" }, w.owner),
            w.since ? timeEl("waiting", w.since) : null,
            w.session ? el("code", { title: `session ${w.session}` }, w.session) : null,
            inSet(w) ? setNote(w.set, l.name, `Waits for a ${setTitle(w.set)} in every member's queue at once: it gets all of them or none`, "waiter-set") : null,
          ),
        ),
      ),
    );
  }
  // Rebuild only when the content changed, so the waiting times tick in place.
  const key = JSON.stringify(q);
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(...kids);
  }
}
