// A node run with --auth-file: a token scoped to a name prefix acts on,
// and sees, the names under it only. Run after `npm run build`.
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { Client, ForbiddenError, NotHeldError, UnauthorizedError } from "../dist/index.js";
import { startBaton, startProxy } from "./baton.mjs";

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

describe("token file", () => {
  const UNKNOWN = "ts-client-unknown-token";
  let dir;
  let file;
  // As a renewer does: a new file renamed over the old one.
  const put = (token) => {
    writeFileSync(file + ".new", token + "\n");
    renameSync(file + ".new", file);
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "baton-ts-tokenfile-"));
    file = join(dir, "token");
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test("the call a node refused is sent again, once, with the token read anew", async () => {
    const proxy = await startProxy(baton.addr);
    try {
      const name = `tokenfile-${process.pid}-${Date.now()}`;
      put(UNKNOWN);
      const c = new Client(proxy.addr, { tokenFile: file });
      const e = await c.acquire(name).then(() => assert.fail("acquired with an unknown token"), (e) => e);
      assert.ok(e instanceof UnauthorizedError, `${e}`);
      assert.equal(e.status, 401);
      // The file read again after that 401 held the same token: sent once.
      assert.equal(proxy.count("POST /v1/locks/"), 1);
      put(WRITE);
      const lk = await c.acquire(name);
      // Refused with the token read before, then sent again, though it is
      // an acquire: a 401 did nothing.
      assert.equal(proxy.count("POST /v1/locks/"), 3);
      assert.equal((await c.get(name)).token, lk.token);
      await lk.release();
      await assert.rejects(c.get(name), NotHeldError);
    } finally {
      await proxy.close();
    }
  });

  test("an event stream refused with 401 connects again with the token read anew", async () => {
    const proxy = await startProxy(baton.addr);
    try {
      const name = `tokenfile-events-${process.pid}-${Date.now()}`;
      const writer = new Client(baton.addr, { token: WRITE });
      const rev = (await writer.cluster()).revision;
      await (await writer.acquire(name)).release();
      put(UNKNOWN);
      const c = new Client(proxy.addr, { tokenFile: file });
      put(WRITE);
      // since is given, so the stream's first request is its own, with the
      // token read at construction.
      const types = [];
      for await (const ev of c.events({ lock: name, since: rev })) {
        types.push(ev.type);
        if (types.length === 2) break;
      }
      assert.deepEqual(types, ["acquired", "released"]);
      assert.equal(proxy.count("GET /v1/events"), 2);
    } finally {
      await proxy.close();
    }
  });
});
