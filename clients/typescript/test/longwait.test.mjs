// A wait longer than one request: a run of acquires in a session, each
// with keep_place, that keeps the session's place in line (docs/API.md,
// "Waiting longer than 5m"), against a live baton (see baton.mjs). The
// client's maxRequestWait is 200 ms here, so that a long wait is many
// requests in a few seconds.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, HeldError, InvalidRequestError, NotHeldError, waitForever } from "../dist/index.js";
import { startBaton, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
const unique = (what) => `ts-lw-${what}-${process.pid}-${++n}`;

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

/**
 * longWaiter is a client whose requests carry at most 200 ms of wait,
 * with a fetch that records every request (method, path, JSON body) in
 * sent. onAnswer, when set, sees each answer (its request, status and
 * body) before the client does.
 */
function longWaiter() {
  const rec = { sent: [], onAnswer: undefined };
  rec.fetch = async (url, init = {}) => {
    const req = { method: init.method ?? "GET", path: new URL(url).pathname, body: typeof init.body === "string" ? JSON.parse(init.body) : undefined };
    rec.sent.push(req);
    const res = await fetch(url, init);
    if (!rec.onAnswer) return res;
    const text = await res.text();
    await rec.onAnswer(req, res.status, text);
    return new Response(text === "" ? null : text, { status: res.status, headers: res.headers });
  };
  /** posts lists the requests sent as POST to path. */
  rec.posts = (path) => rec.sent.filter((r) => r.method === "POST" && r.path === path);
  rec.client = new Client(baton.addr, { maxRequestWait: 200, fetch: rec.fetch });
  return rec;
}

/** settled tracks whether p has settled, without handling its rejection for the caller. */
function settled(p) {
  const s = { done: false };
  p.then(() => (s.done = true), () => (s.done = true));
  return s;
}

/** keptPlace checks that each request of a wait forever asked for 200 ms with keep_place, in the session. */
function keptPlace(reqs, session) {
  for (const r of reqs) {
    assert.equal(r.body.session, session);
    assert.equal(r.body.wait, "200ms");
    assert.equal(r.body.keep_place, true);
  }
}

describe("waits longer than one request", () => {
  test("the client's maxRequestWait is between 1ms and 5m", () => {
    assert.throws(() => new Client(baton.addr, { maxRequestWait: 0 }), TypeError);
    assert.throws(() => new Client(baton.addr, { maxRequestWait: "6m" }), TypeError);
    assert.doesNotThrow(() => new Client(baton.addr, { maxRequestWait: "5m" }));
  });

  test("a wait over maxRequestWait without a session is invalid, and sends nothing", async () => {
    const w = longWaiter();
    const lc = w.client;
    const name = unique("nosession");
    const invalid = (e) => {
      assert.ok(e instanceof InvalidRequestError, `${e}`);
      assert.equal(e.code, "invalid_request");
      assert.equal(e.field, "wait");
      assert.match(e.message, /wait over maxRequestWait.*needs a session/);
      return true;
    };
    await assert.rejects(lc.acquire(name, { wait: 201 }), invalid);
    await assert.rejects(lc.acquireOnce(name, { wait: "1h" }), invalid);
    await assert.rejects(lc.campaign(name, { wait: waitForever }), invalid);
    await assert.rejects(lc.acquirePermit(name, 2, { wait: "1s" }), invalid);
    await assert.rejects(lc.acquireRW(name, "read", { wait: "1s" }), invalid);
    await assert.rejects(lc.withLock(name, { wait: "1s" }, () => assert.fail("ran")), invalid);
    assert.deepEqual(w.sent, [], "no request was sent");
  });

  test("a lock's long wait keeps its place past the session's TTL, and is granted before a later waiter", async () => {
    const w = longWaiter();
    const name = unique("lock");
    const path = `/v1/locks/${name}`;
    const holder = await c.acquire(name, { ttl: "10s", owner: "holder" });
    const s = await w.client.createSession({ ttl: "2s", owner: "early" });
    const t0 = performance.now();
    const early = w.client.acquire(name, { owner: "early", session: s.id, wait: waitForever });
    const earlyDone = settled(early);
    await waitFor(async () => (await c.get(name)).waiters?.length === 1, 10_000, "early to queue");
    const late = c.acquire(name, { owner: "late", ttl: "10s", wait: "60s" });
    const lateDone = settled(late);
    // Past the session's TTL (2s), over 16 requests of 200 ms each.
    await waitFor(() => w.posts(path).length >= 16, 30_000, "16 requests of the long wait");
    assert.ok(performance.now() - t0 > 3000, "the wait spans more than 3 s");
    assert.equal(earlyDone.done, false);
    keptPlace(w.posts(path), s.id);
    assert.ok(w.posts(`/v1/sessions/${s.id}/renew`).length >= 2, "the session is renewed while it waits");
    const l = await c.get(name);
    assert.deepEqual(l.waiters?.map((x) => x.owner), ["early", "late"], "early's place first, then late");

    await holder.release();
    const lk = await early;
    try {
      assert.ok(lk.token > holder.token);
      assert.equal(lk.info.session, s.id);
      assert.equal(lateDone.done, false, "the later acquire still waits");
    } finally {
      await lk.release();
    }
    const lateLk = await late;
    await lateLk.release();
    await c.deleteSession(s.id);
  });

  test("an election's long campaign keeps its place, and leads before a later candidate", async () => {
    const w = longWaiter();
    const name = unique("election");
    const path = `/v1/elections/${name}/campaign`;
    const leader = await c.campaign(name, { ttl: "10s", candidate: "leader" });
    const s = await w.client.createSession({ ttl: "2s", owner: "early" });
    const early = w.client.campaign(name, { candidate: "early", value: "e", session: s.id, wait: waitForever });
    const earlyDone = settled(early);
    await waitFor(async () => (await c.leader(name)).candidates?.length === 1, 10_000, "early to stand");
    const late = c.campaign(name, { candidate: "late", ttl: "10s", wait: "60s" });
    const lateDone = settled(late);
    await waitFor(() => w.posts(path).length >= 16, 30_000, "16 requests of the long campaign");
    assert.equal(earlyDone.done, false);
    keptPlace(w.posts(path), s.id);
    const info = await c.leader(name);
    assert.equal(info.token, leader.token);
    assert.deepEqual(info.candidates?.map((x) => x.candidate), ["early", "late"]);

    await leader.resign();
    const ld = await early;
    try {
      assert.ok(ld.token > leader.token);
      assert.equal(ld.value, "e");
      assert.equal(ld.info.session, s.id);
      assert.equal(lateDone.done, false, "the later candidate still waits");
    } finally {
      await ld.resign();
    }
    const lateLd = await late;
    await lateLd.resign();
    await c.deleteSession(s.id);
  });

  test("a permit's and a read/write lock's long waits keep their places", async () => {
    const w = longWaiter();
    const s = await w.client.createSession({ ttl: "2s", owner: "early" });

    const sem = unique("sem");
    const held = await c.acquirePermit(sem, 1, { ttl: "10s" });
    const permit = w.client.acquirePermit(sem, 1, { owner: "early", session: s.id, wait: waitForever });
    await waitFor(() => w.posts(`/v1/semaphores/${sem}`).length >= 6, 30_000, "6 requests for the permit");
    keptPlace(w.posts(`/v1/semaphores/${sem}`), s.id);
    assert.deepEqual((await c.semaphore(sem)).waiters?.map((x) => x.owner), ["early"]);
    await held.release();
    const p = await permit;
    assert.ok(p.token > held.token);
    assert.equal(p.info.session, s.id);
    await p.release();

    const rw = unique("rw");
    const writer = await c.acquireRW(rw, "write", { ttl: "10s" });
    const reader = w.client.acquireRW(rw, "read", { owner: "early", session: s.id, wait: waitForever });
    await waitFor(() => w.posts(`/v1/rwlocks/${rw}`).length >= 6, 30_000, "6 requests for the read hold");
    keptPlace(w.posts(`/v1/rwlocks/${rw}`), s.id);
    assert.deepEqual((await c.rwlock(rw)).waiters?.map((x) => x.owner), ["early"]);
    await writer.release();
    const r = await reader;
    assert.equal(r.mode, "read");
    assert.equal(r.info.session, s.id);
    await r.release();
    await c.deleteSession(s.id);
  });

  test("a long wait that runs out ends with a last request without keep_place, and leaves no place", async () => {
    const w = longWaiter();
    const name = unique("runsout");
    const path = `/v1/locks/${name}`;
    const holder = await c.acquire(name, { ttl: "10s" });
    const s = await w.client.createSession({ ttl: "10s" });
    const t0 = performance.now();
    const e = await w.client.acquire(name, { session: s.id, wait: 700 }).then(() => assert.fail("acquired a held lock"), (e) => e);
    assert.ok(performance.now() - t0 >= 650, "it waited the whole wait");
    assert.ok(e instanceof HeldError, `${e}`);
    assert.equal(e.placeKept, false);
    assert.equal(e.holder?.token, holder.token);
    const reqs = w.posts(path);
    assert.ok(reqs.length >= 3, `${reqs.length} requests`);
    const last = reqs.pop();
    keptPlace(reqs, s.id);
    assert.equal(last.body.keep_place, undefined);
    assert.ok(parseInt(last.body.wait, 10) <= 200, `the last wait ${last.body.wait}`);
    assert.deepEqual((await c.get(name)).waiters ?? [], [], "the place ended with the wait");
    await holder.release();
    await c.deleteSession(s.id);
  });

  test("aborted between two requests, a long wait gives its place up", async () => {
    const w = longWaiter();
    const name = unique("abort");
    const path = `/v1/locks/${name}`;
    const holder = await c.acquire(name, { ttl: "10s" });
    const s = await w.client.createSession({ ttl: "10s" });
    const ctl = new AbortController();
    const stop = new Error("stop waiting");
    let kept = 0;
    w.onAnswer = (req, status, text) => {
      if (req.path !== path || !req.body.keep_place) return;
      assert.deepEqual([status, JSON.parse(text).place_kept], [409, true]);
      if (++kept === 3) ctl.abort(stop); // after the answer: between two requests
    };
    await assert.rejects(w.client.acquire(name, { session: s.id, wait: waitForever, signal: ctl.signal }), (e) => e === stop);
    const reqs = w.posts(path);
    assert.equal(reqs.length, 4, "three kept places, then one request to give it up");
    const last = reqs.pop();
    keptPlace(reqs, s.id);
    assert.deepEqual([last.body.wait, last.body.keep_place], ["1ms", undefined]);
    assert.deepEqual((await c.get(name)).waiters ?? [], [], "the place was given up");
    await holder.release();
    await c.deleteSession(s.id);
  });

  test("aborted between two requests after a grant to its place, a long wait gives the lock back", async () => {
    const w = longWaiter();
    const name = unique("abort-granted");
    const path = `/v1/locks/${name}`;
    const holder = await c.acquire(name, { ttl: "10s" });
    const s = await w.client.createSession({ ttl: "10s" });
    const ctl = new AbortController();
    w.onAnswer = async (req, status) => {
      if (req.path !== path || !req.body.keep_place || status !== 409) return;
      // The holder releases after the wait ran out: the session's place is granted.
      await holder.release();
      ctl.abort(new Error("stop waiting"));
    };
    await assert.rejects(w.client.acquire(name, { session: s.id, wait: waitForever, signal: ctl.signal }), /stop waiting/);
    assert.equal(w.posts(path).length, 2);
    await waitFor(() => c.get(name).then(() => false, (e) => e instanceof NotHeldError), 10_000, "the lock given back");
    assert.deepEqual((await c.getSession(s.id)).locks ?? [], []);
    await c.deleteSession(s.id);
  });
});
