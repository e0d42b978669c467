// Scenarios against a live baton that the tests start (see baton.mjs).
// Run after `npm run build`: they import the built package.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";

import {
  Client, ElectionHeldError, HeldError, InvalidRequestError, LockLostError, NoLeaderError, NotHeldError, NotHolderError,
  SessionNotFoundError, StaleTokenError, TokenMismatchError, UnavailableError, UnknownTokenError,
} from "../dist/index.js";
import { aborted, freePort, startBaton, startProxy, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
/** unique is a fresh name, so that the scenarios do not meet. */
const unique = (what) => `ts-${what}-${process.pid}-${++n}`;

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

/** rawRevoke revokes as an operator would, with the HTTP API itself. */
async function rawRevoke(path, reason) {
  const res = await fetch(baton.addr + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ reason }) });
  assert.equal(res.status, 204, `POST ${path}: ${res.status} ${await res.text()}`);
}

describe("locks", () => {
  test("acquire, then release by token", async () => {
    const name = unique("basic");
    const lk = await c.acquire(name, { ttl: "10s", owner: "w1", metadata: { job: "recon" } });
    assert.ok(lk.token > 0);
    assert.equal(lk.name, name);
    const got = await c.get(name);
    assert.equal(got.token, lk.token);
    assert.equal(got.owner, "w1");
    assert.deepEqual(got.metadata, { job: "recon" });
    await lk.release();
    await assert.rejects(c.get(name), NotHeldError);
    assert.equal(lk.lost.aborted, false, "a clean release is no loss");
    await lk.release(); // again: the same result
  });

  test("a held lock answers HeldError with the holder, at once and after a wait", async () => {
    const name = unique("held");
    const lk = await c.acquire(name, { ttl: "10s", owner: "first" });
    try {
      const e = await c.acquire(name).then(() => assert.fail("acquired a held lock"), (e) => e);
      assert.ok(e instanceof HeldError, `${e}`);
      assert.equal(e.code, "lock_held");
      assert.equal(e.status, 409);
      assert.equal(e.holder.token, lk.token);
      assert.equal(e.holder.owner, "first");
      const t0 = Date.now();
      await assert.rejects(c.acquire(name, { wait: 300 }), HeldError);
      assert.ok(Date.now() - t0 >= 250, "the acquire waited");
    } finally {
      await lk.release();
    }
  });

  test("a waiting acquire gets the lock when its holder releases", async () => {
    const name = unique("queue");
    const first = await c.acquire(name, { ttl: "10s" });
    const second = c.acquire(name, { ttl: "10s", wait: "10s" });
    await waitFor(async () => (await c.get(name)).waiters?.length === 1, 5000, "the waiter to queue");
    await first.release();
    const lk = await second;
    assert.ok(lk.token > first.token);
    await lk.release();
  });

  test("lost aborts within a second of a revoke, with a LockLostError", async () => {
    const name = unique("revoke");
    const lk = await c.acquire(name, { ttl: "30s" });
    const t0 = performance.now();
    await rawRevoke(`/v1/locks/${name}/revoke`, "maintenance");
    const why = await aborted(lk.lost, 1000, "lost");
    assert.ok(performance.now() - t0 < 1000);
    assert.ok(why instanceof LockLostError, `${why}`);
    assert.equal(why.event?.type, "revoked");
    assert.match(why.message, /revoked.*maintenance/);
    assert.equal(lk.err, why);
    await assert.rejects(lk.release(), LockLostError);
  });

  test("the background renewal keeps a 2s lock past its TTL", async () => {
    const name = unique("renew");
    const lk = await c.acquire(name, { ttl: "2s" });
    const firstExpiry = Date.parse(lk.info.expires_at);
    // Past the first lease's end, by the server's clock.
    await waitFor(() => Date.now() > firstExpiry + 500, 4000, "the first lease's end");
    const got = await c.get(name);
    assert.equal(got.token, lk.token);
    assert.ok(Date.parse(got.expires_at) > firstExpiry, "renewed");
    assert.equal(lk.lost.aborted, false);
    await lk.release();
  });

  test("a release by token from elsewhere makes the lock lost", async () => {
    const name = unique("elsewhere");
    const lk = await c.acquire(name, { ttl: "30s" });
    await new Client(baton.addr).release(name, lk.token);
    const why = await aborted(lk.lost, 1000, "lost");
    assert.equal(why.event?.type, "released");
  });

  test("a stale token cannot release a newer holder", async () => {
    const name = unique("stale-release");
    const old = await c.acquireOnce(name, { ttl: "10s" });
    await c.release(name, old.token);
    const lk = await c.acquire(name, { ttl: "10s" });
    await assert.rejects(c.release(name, old.token), TokenMismatchError);
    await lk.release();
  });

  test("a release inside the at-least window keeps the lock until the window's end", async () => {
    const name = unique("min-hold");
    const lk = await c.acquire(name, { minHold: "60s" });
    assert.equal(lk.info.min_hold, "1m0s");
    await lk.release();
    const e = await c.acquire(name).then(() => assert.fail("acquired inside the window"), (e) => e);
    assert.ok(e instanceof HeldError, `${e}`);
    assert.equal(e.code, "lock_held");
    assert.ok(e.retryAfter > 0 && e.retryAfter <= 60_000, `retryAfter ${e.retryAfter} ms`);
    const free = await c.get(name).then(() => assert.fail("a released lock answered held"), (e) => e);
    assert.ok(free instanceof NotHeldError, `${free}`);
    assert.equal(Date.parse(free.problem.delayed_until), Date.parse(lk.info.acquired_at) + 60_000);
  });

  test("withLock returns the callback's value and releases, also when it throws", async () => {
    const name = unique("with");
    const v = await c.withLock(name, { ttl: "10s" }, async (lk) => {
      assert.equal((await c.get(name)).token, lk.token);
      return 42;
    });
    assert.equal(v, 42);
    await assert.rejects(c.get(name), NotHeldError);
    await assert.rejects(c.withLock(name, { ttl: "10s" }, async () => { throw new Error("boom"); }), /boom/);
    await assert.rejects(c.get(name), NotHeldError);
  });

  test("withLock rejects with the LockLostError when the lock was lost while the callback ran", async () => {
    const name = unique("with-lost");
    const e = await c.withLock(name, { ttl: "10s" }, async (lk) => {
      await c.revoke(name, "mid-work");
      await aborted(lk.lost, 1000, "lost");
      return "done anyway";
    }).then(() => assert.fail("withLock returned"), (e) => e);
    assert.ok(e instanceof LockLostError, `${e}`);
  });

  test("holds of two locks widen the one event stream, and both still learn of a revoke", async () => {
    const a = await c.acquire(unique("two-a"), { ttl: "30s" });
    const b = await c.acquire(unique("two-b"), { ttl: "30s" });
    await c.revoke(b.name, "b");
    await aborted(b.lost, 1000, "b lost");
    await c.revoke(a.name, "a");
    await aborted(a.lost, 1000, "a lost");
    await waitFor(() => !c.watcher.streaming, 2000, "the stream to stop with the last hold");
  });
});

