// Following one lock: a lock link (#lock=name) narrows the history to that
// lock, highlights its row and says whether it is held now.

import { mayNot } from "./access.js";
import { $, el } from "./dom.js";
import { loadHistorySoon, resetHistoryPaging } from "./history.js";
import { renderHolders } from "./locks.js";
import { state } from "./state.js";

function lockFromHash() {
  const m = /^#lock=(.+)$/.exec(location.hash);
  if (!m) return "";
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return "";
  }
}

function applyHash() {
  const name = lockFromHash();
  if (!name) return;
  state.highlight = name;
  if ($("history-lock").value !== name) {
    $("history-lock").value = name;
    resetHistoryPaging();
    loadHistorySoon();
  }
  renderHolders();
}

// boxSays is what renderLockStatus last put in its box.
let boxSays = "";

// renderLockStatus says, above the history of one lock, who holds it.
export function renderLockStatus() {
  const box = $("history-lock-status");
  const name = $("history-lock").value.trim();
  if (!name || !state.loaded) {
    box.hidden = true;
    return;
  }
  const held = state.locks.find((l) => l.name === name);
  // Every refresh of the locks comes here: the box is rebuilt only when
  // what it says changes, so that its buttons keep the focus and a click.
  const hidden = !held && mayNot(name, "read");
  const says = JSON.stringify([name, held ? [held.owner, held.token] : null, hidden]);
  if (boxSays === says && !box.hidden) return;
  boxSays = says;
  const kids = [];
  if (held) {
    const show = el("button", { type: "button", class: "link-button", "data-testid": "history-lock-show" }, "show its row");
    show.addEventListener("click", () => {
      const tb = $("holders-table").querySelector(`tbody[data-lock="${CSS.escape(name)}"]`);
      if (tb) {
        tb.scrollIntoView({ block: "center" });
        tb.querySelector("a.lock-link").focus();
      }
    });
    kids.push(el("code", {}, name), ` is held by ${held.owner} with token ${held.token}: `, show);
  } else if (hidden) {
    // Not held as far as this page can tell: it may not see the name.
    kids.push(el("code", {}, name), " is outside the names your rules let you read (Your access).");
  } else {
    kids.push(el("code", {}, name), " is not held now.");
  }
  const clear = el("button", { type: "button", class: "link-button", "data-testid": "history-lock-clear" }, "all locks");
  clear.addEventListener("click", clearLockFilter);
  kids.push(" · ", "Show ", clear);
  box.replaceChildren(...kids);
  box.hidden = false;
}

function clearLockFilter() {
  $("history-lock").value = "";
  state.highlight = "";
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  resetHistoryPaging();
  loadHistorySoon();
  renderHolders();
}

// historyFiltered follows the history's lock filter as typed: it is the
// lock highlighted, and a link to another lock no longer applies.
export function historyFiltered() {
  state.highlight = $("history-lock").value.trim();
  if (lockFromHash() && lockFromHash() !== state.highlight) history.replaceState(null, "", location.pathname + location.search);
  renderLockStatus();
  renderHolders();
}

// initFollow follows lock links, and applies the one the page opened with.
export function initFollow() {
  // A lock link pointing where the page already is still re-applies it.
  document.addEventListener("click", (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest("a.lock-link") : null;
    if (a && a.hash === location.hash) applyHash();
  });
  window.addEventListener("hashchange", applyHash);
  applyHash();
}
