// The elections that have a leader: read from GET /v1/elections a page at
// a time, kept on the page in place, changed by the stream's election
// events as they come, with each shown election's candidates (and what an
// event does not carry: expiry, metadata) from GET /v1/elections/{name}.

import { api, clearProblem, electionPath, showProblem } from "./api.js";
import { $, markFresh, setText } from "./dom.js";
import { buildElection, updateElection } from "./electionrow.js";
import { dropByName, freshness, putByName } from "./fresh.js";
import { coalesce, debounce } from "./schedule.js";
import { state } from "./state.js";

const LIST_PAGE = 1000; // the API's largest page
const LIST_MAX_PAGES = 5; // show at most 5,000 elections
const CANDIDATES_FOR_ALL = 20; // fetch every election's candidates when this few are shown
const ENDED = new Set(["resigned", "expired", "session_expired", "revoked"]);

const es = state.elections;
const table = $("elections-table");

// hooks are set by initElections: revoke(l) opens the revoke dialog for
// a leadership, rendered() runs after every render.
const hooks = { revoke: () => {}, rendered: () => {} };

function prefix() {
  return $("elections-prefix").value.trim();
}

// fresh keeps answers older than an event from overwriting it.
const fresh = freshness();

function loadElections() {
  return fresh.read(readList);
}

