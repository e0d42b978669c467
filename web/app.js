// baton's dashboard. Plain JavaScript modules, no framework and no build
// step: the server embeds these files as they are (see web/doc.go), and
// index.html loads this one.
//
// The page is a client of the public API. It loads the held locks, the
// elections, the semaphores, the read/write locks, the keys, the history,
// the cluster and who the page is signed in as (GET /v1/whoami), then follows
// GET /v1/events: every event makes it reload what the event changed (a
// few coalesced requests), so what it shows is always what the API says,
// whatever events were missed. Elections, semaphores, read/write locks and keys are changed by
// their events in place and read again in full when the stream (re)opens,
// since the stream resumes without a gap.
//
// When baton runs with --auth-file, the API answers 401 until the page sends
// a bearer token: the page then asks for one in a form (auth.js), keeps it
// in sessionStorage (token.js) and sends it as an Authorization header.
//
// This module connects the others: each exports what it does, and takes
// what it must set off elsewhere (a reload, the revoke dialog) from here.

import { initAccess, loadAccess, loadUsageSoon } from "./access.js";
import { initAuth } from "./auth.js";
import { tick } from "./clock.js";
import { loadCluster, showRevision } from "./cluster.js";
import { electionEvent, initElections, loadCandidatesSoon, loadElectionsSoon } from "./elections.js";
import { fillEmptyState } from "./empty.js";
import { historyFiltered, initFollow, renderLockStatus } from "./follow.js";
import { initHistory, loadHistorySoon } from "./history.js";
import { initKeys, keyEvent, loadKeysSoon } from "./keys.js";
import { dropHold, initLocks, loadLocksSoon, loadQueuesSoon } from "./locks.js";
import { checkRevokeTarget, holdEnded, initRevoke, openRevoke } from "./revoke.js";
import { initRWLocks, loadRWLocksSoon, loadRWWaitersSoon, rwlockEvent } from "./rwlocks.js";
import { initSemaphores, loadSemaphoresSoon, loadWaitersSoon, semaphoreEvent } from "./semaphores.js";
import { state } from "./state.js";
import { connect, initStream } from "./stream.js";
import { initTimeline, loadTimelineSoon, pollTimeline, tickTimeline, timelineEvent } from "./timeline.js";
import { storedToken } from "./token.js";
import { markYields, yieldEvent } from "./yields.js";

const ENDED = new Set(["released", "expired", "revoked", "session_expired", "resigned"]);
const HOLDS = new Set(["lock", "election", "semaphore", "rwlock"]); // the kinds of hold the revoke dialog ends
const CLUSTER_EVERY = 5000; // ms between cluster (and access, queue, candidate and waiter) refreshes

fillEmptyState();
initAccess(renderLockStatus); // it says whether a name is outside the rules
initLocks({
  revoke: openRevoke,
  rendered: () => {
    markYields();
    renderLockStatus();
    tickTimeline(); // held locks no event of the window shows are drawn too
    if (state.revoking) checkRevokeTarget();
  },
});
initElections({
  revoke: (l) => openRevoke(l, "election"),
  rendered: () => {
    markYields();
    if (state.revoking) checkRevokeTarget();
  },
});
initSemaphores({
  revoke: (p) => openRevoke(p, "semaphore"),
  rendered: () => {
    markYields();
    if (state.revoking) checkRevokeTarget();
  },
});
initRWLocks({
  revoke: (h) => openRevoke(h, "rwlock"),
  rendered: () => {
    markYields();
    if (state.revoking) checkRevokeTarget();
  },
});
initKeys();
initHistory(() => {
  historyFiltered();
  loadTimelineSoon(); // the timeline follows the history's lock and owner filters
});
initTimeline();
initRevoke((kind) => {
  if (kind === "election") loadElectionsSoon();
  else if (kind === "semaphore") loadSemaphoresSoon();
  else if (kind === "rwlock") loadRWLocksSoon();
  else loadLocksSoon();
  loadHistorySoon();
});
initAuth(() => {
  loadLocksSoon();
  loadElectionsSoon();
  loadSemaphoresSoon();
  loadRWLocksSoon();
  loadKeysSoon();
  loadHistorySoon();
  loadTimelineSoon();
  loadCluster();
  loadAccess();
  connect();
});
initStream({
  reload: () => {
    loadLocksSoon();
    if (state.history.before === 0) loadHistorySoon(); // an older page does not change
  },
  // The timeline reads its window again only when the stream (re)opens or
  // is down: while it is live, events extend the window as they come.
  connected: () => {
    loadAccess(); // a reload of the auth file that changed the rules ends the stream
    loadTimelineSoon();
    loadElectionsSoon();
    loadSemaphoresSoon();
    loadRWLocksSoon();
    loadKeysSoon();
  },
  polled: () => {
    pollTimeline();
    loadElectionsSoon();
    loadSemaphoresSoon();
    loadRWLocksSoon();
    loadKeysSoon();
  },
  event: (e) => {
    showRevision(e.revision);
    timelineEvent(e);
    electionEvent(e);
    semaphoreEvent(e);
    rwlockEvent(e);
    keyEvent(e);
    loadUsageSoon();
    if (yieldEvent(e)) markYields();
    const kind = e.kind || "lock";
    if (ENDED.has(e.type) && HOLDS.has(kind)) {
      if (kind === "lock") dropHold(e.lock, e.token);
      holdEnded(kind, e.name || e.lock, e.token, e.type);
    }
  },
});

initFollow();
loadLocksSoon();
loadElectionsSoon();
loadSemaphoresSoon();
loadRWLocksSoon();
loadKeysSoon();
loadHistorySoon();
loadTimelineSoon();
loadCluster();
loadAccess();
setInterval(() => {
  tick();
  tickTimeline();
}, 1000);
setInterval(() => {
  if (state.authRequired && !storedToken()) return; // every call would be refused
  loadCluster();
  loadAccess(); // usage counts waits too, which no event tells of
  loadQueuesSoon();
  loadCandidatesSoon();
  loadWaitersSoon();
  loadRWWaitersSoon();
}, CLUSTER_EVERY);
connect();
