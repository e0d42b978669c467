// Lock sets against a live baton that the tests start (see baton.mjs):
// every lock granted with one token or none, the holders in the way of a
// refused set, a set that waits for a lock and is granted with the
// others, a set lost within a second when one of its locks is revoked on
// its own, bad names refused naming the field, renewal, withLockSet and a
// session handing the set back.
// Run after `npm run build`: they import the built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, HeldError, InvalidRequestError, LockLostError, LockSet, NotHeldError, TokenMismatchError } from "../dist/index.js";
import { aborted, startBaton, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
/** names are fresh lock names, so that the scenarios do not meet. */
const names = (what, count = 2) => {
  const base = `ts-set-${what}-${process.pid}-${++n}`;
  return Array.from({ length: count }, (_, i) => `${base}-acct${i}`);
};
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

/** notHeld asserts that none of the locks is held. */
async function notHeld(...ls) {
  for (const l of ls) await assert.rejects(c.get(l), NotHeldError, `${l} is held`);
}

describe("lock sets", () => {
  test("acquireSet takes every lock with one token, and release ends them all", async () => {
    const ns = names("basic", 3);
    const s = await c.acquireSet(ns, { ttl: "10s", owner: "transfer-7", metadata: { job: "t" } });
    try {
      assert.ok(s instanceof LockSet);
      assert.deepEqual(s.names, ns);
      assert.ok(s.token > 0);
      assert.deepEqual(s.locks.map((l) => [l.name, l.token]), ns.map((l) => [l, s.token]));
      for (const l of ns) {
        const got = await c.get(l);
        assert.deepEqual([got.token, got.owner, got.set, got.metadata, got.ttl], [s.token, "transfer-7", ns, { job: "t" }, "10s"]);
      }
    } finally {
      await s.release();
    }
    await s.release(); // again: the same result
    await notHeld(...ns);
    assert.equal(s.lost.aborted, false, "a clean release is no loss");
  });

  test("a set with a lock held answers HeldError with the holders and takes nothing", async () => {
    const [a, b, x] = names("held", 3);
    const lk = await c.acquire(b, { owner: "single" });
    try {
      const e = await new Client(baton.addr).acquireSet([a, b, x], { owner: "set" }).then(() => assert.fail("a set got a held lock"), (e) => e);
      assert.ok(e instanceof HeldError, `${e}`);
      assert.deepEqual([e.code, e.status], ["lock_held", 409]);
      assert.deepEqual(e.holders.map((h) => [h.name, h.token, h.owner]), [[b, lk.token, "single"]]);
      await notHeld(a, x);
    } finally {
      await lk.release();
    }
  });

  test("a waiting set is granted when its held lock is released", async () => {
    const [a, b] = names("wait");
    const first = await c.acquire(b);
    const other = new Client(baton.addr);
    const pending = other.acquireSet([a, b], { wait: "10s", owner: "set" });
    pending.catch(() => {});
    let s;
    try {
      await waitFor(async () => same(((await c.get(b)).waiters ?? []).map((w) => [w.owner, w.set]), [["set", [a, b]]]), 5000, "the set to queue for the held lock");
      await first.release();
      s = await pending;
      assert.ok(s.token > first.token);
      assert.deepEqual([(await c.get(a)).token, (await c.get(b)).token], [s.token, s.token]);
      const { events } = await c.history({ kind: "lock", name: a, types: ["acquired"] });
      assert.deepEqual(events.map((e) => [e.revision, e.set]), [[s.token, [a, b]]], "a set's acquired events are at the revision of its token");
    } finally {
      await first.release().catch(() => {});
      await (s ?? (await pending.catch(() => undefined)))?.release().catch(() => {});
    }
  });

  test("lost aborts within a second when one lock of the set is revoked on its own", async () => {
    const [a, b] = names("revoke");
    const s = await c.acquireSet([a, b], { ttl: "30s" });
    await new Client(baton.addr).revoke(b, "maintenance");
    const why = await aborted(s.lost, 1000, "lost");
    assert.ok(why instanceof LockLostError, `${why}`);
    assert.equal(why.kind, "lockset");
    assert.equal(why.event?.type, "revoked");
    assert.match(why.message, new RegExp(`lock set .*lock "${b}" revoked.*maintenance`));
    assert.equal(s.err, why);
    assert.equal((await c.get(a)).token, s.token, "the other lock is still held");
    await assert.rejects(s.release(), LockLostError);
    await notHeld(a);
    await assert.rejects(s.renew(), LockLostError);
  });

  test("a renew of a set missing a lock finds it lost", async () => {
    const [a, b] = names("renew-lost");
    const s = await c.acquireSet([a, b]);
    try {
      const info = await s.renew();
      assert.deepEqual([info.names, info.token], [[a, b], s.token]);
      await assert.rejects(c.renewSet([a, b], s.token + 1), TokenMismatchError);
      assert.equal(s.lost.aborted, false, "another token's renew changes nothing");
      // Released by its token on its own: the set is no longer whole.
      await new Client(baton.addr).release(a, s.token);
      await assert.rejects(c.renewSet([a, b], s.token), NotHeldError);
      const why = await aborted(s.lost, 1000, "lost");
      assert.match(why.message, /released/);
    } finally {
      await s.release().catch(() => {});
    }
  });

  test("bad names are refused naming the field", async () => {
    const [a] = names("bad");
    const cases = { "one name": [a], "a repeated name": [a, a], "an invalid name": [a, "no spaces"], "65 names": Array.from({ length: 65 }, (_, i) => `${a}-${i}`) };
    for (const [what, ns] of Object.entries(cases)) {
      const e = await c.acquireSet(ns).then(() => assert.fail(`${what}: acquired`), (e) => e);
      assert.ok(e instanceof InvalidRequestError, `${what}: ${e}`);
      assert.deepEqual([e.status, e.field], [400, "names"], what);
    }
    await notHeld(a);
    await assert.rejects(c.acquireSet(`${a},x`), TypeError);
  });

  test("the background renewal keeps a 2s set past its TTL, and withLockSet releases", async () => {
    const ns = names("renew");
    const v = await c.withLockSet(ns, { ttl: "2s" }, async (s) => {
      const firstExpiry = Date.parse(s.locks[0].expires_at);
      await waitFor(() => Date.now() > firstExpiry + 500, 4000, "the first lease's end");
      for (const l of ns) assert.equal((await c.get(l)).token, s.token);
      assert.equal(s.lost.aborted, false, `lost: ${s.err}`);
      assert.ok(Date.parse(s.locks[0].expires_at) > firstExpiry, "renewed");
      return 42;
    });
    assert.equal(v, 42);
    await notHeld(...ns);
    const e = await c.withLockSet(ns, {}, async (s) => {
      await c.revoke(ns[0]);
      await aborted(s.lost, 1000, "lost");
    }).then(() => assert.fail("withLockSet hid the loss"), (e) => e);
    assert.ok(e instanceof LockLostError, `${e}`);
  });

  test("a session gets its set back, and loses it with the session", async () => {
    const sess = await c.createSession({ ttl: "10s" });
    const [a, b] = names("session");
    const s = await c.acquireSet([a, b], { session: sess.id });
    const again = await c.acquireSet([b, a], { session: sess.id });
    assert.equal(again.token, s.token, "the session's set, handed back");
    assert.equal((await c.get(a)).session, sess.id);
    await new Client(baton.addr).deleteSession(sess.id);
    await aborted(s.lost, 1000, "the first set's lost");
    await aborted(again.lost, 1000, "the second set's lost");
  });
});