async function readList(since) {
  const want = prefix();
  const list = [];
  let cursor = "";
  let pages = 0;
  try {
    do {
      const q = new URLSearchParams({ limit: String(LIST_PAGE) });
      if (want) q.set("prefix", want);
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/elections?${q}`);
      list.push(...(page.elections || []));
      cursor = page.next_cursor || "";
      pages++;
    } while (cursor && pages < LIST_MAX_PAGES);
  } catch (err) {
    showProblem($("elections-error"), err);
    if (err.status === 400) {
      es.list = []; // the filter itself is wrong: it matches nothing
      es.loaded = true;
      es.truncated = false;
      renderElections();
    }
    return;
  }
  if (want !== prefix()) {
    loadElectionsSoon(); // the filter changed meanwhile: this answer is stale
    return;
  }
  clearProblem($("elections-error"));
  es.list = fresh.merge(list, es.list, since);
  es.loaded = true;
  es.truncated = cursor !== "";
  renderElections();
  loadCandidatesSoon();
}

// loadElectionsSoon reads the elections again, once for a burst of calls.
export const loadElectionsSoon = coalesce(loadElections, 150);

let renderTimer = 0;

// renderSoon renders once after the current task, however many events
// it applies.
function renderSoon() {
  if (!renderTimer)
    renderTimer = setTimeout(() => {
      renderTimer = 0;
      renderElections();
    }, 0);
}

// renderElections brings the table up to date with state.
export function renderElections() {
  setText($("elections-count"), es.loaded ? `${es.list.length}` : "");
  renderRows();
  table.hidden = es.list.length === 0;
  $("elections-empty").hidden = !(es.loaded && es.list.length === 0 && !prefix());
  const nomatch = $("elections-nomatch");
  nomatch.hidden = !(es.loaded && es.list.length === 0 && prefix());
  if (!nomatch.hidden) setText(nomatch, `No election whose name starts with “${prefix()}” has a leader.`);
  const trunc = $("elections-truncated");
  trunc.hidden = !es.truncated;
  if (es.truncated) trunc.textContent = `Showing the first ${es.list.length} elections by name. Narrow the list with a name prefix.`;
  hooks.rendered();
}

// renderRows keeps one tbody per leadership (its row and the row of its
// candidates), keyed by name, updated in place: a refresh does not take
// the focus from a button. A new leader is a new tbody.
function renderRows() {
  const old = new Map();
  for (const tb of table.tBodies) old.set(tb.dataset.election, tb);
  let prev = table.tHead;
  for (const l of es.list) {
    let tb = old.get(l.name);
    old.delete(l.name);
    if (tb && tb.dataset.token !== String(l.token)) {
      tb.remove();
      tb = undefined;
    }
    if (!tb) {
      tb = buildElection(l, { revoke: hooks.revoke, toggle: toggleCandidates });
      if (table.dataset.ready) markFresh(tb);
    }
    updateElection(tb, l);
    if (prev.nextElementSibling !== tb) prev.after(tb);
    prev = tb;
  }
  for (const tb of old.values()) tb.remove();
  if (es.loaded) table.dataset.ready = "1";
}

// shown says whether the election name belongs on the page: under the
// prefix and, when the list stopped short, within the names read.
function shown(name) {
  if (!name.startsWith(prefix())) return false;
  return !es.truncated || es.list.length === 0 || name <= es.list[es.list.length - 1].name;
}

const put = (l) => putByName(es.list, l);

// electionEvent applies an event of the stream at once; for a new leader
// it then reads the election for what the event does not say.
export function electionEvent(e) {
  if (e.kind !== "election" || !es.loaded || !shown(e.name)) return;
  fresh.applied(e.name);
  const cur = es.list.find((x) => x.name === e.name);
  if (e.type === "elected") {
    put({ name: e.name, candidate: e.owner, value: e.value ?? null, token: e.token, term: e.term, session: e.session, elected_at: e.time, metadata: {} });
    refresh(e.name);
  } else if (e.type === "proclaimed") {
    if (cur && cur.token === e.token) cur.value = e.value ?? null;
  } else if (ENDED.has(e.type)) {
    if (cur && (!e.token || cur.token === e.token)) es.list.splice(es.list.indexOf(cur), 1);
  } else return;
  renderSoon();
}

const stale = new Set(); // names to read again with GET /v1/elections/{name}
const readStale = coalesce(() => {
  const names = [...stale];
  stale.clear();
  return loadCandidates(names);
}, 150);

function refresh(name) {
  stale.add(name);
  readStale();
}

// loadCandidates reads GET /v1/elections/{name} for each of names, four
// at a time: the leadership as it is now, and its candidates.
function loadCandidates(names) {
  return fresh.read(async (since) => {
    const work = names.slice();
    const one = async () => {
      for (let name = work.shift(); name !== undefined; name = work.shift()) await loadOne(name, since);
    };
    await Promise.all([one(), one(), one(), one()]);
    renderElections();
  });
}

async function loadOne(name, since) {
  try {
    const l = await api(electionPath(name));
    if (fresh.newer(name, since)) {
      refresh(name); // an event overtook the answer: read it again
      return;
    }
    const { candidates, ...leader } = l;
    es.candidates.set(name, { token: l.token, candidates: Array.isArray(candidates) ? candidates : [] }); // none is left out
    if (shown(name)) put(leader);
  } catch (err) {
    if (fresh.newer(name, since)) refresh(name);
    else if (err.status === 404) {
      // Nobody leads it now: the event that says so is on its way, or was
      // applied already.
      es.candidates.delete(name);
      dropByName(es.list, name);
    } else {
      const cur = es.list.find((x) => x.name === name);
      es.candidates.set(name, { token: cur ? cur.token : 0, error: err.message });
    }
  }
}

function toggleCandidates(name) {
  if (es.expanded.has(name)) es.expanded.delete(name);
  else es.expanded.add(name);
  renderElections();
  if (es.expanded.has(name)) loadCandidates([name]);
}

function candidateNames() {
  if (es.list.length <= CANDIDATES_FOR_ALL) return es.list.map((l) => l.name);
  return es.list.filter((l) => es.expanded.has(l.name)).map((l) => l.name);
}

// loadCandidatesSoon reads the candidates of the shown elections (of
// those opened, when many are shown) again: a candidate joining the line
// makes no event.
export const loadCandidatesSoon = coalesce(() => loadCandidates(candidateNames()), 1000);

// initElections wires the filter. revoke(l) opens the revoke dialog for
// the leadership l; rendered() runs after each render of the table.
export function initElections({ revoke, rendered }) {
  hooks.revoke = revoke;
  hooks.rendered = rendered;
  $("elections-filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("elections-prefix").addEventListener("input", debounce(loadElectionsSoon, 250));
}
