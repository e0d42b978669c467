// One election with a leader in the table: its row and, below it, the row
// of its candidates.

import { timeEl } from "./clock.js";
import { cell, el, linkClass, setText } from "./dom.js";
import { state } from "./state.js";

const VALUE_SHOWN = 48; // characters of a value's JSON shown in its cell; the title has it all

// valueText is a leader's value as compact JSON (null is a value too).
export function valueText(v) {
  return JSON.stringify(v === undefined ? null : v);
}

// buildElection makes the tbody of the leadership l. Its Revoke button
// calls revoke(l) with the leadership as shown now, its candidates button
// toggle(l.name).
export function buildElection(l, { revoke, toggle }) {
  const tb = el("tbody", { "data-election": l.name, "data-token": l.token });
  const listID = `candidates-${l.token}`;
  const leaderTitle = l.session ? `${l.candidate}, in session ${l.session}` : `${l.candidate}, with a lease of its own`;
  const revokeButton = el(
    "button",
    { type: "button", class: "danger small", "data-testid": "election-revoke", "aria-label": `Revoke the leadership of ${l.name}` },
    "Revoke",
  );
  revokeButton.addEventListener("click", () => revoke(state.elections.list.find((x) => x.token === l.token) || l));
  const toggleButton = el("button", {
    type: "button",
    class: "link-button",
    "data-testid": "candidates-toggle",
    "aria-expanded": "false",
    "aria-controls": listID,
  });
  toggleButton.addEventListener("click", () => toggle(l.name));
  const since = l.elected_at ? timeEl("leading", l.elected_at, { "data-testid": "elected-at" }) : el("span", { class: "none" }, "—");
  const row = el(
    "tr",
    { class: "election-row", "data-testid": "election-row", "data-election": l.name, "data-token": l.token },
    cell("Name", el("span", { class: linkClass(l.name, "name") }, l.name)),
    cell("Leader", el("span", { class: "owner", "data-testid": "leader", title: leaderTitle }, l.candidate)),
    cell("Term", el("span", { class: "term", "data-testid": "term" }, l.term)),
    cell("Token", el("code", { "data-testid": "token" }, l.token)),
    cell("Value", el("code", { class: "value", "data-testid": "value" })),
    cell("Since", since),
    el("td", { "data-label": "Candidates", class: "waiters-cell" }, el("span", { class: "queue-summary", "data-testid": "candidates-count" }, "…"), toggleButton),
    el("td", { class: "actions" }, revokeButton),
  );
  const list = el(
    "tr",
    { class: "queue-row", id: listID, "data-testid": "candidates-detail", hidden: true },
    el("td", { colspan: 8 }, el("div", { class: "queue" })),
  );
  tb.append(row, list);
  return tb;
}

// updateElection refreshes what changes while one leadership lasts: its
// value (a proclaim) and its candidates.
export function updateElection(tb, l) {
  const full = valueText(l.value);
  const value = tb.querySelector('[data-testid="value"]');
  setText(value, full.length > VALUE_SHOWN ? `${full.slice(0, VALUE_SHOWN - 1)}…` : full);
  value.title = full;
  value.classList.toggle("none", l.value === null || l.value === undefined);

  const c = state.elections.candidates.get(l.name);
  const known = c && c.token === l.token;
  const summary = tb.querySelector(".queue-summary");
  const toggle = tb.querySelector('[data-testid="candidates-toggle"]');
  const open = state.elections.expanded.has(l.name);
  let text = "…";
  let title = "";
  if (known && c.error) {
    text = "?";
    title = c.error;
  } else if (known) {
    const n = c.candidates.length;
    text = n === 0 ? "none" : `${n}${n >= 1000 ? "+" : ""} waiting`;
    title = c.candidates.map((x) => `#${x.position} ${x.candidate}`).join(", ");
  }
  setText(summary, text);
  summary.title = title;
  setText(toggle, open ? "Hide candidates" : "Show candidates");
  toggle.setAttribute("aria-expanded", String(open));
  toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the candidates of ${l.name}`);

  const listRow = tb.querySelector(".queue-row");
  listRow.hidden = !open;
  if (open) renderCandidates(listRow.querySelector(".queue"), l, known ? c : null);
}

// renderCandidates lists the candidates of l in box, in the order they
// would lead; c is null while they load.
function renderCandidates(box, l, c) {
  const kids = [];
  if (!c) {
    kids.push(el("p", { class: "hint" }, "Loading the candidates…"));
  } else if (c.error) {
    kids.push(el("p", { class: "problem" }, c.error));
  } else if (c.candidates.length === 0) {
    kids.push(el("p", { class: "hint" }, `No candidate is waiting to lead ${l.name}.`));
  } else {
    kids.push(
      el(
        "ol",
        { class: "waiters", "aria-label": `Waiting to lead ${l.name}, next first` },
        c.candidates.map((w) =>
          el(
            "li",
            { "data-testid": "candidate", "data-candidate": w.candidate, "data-position": w.position },
            el("span", { class: "pos" }, `#${w.position}`),
            el("span", { class: "owner" }, w.candidate),
            w.since ? timeEl("waiting", w.since) : null,
            w.session ? el("code", { title: `session ${w.session}` }, w.session) : null,
          ),
        ),
      ),
    );
  }
  // Rebuild only when the content changed, so the waiting times tick in place.
  const key = JSON.stringify(c);
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(...kids);
  }
}
