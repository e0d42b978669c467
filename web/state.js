// What the page knows, shared by its modules. Each field is written by the
// module named beside it; the others only read it.
export const state = {
  locks: [], // the held locks under the name prefix, sorted by name (locks.js; stream.js drops ended holds)
  delays: [], // the free locks under lock-delay (locks.js)
  loaded: false, // locks has been read once (locks.js)
  truncated: false, // more locks match than the page reads (locks.js)
  queues: new Map(), // name -> {token, waiters: [...], error} (locks.js)
  expanded: new Set(), // names whose queue is shown (locks.js)
  // The elections that have a leader under the name prefix, sorted by name,
  // and what goes with them (elections.js).
  elections: {
    list: [], // Leaders, without candidates
    loaded: false, // list has been read once
    truncated: false, // more elections match than the page reads
    candidates: new Map(), // name -> {token, candidates: [...], error}
    expanded: new Set(), // names whose candidates are shown
  },
  // The semaphores that have permits held under the name prefix, sorted by
  // name, and their waiters (semaphores.js).
  semaphores: {
    list: [], // {name, limit, holders: [Hold…]}, holders oldest first
    loaded: false, // list has been read once
    truncated: false, // more semaphores match than the page reads
    waiters: new Map(), // name -> {waiters: [...], error}
    expanded: new Set(), // names whose waiters are shown
  },
  // The read/write locks that are held under the name prefix, sorted by
  // name, and their waiters (rwlocks.js).
  rwlocks: {
    list: [], // {name, mode, holders: [Hold…]}, holders oldest first
    loaded: false, // list has been read once
    truncated: false, // more read/write locks match than the page reads
    waiters: new Map(), // name -> {waiters: [... each with its mode], error}
    expanded: new Set(), // names whose waiters are shown
  },
  // The keys under the path shown, in key order (keys.js).
  keys: {
    list: [], // Keys, as GET /v1/kv answers them
    loaded: false, // list has been read once
    truncated: false, // more keys lie under the path than the page reads
    shownPrefix: "", // the path list was read under
    pending: null, // while a read is under way: the key events that came meanwhile
    changed: new Set(), // keys whose rows flash at the next render
  },
  highlight: "", // the lock a history link pointed at (follow.js)
  history: { before: 0, older: [], next: 0 }, // the page of history shown (history.js)
  // The timeline's window (timeline.js): the length in ms chosen and the
  // one read (shown), its events of locks, semaphores and read/write
  // locks by key, the filter they were read with, whether the read
  // stopped short of the window's start and, if so, the oldest time read
  // (horizon); pending collects live events while a read is under way.
  timeline: { span: 900000, fit: true, fitFrom: 0, shown: "",  events: new Map(), filter: "", truncated: false, horizon: 0, loaded: false, pending: null },
  lastEventID: "", // the last event seen, to resume the stream after it (stream.js)
  revision: 0, // the newest etcd revision seen (cluster.js)
  revoking: null, // the hold (a lock's, a leadership, a permit or a read/write hold) the revoke dialog is about (revoke.js)
  authRequired: false, // the API answered 401 at least once (auth.js)
  access: null, // who this tab is and what it may do, as GET /v1/whoami answers (access.js)
};
