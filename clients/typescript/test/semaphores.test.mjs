// Semaphores against a live baton that the tests start (see baton.mjs):
// the limit respected, a full semaphore's holders and a mismatch's limit
// in the errors, a waiter let in by a release, a revoked permit lost
// within a second, the listing, a session's semaphores and the audit
// trail's kind. Run after `npm run build`: they import the built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, LimitMismatchError, LockLostError, NotHeldError, Permit, SemaphoreFullError } from "../dist/index.js";
import { aborted, startBaton, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
/** unique is a fresh name, so that the scenarios do not meet. */
const unique = (what) => `ts-${what}-${process.pid}-${++n}`;
/** held lists the tokens of the semaphore's permits, oldest first. */
const held = async (name) => (await c.semaphore(name)).holders.map((h) => h.token);

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

describe("semaphores", () => {
  test("the limit is respected, and a full semaphore answers with its holders", async () => {
    const name = unique("full");
    const a = await c.acquirePermit(name, 2, { owner: "a", ttl: "10s", metadata: { job: "x" } });
    const b = await c.acquirePermit(name, 2, { owner: "b" });
    try {
      assert.ok(a instanceof Permit);
      assert.equal(a.limit, 2);
      assert.notEqual(a.token, b.token);
      const e = await c.acquirePermit(name, 2, { owner: "c" }).then(() => assert.fail("took a third permit of two"), (e) => e);
      assert.ok(e instanceof SemaphoreFullError, `${e}`);
      assert.equal(e.code, "semaphore_full");
      assert.equal(e.status, 409);
      assert.deepEqual(e.holders.map((h) => [h.owner, h.token]).sort(), [["a", a.token], ["b", b.token]].sort());
      const s = await c.semaphore(name);
      assert.equal(s.limit, 2);
      assert.deepEqual(s.holders.map((h) => h.token), [a.token, b.token], "oldest first");
      assert.deepEqual(s.holders[0].metadata, { job: "x" });
    } finally {
      await a.release();
      await b.release();
    }
    await assert.rejects(c.semaphore(name), NotHeldError);
  });

  test("another limit is refused with the semaphore's limit", async () => {
    const name = unique("mismatch");
    const p = await c.acquirePermit(name, 3);
    try {
      const e = await c.acquirePermit(name, 5).then(() => assert.fail("took a permit under another limit"), (e) => e);
      assert.ok(e instanceof LimitMismatchError, `${e}`);
      assert.equal(e.code, "limit_mismatch");
      assert.equal(e.limit, 3);
    } finally {
      await p.release();
    }
  });

  test("a release lets the first waiter in", async () => {
    const name = unique("queue");
    const first = await c.acquirePermit(name, 1, { ttl: "10s" });
    const second = c.acquirePermit(name, 1, { owner: "waiter", wait: "10s" });
    const waiters = await waitFor(async () => (await c.semaphore(name)).waiters, 5000, "the waiter to queue");
    assert.equal(waiters[0].owner, "waiter");
    await first.release();
    const p = await second;
    assert.ok(p.token > first.token);
    assert.deepEqual(await held(name), [p.token]);
    assert.equal(first.lost.aborted, false, "a release is no loss");
    await p.release();
  });

  test("a revoked permit is lost within a second; the other stays held", async () => {
    const name = unique("revoke");
    const p = await c.acquirePermit(name, 2, { ttl: "30s" });
    const keep = await c.acquirePermit(name, 2, { ttl: "30s" });
    const t0 = performance.now();
    await new Client(baton.addr).revokePermit(name, p.token, "maintenance");
    const why = await aborted(p.lost, 1000, "lost");
    assert.ok(performance.now() - t0 < 1000);
    assert.ok(why instanceof LockLostError, `${why}`);
    assert.equal(why.event?.type, "revoked");
    assert.equal(why.kind, "semaphore");
    assert.match(why.message, /permit of semaphore.*revoked.*maintenance/);
    await assert.rejects(p.release(), LockLostError);
    assert.equal(keep.lost.aborted, false);
    assert.deepEqual(await held(name), [keep.token]);
    await keep.release();
  });

  test("the background renewal keeps a 2s permit past its TTL", async () => {
    const name = unique("renew");
    const p = await c.acquirePermit(name, 1, { ttl: "2s" });
    const first = Date.parse(p.info.expires_at);
    // The second renewal, sent after the first lease would have ended,
    // moves expires_at more than a TTL past the first.
    await waitFor(() => Date.parse(p.info.expires_at) > first + 2000, 6000, "renewals past the first lease");
    assert.equal(p.lost.aborted, false, `${p.err}`);
    assert.deepEqual(await held(name), [p.token]);
    await p.release();
  });

  test("withPermit releases, and rejects with the LockLostError of a permit lost meanwhile", async () => {
    const name = unique("with");
    const got = await c.withPermit(name, 1, {}, async (p) => (await held(name))[0] === p.token);
    assert.equal(got, true);
    await assert.rejects(c.semaphore(name), NotHeldError);
    await assert.rejects(
      c.withPermit(name, 1, {}, async (p) => {
        await c.revokePermit(name, p.token);
        await aborted(p.lost, 1000, "lost");
      }),
      LockLostError,
    );
  });

  test("semaphores are listed a page at a time", async () => {
    const prefix = unique("list");
    const names = ["a", "b", "c"].map((x) => `${prefix}-${x}`);
    const ps = [];
    for (const name of names) ps.push(await c.acquirePermit(name, 2));
    const seen = [];
    let cursor = "";
    for (let i = 0; i <= names.length; i++) {
      const page = await c.semaphores({ prefix, limit: 2, cursor });
      assert.ok(page.semaphores.length <= 2);
      seen.push(...page.semaphores.map((s) => [s.name, s.limit, s.holders.length]));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    assert.deepEqual(seen, names.map((x) => [x, 2, 1]));
    for (const p of ps) await p.release();
  });

  test("a session's permits are in its semaphores and end with it", async () => {
    const s = await c.createSession({ ttl: "10s" });
    const name = unique("sess");
    const a = await c.acquirePermit(name, 3, { session: s.id });
    const b = await c.acquirePermit(name, 3, { session: s.id });
    assert.notEqual(a.token, b.token, "each request takes a permit of its own");
    assert.deepEqual((await c.getSession(s.id)).semaphores, [name]);
    await new Client(baton.addr).deleteSession(s.id);
    await aborted(a.lost, 1000, "a lost");
    await aborted(b.lost, 1000, "b lost");
  });

  test("history and events take kind semaphore", async () => {
    const name = unique("hist");
    const rev = (await c.cluster()).revision;
    const p = await c.acquirePermit(name, 4, { owner: "h" });
    await p.release();
    const got = [];
    for await (const ev of c.events({ kind: "semaphore", name, since: rev })) {
      got.push(ev);
      if (got.length === 2) break;
    }
    assert.deepEqual(got.map((e) => [e.type, e.kind, e.name, e.token]), [["acquired", "semaphore", name, p.token], ["released", "semaphore", name, p.token]]);
    assert.equal(got[0].limit, 4);
    const { events } = await c.history({ kind: "semaphore", name });
    assert.deepEqual(events.map((e) => e.type), ["released", "acquired"], "newest first");
  });
});
