// baton's dashboard. Plain JavaScript modules, no framework and no build
// step: the server embeds these files as they are (see web/doc.go), and
// index.html loads this one.
//
// The page is a client of the public API. It loads the held locks, the
// history and the cluster, then follows GET /v1/events: every event makes it
// reload what the event changed (a few coalesced requests), so what it shows
// is always what the API says, whatever events were missed.
//
// When baton runs with --auth-file, the API answers 401 until the page sends
// a bearer token: the page then asks for one in a form (auth.js), keeps it
// in sessionStorage (token.js) and sends it as an Authorization header.
//
// This module connects the others: each exports what it does, and takes
// what it must set off elsewhere (a reload, the revoke dialog) from here.

import { initAuth } from "./auth.js";
import { tick } from "./clock.js";
import { loadCluster, showRevision } from "./cluster.js";
import { fillEmptyState } from "./empty.js";
import { historyFiltered, initFollow, renderLockStatus } from "./follow.js";
import { initHistory, loadHistorySoon } from "./history.js";
import { dropHold, initLocks, loadLocksSoon, loadQueuesSoon } from "./locks.js";
import { checkRevokeTarget, holdEnded, initRevoke, openRevoke } from "./revoke.js";
import { state } from "./state.js";
import { connect, initStream } from "./stream.js";
import { storedToken } from "./token.js";

const ENDED = new Set(["released", "expired", "revoked", "session_expired"]);
const CLUSTER_EVERY = 5000; // ms between cluster (and queue) refreshes

fillEmptyState();
initLocks({
  revoke: openRevoke,
  rendered: () => {
    renderLockStatus();
    if (state.revoking) checkRevokeTarget();
  },
});
initHistory(historyFiltered);
initRevoke(() => {
  loadLocksSoon();
  loadHistorySoon();
});
initAuth(() => {
  loadLocksSoon();
  loadHistorySoon();
  loadCluster();
  connect();
});
initStream({
  reload: () => {
    loadLocksSoon();
    if (state.history.before === 0) loadHistorySoon(); // an older page does not change
  },
  event: (e) => {
    showRevision(e.revision);
    if (ENDED.has(e.type)) {
      dropHold(e.lock, e.token);
      holdEnded(e.lock, e.token, e.type);
    }
  },
});

initFollow();
loadLocksSoon();
loadHistorySoon();
loadCluster();
setInterval(tick, 1000);
setInterval(() => {
  if (state.authRequired && !storedToken()) return; // every call would be refused
  loadCluster();
  loadQueuesSoon();
}, CLUSTER_EVERY);
connect();
