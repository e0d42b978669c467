// The client's types match the API: each interface of src/types.ts is
// compared with its schema in openapi/openapi.json, field by field, so a
// field added to the API but not to the client (or the other way round)
// fails, and so does a required field the client calls optional.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const schemas = JSON.parse(readFileSync(new URL("../../../openapi/openapi.json", import.meta.url), "utf8")).components.schemas;
const source = readFileSync(new URL("../src/types.ts", import.meta.url), "utf8");

// The client's interface for each schema.
const pairs = {
  Lock: "LockInfo",
  Waiter: "Waiter",
  Leader: "LeaderInfo",
  Candidate: "Candidate",
  Session: "Session",
  ListedSession: "ListedSession",
  Event: "Event",
  FencedValue: "FencedValue",
  Problem: "Problem",
  Cluster: "Cluster",
  Member: "Member",
  Hold: "HoldInfo",
  Semaphore: "SemaphoreInfo",
  RWLock: "RWLockInfo",
  LockSet: "LockSetInfo",
  Key: "Key",
  YieldRequested: "YieldRequested",
  Whoami: "Whoami",
  Rule: "Rule",
  Quotas: "Quotas",
  QuotaUsage: "QuotaUsage",
};

/** fields reads an interface's fields from the source: name → optional. */
function fields(name) {
  const m = source.match(new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}`, "m"));
  assert.ok(m, `interface ${name} not found in src/types.ts`);
  const out = {};
  for (const f of m[1].matchAll(/^ {2}(\w+)(\?)?:/gm)) out[f[1]] = f[2] === "?";
  return out;
}

for (const [schema, iface] of Object.entries(pairs)) {
  test(`${iface} has the fields of the ${schema} schema`, () => {
    const s = schemas[schema];
    assert.ok(s, `no schema ${schema} in openapi.json`);
    const want = Object.keys(s.properties).sort();
    const have = fields(iface);
    assert.deepEqual(Object.keys(have).sort(), want, `${iface} vs ${schema}`);
    for (const r of s.required ?? []) assert.equal(have[r], false, `${iface}.${r} is required in ${schema}`);
  });
}

test("the parser reads optional and required fields", () => {
  const f = fields("LockInfo");
  assert.equal(f.token, false);
  assert.equal(f.session, true);
});