test("a lock whose renewals get no answer is lost by the client's clock at its TTL", async () => {
  const proxy = await startProxy(baton.addr);
  const pc = new Client(proxy.addr, { retryBackoff: 10, timeout: 500 });
  const lk = await pc.acquire(unique("partition"), { ttl: "2s" });
  const t0 = performance.now();
  proxy.rule = () => "drop"; // a partition: nothing gets through any more
  proxy.cutStreams();
  const why = await aborted(lk.lost, 3000, "lost");
  assert.ok(performance.now() - t0 <= 2100, "lost no later than the TTL after the last renew");
  assert.match(why.message, /ran out by this client's clock/);
  proxy.rule = () => "pass";
  await assert.rejects(lk.release(), LockLostError);
  await proxy.close();
});

test("the one event stream asks for one lock's or one election's events, and for all with several", async () => {
  const proxy = await startProxy(baton.addr);
  const pc = new Client(proxy.addr, { token: "not-checked-here" });
  const streams = () => proxy.requests.filter((r) => r.url.startsWith("/v1/events")).map((r) => new URL(r.url, "http://x").searchParams.toString());
  const a = await pc.acquire(unique("filter-a"), { ttl: "10s" });
  await waitFor(() => streams().length === 1, 2000, "the stream");
  assert.deepEqual(streams(), [`lock=${a.name}`]);
  const b = await pc.acquire(unique("filter-b"), { ttl: "10s" });
  await waitFor(() => streams().length === 2, 2000, "the widened stream");
  assert.equal(streams()[1], "", "every event");
  await b.release();
  await waitFor(() => streams().length === 3, 2000, "the narrowed stream");
  assert.equal(streams()[2], `lock=${a.name}`);
  await a.release();
  const ld = await pc.campaign(unique("filter-e"), { ttl: "10s" });
  await waitFor(() => streams().length === 4, 2000, "the election's stream");
  assert.equal(streams()[3], `kind=election&name=${ld.name}`);
  await ld.resign();
  assert.ok(proxy.requests.every((r) => r.authorization === "Bearer not-checked-here"), "every request carries the bearer token");
  await proxy.close();
});

describe("sessions", () => {
  test("a lock in a session lives and dies with it", async () => {
    const s = await c.createSession({ ttl: "10s", owner: "ts-session" });
    assert.equal(s.owner, "ts-session");
    const name = unique("sess");
    const lk = await c.acquire(name, { session: s.id });
    assert.equal(lk.info.session, s.id);
    const again = await c.acquireOnce(name, { session: s.id });
    assert.equal(again.token, lk.token, "the session holds it already");
    assert.deepEqual((await c.getSession(s.id)).locks, [name]);
    assert.ok((await c.sessions({ prefix: "ts-session" })).sessions.some((x) => x.id === s.id));
    await c.renewSession(s.id);
    await c.deleteSession(s.id);
    const why = await aborted(lk.lost, 1000, "lost");
    assert.match(why.message, /released.*session deleted/);
    await assert.rejects(c.getSession(s.id), SessionNotFoundError);
  });
});

describe("fenced values", () => {
  test("a stale token's write is refused with the largest token seen", async () => {
    const name = unique("fence-lock");
    const res = unique("ledger");
    const first = await c.acquire(name, { ttl: "10s" });
    await c.putFenced(res, first.token, { balance: 1 }, { lock: name });
    await first.release();
    const second = await c.acquire(name, { ttl: "10s" });
    const w = await c.putFenced(res, second.token, { balance: 2 }, { lock: name });
    assert.equal(w.token, second.token);
    const e = await c.putFenced(res, first.token, { balance: 3 }).then(() => assert.fail("stale write passed"), (e) => e);
    assert.ok(e instanceof StaleTokenError, `${e}`);
    assert.equal(e.maxToken, second.token);
    const other = await c.acquire(unique("fence-other"), { ttl: "10s" });
    await assert.rejects(c.putFenced(res, other.token, 0, { lock: name }), NotHolderError, "a token that holds another lock");
    await assert.rejects(c.putFenced(res, other.token + 1000, 0), UnknownTokenError, "a token never issued");
    await other.release();
    const got = await c.getFenced(res);
    assert.deepEqual(got.value, { balance: 2 });
    assert.equal(got.token, second.token);
    await second.release();
  });
});

describe("history and events", () => {
  test("history lists a lock's events, newest first", async () => {
    const name = unique("hist");
    const lk = await c.acquire(name, { ttl: "10s", owner: "h" });
    await lk.release();
    const { events } = await c.history({ lock: name });
    assert.deepEqual(events.map((e) => e.type), ["released", "acquired"]);
    assert.ok(events.every((e) => e.token === lk.token && e.lock === name && e.kind === "lock"));
    const page = await c.history({ lock: name, limit: 1 });
    assert.equal(page.events.length, 1);
    assert.ok(page.nextBefore > 0);
  });

  test("events resume after a broken stream without a gap or a duplicate", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 20 });
    const name = unique("resume");
    const stream = pc.events({ lock: name });
    await stream.ready;
    const got = [];
    const reader = (async () => {
      for await (const ev of stream) {
        got.push(ev);
        if (got.length === 3) proxy.cutStreams(); // mid-way, with events still to come
        if (got.length === 12) break;
      }
    })();
    for (let i = 0; i < 6; i++) {
      const lk = await c.acquire(name, { ttl: "10s" });
      await lk.release();
    }
    await reader;
    assert.ok(proxy.count("GET /v1/events") >= 2, `the stream reconnected: ${proxy.seen}`);
    const { events } = await c.history({ lock: name });
    const key = (e) => `${e.revision}/${e.type}/${e.token}`;
    assert.deepEqual(got.map(key), events.reverse().map(key));
    await proxy.close();
  });

  test("events with since replays what came before", async () => {
    const name = unique("since");
    const rev = (await c.cluster()).revision;
    const lk = await c.acquire(name, { ttl: "10s" });
    await lk.release();
    const stream = c.events({ lock: name, since: rev });
    const types = [];
    for await (const ev of stream) {
      types.push(ev.type);
      if (types.length === 2) break;
    }
    assert.deepEqual(types, ["acquired", "released"]);
  });
});

