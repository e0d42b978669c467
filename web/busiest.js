// The busiest locks, semaphores and read/write locks of the timeline's
// window: grants, time waited for them, expiries and revokes, most grants
// first.

import { elapsed } from "./clock.js";
import { $, cell, el, linkClass } from "./dom.js";
import { thingLabel } from "./timelineholds.js";

function count(n, testid) {
  return el("span", { "data-testid": testid, class: n ? "" : "none" }, String(n));
}

function wait(ms, testid, title) {
  return ms === null ? el("span", { class: "none", "data-testid": testid, title: "nobody waited" }, "—") : el("span", { "data-testid": testid, title }, elapsed(ms));
}

// name is the thing's cell: a lock links to its history and timeline
// (the history's lock filter is of locks); another thing shows its kind
// before its name.
function name(s) {
  if (s.kind === "lock") return el("a", { href: `#lock=${encodeURIComponent(s.name)}`, class: linkClass(s.name), title: `Show ${s.name}: its history and timeline` }, s.name);
  return el("span", { class: "busiest-thing", title: thingLabel(s) }, el("span", { class: "busiest-kind" }, s.kind), " ", s.name, s.limit ? ` (${s.limit})` : "");
}

function row(s) {
  return el(
    "tr",
    { "data-testid": "busiest-row", "data-lock": s.kind === "lock" ? s.name : null, "data-kind": s.kind, "data-name": s.name },
    cell("Lock", name(s)),
    cell("Grants", count(s.grants, "busiest-grants")),
    cell("Waited", wait(s.waited ? s.totalWait : null, "busiest-wait", `${s.waited} of ${s.grants} grants waited`)),
    cell("p99 wait", wait(s.p99Wait, "busiest-p99", `99% of the ${s.waited} waits were this long or shorter`)),
    cell("Expired", count(s.expiries, "busiest-expiries")),
    cell("Revoked", count(s.revokes, "busiest-revokes")),
  );
}

// shows holds, for each row on the page, the stats it was built from.
const shows = new WeakMap();

// renderBusiest shows stats (thingStats in timelineholds.js), one row per
// thing. The timeline redraws this table with every event, so a row is
// kept while its stats are the same and rebuilt only when they change:
// a redraw does not take the focus from a link, nor the link from under
// a click.
export function renderBusiest(stats) {
  $("busiest-table").hidden = stats.length === 0;
  $("busiest-empty").hidden = stats.length !== 0;
  const body = $("busiest-rows");
  const old = new Map();
  for (const tr of body.rows) old.set(tr.dataset.kind + "/" + tr.dataset.name, tr);
  let prev = null;
  for (const s of stats) {
    const key = s.kind + "/" + s.name;
    const says = JSON.stringify(s);
    let tr = old.get(key);
    old.delete(key);
    if (!tr || shows.get(tr) !== says) {
      const fresh = row(s);
      shows.set(fresh, says);
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
    }
    if (prev === null) {
      if (body.firstElementChild !== tr) body.prepend(tr);
    } else if (prev.nextElementSibling !== tr) prev.after(tr);
    prev = tr;
  }
  for (const tr of old.values()) tr.remove();
}
