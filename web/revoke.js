// The revoke dialog: it names the hold it ends (a lock's, an election's
// leadership, one permit of a semaphore, or one hold of a read/write
// lock), checks that the hold is
// still the one shown, and asks for a reason for the history.

import { api, APIError, clearProblem, electionPath, lockPath, rwlockPath, semaphorePath, showProblem } from "./api.js";
import { $, el, setText } from "./dom.js";
import { state } from "./state.js";

const dialog = $("revoke-dialog");

// oneHolder is how a lock or an election is told apart from the hold t
// the dialog is about: now, as read, has one holder, which is t's while
// the token is.
const oneHolder = (now, t) => now.token === t.token;

// oneOfMany is a kind whose thing has several holds at once, each with
// its own token (a semaphore, a read/write lock): the dialog is about one
// of them, which is held while its token is among the holders, and
// revoked by its token. id is the panel's (its state's part, its
// heading's); words are what the kind says.
const oneOfMany = (id, path, words) => ({
  path,
  current: () => state[id].list,
  holder: (h) => h.owner,
  held: (now, t) => (now.holders || []).some((p) => p.token === t.token),
  body: (t, reason) => (reason ? { token: t.token, reason } : { token: t.token }),
  gone: "not_held",
  focus: `${id}-title`,
  ...words,
});

// kinds says, for each kind of hold the dialog revokes, how it reads and
// where it lives: path(name) is its resource, current() what the page
// shows of that kind now, held(now, t) whether now (what path answers, or
// current() shows) still holds t, body(t, reason) the revoke's request,
// gone the problem code of a hold that ended, focus the heading that
// takes the focus from the row that goes.
const kinds = {
  lock: {
    what: "Revoke lock ",
    confirm: "Revoke lock",
    path: lockPath,
    current: () => state.locks,
    holder: (h) => h.owner,
    held: oneHolder,
    body: (t, reason) => (reason ? { reason } : {}),
    noun: "hold",
    gone: "not_held",
    focus: "holders-title",
    hint: "The hold ends now, and the next waiter (if any) gets the lock. The holder is not told: a fenced resource rejects its writes once a newer token has written. The revoke is recorded in the history with your reason.",
    says: (t) => ["Held by ", el("strong", {}, t.holder), " with token ", el("code", {}, t.token)],
    done: (t) => `Revoked ${t.name} (token ${t.token}, held by ${t.holder}).`,
    now: (t, h) => `${t.name} changed hands: ${h.owner} holds it now, with token ${h.token}.`,
    ended: (t) => `${t.name} is no longer held; nothing was revoked.`,
  },
  election: {
    what: "Depose the leader of ",
    confirm: "Revoke leadership",
    path: electionPath,
    current: () => state.elections.list,
    holder: (h) => h.candidate,
    held: oneHolder,
    body: (t, reason) => (reason ? { reason } : {}),
    noun: "leadership",
    gone: "no_leader",
    focus: "elections-title",
    hint: "The leadership ends now, and the first candidate in line leads next (once the leadership's lock-delay, if it has one, has passed). The leader is not told: a fenced resource rejects its writes once a newer token has written. The revoke is recorded in the history with your reason.",
    says: (t) => ["Led by ", el("strong", {}, t.holder), ` in term ${t.term}, with token `, el("code", {}, t.token)],
    done: (t) => `Revoked the leadership of ${t.name} (term ${t.term}, token ${t.token}, led by ${t.holder}).`,
    now: (t, h) => `${t.name} has a new leader: ${h.candidate} leads it now, in term ${h.term} with token ${h.token}.`,
    ended: (t) => `${t.name} has no leader any more; nothing was revoked.`,
  },
  semaphore: oneOfMany("semaphores", semaphorePath, {
    what: "Revoke a permit of ",
    confirm: "Revoke permit",
    noun: "permit",
    hint: "The permit ends now, and the first waiter in line (if any) takes the permit it frees; the other permits are untouched. The holder is not told until its next renew, which answers not_held. The revoke is recorded in the history with your reason.",
    says: (t) => ["Held by ", el("strong", {}, t.holder), ` (one of ${t.limit} permits), with token `, el("code", {}, t.token)],
    done: (t) => `Revoked a permit of ${t.name} (token ${t.token}, held by ${t.holder}).`,
    now: (t) => `The permit of ${t.name} with token ${t.token} has ended.`,
    ended: (t) => `${t.name} has no permit with token ${t.token} any more; nothing was revoked.`,
  }),
  // A read/write lock has several read holds at once, or one write hold.
  rwlock: oneOfMany("rwlocks", rwlockPath, {
    what: "Revoke a hold of ",
    confirm: "Revoke hold",
    noun: "hold",
    hint: "The hold ends now; when it was the last one in the way, the first waiter in line takes the lock (a writer alone, or the readers before the next writer together). The holder is not told until its next renew, which answers not_held. The revoke is recorded in the history with your reason.",
    says: (t) => [`${t.mode === "write" ? "Write-held" : "Read-held"} by `, el("strong", {}, t.holder), " with token ", el("code", {}, t.token)],
    done: (t) => `Revoked the ${t.mode} hold of ${t.name} (token ${t.token}, held by ${t.holder}).`,
    now: (t) => `The ${t.mode} hold of ${t.name} with token ${t.token} has ended.`,
    ended: (t) => `${t.name} has no hold with token ${t.token} any more; nothing was revoked.`,
  }),
};