test("an event stream the server refuses ends the iterator with the error", async () => {
  const stream = c.events({ lock: "not a valid name!", since: 1 });
  await assert.rejects(async () => { for await (const _ of stream) assert.fail("an event"); }, InvalidRequestError);
});

describe("elections", () => {
  test("campaign, hand over on resign, observe every change", async () => {
    const name = unique("elect");
    const obs = c.observe(name);
    const changes = [];
    const want = (pred, what) => waitFor(() => changes.find(pred), 5000, what);
    const reading = (async () => { for await (const ch of obs) changes.push(ch); })();
    await want((ch) => ch.leader === null, "the vacant state");
    const a = await c.campaign(name, { value: { addr: "a:1" }, ttl: "10s", candidate: "a" });
    assert.equal(a.term, 1);
    assert.deepEqual(a.value, { addr: "a:1" });
    const e = await c.campaign(name, { candidate: "x" }).then(() => assert.fail("two leaders"), (e) => e);
    assert.ok(e instanceof ElectionHeldError, `${e}`);
    assert.equal(e.leader.token, a.token);
    const bp = c.campaign(name, { value: "b", ttl: "10s", wait: "10s", candidate: "b" });
    await waitFor(async () => (await c.leader(name)).candidates?.length === 1, 5000, "b to wait in line");
    await a.resign();
    const b = await bp;
    assert.equal(b.term, 2);
    assert.ok(b.token > a.token);
    assert.equal(a.lost.aborted, false, "a resignation is no loss");
    await b.proclaim("b2");
    assert.equal(b.value, "b2");
    assert.equal((await c.leader(name)).value, "b2");
    const fenced = unique("leader-ledger");
    await c.putFenced(fenced, b.token, 1, { election: name });
    await assert.rejects(c.putFenced(fenced, a.token, 1, { election: name }), NotHolderError, "the old leader's token");
    await assert.rejects(c.putFenced(fenced, a.token, 1), StaleTokenError, "a token below one seen");
    await want((ch) => ch.leader?.value === "b2", "b2 proclaimed");
    await b.resign();
    await want((ch, i) => i > 0 && ch.leader === null, "vacant again");
    obs.close();
    await reading;
    const seen = changes.map((ch) => (ch.leader ? `${ch.leader.candidate}:${JSON.stringify(ch.leader.value)}` : "vacant"));
    assert.deepEqual(seen, ["vacant", 'a:{"addr":"a:1"}', 'b:"b"', 'b:"b2"', "vacant"]);
    const revs = changes.map((ch) => ch.revision);
    assert.deepEqual(revs, [...revs].sort((x, y) => x - y));
    await assert.rejects(c.leader(name), NoLeaderError);
  });

  test("a revoked leadership is lost within a second; withLeadership resigns", async () => {
    const name = unique("elect-revoke");
    const ld = await c.campaign(name, { ttl: "30s" });
    await rawRevoke(`/v1/elections/${name}/revoke`, "depose");
    const why = await aborted(ld.lost, 1000, "lost");
    assert.ok(why instanceof LockLostError);
    assert.equal(why.kind, "election");
    const v = await c.withLeadership(name, { value: 1 }, (l) => l.term);
    assert.equal(v, 2);
    await assert.rejects(c.leader(name), NoLeaderError);
  });

  test("observe resumes after a broken stream without a repeat", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 20 });
    const name = unique("observe-resume");
    const ld = await c.campaign(name, { value: 0, ttl: "10s" });
    const obs = pc.observe(name);
    const it = obs[Symbol.asyncIterator]();
    assert.equal((await it.next()).value.leader.value, 0);
    proxy.cutStreams();
    for (let v = 1; v <= 3; v++) await ld.proclaim(v);
    const values = [];
    for (let i = 0; i < 3; i++) values.push((await it.next()).value.leader.value);
    assert.deepEqual(values, [1, 2, 3]);
    assert.ok(proxy.count(`GET /v1/elections/${name}/observe`) >= 2);
    obs.close();
    await ld.resign();
    await proxy.close();
  });
});

