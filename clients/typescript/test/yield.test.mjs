// Requests to yield against a live baton that the tests start (see
// baton.mjs): a holder's onYield hears each request made of it, with who
// asked and why, well within a second, and the hold stays held; a request
// to nothing held is refused. Run after `npm run build`: they import the
// built package.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, NoLeaderError, NotHeldError } from "../dist/index.js";
import { startBaton } from "./baton.mjs";

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

/** next resolves with the next event cb is given, or rejects after ms. */
function heard(hold, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no request to yield within ${ms} ms`)), ms);
    hold.onYield((ev) => {
      clearTimeout(t);
      resolve(ev);
    });
  });
}

describe("requests to yield", () => {
  test("a holder hears a request within a deadline, and stays holder", async () => {
    const name = unique("lock");
    const lk = await c.acquire(name, { owner: "holder", ttl: "30s" });
    try {
      const got = heard(lk, 5000);
      const sent = performance.now();
      const asked = await new Client(baton.addr).yield(name, { owner: "backup", reason: "backup window" });
      assert.deepEqual([asked.kind, asked.name, asked.tokens, asked.owner, asked.reason], ["lock", name, [lk.token], "backup", "backup window"]);
      const ev = await got;
      const took = performance.now() - sent;
      assert.ok(took < 500, `heard the request ${took.toFixed(0)} ms after it was sent`);
      assert.deepEqual([ev.type, ev.token, ev.owner, ev.reason, ev.revision], ["yield_requested", lk.token, "backup", "backup window", asked.revision]);
      assert.equal(lk.lost.aborted, false, "a request to yield ends nothing");
    } finally {
      await lk.release();
    }
  });

  test("a permit asked by its token hears it", async () => {
    const name = unique("sem");
    const p = await c.acquirePermit(name, 2, { ttl: "30s" });
    try {
      const got = heard(p, 5000);
      const asked = await c.yieldPermits(name, { token: p.token, reason: "priority job" });
      assert.deepEqual(asked.tokens, [p.token]);
      const ev = await got;
      assert.deepEqual([ev.kind, ev.token, ev.reason], ["semaphore", p.token, "priority job"]);
    } finally {
      await p.release();
    }
  });

  test("a request to nothing held is refused", async () => {
    await assert.rejects(c.yield(unique("free")), NotHeldError);
    await assert.rejects(c.yieldLeadership(unique("vacant")), NoLeaderError);
  });
});
