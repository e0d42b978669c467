// Keys against a live baton that the tests start (see baton.mjs):
// compare-and-set, session-bound keys, fenced writes, paged listings,
// blocking reads, a watch that resumes after a broken stream without a
// gap or a repeat, and which writes are repeated after a lost answer.
// Run after `npm run build`: they import the built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, KeyNotFoundError, RevisionMismatchError, SessionNotFoundError, StaleTokenError, UnavailableError } from "../dist/index.js";
import { startBaton, startProxy, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
/** unique is a fresh name, so that the scenarios do not meet. */
const unique = (what) => `ts-${what}-${process.pid}-${++n}`;
/** failure is what p rejects with; it fails the test when p resolves. */
const failure = (p) => p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

describe("keys", () => {
  test("compare-and-set, create-only, paged listing and delete", async () => {
    const dir = unique("cfg");
    const key = `${dir}/db`;
    const missing = await failure(c.getKey(key));
    assert.ok(missing instanceof KeyNotFoundError, `${missing}`);
    assert.ok(missing.revision > 0, "a missing key's error says the revision it was read at");

    const a = await c.putKey(key, { host: "a" }, { ifRevision: 0 });
    assert.deepEqual([a.key, a.value, a.version, a.created_revision], [key, { host: "a" }, 1, a.revision]);
    const again = await failure(c.putKey(key, "x", { ifRevision: 0 }));
    assert.ok(again instanceof RevisionMismatchError, `${again}`);
    assert.equal(again.revision, a.revision, "a second create names the key's revision");
    const absent = await failure(c.putKey(`${dir}/absent`, "x", { ifRevision: a.revision }));
    assert.ok(absent instanceof RevisionMismatchError, `${absent}`);
    assert.equal(absent.revision, 0, "0: the key does not exist");

    const b = await c.putKey(key, { host: "b" }, { ifRevision: a.revision });
    assert.deepEqual([b.version, b.created_revision], [2, a.revision]);
    const got = await c.getKey(key);
    assert.deepEqual([got.value, got.revision, got.session], [{ host: "b" }, b.revision, undefined]);

    for (let i = 0; i < 3; i++) await c.putKey(`${dir}/n${i}`, i);
    const listed = [];
    let pages = 0;
    for (let cursor = ""; ; ) {
      const page = await c.keys({ prefix: `${dir}/`, limit: 2, cursor });
      pages++;
      assert.ok(page.keys.length <= 2);
      assert.ok(page.revision >= b.revision, "a page is read after the puts before it");
      listed.push(...page.keys.map((k) => [k.key.slice(dir.length + 1), k.value]));
      if (!(cursor = page.nextCursor)) break;
    }
    assert.deepEqual(listed, [["db", { host: "b" }], ["n0", 0], ["n1", 1], ["n2", 2]]);
    assert.equal(pages, 2);

    assert.ok(await failure(c.deleteKey(key, { ifRevision: a.revision })) instanceof RevisionMismatchError);
    await c.deleteKey(key, { ifRevision: b.revision });
    assert.ok(await failure(c.deleteKey(key)) instanceof KeyNotFoundError);
  });

  test("a fenced put is refused once the lock changed hands", async () => {
    const name = unique("lock");
    const key = unique("k");
    const old = await c.acquire(name, { ttl: "10s" });
    await c.putKey(key, 10, { fence: { kind: "lock", name, token: old.token } });
    await old.release();
    const lk = await c.acquire(name, { ttl: "10s" });
    try {
      const e = await failure(c.putKey(key, 9, { fence: { kind: "lock", name, token: old.token } }));
      assert.ok(e instanceof StaleTokenError, `${e}`);
      assert.ok(await failure(c.deleteKey(key, { fence: { kind: "lock", name, token: old.token } })) instanceof StaleTokenError);
      assert.equal((await c.getKey(key)).value, 10, "the stale holder wrote nothing");
      assert.equal((await c.putKey(key, 11, { fence: { kind: "lock", name, token: lk.token } })).value, 11);
      await c.deleteKey(key, { fence: { kind: "lock", name, token: lk.token } });
      await assert.rejects(c.putKey(key, 1, { fence: { kind: "mutex", name, token: lk.token } }), TypeError);
    } finally {
      await lk.release();
    }
  });

  test("a session-bound key goes with its session", async () => {
    const s = await c.createSession({ owner: unique("member"), ttl: "10s" });
    const member = `${unique("members")}/m1`;
    const k = await c.putKey(member, "10.0.0.1:80", { session: s.id });
    assert.equal(k.session, s.id);
    await c.deleteSession(s.id);
    assert.ok(await failure(c.getKey(member)) instanceof KeyNotFoundError);
    assert.ok(await failure(c.putKey(member, "10.0.0.1:80", { session: s.id })) instanceof SessionNotFoundError);
  });

  test("a blocking read returns at the next put, or with the key when its wait runs out", async () => {
    const key = unique("k");
    const { revision } = await failure(c.getKey(key));
    const waiting = c.waitKey(key, revision, { wait: "30s" });
    const put = await c.putKey(key, "up");
    const k = await waiting;
    assert.deepEqual([k.revision, k.value], [put.revision, "up"]);
    const same = await c.waitKey(key, put.revision, { wait: 200 });
    assert.equal(same.revision, put.revision);
  });

  test("a watch sees every change once, across a broken and refused stream", async () => {
    const dir = unique("w");
    await c.putKey(`${dir}/before`, 0);
    const page = await c.keys({ prefix: `${dir}/` });
    assert.deepEqual(page.keys.map((k) => k.key), [`${dir}/before`]);
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 10 });
    const stream = pc.watchKeys(`${dir}/`, { since: page.revision });
    const it = stream[Symbol.asyncIterator]();
    let last = page.revision;
    const expect = async (type, key, value) => {
      const { value: ev, done } = await it.next();
      assert.ok(!done, "the watch ended");
      assert.deepEqual([ev.type, ev.key, ev.value], [type, `${dir}/${key}`, value]);
      assert.ok(ev.revision > last, `revision ${ev.revision} after ${last}`);
      last = ev.revision;
    };
    try {
      await c.putKey(`${dir}/a`, 1);
      await expect("put", "a", 1);

      // Cut the stream, and keep it away while keys change.
      proxy.rule = (req) => (req.url.startsWith("/v1/kv/events") ? "503" : "pass");
      proxy.cutStreams();
      await c.putKey(`${dir}/b`, 2);
      await c.putKey(`${dir}/a`, 3);
      await c.deleteKey(`${dir}/b`);
      await waitFor(() => proxy.count("GET /v1/kv/events") >= 2, 10_000, "the watch to be refused");
      proxy.rule = () => "pass";
      await expect("put", "b", 2);
      await expect("put", "a", 3);
      await expect("delete", "b", undefined);
      await c.putKey(`${dir}/c`, { x: true });
      await expect("put", "c", { x: true });
    } finally {
      stream.close();
      await proxy.close();
    }
    const events = proxy.requests.filter((r) => r.url.startsWith("/v1/kv/events"));
    assert.ok(events.length >= 3, `connected, refused, connected again: ${proxy.seen}`);
  });

  test("a watch without since starts from now", async () => {
    const dir = unique("now");
    await c.putKey(`${dir}/old`, 1);
    const stream = c.watchKeys(`${dir}/`);
    try {
      await stream.ready;
      const k = await c.putKey(`${dir}/new`, 2);
      const { value: ev } = await stream.next();
      assert.deepEqual([ev.type, ev.key, ev.revision, ev.version], ["put", `${dir}/new`, k.revision, 1]);
    } finally {
      stream.close();
    }
  });
});

describe("key retries", () => {
  test("an unconditional put is not repeated after a lost answer; a conditional put and delete are", async () => {
    const proxy = await startProxy(baton.addr);
    const pc = new Client(proxy.addr, { retryBackoff: 10 });
    const key = unique("k");
    let drops = 1;
    proxy.rule = () => (drops-- > 0 ? "drop" : "pass");
    const e = await failure(pc.putKey(key, 1));
    assert.ok(e instanceof UnavailableError, `${e}`);
    assert.match(e.message, /outcome is unknown/);
    assert.equal(proxy.count("PUT /v1/kv/"), 1, "sent once");

    drops = 1;
    const k = await pc.putKey(key, 1, { ifRevision: 0 });
    assert.equal(k.version, 1);
    assert.equal(proxy.count("PUT /v1/kv/"), 3, "the conditional put, twice");
    drops = 1;
    await pc.deleteKey(key, { ifRevision: k.revision });
    assert.equal(proxy.count("DELETE /v1/kv/"), 2);
    assert.ok(await failure(c.getKey(key)) instanceof KeyNotFoundError);
    await proxy.close();
  });
});
