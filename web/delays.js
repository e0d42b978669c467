// The free locks under lock-delay, or inside the at-least window of their
// last hold (min_hold), each with a button that lifts it (DELETE
// /v1/locks/{name}/delay, admin only).

import { api, clearProblem, lockPath, showProblem } from "./api.js";
import { timeEl } from "./clock.js";
import { $, el, keepRows, linkClass } from "./dom.js";

const causes = {
  revoked: "revoked",
  expired: "expired",
  session_expired: "its session expired",
  released: "released inside its at-least window",
};

// renderDelays lists delays; lifted runs after each Lift, to reload. The
// locks' table renders this list with every event: a row is rebuilt only
// when its delay changes (keepRows), so a Lift under way stays disabled.
export function renderDelays(delays, lifted) {
  $("delays").hidden = delays.length === 0;
  keepRows(
    $("delays-list"),
    delays,
    (d) => d.name,
    (d) => JSON.stringify([d.delayed_until, d.cause]),
    (d) => delayRow(d, lifted),
  );
}

function delayRow(d, lifted) {
  // A release leaves only its window; any other end a lock-delay, which
  // may end later than the window.
  const what = d.cause === "released" ? "at-least window" : "lock-delay";
  const lift = el("button", { type: "button", class: "small", "data-testid": "clear-delay", "aria-label": `Lift the ${what} of ${d.name}` }, "Lift delay");
  lift.addEventListener("click", async () => {
    lift.disabled = true;
    try {
      await api(`${lockPath(d.name)}/delay?reason=${encodeURIComponent("lifted from the dashboard")}`, { method: "DELETE" });
      clearProblem($("holders-error"));
    } catch (err) {
      if (err.status !== 404) showProblem($("holders-error"), err);
    } finally {
      lift.disabled = false; // the row stays when the lift failed, and may be tried again
    }
    lifted();
  });
  const cause = causes[d.cause] || "ended without a release";
  return el(
    "li",
    { "data-testid": "delay-row", "data-lock": d.name },
    el("a", { href: `#lock=${encodeURIComponent(d.name)}`, class: linkClass(d.name, "name"), title: `Show the history of ${d.name}` }, d.name),
    ` ${what}: `,
    timeEl("left", d.delayed_until, { "data-testid": "delay-left" }),
    el("span", { class: "hint" }, ` (last hold ${cause})`),
    " ",
    lift,
  );
}