describe("retries", () => {
  test("an idempotent call is retried after a 503, honouring Retry-After", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 10 });
    const name = unique("retry-get");
    const lk = await c.acquire(name, { ttl: "10s" });
    let refusals = 1;
    proxy.retryAfter = 1;
    proxy.rule = (req) => (req.method === "GET" && refusals-- > 0 ? "503" : "pass");
    const t0 = Date.now();
    assert.equal((await pc.get(name)).token, lk.token);
    assert.ok(Date.now() - t0 >= 900, `waited ${Date.now() - t0} ms, Retry-After said 1 s`);
    assert.equal(proxy.count("GET /v1/locks/"), 2);
    await lk.release();
    await proxy.close();
  });

  test("an acquire outside a session is not retried after a 503 or a broken connection", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 10 });
    for (const fault of ["503", "drop"]) {
      const name = unique("retry-acquire");
      proxy.rule = () => fault;
      const e = await pc.acquire(name, { ttl: "10s" }).then(() => assert.fail("acquired"), (e) => e);
      assert.ok(e instanceof UnavailableError, `${fault}: ${e}`);
      assert.match(e.message, /outcome is unknown/);
      assert.equal(proxy.count(`POST /v1/locks/${name}`), 1, `${fault}: sent once`);
      const ce = await pc.campaign(name, { ttl: "10s" }).then(() => assert.fail("elected"), (e) => e);
      assert.ok(ce instanceof UnavailableError, `${fault}: ${ce}`);
      assert.equal(proxy.count(`POST /v1/elections/${name}/campaign`), 1, `${fault}: campaign sent once`);
    }
    await proxy.close();
  });

  test("an acquire in a session is retried after a 503", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 10 });
    const s = await c.createSession({ ttl: "10s" });
    const name = unique("retry-session");
    let refusals = 1;
    proxy.rule = (req) => (req.method === "POST" && refusals-- > 0 ? "503" : "pass");
    const lk = await pc.acquire(name, { session: s.id });
    assert.equal(proxy.count(`POST /v1/locks/${name}`), 2);
    await lk.release();
    await c.deleteSession(s.id);
    await proxy.close();
  });

  test("a node that refuses connections is skipped, even for an acquire", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const pc = new Client([dead, baton.addr], { retryBackoff: 10 });
    const lk = await pc.acquire(unique("failover"), { ttl: "10s" });
    assert.equal(pc.endpoints.length, 2);
    await lk.release();
  });
});

test("a Node program that released its lock exits at once", async () => {
  const script = `
    import { Client } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
    const c = new Client(${JSON.stringify(baton.addr)});
    const lk = await c.acquire(${JSON.stringify(unique("exit"))}, { ttl: "30s" });
    await lk.release();
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "ignore", "inherit"] });
  const code = await new Promise((resolve, reject) => {
    const t = setTimeout(() => { child.kill(); reject(new Error("the program did not exit within 5 s")); }, 5000);
    child.once("exit", (c) => { clearTimeout(t); resolve(c); });
  });
  assert.equal(code, 0);
});
