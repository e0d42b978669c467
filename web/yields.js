// Requests to yield (POST /v1/{kind}/{name}/yield): each shows on the row
// of the hold it asks, as a badge naming who asked and why, from the
// yield_requested events of the page's event stream, until that hold
// ends. A request asks and ends nothing, so a hold that heeds it shows its
// release as ever.

import { el, setText } from "./dom.js";

// asked maps a hold, by kind, name and token (tokens of a lock set's
// members are one, so the name tells them apart), to the latest request
// it got: the event.
const asked = new Map();

const ENDED = new Set(["released", "expired", "revoked", "session_expired", "resigned"]);

// holdKey names the hold an event is about.
function holdKey(e) {
  const kind = e.kind || "lock";
  return `${kind}/${kind === "lock" ? e.lock || e.name : e.name}/${e.token}`;
}

// yieldEvent keeps what e says of requests to yield: a request, or the end
// of a hold that was asked. It says whether the rows need marking again.
export function yieldEvent(e) {
  if (!e.token) return false;
  if (e.type === "yield_requested") {
    asked.set(holdKey(e), e);
    return true;
  }
  if (ENDED.has(e.type)) return asked.delete(holdKey(e));
  return false;
}

// selector finds the row of one hold in its panel.
function selector(kind, name, token) {
  const attr = { lock: "data-lock", election: "data-election", semaphore: "data-semaphore", rwlock: "data-rwlock" }[kind];
  return attr ? `tr[${attr}="${CSS.escape(name)}"][data-token="${CSS.escape(String(token))}"]` : "";
}

// badgeText says who asked, and why.
export function yieldText(e) {
  return `yield requested by ${e.owner || "someone"}${e.reason ? `: ${e.reason}` : ""}`;
}

// markYields puts the badge on the row of each hold asked to yield, and
// takes it off every other row: panels rebuild rows as they please, so
// this runs after each of their renders.
export function markYields() {
  const want = new Map();
  for (const e of asked.values()) {
    const kind = e.kind || "lock";
    const sel = selector(kind, kind === "lock" ? e.lock || e.name : e.name, e.token);
    if (!sel) continue;
    for (const row of document.querySelectorAll(sel)) want.set(row, e);
  }
  for (const badge of document.querySelectorAll('[data-testid="yield-badge"]')) {
    if (!want.has(badge.closest("tr"))) badge.remove();
  }
  for (const [row, e] of want) {
    const owner = row.querySelector(".owner");
    if (!owner) continue;
    let badge = row.querySelector('[data-testid="yield-badge"]');
    if (!badge) {
      badge = el("span", { class: "badge yield_requested", "data-testid": "yield-badge", role: "status" });
      owner.after(badge);
    }
    setText(badge, yieldText(e));
    badge.title = `${yieldText(e)} (revision ${e.revision}${e.credential ? `, credential ${e.credential}` : ""}). The holder decides whether to release.`;
    badge.dataset.owner = e.owner || "";
  }
}
