// The revoke dialog: it names the hold it ends, checks that the hold is
// still the one shown, and asks for a reason for the history.

import { api, APIError, clearProblem, lockPath, showProblem } from "./api.js";
import { $, el, setText } from "./dom.js";
import { state } from "./state.js";

const dialog = $("revoke-dialog");

// revoked runs after a revoke (set by initRevoke), to reload.
let revoked = () => {};

// openRevoke asks whether to revoke the hold l.
export function openRevoke(l) {
  state.revoking = { name: l.name, token: l.token, owner: l.owner };
  setText($("revoke-name"), l.name);
  $("revoke-holder").replaceChildren(
    el(
      "span",
      {},
      "Held by ",
      el("strong", {}, l.owner),
      " with token ",
      el("code", {}, l.token),
      l.session ? [" in session ", el("code", {}, l.session)] : "",
      ".",
    ),
  );
  $("revoke-reason").value = "";
  clearProblem($("revoke-error"));
  const confirm = $("revoke-confirm");
  confirm.disabled = false;
  setText(confirm, "Revoke lock");
  dialog.showModal(); // the reason field has autofocus; Escape cancels
}

function revokeGone(message) {
  showProblem($("revoke-error"), new APIError(0, "Already ended", message, ""));
  $("revoke-confirm").disabled = true;
}

// checkRevokeTarget, after the locks were read again, says so in the
// dialog when the lock changed hands.
export function checkRevokeTarget() {
  const r = state.revoking;
  if (!r || !dialog.open || $("revoke-confirm").disabled) return;
  const now = state.locks.find((l) => l.name === r.name);
  if (now && now.token !== r.token) revokeGone(`${r.name} changed hands: ${now.owner} holds it now, with token ${now.token}.`);
}

// holdEnded tells the dialog that an event (of type) ended the hold
// token of name.
export function holdEnded(name, token, type) {
  const r = state.revoking;
  if (r && r.name === name && (!token || r.token === token)) revokeGone(`This hold has just ended (${type.replace("_", " ")}); there is nothing left to revoke.`);
}

async function confirmRevoke(ev) {
  ev.preventDefault();
  const r = state.revoking;
  const confirm = $("revoke-confirm");
  if (!r || confirm.disabled) return;
  confirm.disabled = true;
  setText(confirm, "Revoking…");
  clearProblem($("revoke-error"));
  try {
    // Revoke ends whichever hold is current, so make sure it is still the
    // one the operator looked at.
    const now = await api(lockPath(r.name));
    if (now.token !== r.token) {
      revokeGone(`${r.name} changed hands: ${now.owner} holds it now, with token ${now.token}. Nothing was revoked.`);
      setText(confirm, "Revoke lock");
      return;
    }
    const reason = $("revoke-reason").value.trim();
    await api(`${lockPath(r.name)}/revoke`, { method: "POST", body: JSON.stringify(reason ? { reason } : {}) });
  } catch (err) {
    if (err.status === 404 && err.code === "not_held") revokeGone(`${r.name} is no longer held; nothing was revoked.`);
    else {
      showProblem($("revoke-error"), err);
      confirm.disabled = false;
    }
    setText(confirm, "Revoke lock");
    return;
  }
  state.revoking = null;
  dialog.close("revoked");
  notify(`Revoked ${r.name} (token ${r.token}, held by ${r.owner}).`);
  $("holders-title").focus(); // the row that had the focus is going
  revoked();
}

let noticeTimer = 0;

// notify says what just happened, for a few seconds.
function notify(text) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    n.hidden = true;
  }, 6000);
}

// initRevoke wires the dialog; onRevoked runs after each revoke.
export function initRevoke(onRevoked) {
  revoked = onRevoked;
  $("revoke-form").addEventListener("submit", confirmRevoke);
  $("revoke-cancel").addEventListener("click", () => dialog.close("cancel"));
  // A dialog's close event is dispatched as a later task, so it can arrive
  // after the dialog was opened again (Escape, then Revoke straight away):
  // only a dialog that is still closed forgets its hold.
  dialog.addEventListener("close", () => {
    if (!dialog.open) state.revoking = null;
  });
}
