// A node run with --auth-file: a token scoped to a name prefix acts on,
// and sees, the names under it only. Run after `npm run build`.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, ForbiddenError } from "../dist/index.js";
import { startBaton } from "./baton.mjs";

const WRITE = "ts-client-write-token";
// A write token scoped to the names under team-a.
const TEAM_A = "ts-client-team-a-token";

let baton;

before(async () => {
  baton = await startBaton({ auth: `write ${WRITE}\nwrite ${TEAM_A} team-a.\n` });
});

after(async () => {
  await baton?.stop();
});

describe("permissions by prefix", () => {
  test("a token scoped to a prefix is refused outside it, with its role and prefixes, and lists under it only", async () => {
    const c = new Client(baton.addr, { token: WRITE });
    const held = [await c.acquire("team-a.x"), await c.acquire("team-b.x")];
    try {
      const scoped = new Client(baton.addr, { token: TEAM_A });
      const e = await scoped.acquire("team-b.x").then(() => assert.fail("acquired outside the token's prefixes"), (e) => e);
      assert.ok(e instanceof ForbiddenError, `${e}`);
      assert.equal(e.status, 403);
      assert.equal(e.code, "forbidden");
      assert.equal(e.role, "write");
      assert.deepEqual(e.prefixes, ["team-a."]);
      const { locks } = await scoped.locks();
      const names = locks.map((l) => l.name);
      assert.ok(names.includes("team-a.x"), `${names}`);
      assert.deepEqual(names.filter((n) => !n.startsWith("team-a.")), [], `${names}`);
    } finally {
      for (const lk of held) await lk.release();
    }
  });
});
