// whoami: who the client's token speaks for, its rules and its quotas with
// what they count now, against a node without authentication and one run
// with a policy file. Run after `npm run build`.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, UnauthorizedError } from "../dist/index.js";
import { startBaton, waitFor } from "./baton.mjs";

const SCOPED = "ts-client-whoami-scoped-token";
const PLAIN = "ts-client-whoami-plain-token";
// A credential scoped to three prefixes (given out of order: whoami sorts
// them) with quotas, waiters not among them; one with no quota.
const POLICY = `
credentials:
  - name: team-w
    tokens: ["${SCOPED}"]
    rules: {"w.audit.": read, "w.": write, "shared.": read}
    quotas: {holds: 5, sessions: 2, streams: 3, rate: 50.5, burst: 100}
  - name: plain
    tokens: ["${PLAIN}"]
    rules: {"": admin}
`;

let open;
let policy;

before(async () => {
  [open, policy] = await Promise.all([startBaton(), startBaton({ auth: POLICY, authFile: "policy.yaml" })]);
});

after(async () => {
  await Promise.all([open?.stop(), policy?.stop()]);
});

describe("whoami", () => {
  test("without authentication, every request may do everything", async () => {
    const w = await new Client(open.addr).whoami();
    assert.deepEqual(w, { authentication: false, rules: [{ prefix: "", role: "admin" }] });
  });

  test("a scoped credential reads its name, its rules sorted by prefix, its quotas, and usage that counts its holds", async () => {
    const c = new Client(policy.addr, { token: SCOPED });
    const w = await c.whoami();
    assert.equal(w.authentication, true);
    assert.equal(w.credential, "team-w");
    assert.deepEqual(w.rules, [
      { prefix: "shared.", role: "read" },
      { prefix: "w.", role: "write" },
      { prefix: "w.audit.", role: "read" },
    ]);
    assert.deepEqual(w.quotas, { holds: 5, sessions: 2, streams: 3, rate: 50.5, burst: 100 });
    assert.deepEqual(w.usage, { holds: 0, sessions: 0 });

    const lk = await c.acquire(`w.whoami-${process.pid}`, { ttl: "60s" });
    try {
      // The node counts its own grant at once; waiting is for a slow machine only.
      await waitFor(async () => (await c.whoami()).usage?.holds === 1, 5000, "usage of holds 1");
      assert.deepEqual((await c.whoami()).usage, { holds: 1, sessions: 0 });
    } finally {
      await lk.release();
    }
  });

  test("a credential without quotas reads neither quotas nor usage", async () => {
    const w = await new Client(policy.addr, { token: PLAIN }).whoami();
    assert.deepEqual(w, { authentication: true, credential: "plain", rules: [{ prefix: "", role: "admin" }] });
  });

  test("without a token, whoami is unauthorized", async () => {
    await assert.rejects(new Client(policy.addr, { token: "" }).whoami(), UnauthorizedError);
  });
});
