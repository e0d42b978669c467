// The busiest locks of the timeline's window: grants, time waited for
// them, expiries and revokes, most grants first.

import { elapsed } from "./clock.js";
import { $, cell, el, linkClass } from "./dom.js";

function count(n, testid) {
  return el("span", { "data-testid": testid, class: n ? "" : "none" }, String(n));
}

function wait(ms, testid, title) {
  return ms === null ? el("span", { class: "none", "data-testid": testid, title: "nobody waited" }, "—") : el("span", { "data-testid": testid, title }, elapsed(ms));
}

// renderBusiest shows stats (lockStats in holds.js), one row per lock.
export function renderBusiest(stats) {
  $("busiest-table").hidden = stats.length === 0;
  $("busiest-empty").hidden = stats.length !== 0;
  $("busiest-rows").replaceChildren(
    ...stats.map((s) =>
      el(
        "tr",
        { "data-testid": "busiest-row", "data-lock": s.name },
        cell("Lock", el("a", { href: `#lock=${encodeURIComponent(s.name)}`, class: linkClass(s.name), title: `Show ${s.name}: its history and timeline` }, s.name)),
        cell("Grants", count(s.grants, "busiest-grants")),
        cell("Waited", wait(s.waited ? s.totalWait : null, "busiest-wait", `${s.waited} of ${s.grants} grants waited`)),
        cell("p99 wait", wait(s.p99Wait, "busiest-p99", `99% of the ${s.waited} waits were this long or shorter`)),
        cell("Expired", count(s.expiries, "busiest-expiries")),
        cell("Revoked", count(s.revokes, "busiest-revokes")),
      ),
    ),
  );
}
