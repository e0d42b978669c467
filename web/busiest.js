// The busiest locks, semaphores and read/write locks of the timeline's
// window: grants, time waited for them, expiries and revokes, most grants
// first.

import { elapsed } from "./clock.js";
import { $, cell, el, keepRows, linkClass } from "./dom.js";
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

// renderBusiest shows stats (thingStats in timelineholds.js), one row per
// thing. The timeline redraws this table with every event; a row is
// rebuilt only when its stats change (keepRows).
export function renderBusiest(stats) {
  $("busiest-table").hidden = stats.length === 0;
  $("busiest-empty").hidden = stats.length !== 0;
  keepRows($("busiest-rows"), stats, (s) => s.kind + "/" + s.name, (s) => JSON.stringify(s), row);
}
