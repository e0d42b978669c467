// baton's dashboard. Plain JavaScript, no framework and no build step: the
// server embeds this file as it is (see web/doc.go).
//
// The page is a client of the public API. It loads the held locks, the
// history and the cluster, then follows GET /v1/events: every event makes it
// reload what the event changed (a few coalesced requests), so what it shows
// is always what the API says, whatever events were missed.
//
// When baton runs with --auth-file, the API answers 401 until the page sends
// a bearer token: the page then asks for one in a form, keeps it in
// sessionStorage (this tab only; never localStorage, never a URL) and sends
// it as an Authorization header. That is also why the event stream is read
// with fetch() rather than EventSource, which cannot send headers.
//
// Every value that comes from the API is put on the page with textContent,
// never as HTML: lock names, owners and metadata are chosen by clients.
"use strict";

(() => {
  const IDLE_MAX = 45000; // ms of silence (3 missed heartbeats) before the stream counts as dead
  const ENDED = new Set(["released", "expired", "revoked", "session_expired"]);
  const HISTORY_PAGE = 25;
  const LIST_PAGE = 1000; // the API's largest page
  const LIST_MAX_PAGES = 5; // show at most 5,000 locks
  const WAITERS_FOR_ALL = 20; // fetch every lock's queue when this few are shown
  const CLUSTER_EVERY = 5000; // ms between cluster (and queue) refreshes
  const POLL_EVERY = 5000; // ms between reloads while the event stream is down
  const RECONNECT_MAX = 15000; // ms, the longest wait before reopening the stream

  const $ = (id) => document.getElementById(id);

  // ---- small DOM helpers -------------------------------------------------

  // el builds an element; attrs are attributes (class via "class"), kids are
  // nodes or strings (added as text, never parsed as HTML).
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      n.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === false) continue;
      n.append(k instanceof Node ? k : String(k));
    }
    return n;
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // ---- time ----------------------------------------------------------------

  // skew is how far this browser's clock is behind the server's, from the
  // Date header of the API's answers. The header has whole seconds, so
  // only a skew of more than 2 s is corrected; a synchronised clock is used
  // as it is.
  let skew = 0;
  function now() {
    return Date.now() + skew;
  }
  function learnSkew(resp) {
    const date = Date.parse(resp.headers.get("Date") || "");
    if (Number.isNaN(date)) return;
    const est = date + 500 - Date.now();
    skew = Math.abs(est) > 2000 ? est : 0;
  }

  function span(ms) {
    const s = Math.floor(ms / 1000);
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} m`;
    const h = Math.floor(m / 60);
    if (h < 24) return m % 60 ? `${h} h ${m % 60} m` : `${h} h`;
    const d = Math.floor(h / 24);
    return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
  }

  // duration renders a Go duration ("1m0s", "1h30m0s", "500ms") like span.
  function duration(d) {
    const units = { h: 3600000, m: 60000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, ns: 0.000001 };
    let ms = 0;
    let rest = String(d || "");
    const re = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/;
    for (let m = re.exec(rest); m; m = re.exec(rest)) {
      ms += Number(m[1]) * units[m[2]];
      rest = rest.slice(m[0].length);
    }
    if (rest !== "" || ms < 1000) return d;
    return span(ms);
  }

  // left counts down by the second while under an hour, so that it visibly
  // moves; past that, minutes are precise enough.
  function left(ms) {
    if (ms <= 0) return "expiring…";
    const s = Math.ceil(ms / 1000);
    if (s < 60) return `${s} s left`;
    if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s left`;
    return `${span(ms)} left`;
  }

  function relative(kind, at, now) {
    switch (kind) {
      case "left":
        return left(at - now);
      case "held":
        return `held ${span(Math.max(0, now - at))}`;
      case "waiting":
        return `waiting ${span(Math.max(0, now - at))}`;
      default: // "ago"
        return now - at < 1000 ? "just now" : `${span(now - at)} ago`;
    }
  }

  // timeEl shows a time relative to now and, on hover, absolute: local time
  // and the API's own UTC string. The ticker keeps the text current.
  function timeEl(kind, iso, attrs) {
    const at = Date.parse(iso);
    const t = el("time", Object.assign({ datetime: iso, "data-rel": kind, "data-at": at }, attrs || {}));
    if (Number.isNaN(at)) {
      t.textContent = iso || "—";
      return t;
    }
    t.title = `${new Date(at).toLocaleString()} (${iso})`;
    t.textContent = relative(kind, at, now());
    return t;
  }

  function tick() {
    const t0 = now();
    for (const t of document.querySelectorAll("time[data-rel]")) {
      const at = Number(t.dataset.at);
      if (Number.isNaN(at)) continue;
      setText(t, relative(t.dataset.rel, at, t0));
      if (t.dataset.rel === "left") t.classList.toggle("soon", at - t0 < 10000);
    }
  }

  // ---- the bearer token ------------------------------------------------------------

  // The token lives in sessionStorage: it survives a reload of this tab and
  // dies with the tab. localStorage would keep it on disk for every tab
  // and after the browser closes.
  const TOKEN_KEY = "baton.token";

  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch {
      return ""; // storage disabled: the token lives in no storage at all
    }
  }

  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // Storage disabled: nothing to keep the token in; requests go without.
    }
    renderAuth();
  }

  function authHeaders(headers) {
    const token = storedToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  // needToken answers a 401. A token that was sent and refused is dropped
  // (the operator removed it, or it was mistyped), and the form asks for
  // another; the user may put it off ("Not now") and sign in later.
  let signinPutOff = false;
  function needToken(sent) {
    if (!sent && storedToken()) return; // asked before a sign-in; the next call sends the token
    if (sent && sent === storedToken()) storeToken("");
    renderAuth(true);
    if (signinPutOff) return;
    openSignin(sent ? "baton no longer accepts the token this tab had. Sign in again." : "This baton asks for a token for its API.");
  }

  function renderAuth(required) {
    const signedIn = storedToken() !== "";
    if (required) state.authRequired = true;
    $("auth-state").hidden = !signedIn;
    $("signout").hidden = !signedIn;
    $("signin-open").hidden = signedIn || !state.authRequired;
  }

  const signin = $("signin-dialog");

  function openSignin(why) {
    if (signin.open) return;
    setText($("signin-why"), why);
    clearProblem($("signin-error"));
    $("signin-token").value = "";
    $("signin-submit").disabled = false;
    signin.showModal();
  }

  // submitSignin checks the token with the weakest call there is (GET
  // /v1/cluster needs the read role) before keeping it: a wrong one is
  // refused in the form, and never stored.
  async function submitSignin(ev) {
    ev.preventDefault();
    const token = $("signin-token").value.trim();
    if (!token) return;
    const submit = $("signin-submit");
    submit.disabled = true;
    clearProblem($("signin-error"));
    let resp;
    try {
      resp = await fetch("/v1/cluster", { headers: { Accept: "application/json", Authorization: `Bearer ${token}` }, cache: "no-store" });
    } catch (err) {
      showProblem($("signin-error"), new APIError(0, "Cannot reach baton", `${location.origin} did not answer (${err.message}).`, "network"));
      submit.disabled = false;
      return;
    }
    if (resp.status === 401) {
      showProblem($("signin-error"), new APIError(401, "Token refused", "baton does not know this token. Check it and try again.", "unauthorized"));
      submit.disabled = false;
      $("signin-token").select();
      return;
    }
    // Anything else (a 503 while etcd has no leader, say) is not about the
    // token: keep it, and let the panels say what is wrong.
    signinPutOff = false;
    storeToken(token);
    $("signin-token").value = "";
    signin.close("signed-in");
    reloadAll();
    connect();
  }

  function signOut() {
    storeToken("");
    // A fresh page: nothing read with the token stays on the screen.
    location.reload();
  }

  function reloadAll() {
    loadLocksSoon();
    loadHistorySoon();
    loadCluster();
  }

  // ---- the API ---------------------------------------------------------------

  class APIError extends Error {
    constructor(status, title, detail, code, extra) {
      super(detail ? `${title}: ${detail}` : title);
      this.status = status;
      this.title = title;
      this.detail = detail;
      this.code = code;
      this.extra = extra || "";
    }
  }

  // api calls the API and returns the decoded JSON (null for 204). Failures
  // become an APIError carrying the problem+json title and detail.
  async function api(path, init) {
    const opts = Object.assign({ headers: authHeaders({ Accept: "application/json" }), cache: "no-store" }, init || {});
    if (opts.body !== undefined) opts.headers["Content-Type"] = "application/json";
    const sent = storedToken();
    let resp;
    try {
      resp = await fetch(path, opts);
    } catch (err) {
      throw new APIError(0, "Cannot reach baton", `${location.origin} did not answer (${err.message}). Is the server running?`, "network");
    }
    learnSkew(resp);
    if (resp.status === 204) return null;
    const type = resp.headers.get("Content-Type") || "";
    let body = null;
    if (type.includes("json")) {
      try {
        body = await resp.json();
      } catch {
        body = null;
      }
    }
    if (resp.ok) return body;
    const p = body && typeof body === "object" ? body : {};
    if (resp.status === 401) needToken(sent);
    const retry = resp.headers.get("Retry-After");
    throw new APIError(
      resp.status,
      p.title || `HTTP ${resp.status} ${resp.statusText}`.trim(),
      p.detail || "",
      p.code || "",
      retry ? `Retry after ${retry} s.` : "",
    );
  }

  // showProblem renders an error readably in box: title, detail and the
  // status and code for whoever reports it.
  function showProblem(box, err) {
    box.replaceChildren();
    if (err instanceof APIError) {
      box.append(el("strong", {}, err.title));
      if (err.detail) box.append(" ", el("span", {}, err.detail));
      if (err.extra) box.append(" ", el("span", {}, err.extra));
      const meta = [err.status ? `HTTP ${err.status}` : "", err.code].filter(Boolean).join(" · ");
      if (meta) box.append(" ", el("span", { class: "problem-code" }, `(${meta})`));
    } else {
      box.append(el("strong", {}, "Something went wrong"), " ", String(err && err.message ? err.message : err));
    }
    box.hidden = false;
  }

  function clearProblem(box) {
    if (!box.hidden) {
      box.hidden = true;
      box.replaceChildren();
    }
  }

  function lockPath(name) {
    return `/v1/locks/${encodeURIComponent(name)}`;
  }

  // coalesce returns a trigger for fn: calls in a burst run fn once, runs
  // never overlap, and a call during a run runs fn again after it, so the
  // last state always gets loaded.
  function coalesce(fn, gap) {
    let running = false;
    let again = false;
    let timer = 0;
    let last = 0;
    const run = async () => {
      timer = 0;
      running = true;
      again = false;
      last = Date.now();
      try {
        await fn();
      } catch (err) {
        console.warn(err); // fn shows its own errors; this is a bug
      } finally {
        running = false;
        if (again) trigger();
      }
    };
    const trigger = () => {
      if (running) {
        again = true;
        return;
      }
      if (!timer) timer = setTimeout(run, Math.max(30, last + gap - Date.now()));
    };
    return trigger;
  }

  // ---- state -----------------------------------------------------------------

  const state = {
    locks: [], // the held locks under the name prefix, sorted by name
    loaded: false,
    truncated: false,
    queues: new Map(), // name -> {token, waiters: [...], error}
    expanded: new Set(), // names whose queue is shown
    highlight: "", // the lock a history link pointed at
    history: { before: 0, older: [], next: 0 },
    lastEventID: "",
    revision: 0,
    revoking: null, // the hold the revoke dialog is about
    authRequired: false, // the API answered 401 at least once
  };

  // ---- held locks ------------------------------------------------------------

  const holdersTable = $("holders-table");

  async function loadLocks() {
    const prefix = $("filter-prefix").value.trim();
    const locks = [];
    const delays = [];
    let cursor = "";
    let pages = 0;
    try {
      do {
        const q = new URLSearchParams({ limit: String(LIST_PAGE) });
        if (prefix) q.set("prefix", prefix);
        if (cursor) q.set("cursor", cursor);
        const page = await api(`/v1/locks?${q}`);
        locks.push(...(page.locks || []));
        delays.push(...(page.delayed || []));
        cursor = page.next_cursor || "";
        pages++;
      } while (cursor && pages < LIST_MAX_PAGES);
    } catch (err) {
      showProblem($("holders-error"), err);
      if (err.status === 400) {
        // The filter itself is wrong (say, a character no lock name has):
        // the list it would have shown is empty.
        state.locks = [];
        state.loaded = true;
        state.truncated = false;
        renderHolders();
      }
      return;
    }
    if (prefix !== $("filter-prefix").value.trim()) {
      loadLocksSoon(); // the filter changed meanwhile: this answer is stale
      return;
    }
    clearProblem($("holders-error"));
    state.locks = locks;
    state.delays = delays;
    state.loaded = true;
    state.truncated = cursor !== "";
    renderHolders();
    loadQueuesSoon();
  }
  const loadLocksSoon = coalesce(loadLocks, 150);

  let renderTimer = 0;
  function renderHoldersSoon() {
    if (!renderTimer)
      renderTimer = setTimeout(() => {
        renderTimer = 0;
        renderHolders();
      }, 0);
  }

  function shownLocks() {
    const owner = $("filter-owner").value.trim().toLowerCase();
    return owner ? state.locks.filter((l) => (l.owner || "").toLowerCase().includes(owner)) : state.locks;
  }

  function renderHolders() {
    const shown = shownLocks();
    const filtered = $("filter-prefix").value.trim() !== "" || $("filter-owner").value.trim() !== "";
    const count = $("holders-count");
    setText(count, state.loaded ? (shown.length === state.locks.length ? `${shown.length}` : `${shown.length} of ${state.locks.length}`) : "");

    // One tbody per lock (its row and the row of its queue), keyed by name,
    // updated in place: a refresh does not take the focus from a button.
    const old = new Map();
    for (const tb of holdersTable.tBodies) old.set(tb.dataset.lock, tb);
    let prev = holdersTable.tHead;
    for (const l of shown) {
      let tb = old.get(l.name);
      old.delete(l.name);
      if (tb && tb.dataset.token !== String(l.token)) {
        tb.remove(); // a new holder: a new row
        tb = undefined;
      }
      if (!tb) {
        tb = buildLock(l);
        if (state.loaded && holdersTable.dataset.ready) markFresh(tb);
      }
      updateLock(tb, l);
      if (prev.nextElementSibling !== tb) prev.after(tb);
      prev = tb;
    }
    for (const tb of old.values()) tb.remove();
    holdersTable.dataset.ready = "1";

    holdersTable.hidden = shown.length === 0;
    $("holders-empty").hidden = !(state.loaded && state.locks.length === 0 && !filtered);
    $("holders-nomatch").hidden = !(state.loaded && shown.length === 0 && filtered);
    const trunc = $("holders-truncated");
    trunc.hidden = !state.truncated;
    if (state.truncated) trunc.textContent = `Showing the first ${state.locks.length} locks by name. Narrow the list with a name prefix.`;
    renderLockStatus();
    renderDelays();
    if (state.revoking) checkRevokeTarget();
  }

  // renderDelays lists the free locks under lock-delay, each with a button
  // that lifts its delay (DELETE /v1/locks/{name}/delay, admin only).
  function renderDelays() {
    const delays = state.delays || [];
    $("delays").hidden = delays.length === 0;
    const list = $("delays-list");
    list.replaceChildren(
      ...delays.map((d) => {
        const lift = el("button", { type: "button", class: "small", "data-testid": "clear-delay", "aria-label": `Lift the lock-delay of ${d.name}` }, "Lift delay");
        lift.addEventListener("click", async () => {
          lift.disabled = true;
          try {
            await api(`${lockPath(d.name)}/delay?reason=${encodeURIComponent("lifted from the dashboard")}`, { method: "DELETE" });
            clearProblem($("holders-error"));
          } catch (err) {
            if (err.status !== 404) showProblem($("holders-error"), err);
          }
          loadLocksSoon();
        });
        const cause = { revoked: "revoked", expired: "expired", session_expired: "its session expired" }[d.cause] || "ended without a release";
        return el(
          "li",
          { "data-testid": "delay-row", "data-lock": d.name },
          el("a", { href: `#lock=${encodeURIComponent(d.name)}`, class: linkClass(d.name, "name"), title: `Show the history of ${d.name}` }, d.name),
          " lock-delay: ",
          timeEl("left", d.delayed_until, { "data-testid": "delay-left" }),
          el("span", { class: "hint" }, ` (last hold ${cause})`),
          " ",
          lift,
        );
      }),
    );
  }

  // linkClass keeps a lock name on one line (names break at hyphens
  // otherwise) unless it is too long for any column.
  function linkClass(name, extra) {
    return ["lock-link", name.length > 32 ? "long" : "", extra || ""].filter(Boolean).join(" ");
  }

  // markFresh flashes a new row once. The class goes when the flash ends,
  // so that moving the row later does not flash it again.
  function markFresh(node) {
    node.classList.add("fresh");
    setTimeout(() => node.classList.remove("fresh"), 2000);
  }

  function cell(label, ...kids) {
    return el("td", { "data-label": label }, ...kids);
  }

  function buildLock(l) {
    const tb = el("tbody", { "data-lock": l.name, "data-token": l.token });
    const queueID = `queue-${l.token}`;
    const meta = Object.entries(l.metadata || {});
    const metaCell = meta.length
      ? el("ul", { class: "meta" }, meta.map(([k, v]) => el("li", { title: `${k}=${v}` }, el("span", { class: "k" }, k), "=", v)))
      : el("span", { class: "none" }, "—");
    const session = l.session
      ? el("code", { title: `session ${l.session}: the lock lives as long as this session` }, l.session)
      : el("span", { class: "none", title: "no session: the lock has a lease of its own" }, "—");
    const revoke = el(
      "button",
      { type: "button", class: "danger small", "data-testid": "revoke-button", "aria-label": `Revoke ${l.name}` },
      "Revoke",
    );
    revoke.addEventListener("click", () => openRevoke(l));
    const toggle = el("button", {
      type: "button",
      class: "link-button",
      "data-testid": "waiters-toggle",
      "aria-expanded": "false",
      "aria-controls": queueID,
    });
    toggle.addEventListener("click", () => toggleQueue(l.name));
    const row = el(
      "tr",
      { class: "lock-row", "data-testid": "holder-row", "data-lock": l.name, "data-token": l.token },
      cell(
        "Name",
        el("a", { href: `#lock=${encodeURIComponent(l.name)}`, class: linkClass(l.name, "name"), title: `Show the history of ${l.name}` }, l.name),
      ),
      cell("Owner", el("span", { class: "owner" }, l.owner)),
      cell("Token", el("code", { "data-testid": "token" }, l.token)),
      cell("Session", session),
      cell("Metadata", metaCell),
      cell("Held", timeEl("held", l.acquired_at)),
      cell("Time left", el("span", {}, timeEl("left", l.expires_at, { "data-testid": "time-left" }), el("span", { class: "ttl" }, ` of ${duration(l.ttl)}`))),
      el("td", { "data-label": "Waiters", class: "waiters-cell" }, el("span", { class: "queue-summary", "data-testid": "waiters-count" }, "…"), toggle),
      el("td", { class: "actions" }, revoke),
    );
    const queue = el(
      "tr",
      { class: "queue-row", id: queueID, "data-testid": "waiters-detail", hidden: true },
      el("td", { colspan: 9 }, el("div", { class: "queue" })),
    );
    tb.append(row, queue);
    return tb;
  }

  // updateLock refreshes what changes while one hold lasts: its expiry (a
  // renew), its queue and whether a history link points at it.
  function updateLock(tb, l) {
    // etcd reports a lease's time left in whole seconds, so expires_at
    // moves by up to a second from one read to the next: only a renew,
    // which moves it further, is worth showing.
    const left = tb.querySelector('time[data-rel="left"]');
    const at = Date.parse(l.expires_at);
    if (Math.abs(at - Number(left.dataset.at)) >= 1000) {
      left.dataset.at = String(at);
      left.setAttribute("datetime", l.expires_at);
      left.title = `${new Date(at).toLocaleString()} (${l.expires_at})`;
    }
    tb.classList.toggle("highlight", state.highlight === l.name);

    const q = state.queues.get(l.name);
    const known = q && q.token === l.token;
    const summary = tb.querySelector(".queue-summary");
    const toggle = tb.querySelector('[data-testid="waiters-toggle"]');
    const open = state.expanded.has(l.name);
    let text = "…";
    let title = "";
    if (known && q.error) {
      text = "?";
      title = q.error;
    } else if (known) {
      text = q.waiters.length === 0 ? "none" : `${q.waiters.length} waiting`;
    }
    setText(summary, text);
    summary.title = title;
    setText(toggle, open ? "Hide queue" : "Show queue");
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", `${open ? "Hide" : "Show"} the queue of ${l.name}`);

    const queueRow = tb.querySelector(".queue-row");
    queueRow.hidden = !open;
    if (open) renderQueue(queueRow.querySelector(".queue"), l, known ? q : null);
  }

  function renderQueue(box, l, q) {
    const kids = [];
    if (!q) {
      kids.push(el("p", { class: "hint" }, "Loading the queue…"));
    } else if (q.error) {
      kids.push(el("p", { class: "problem" }, q.error));
    } else if (q.waiters.length === 0) {
      kids.push(el("p", { class: "hint" }, `Nobody is waiting for ${l.name}.`));
    } else {
      kids.push(
        el(
          "ol",
          { class: "waiters", "aria-label": `Waiting for ${l.name}, first served first` },
          q.waiters.map((w) =>
            el(
              "li",
              { "data-testid": "waiter", "data-owner": w.owner, "data-position": w.position },
              el("span", { class: "pos" }, `#${w.position}`),
              el("span", { class: "owner" }, w.owner),
              w.since ? timeEl("waiting", w.since) : null,
              w.session ? el("code", { title: `session ${w.session}` }, w.session) : null,
            ),
          ),
        ),
      );
    }
    // Rebuild only when the content changed, so the waiting times tick in place.
    const key = JSON.stringify(q);
    if (box.dataset.key !== key) {
      box.dataset.key = key;
      box.replaceChildren(...kids);
    }
  }

  function toggleQueue(name) {
    if (state.expanded.has(name)) state.expanded.delete(name);
    else state.expanded.add(name);
    renderHolders();
    if (state.expanded.has(name)) loadQueues([name]);
  }

  // loadQueues reads GET /v1/locks/{name} for its waiters.
  async function loadQueues(names) {
    const work = names.slice();
    const one = async () => {
      for (let name = work.shift(); name !== undefined; name = work.shift()) {
        try {
          const l = await api(lockPath(name));
          // An empty queue is left out of the answer.
          state.queues.set(name, { token: l.token, waiters: Array.isArray(l.waiters) ? l.waiters : [] });
        } catch (err) {
          if (err.status === 404) state.queues.delete(name); // it just ended; an event follows
          else {
            const held = state.locks.find((x) => x.name === name);
            state.queues.set(name, { token: held ? held.token : 0, error: err.message });
          }
        }
      }
    };
    await Promise.all([one(), one(), one(), one()]);
    renderHolders();
  }

  function queueNames() {
    const shown = shownLocks();
    if (shown.length <= WAITERS_FOR_ALL) return shown.map((l) => l.name);
    return shown.filter((l) => state.expanded.has(l.name)).map((l) => l.name);
  }
  const loadQueuesSoon = coalesce(() => loadQueues(queueNames()), 1000);

  // ---- history -----------------------------------------------------------------

  const historyRows = $("history-rows");

  function historyQuery() {
    const q = new URLSearchParams({ limit: String(HISTORY_PAGE) });
    const lock = $("history-lock").value.trim();
    const owner = $("history-owner").value.trim();
    const type = $("history-type").value;
    if (lock) q.set("lock", lock);
    if (owner) q.set("owner", owner);
    if (type) q.set("type", type);
    if (state.history.before) q.set("before", String(state.history.before));
    return q.toString();
  }

  async function loadHistory() {
    const query = historyQuery();
    let page;
    try {
      page = await api(`/v1/history?${query}`);
    } catch (err) {
      showProblem($("history-error"), err);
      return;
    }
    if (query !== historyQuery()) {
      loadHistorySoon(); // filters or page changed meanwhile
      return;
    }
    clearProblem($("history-error"));
    state.history.next = page.next_before || 0;
    renderHistory(page.events || []);
  }
  const loadHistorySoon = coalesce(loadHistory, 150);

  function eventKey(e) {
    return `${e.revision}/${e.type}/${e.lock}`;
  }

  function renderHistory(events) {
    const fresh = historyRows.dataset.page === String(state.history.before) && historyRows.dataset.filter === historyQuery();
    const old = new Map();
    for (const tr of historyRows.rows) old.set(tr.dataset.key, tr);
    let prev = null;
    for (const e of events) {
      const key = eventKey(e);
      let tr = old.get(key);
      old.delete(key);
      if (!tr) {
        tr = buildEvent(e);
        if (fresh) markFresh(tr);
      }
      if (prev === null) {
        if (historyRows.firstElementChild !== tr) historyRows.prepend(tr);
      } else if (prev.nextElementSibling !== tr) prev.after(tr);
      prev = tr;
    }
    for (const tr of old.values()) tr.remove();
    historyRows.dataset.page = String(state.history.before);
    historyRows.dataset.filter = historyQuery();

    $("history-table").hidden = events.length === 0;
    $("history-empty").hidden = events.length !== 0;
    const filtered = ["history-lock", "history-owner", "history-type"].some((id) => $(id).value.trim() !== "");
    setText(
      $("history-empty"),
      filtered || state.history.before
        ? "No events match these filters."
        : "Nothing has happened yet. Every acquire, release, expiry and revoke will show here, newest first.",
    );
    const h = state.history;
    $("history-newer").disabled = h.before === 0;
    $("history-older").disabled = h.next === 0;
    setText($("history-page"), h.before === 0 ? "newest" : `page ${h.older.length + 1}`);
  }

  function buildEvent(e) {
    const link = el(
      "a",
      { href: `#lock=${encodeURIComponent(e.lock)}`, class: linkClass(e.lock), title: `Show ${e.lock}: its history, and its row if held` },
      e.lock,
    );
    return el(
      "tr",
      { "data-testid": "history-row", "data-key": eventKey(e), "data-type": e.type, "data-lock": e.lock },
      cell("When", timeEl("ago", e.time)),
      cell("Event", el("span", { class: `badge ${e.type}`, "data-testid": "history-type" }, e.type.replace("_", " "))),
      cell("Lock", link),
      // The owner is what the client said; the credential, what auth proved.
      cell("Owner", el("span", { class: "owner", title: e.credential ? `credential ${e.credential}` : undefined, "data-credential": e.credential }, e.owner || "—")),
      cell("Token", e.token ? el("code", {}, e.token) : el("span", { class: "none" }, "—")),
      el("td", { "data-label": "Detail", class: "detail" }, e.detail || ""),
      cell("Revision", el("code", { class: "rev" }, e.revision)),
    );
  }

  function resetHistoryPaging() {
    state.history.before = 0;
    state.history.older = [];
  }

  // ---- following one lock (history links) -----------------------------------------

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

  function renderLockStatus() {
    const box = $("history-lock-status");
    const name = $("history-lock").value.trim();
    if (!name || !state.loaded) {
      box.hidden = true;
      return;
    }
    const held = state.locks.find((l) => l.name === name);
    const kids = [];
    if (held) {
      const show = el("button", { type: "button", class: "link-button", "data-testid": "history-lock-show" }, "show its row");
      show.addEventListener("click", () => {
        const tb = holdersTable.querySelector(`tbody[data-lock="${CSS.escape(name)}"]`);
        if (tb) {
          tb.scrollIntoView({ block: "center" });
          tb.querySelector("a.lock-link").focus();
        }
      });
      kids.push(el("code", {}, name), ` is held by ${held.owner} with token ${held.token}: `, show);
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

  // ---- cluster -----------------------------------------------------------------

  async function loadCluster() {
    let c;
    try {
      c = await api("/v1/cluster");
    } catch (err) {
      showProblem($("cluster-error"), err);
      return;
    }
    clearProblem($("cluster-error"));
    const members = c.members || [];
    const leader = members.find((m) => m.is_leader);
    const leaderEl = $("cluster-leader");
    setText(leaderEl, leader ? leader.name || leader.id : "none");
    leaderEl.classList.toggle("bad", !leader);
    leaderEl.title = leader ? `member ${leader.id}` : "no member leads: the cluster cannot serve writes until one is elected";
    setText($("cluster-term"), String(c.raft_term));
    showRevision(c.revision);
    setText($("cluster-size"), String(members.length));
    $("cluster-members").replaceChildren(
      ...members.map((m) =>
        el(
          "li",
          { "data-testid": "cluster-member", "data-leader": m.is_leader ? "true" : "false" },
          el(
            "div",
            { class: "member-head" },
            el("strong", {}, m.name || "(starting)"),
            el("span", { class: `badge ${m.is_leader ? "leader" : "follower"}` }, m.is_leader ? "leader" : "follower"),
            el("code", { class: "rev", title: "member ID" }, m.id),
          ),
          el(
            "dl",
            { class: "urls" },
            el("dt", {}, "client"),
            el("dd", {}, (m.client_urls || []).length ? m.client_urls.map((u) => el("code", {}, u)) : "—"),
            el("dt", {}, "peer"),
            el("dd", {}, (m.peer_urls || []).length ? m.peer_urls.map((u) => el("code", {}, u)) : "—"),
          ),
        ),
      ),
    );
    const upd = $("cluster-updated");
    upd.replaceChildren("Updated ", timeEl("ago", new Date(now()).toISOString()), ", every 5 s.");
  }

  function showRevision(rev) {
    if (!(rev > state.revision)) return;
    state.revision = rev;
    setText($("cluster-revision"), String(rev));
  }

  // ---- the event stream ------------------------------------------------------------

  let stream = null; // the AbortController of the stream being read
  let reconnectWait = 1000;
  let reconnectTimer = 0;
  let pollTimer = 0;

  function setLive(s) {
    const box = $("live-status");
    box.dataset.state = s;
    const text = {
      live: "live",
      connecting: "connecting…",
      disconnected: "disconnected — reconnecting",
      signedout: "sign in to follow live",
    }[s];
    setText(box, text);
    box.title = {
      live: "Following /v1/events: changes show as they happen.",
      signedout: "baton asks for a token: sign in, and the page follows changes live.",
    }[s] || "The event stream is down. The page reloads every 5 s meanwhile, and reconnects by itself.";
    // While the stream is down, poll, so the page never goes silently
    // stale; without a token polling would only be refused.
    if (s === "live" || s === "signedout") {
      clearInterval(pollTimer);
      pollTimer = 0;
    } else if (!pollTimer) {
      pollTimer = setInterval(() => {
        loadLocksSoon();
        if (state.history.before === 0) loadHistorySoon();
      }, POLL_EVERY);
    }
  }

  // connect (re)opens the event stream. It is read with fetch() because
  // EventSource cannot send the Authorization header, and a token must
  // never travel in a URL (logs, history, Referer). Resuming works as
  // EventSource's does: the Last-Event-ID header names the last event seen.
  function connect() {
    clearTimeout(reconnectTimer);
    reconnectTimer = 0;
    if (stream) stream.abort();
    const ctl = new AbortController();
    stream = ctl;
    if ($("live-status").dataset.state !== "disconnected") setLive("connecting");
    follow(ctl).catch((err) => {
      if (!ctl.signal.aborted) console.warn(err); // follow handles its failures; this is a bug
    });
  }

  // dropped schedules a reconnection after the stream ctl broke, backing
  // off while it keeps failing.
  function dropped(ctl) {
    if (stream !== ctl || ctl.signal.aborted) return;
    stream = null;
    setLive("disconnected");
    if (!reconnectTimer) {
      reconnectTimer = setTimeout(connect, reconnectWait);
      reconnectWait = Math.min(reconnectWait * 2, RECONNECT_MAX);
    }
  }

  async function follow(ctl) {
    const headers = authHeaders({ Accept: "text/event-stream" });
    if (state.lastEventID) headers["Last-Event-ID"] = state.lastEventID;
    const sent = headers.Authorization ? storedToken() : "";
    let resp;
    try {
      resp = await fetch("/v1/events", { headers, cache: "no-store", signal: ctl.signal });
    } catch {
      dropped(ctl);
      return;
    }
    if (resp.status === 401) {
      resp.body?.cancel();
      if (stream === ctl) stream = null;
      setLive("signedout");
      needToken(sent); // signing in reconnects
      return;
    }
    const type = resp.headers.get("Content-Type") || "";
    if (!resp.ok || !type.startsWith("text/event-stream") || !resp.body) {
      resp.body?.cancel();
      dropped(ctl);
      return;
    }
    learnSkew(resp);
    reconnectWait = 1000;
    setLive("live");
    // Catch up on whatever happened before the stream (re)opened.
    loadLocksSoon();
    if (state.history.before === 0) loadHistorySoon();

    // The server sends a comment every 15 s: silence for much longer
    // means a connection that died without a word (a sleeping laptop, a
    // proxy): drop it and reconnect.
    let idle = 0;
    const watch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ctl.abort(), IDLE_MAX);
    };
    watch();
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    const msg = { type: "", data: [] };
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        watch();
        buf += value;
        // Lines end with \n (baton's) or \r\n; a chunk may end mid-line.
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          sseLine(line, msg);
        }
      }
    } catch {
      // The connection broke, or the watchdog (or a sign-in) aborted it.
    } finally {
      clearTimeout(idle);
    }
    if (stream === ctl && ctl.signal.aborted) {
      stream = null; // the watchdog's abort: reconnect below
      setLive("disconnected");
      reconnectTimer = setTimeout(connect, reconnectWait);
      return;
    }
    dropped(ctl);
  }

  // sseLine takes one line of the stream (the Server-Sent Events format):
  // fields build a message, and a blank line dispatches it.
  function sseLine(line, msg) {
    if (line === "") {
      if (msg.data.length) onEvent({ lastEventId: msg.id || "", type: msg.type || "message", data: msg.data.join("\n") });
      msg.type = "";
      msg.data = [];
      return;
    }
    if (line.startsWith(":")) return; // a comment: heartbeat, or why the server ends the stream
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        msg.data.push(value);
        break;
      case "event":
        msg.type = value;
        break;
      case "id":
        if (!value.includes("\0")) msg.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) reconnectWait = Math.max(1000, Number(value));
        break;
    }
  }

  function onEvent(msg) {
    if (msg.lastEventId) state.lastEventID = msg.lastEventId;
    let e = null;
    try {
      e = JSON.parse(msg.data);
    } catch {
      e = null;
    }
    if (e && typeof e === "object") {
      showRevision(e.revision);
      if (ENDED.has(e.type)) dropHold(e.lock, e.token, e.type);
    }
    loadLocksSoon();
    if (state.history.before === 0) loadHistorySoon();
  }

  // dropHold removes a hold that an event ended, before the reload confirms
  // it: only that token's row, never a newer holder's.
  function dropHold(name, token, type) {
    const i = state.locks.findIndex((l) => l.name === name && (!token || l.token === token));
    if (i >= 0) {
      state.locks.splice(i, 1);
      renderHoldersSoon(); // a session's end drops many at once: render once
    }
    const r = state.revoking;
    if (r && r.name === name && (!token || r.token === token)) revokeGone(`This hold has just ended (${type.replace("_", " ")}); there is nothing left to revoke.`);
  }

  // ---- revoke ----------------------------------------------------------------------

  const dialog = $("revoke-dialog");

  function openRevoke(l) {
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

  function checkRevokeTarget() {
    const r = state.revoking;
    if (!r || !dialog.open || $("revoke-confirm").disabled) return;
    const now = state.locks.find((l) => l.name === r.name);
    if (now && now.token !== r.token) revokeGone(`${r.name} changed hands: ${now.owner} holds it now, with token ${now.token}.`);
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
    loadLocksSoon();
    loadHistorySoon();
  }

  let noticeTimer = 0;
  function notify(text) {
    const n = $("notice");
    n.textContent = text;
    n.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => {
      n.hidden = true;
    }, 6000);
  }

  // ---- the empty state -------------------------------------------------------------

  function fillEmptyState() {
    const origin = location.origin;
    $("empty-curl").textContent =
      `curl -s -X POST ${origin}/v1/locks/my-first-lock \\\n` +
      `     -H 'Content-Type: application/json' -d '{"owner":"me","ttl":"60s"}'`;
    $("empty-release").textContent = `curl -s -X DELETE '${origin}/v1/locks/my-first-lock?token=TOKEN'`;
    const copy = $("copy-curl");
    if (navigator.clipboard && window.isSecureContext) {
      copy.hidden = false;
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText($("empty-curl").textContent);
          setText(copy, "Copied");
        } catch {
          setText(copy, "Copy failed");
        }
        setTimeout(() => setText(copy, "Copy"), 2000);
      });
    }
  }

  // ---- wiring --------------------------------------------------------------------

  function debounce(fn, ms) {
    let t = 0;
    return () => {
      clearTimeout(t);
      t = setTimeout(fn, ms);
    };
  }

  function init() {
    fillEmptyState();
    for (const f of [$("holders-filters"), $("history-filters")]) f.addEventListener("submit", (ev) => ev.preventDefault());
    $("filter-prefix").addEventListener("input", debounce(loadLocksSoon, 250));
    $("filter-owner").addEventListener("input", () => {
      renderHolders();
      loadQueuesSoon();
    });
    $("holders-clear").addEventListener("click", () => {
      $("filter-prefix").value = "";
      $("filter-owner").value = "";
      loadLocksSoon();
      renderHolders();
    });
    const historyFilter = () => {
      resetHistoryPaging();
      state.highlight = $("history-lock").value.trim();
      if (lockFromHash() && lockFromHash() !== state.highlight) history.replaceState(null, "", location.pathname + location.search);
      renderLockStatus();
      renderHolders();
      loadHistorySoon();
    };
    $("history-lock").addEventListener("input", debounce(historyFilter, 250));
    $("history-owner").addEventListener("input", debounce(historyFilter, 250));
    $("history-type").addEventListener("change", historyFilter);
    $("history-older").addEventListener("click", () => {
      const h = state.history;
      if (!h.next) return;
      h.older.push(h.before);
      h.before = h.next;
      loadHistorySoon();
    });
    $("history-newer").addEventListener("click", () => {
      const h = state.history;
      h.before = h.older.pop() || 0;
      loadHistorySoon();
    });
    // A lock link pointing where the page already is still re-applies it.
    document.addEventListener("click", (ev) => {
      const a = ev.target instanceof Element ? ev.target.closest("a.lock-link") : null;
      if (a && a.hash === location.hash) applyHash();
    });
    window.addEventListener("hashchange", applyHash);

    $("revoke-form").addEventListener("submit", confirmRevoke);
    $("revoke-cancel").addEventListener("click", () => dialog.close("cancel"));
    dialog.addEventListener("close", () => {
      state.revoking = null;
    });

    $("signin-form").addEventListener("submit", submitSignin);
    $("signin-cancel").addEventListener("click", () => signin.close("cancel"));
    signin.addEventListener("close", () => {
      // "Not now", or Escape: stop asking until the user clicks Sign in.
      if (signin.returnValue !== "signed-in") signinPutOff = true;
      $("signin-token").value = "";
    });
    $("signin-open").addEventListener("click", () => {
      signinPutOff = false;
      openSignin("This baton asks for a token for its API.");
    });
    $("signout").addEventListener("click", signOut);
    renderAuth();

    applyHash();
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
  }

  init();
})();
