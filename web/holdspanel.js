// A panel of things that have several holds at once, each with its own
// token (the semaphores, the read/write locks): read from the kind's list
// route a page at a time, kept on the page in place, changed by the
// stream's events of the kind as they come, with each shown one's holds
// as they are now and its waiters from its own route.

import { api, clearProblem, showProblem } from "./api.js";
import { $, markFresh, setText } from "./dom.js";
import { dropByName, freshness, putByName } from "./fresh.js";
import { coalesce, debounce } from "./schedule.js";

const LIST_PAGE = 1000; // the API's largest page
const LIST_MAX_PAGES = 5; // read at most 5 pages
const WAITERS_FOR_ALL = 20; // fetch every shown one's waiters when this few are shown
const ENDED = new Set(["released", "expired", "session_expired", "revoked"]);

// holdsPanel runs the panel of one kind. cfg says:
//   kind       the events' kind ("semaphore")
//   id         the prefix of the panel's element ids ("semaphores"), also
//              the list route's last segment and its answer's field
//   state      the panel's part of state.js: {list, loaded, truncated,
//              waiters, expanded}
//   path(name) its route
//   build(s, {toggle}), update(tb, s, {revoke, fresh}) draw one's tbody,
//              whose data-<kind> is its name
//   acquired(cur, e) what an acquired event e makes of cur (or of none)
//   read(s)    what the page keeps of an answer of path(name)
//   nomatch(prefix), plural: the words of the filter's hints
// It returns what app.js calls: loadSoon, render, event, loadWaitersSoon
// and init({revoke, rendered}).
export function holdsPanel(cfg) {
  const st = cfg.state;
  const table = $(`${cfg.id}-table`);
  const fresh = freshness(); // keeps answers older than an event from overwriting it
  const hooks = { revoke: () => {}, rendered: () => {} };
  const prefix = () => $(`${cfg.id}-prefix`).value.trim();
  const put = (s) => putByName(st.list, s);
  const drop = (name) => dropByName(st.list, name);

  async function readPages(want) {
    const list = [];
    let cursor = "";
    let pages = 0;
    do {
      const q = new URLSearchParams({ limit: String(LIST_PAGE) });
      if (want) q.set("prefix", want);
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/${cfg.id}?${q}`);
      list.push(...(page[cfg.id] || []));
      cursor = page.next_cursor || "";
      pages++;
    } while (cursor && pages < LIST_MAX_PAGES);
    return { list, cursor };
  }

  async function readList(since) {
    const want = prefix();
    let got;
    try {
      got = await readPages(want);
    } catch (err) {
      showProblem($(`${cfg.id}-error`), err);
      if (err.status === 400) {
        st.list = []; // the filter itself is wrong: it matches nothing
        st.loaded = true;
        st.truncated = false;
        render();
      }
      return;
    }
    if (want !== prefix()) {
      loadSoon(); // the filter changed meanwhile: this answer is stale
      return;
    }
    clearProblem($(`${cfg.id}-error`));
    st.list = fresh.merge(got.list, st.list, since);
    st.loaded = true;
    st.truncated = got.cursor !== "";
    render();
    loadWaitersSoon();
  }

  // loadSoon reads the list again, once for a burst of calls.
  const loadSoon = coalesce(() => fresh.read(readList), 150);

  let renderTimer = 0;

  // renderSoon renders once after the current task, however many events
  // it applies (a session's end ends many holds at once).
  function renderSoon() {
    if (!renderTimer)
      renderTimer = setTimeout(() => {
        renderTimer = 0;
        render();
      }, 0);
  }

  // render brings the table up to date with state.
  function render() {
    setText($(`${cfg.id}-count`), st.loaded ? `${st.list.length}` : "");
    renderRows();
    table.hidden = st.list.length === 0;
    $(`${cfg.id}-empty`).hidden = !(st.loaded && st.list.length === 0 && !prefix());
    const nomatch = $(`${cfg.id}-nomatch`);
    nomatch.hidden = !(st.loaded && st.list.length === 0 && prefix());
    if (!nomatch.hidden) setText(nomatch, cfg.nomatch(prefix()));
    const trunc = $(`${cfg.id}-truncated`);
    trunc.hidden = !st.truncated;
    if (st.truncated) trunc.textContent = `Showing the first ${st.list.length} ${cfg.plural} by name. Narrow the list with a name prefix.`;
    hooks.rendered();
  }

  // renderRows keeps one tbody per shown one (its row, a row per hold and
  // the row of its waiters), keyed by name, updated in place: a refresh
  // does not take the focus from a button.
  function renderRows() {
    const old = new Map();
    for (const tb of table.tBodies) old.set(tb.dataset[cfg.kind], tb);
    let prev = table.tHead;
    for (const s of st.list) {
      let tb = old.get(s.name);
      old.delete(s.name);
      if (!tb) {
        tb = cfg.build(s, { toggle: toggleWaiters });
        if (table.dataset.ready) markFresh(tb);
      }
      cfg.update(tb, s, { revoke: revokeShown, fresh: table.dataset.ready === "1" });
      if (prev.nextElementSibling !== tb) prev.after(tb);
      prev = tb;
    }
    for (const tb of old.values()) tb.remove();
    if (st.loaded) table.dataset.ready = "1";
  }

  // revokeShown opens the revoke dialog for hold h as the page shows it
  // now.
  function revokeShown(h) {
    const s = st.list.find((x) => x.name === h.name);
    hooks.revoke((s && s.holders.find((x) => x.token === h.token)) || h);
  }

  // shown says whether name belongs on the page: under the prefix and,
  // when the list stopped short, within the names read.
  function shown(name) {
    if (!name.startsWith(prefix())) return false;
    return !st.truncated || st.list.length === 0 || name <= st.list[st.list.length - 1].name;
  }

  // event applies an event of the stream at once, then reads its subject
  // for what the event does not say (expiry, metadata, waiters).
  function event(e) {
    if (e.kind !== cfg.kind || !st.loaded || !shown(e.name)) return;
    const cur = st.list.find((x) => x.name === e.name);
    if (e.type === "acquired") put(cfg.acquired(cur, e));
    else if (ENDED.has(e.type)) {
      if (cur) {
        cur.holders = cur.holders.filter((h) => e.token && h.token !== e.token);
        if (cur.holders.length === 0) drop(e.name);
      }
    } else return;
    fresh.applied(e.name);
    refresh(e.name);
    renderSoon();
  }

  const stale = new Set(); // names to read again with path(name)
  const readStale = coalesce(() => {
    const names = [...stale];
    stale.clear();
    return loadDetails(names);
  }, 150);

  function refresh(name) {
    stale.add(name);
    readStale();
  }

  // loadDetails reads path(name) for each of names, four at a time: the
  // holds now, and the waiters.
  function loadDetails(names) {
    return fresh.read(async (since) => {
      const work = names.slice();
      const one = async () => {
        for (let name = work.shift(); name !== undefined; name = work.shift()) await loadOne(name, since);
      };
      await Promise.all([one(), one(), one(), one()]);
      render();
    });
  }

  async function loadOne(name, since) {
    try {
      const s = await api(cfg.path(name));
      if (fresh.newer(name, since)) {
        refresh(name); // an event overtook the answer: read it again
        return;
      }
      st.waiters.set(name, { waiters: Array.isArray(s.waiters) ? s.waiters : [] }); // none is left out
      if (shown(name)) put(cfg.read(s));
    } catch (err) {
      if (fresh.newer(name, since)) refresh(name);
      else if (err.status === 404) {
        // Nothing is held now: the event that says so is on its way, or
        // was applied already.
        st.waiters.delete(name);
        drop(name);
      } else st.waiters.set(name, { error: err.message });
    }
  }

  function toggleWaiters(name) {
    if (st.expanded.has(name)) st.expanded.delete(name);
    else st.expanded.add(name);
    render();
    if (st.expanded.has(name)) loadDetails([name]);
  }

  function detailNames() {
    if (st.list.length <= WAITERS_FOR_ALL) return st.list.map((s) => s.name);
    return st.list.filter((s) => st.expanded.has(s.name)).map((s) => s.name);
  }

  // loadWaitersSoon reads the shown ones (those opened, when many are
  // shown) again: a waiter joining the line makes no event, and a renewal
  // moves an expiry without one.
  const loadWaitersSoon = coalesce(() => loadDetails(detailNames()), 1000);

  // init wires the filter. revoke(h) opens the revoke dialog for the hold
  // h; rendered() runs after each render of the table.
  function init({ revoke, rendered }) {
    hooks.revoke = revoke;
    hooks.rendered = rendered;
    $(`${cfg.id}-filters`).addEventListener("submit", (ev) => ev.preventDefault());
    $(`${cfg.id}-prefix`).addEventListener("input", debounce(loadSoon, 250));
  }

  return { loadSoon, render, event, loadWaitersSoon, init };
}
