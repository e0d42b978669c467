// Read/write locks against a live baton that the tests start (see
// baton.mjs): readers share, a writer is refused with the holders in the
// way and then waits for the readers, a reader behind a waiting writer
// waits for it (first come, first served), a revoked hold is lost within a
// second, fenced writes naming the rwlock take the writer's token only,
// and the listing, withRW, a session's rwlocks and the audit trail's kind.
// Run after `npm run build`: they import the built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, HeldError, LockLostError, NotHeldError, NotHolderError, RWHold } from "../dist/index.js";
import { aborted, startBaton, waitFor } from "./baton.mjs";

let baton;
let c;
let n = 0;
/** unique is a fresh name, so that the scenarios do not meet. */
const unique = (what) => `ts-rw-${what}-${process.pid}-${++n}`;
/** waiting lists the rwlock's waiters as [owner, mode], first served first. */
const waiting = async (name) => ((await c.rwlock(name)).waiters ?? []).map((w) => [w.owner, w.mode]);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

before(async () => {
  baton = await startBaton();
  c = new Client(baton.addr);
});

after(async () => {
  await baton?.stop();
});

/** releaseAll gives back every hold that is still held, after a test that may have failed midway. */
async function releaseAll(...holds) {
  for (const h of holds) await h?.release().catch(() => {});
}

