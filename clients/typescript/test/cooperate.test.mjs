// Stream-bound sessions and leadership transfers against a live baton
// that the tests start (see baton.mjs): a session lives while its stream
// is held and close() ends it with its holds; a holder cut off from every
// node fails over about a grace later, not a TTL later; a leader hands
// over to a waiting candidate of its choosing, and keeps leading when that
// candidate is not waiting. Run after `npm run build`: they import the
// built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { CandidateNotWaitingError, Client, LockLostError, NotHeldError, SessionNotFoundError } from "../dist/index.js";
import { startBaton, startProxy, waitFor } from "./baton.mjs";

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

/** settled resolves true once p settles, false after ms. */
const settled = (p, ms) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms).unref())]);

describe("stream sessions", () => {
  test("a stream session outlives its TTL while held, and close() ends it and its holds", async () => {
    const ss = await c.openStreamSession({ owner: "holder", grace: "1s" });
    assert.equal(ss.info.bind, "stream");
    assert.equal(ss.info.grace, "1s");
    const name = unique("bound");
    // acquireOnce: nothing but the stream keeps the session alive.
    await c.acquireOnce(name, { session: ss.id });
    const ttl = Number.parseFloat(ss.info.ttl) * 1000;
    const past = Date.now() + ttl + 1000;
    await waitFor(async () => {
      assert.equal((await c.getSession(ss.id)).id, ss.id, "the session while its stream is held");
      return Date.now() > past;
    }, 3 * ttl, "the session outlives its lease's TTL");
    await ss.close();
    assert.ok(await settled(ss.done, 0), "done after close()");
    assert.equal(ss.err, undefined);
    await assert.rejects(c.get(name), NotHeldError);
    await assert.rejects(c.getSession(ss.id), SessionNotFoundError);
    await ss.close(); // again: nothing
  });

  test("a session deleted elsewhere ends with session_not_found", async () => {
    const ss = await c.openStreamSession({ grace: "1s" });
    await new Client(baton.addr).deleteSession(ss.id);
    assert.ok(await settled(ss.done, 5000), "done once the session was deleted");
    assert.ok(ss.err instanceof SessionNotFoundError, `${ss.err}`);
  });

  test("a holder cut off from every node fails over within its grace", async () => {
    const proxy = await startProxy(baton.addr);
    try {
      const holder = new Client(proxy.addr, { maxRetries: -1 });
      const grace = 1000;
      const ss = await holder.openStreamSession({ owner: "holder", grace });
      const name = unique("failover");
      const lk = await holder.acquire(name, { session: ss.id });
      const granted = c.acquire(name, { owner: "next", wait: "30s", ttl: "30s" }).then(async (nxt) => {
        const at = Date.now();
        await nxt.release();
        return at;
      });
      await waitFor(async () => ((await c.get(name)).waiters ?? []).length === 1, 10_000, "the waiter in line");
      proxy.rule = () => "503";
      proxy.cutStreams();
      const cut = Date.now();
      const took = (await granted) - cut;
      assert.ok(took >= grace - 50, `granted ${took} ms after the cut, before the holder's grace`);
      assert.ok(took <= grace + 1500, `granted ${took} ms after the holder was cut off`);
      proxy.rule = () => "pass";
      assert.ok(await settled(ss.done, 15_000), "done once the session ended");
      assert.ok(ss.err instanceof SessionNotFoundError, `${ss.err}`);
      await lk.release().catch(() => {});
    } finally {
      await proxy.close();
    }
  });
});

describe("leadership transfer", () => {
  test("a transfer hands the leadership to the named candidate, ahead of the line", async () => {
    const name = unique("transfer");
    const a = await c.campaign(name, { candidate: "a" });
    const got = {};
    for (const who of ["b", "c"]) {
      got[who] = new Client(baton.addr).campaign(name, { candidate: who, wait: "20s" });
      await waitFor(async () => ((await c.leader(name)).candidates ?? []).some((x) => x.candidate === who), 5000, `${who} waiting in line`);
    }
    const next = await a.transfer("c"); // ahead of b, who waited longer
    assert.equal(next.candidate, "c");
    assert.equal(next.term, 2);
    const cl = await got.c;
    assert.equal(cl.token, next.token);
    assert.equal(cl.term, 2);
    assert.equal(a.lost.aborted, false, "a transfer is no loss");
    assert.equal((await c.leader(name)).candidate, "c");
    await assert.rejects(a.transfer("b"), LockLostError);
    await cl.resign();
    await (await got.b).resign();
  });

  test("a transfer to a candidate not waiting leaves the leadership held and renewing", async () => {
    const name = unique("transfer-none");
    const a = await c.campaign(name, { candidate: "a", ttl: "2s" });
    await assert.rejects(a.transfer("nobody"), CandidateNotWaitingError);
    // Its renewal resumed: it outlives its TTL, and is not lost.
    const past = Date.now() + 3000;
    await waitFor(async () => {
      assert.equal((await c.leader(name)).token, a.token);
      assert.equal(a.lost.aborted, false, `${a.err}`);
      return Date.now() > past;
    }, 10_000, "the leadership outlives its TTL");
    await a.resign();
  });
});