// revoked runs after a revoke (set by initRevoke), with the kind revoked.
let revoked = () => {};

// openRevoke asks whether to revoke the hold h, of kind "lock" (a Lock),
// "election" (a Leader), "semaphore" (a permit's Hold) or "rwlock" (a
// read/write lock's Hold).
export function openRevoke(h, kind = "lock") {
  const k = kinds[kind];
  const t = { kind, name: h.name, token: h.token, holder: k.holder(h), term: h.term, limit: h.limit, mode: h.mode };
  state.revoking = t;
  setText($("revoke-what"), k.what);
  setText($("revoke-name"), h.name);
  setText($("revoke-hint"), k.hint);
  $("revoke-holder").replaceChildren(el("span", {}, k.says(t), h.session ? [" in session ", el("code", {}, h.session)] : "", "."));
  $("revoke-reason").value = "";
  clearProblem($("revoke-error"));
  const confirm = $("revoke-confirm");
  confirm.disabled = false;
  setText(confirm, k.confirm);
  dialog.showModal(); // the reason field has autofocus; Escape cancels
}

function revokeGone(message) {
  showProblem($("revoke-error"), new APIError(0, "Already ended", message, ""));
  $("revoke-confirm").disabled = true;
}

// checkRevokeTarget, after the holds of a kind were read again, says so
// in the dialog when the one it is about changed hands.
export function checkRevokeTarget() {
  const r = state.revoking;
  if (!r || !dialog.open || $("revoke-confirm").disabled) return;
  const k = kinds[r.kind];
  const now = k.current().find((h) => h.name === r.name);
  if (now && !k.held(now, r)) revokeGone(k.now(r, now));
}

// holdEnded tells the dialog that an event (of type) ended the hold
// token of name, of kind.
export function holdEnded(kind, name, token, type) {
  const r = state.revoking;
  if (r && r.kind === kind && r.name === name && (!token || r.token === token))
    revokeGone(`This ${kinds[kind].noun} has just ended (${type.replace("_", " ")}); there is nothing left to revoke.`);
}

async function confirmRevoke(ev) {
  ev.preventDefault();
  const r = state.revoking;
  const confirm = $("revoke-confirm");
  if (!r || confirm.disabled) return;
  const k = kinds[r.kind];
  confirm.disabled = true;
  setText(confirm, "Revoking…");
  clearProblem($("revoke-error"));
  try {
    // Revoke ends whichever hold is current, so make sure it is still the
    // one the operator looked at.
    const now = await api(k.path(r.name));
    if (!k.held(now, r)) {
      revokeGone(`${k.now(r, now)} Nothing was revoked.`);
      setText(confirm, k.confirm);
      return;
    }
    const reason = $("revoke-reason").value.trim();
    await api(`${k.path(r.name)}/revoke`, { method: "POST", body: JSON.stringify(k.body(r, reason)) });
  } catch (err) {
    if (err.status === 404 && err.code === k.gone) revokeGone(k.ended(r));
    else {
      showProblem($("revoke-error"), err);
      confirm.disabled = false;
    }
    setText(confirm, k.confirm);
    return;
  }
  state.revoking = null;
  dialog.close("revoked");
  notify(k.done(r));
  $(k.focus).focus(); // the row that had the focus is going
  revoked(r.kind);
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

// initRevoke wires the dialog; onRevoked(kind) runs after each revoke.
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
