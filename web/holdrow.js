// The rows of one thing with several holds at once in its panel's table
// (a semaphore, a read/write lock): its row, a row per hold (oldest first)
// and the row of its waiters. semaphorerow.js and rwlockrow.js say what
// differs: the column that says how it is held, and what a hold and a
// waiter show beyond their owner, token and times.

import { duration, timeEl } from "./clock.js";
import { cell, el, linkClass, markFresh, setText } from "./dom.js";

// holdRows draws the rows of one kind. k says:
//   kind        the tbody's and rows' data-<kind> ("semaphore")
//   prefix      of the waiters' test ids and list ids ("sem")
//   columns     the table's columns
//   state       the panel's part of state.js: {waiters, expanded}
//   head(s)     the cell after the name, which says how s is held;
//               updateHead(tb, s) fills it in
//   line()      optional: a new span after the waiters' count, which
//               updateLine(tb, waiters) fills in
//   noun        what a hold is called ("permit")
//   holdClass, holdTestid, ownerTestid, revokeTestid, revokeLabel(h)
//               the hold row's
//   holdCells(h) the cells between a hold's owner and its token (none)
//   data(x)     extra data- attributes of a hold's row and a waiter's item
//   waiterTitle(x) a waiter in the count's title
//   waitingFor(s) what the waiters wait for ("a permit of name")
//   waiterMore(waiters) per waiter, what its item shows after its owner
// It returns build(s, {toggle}) and update(tb, s, {revoke, fresh}).
export function holdRows(k) {
  let built = 0; // tbodies built, to keep the ids of their waiter lists apart

  // build makes the tbody of s; its waiters button calls toggle(s.name).
  // update fills it in.
  function build(s, { toggle }) {
    const tb = el("tbody", { [`data-${k.kind}`]: s.name });
    const listID = `${k.prefix}-waiters-${++built}`;
    const toggleButton = el("button", {
      type: "button",
      class: "link-button",
      "data-testid": `${k.prefix}-waiters-toggle`,
      "aria-expanded": "false",
      "aria-controls": listID,
    });
    toggleButton.addEventListener("click", () => toggle(s.name));
    const row = el(
      "tr",
      { class: `${k.kind}-row`, "data-testid": `${k.kind}-row`, [`data-${k.kind}`]: s.name },
      cell("Name", el("span", { class: linkClass(s.name, "name") }, s.name)),
      k.head(s),
      el("td", { colspan: k.columns - 4 }),
      el(
        "td",
        { "data-label": "Waiters", class: "waiters-cell" },
        el("span", { class: "queue-summary", "data-testid": `${k.prefix}-waiters-count` }, "…"),
        k.line ? k.line() : null,
        toggleButton,
      ),
      el("td", { class: "actions" }),
    );
    const list = el(
      "tr",
      { class: "queue-row", id: listID, "data-testid": `${k.prefix}-waiters-detail`, hidden: true },
      el("td", { colspan: k.columns }, el("div", { class: "queue" })),
    );
    tb.append(row, list);
    return tb;
  }

  // buildHold makes the row of the hold h; its Revoke button calls
  // revoke(h).
  function buildHold(h, revoke) {
    const session = h.session
      ? el("code", { title: `session ${h.session}: the ${k.noun} lives as long as this session` }, h.session)
      : el("span", { class: "none", title: `no session: the ${k.noun} has a lease of its own` }, "—");
    const revokeButton = el("button", { type: "button", class: "danger small", "data-testid": k.revokeTestid, "aria-label": k.revokeLabel(h) }, "Revoke");
    revokeButton.addEventListener("click", () => revoke(h));
    return el(
      "tr",
      { class: k.holdClass, "data-testid": k.holdTestid, [`data-${k.kind}`]: h.name, "data-token": h.token, "data-owner": h.owner, ...k.data(h) },
      el("td", { colspan: 2, class: "permit-of" }, el("span", { class: "visually-hidden" }, `A ${k.noun} of ${h.name}`)),
      cell("Owner", el("span", { class: "owner", "data-testid": k.ownerTestid }, h.owner)),
      k.holdCells(h),
      cell("Token", el("code", { "data-testid": "token" }, h.token)),
      cell("Session", session),
      cell("Held", timeEl("held", h.acquired_at, { "data-testid": "since" })),
      cell("Time left", el("span", { class: "left-cell" })),
      el("td", {}),
      el("td", { class: "actions" }, revokeButton),
    );
  }

  // update refreshes the tbody of s: how it is held, a row per hold (a new
  // hold's row flashes when fresh), and the waiters.
  function update(tb, s, { revoke, fresh }) {
    k.updateHead(tb, s);
    const old = new Map();
    for (const tr of tb.querySelectorAll(".permit-row")) old.set(tr.dataset.token, tr);
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

  // updateWaiters shows how many wait for s, in order on hover (and in
  // the line, where the kind has one) and, when opened, listed.
  function updateWaiters(tb, s) {
    const w = k.state.waiters.get(s.name);
    const summary = tb.querySelector(".queue-summary");
    const toggle = tb.querySelector(`[data-testid="${k.prefix}-waiters-toggle"]`);
    const open = k.state.expanded.has(s.name);
    let text = "…";
    let title = "";
    if (w && w.error) {
      text = "?";
      title = w.error;
    } else if (w) {
      const n = w.waiters.length;
      text = n === 0 ? "none" : `${n}${n >= 1000 ? "+" : ""} waiting`;
      title = w.waiters.map(k.waiterTitle).join(", ");
    }
    setText(summary, text);
    summary.title = title;
    if (k.line) k.updateLine(tb, w && !w.error ? w.waiters : []);
    setText(toggle, open ? "Hide waiters" : "Show waiters");
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the waiters of ${s.name}`);

    const listRow = tb.querySelector(".queue-row");
    if (listRow !== tb.lastElementChild) tb.append(listRow); // below the holds
    listRow.hidden = !open;
    if (open) renderWaiters(listRow.querySelector(".queue"), s, w || null);
  }

  // waiterItem is the list item of the waiter x; more is what it shows
  // after its owner.
  function waiterItem(x, more) {
    return el(
      "li",
      { "data-testid": `${k.prefix}-waiter`, "data-owner": x.owner, "data-position": x.position, ...k.data(x) },
      el("span", { class: "pos" }, `#${x.position}`),
      el("span", { class: "owner" }, x.owner),
      more,
      x.since ? timeEl("waiting", x.since) : null,
      x.session ? el("code", { title: `session ${x.session}` }, x.session) : null,
    );
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
      kids.push(el("p", { class: "hint" }, `Nobody is waiting for ${k.waitingFor(s)}.`));
    } else {
      const more = k.waiterMore(w.waiters);
      kids.push(
        el(
          "ol",
          { class: "waiters", "aria-label": `Waiting for ${k.waitingFor(s)}, first served first` },
          w.waiters.map((x, i) => waiterItem(x, more[i])),
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

  return { build, update };
}

// updateExpiry shows when the hold h expires, once a read of its thing
// says (an event does not). etcd reports a lease's time left in whole
// seconds, so expires_at moves by up to a second from one read to the
// next: only a renew, which moves it further, is worth redrawing.
function updateExpiry(tr, h) {
  const box = tr.querySelector(".left-cell");
  const left = box.querySelector("time");
  if (!h.expires_at) {
    if (!left && !box.firstChild) box.append(el("span", { class: "none", "data-testid": "time-left" }, "…"));
    return;
  }
  if (left && Math.abs(Date.parse(h.expires_at) - Number(left.dataset.at)) < 1000) return;
  box.replaceChildren(timeEl("left", h.expires_at, { "data-testid": "time-left" }), el("span", { class: "ttl" }, ` of ${duration(h.ttl)}`));
}