describe("read/write locks", () => {
  test("readers share; a writer is refused with the holders, then waits for the readers", async () => {
    const name = unique("share");
    const a = await c.acquireRW(name, "read", { owner: "a", metadata: { job: "x" } });
    const b = await c.acquireRW(name, "read", { owner: "b", ttl: "10s" });
    let w;
    try {
      assert.ok(a instanceof RWHold);
      assert.deepEqual([a.mode, b.mode], ["read", "read"]);
      assert.notEqual(a.token, b.token);
      const got = await c.rwlock(name);
      assert.equal(got.mode, "read");
      assert.deepEqual(got.holders.map((h) => [h.token, h.mode]), [[a.token, "read"], [b.token, "read"]]);
      assert.deepEqual(got.holders[0].metadata, { job: "x" });
      const e = await new Client(baton.addr).acquireRW(name, "write", { owner: "w" }).then(() => assert.fail("a writer got in with readers"), (e) => e);
      assert.ok(e instanceof HeldError, `${e}`);
      assert.equal(e.code, "lock_held");
      assert.equal(e.status, 409);
      assert.equal(e.holder, undefined);
      assert.deepEqual(e.holders.map((h) => h.token).sort(), [a.token, b.token].sort());
      const writer = c.acquireRW(name, "write", { owner: "w", wait: "10s" });
      writer.catch(() => {});
      await waitFor(async () => same(await waiting(name), [["w", "write"]]), 5000, "the writer to queue");
      await a.release();
      assert.deepEqual(await waiting(name), [["w", "write"]], "one reader still holds");
      await b.release();
      w = await writer;
      assert.equal(w.mode, "write");
      assert.ok(w.token > b.token);
      const now = await c.rwlock(name);
      assert.equal(now.mode, "write");
      assert.deepEqual(now.holders.map((h) => h.token), [w.token]);
      assert.equal(a.lost.aborted || b.lost.aborted, false, "a release is no loss");
    } finally {
      await releaseAll(a, b, w);
    }
  });

  test("a reader behind a waiting writer waits for it", async () => {
    const name = unique("fifo");
    const r1 = await c.acquireRW(name, "read", { owner: "r1" });
    let w, r2;
    const writer = c.acquireRW(name, "write", { owner: "w", wait: "10s" });
    writer.catch(() => {});
    try {
      await waitFor(async () => same(await waiting(name), [["w", "write"]]), 5000, "the writer to queue");
      const reader = c.acquireRW(name, "read", { owner: "r2", wait: "10s" });
      reader.catch(() => {});
      await waitFor(async () => same(await waiting(name), [["w", "write"], ["r2", "read"]]), 5000, "the reader to queue behind");
      assert.deepEqual((await c.rwlock(name)).holders.map((h) => h.token), [r1.token], "the reader did not join the reader holding");
      await r1.release();
      w = await writer;
      assert.deepEqual(await waiting(name), [["r2", "read"]]);
      await w.release();
      r2 = await reader;
      assert.ok(r2.token > w.token);
      assert.equal((await c.rwlock(name)).mode, "read");
    } finally {
      await releaseAll(r1, w ?? (await writer.catch(() => undefined)), r2);
    }
  });

  test("a revoked hold is lost within a second; the other stays held", async () => {
    const name = unique("revoke");
    const h = await c.acquireRW(name, "read", { ttl: "30s" });
    const keep = await c.acquireRW(name, "read", { ttl: "30s" });
    try {
      const t0 = performance.now();
      await new Client(baton.addr).revokeRW(name, h.token, "maintenance");
      const why = await aborted(h.lost, 1000, "lost");
      assert.ok(performance.now() - t0 < 1000);
      assert.ok(why instanceof LockLostError, `${why}`);
      assert.equal(why.event?.type, "revoked");
      assert.equal(why.event?.mode, "read");
      assert.equal(why.kind, "rwlock");
      assert.match(why.message, /read\/write lock.*revoked.*maintenance/);
      await assert.rejects(h.release(), LockLostError);
      assert.equal(keep.lost.aborted, false);
      assert.deepEqual((await c.rwlock(name)).holders.map((x) => x.token), [keep.token]);
    } finally {
      await releaseAll(keep);
    }
  });

  test("a fenced write naming the rwlock takes the writer's token, not a reader's", async () => {
    const name = unique("fence");
    const resource = unique("res");
    const w = await c.withRW(name, "write", {}, async (w) => {
      const v = await c.putFenced(resource, w.token, { n: 1 }, { rwlock: name });
      assert.deepEqual([v.token, v.value], [w.token, { n: 1 }]);
      return w;
    });
    await c.withRW(name, "read", {}, async (r) => {
      assert.ok(r.token > w.token);
      await assert.rejects(c.putFenced(resource, r.token, { n: 2 }, { rwlock: name }), NotHolderError);
    });
    assert.deepEqual((await c.getFenced(resource)).value, { n: 1 });
  });

  test("renewal keeps a 2s hold past its TTL; withRW releases, and rejects with the loss", async () => {
    const name = unique("renew");
    await c.withRW(name, "write", { ttl: "2s" }, async (h) => {
      const first = Date.parse(h.info.expires_at);
      await waitFor(() => Date.parse(h.info.expires_at) > first + 2000, 6000, "renewals past the first lease");
      assert.equal(h.lost.aborted, false, `${h.err}`);
      assert.equal((await c.renewRW(name, h.token)).token, h.token);
    });
    await assert.rejects(c.rwlock(name), NotHeldError);
    await assert.rejects(
      c.withRW(name, "write", {}, async (h) => {
        await c.revokeRW(name, h.token);
        await aborted(h.lost, 1000, "lost");
      }),
      LockLostError,
    );
  });

  test("rwlocks are listed a page at a time", async () => {
    const prefix = unique("list");
    const names = ["a", "b", "c"].map((x) => `${prefix}-${x}`);
    const hs = [];
    try {
      for (const name of names) hs.push(await c.acquireRW(name, "read"), await c.acquireRW(name, "read"));
      const seen = [];
      let cursor = "";
      for (let i = 0; i <= names.length; i++) {
        const page = await c.rwlocks({ prefix, limit: 2, cursor });
        assert.ok(page.rwlocks.length <= 2);
        seen.push(...page.rwlocks.map((x) => [x.name, x.mode, x.holders.length, x.waiters ?? []]));
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      assert.deepEqual(seen, names.map((x) => [x, "read", 2, []]));
    } finally {
      await releaseAll(...hs);
    }
  });

  test("a session's holds are in its rwlocks and end with it", async () => {
    const s = await c.createSession({ ttl: "10s" });
    const name = unique("sess");
    const other = unique("sess2");
    const w = await c.acquireRW(name, "write", { session: s.id });
    const again = await c.acquireRW(name, "write", { session: s.id });
    assert.equal(again.token, w.token, "the session's write hold, handed back");
    const r1 = await c.acquireRW(other, "read", { session: s.id });
    const r2 = await c.acquireRW(other, "read", { session: s.id });
    assert.notEqual(r1.token, r2.token, "each read takes a hold of its own");
    assert.deepEqual([...(await c.getSession(s.id)).rwlocks].sort(), [name, other].sort());
    await new Client(baton.addr).deleteSession(s.id);
    for (const h of [w, again, r1, r2]) await aborted(h.lost, 1000, `${h.mode} hold of ${h.name} lost`);
  });

  test("history and events take kind rwlock, with each hold's mode", async () => {
    const name = unique("hist");
    const rev = (await c.cluster()).revision;
    await (await c.acquireRW(name, "read", { owner: "h" })).release();
    const w = await c.acquireRW(name, "write", { owner: "h" });
    await w.release();
    const got = [];
    for await (const ev of c.events({ kind: "rwlock", name, since: rev })) {
      got.push(ev);
      if (got.length === 4) break;
    }
    assert.deepEqual(got.map((e) => [e.type, e.kind, e.name, e.mode]), [
      ["acquired", "rwlock", name, "read"], ["released", "rwlock", name, "read"],
      ["acquired", "rwlock", name, "write"], ["released", "rwlock", name, "write"],
    ]);
    assert.equal(got[3].token, w.token);
    const { events } = await c.history({ kind: "rwlock", name });
    assert.deepEqual(events.map((e) => e.type), ["released", "acquired", "released", "acquired"], "newest first");
  });
});
