// The client knows every problem code of the server: problem/problem.go's
// table is read here, so a code added there but not to src/errors.ts, or
// answered with another status or retry class, fails.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  BatonError, ElectionHeldError, ForbiddenError, HeldError, InternalError, problemCodes, QuotaExceededError, UnauthorizedError,
  UnavailableError, errorFromProblem,
} from "../dist/index.js";

const goFile = new URL("../../../problem/problem.go", import.meta.url);

// The net/http status constants the table uses; a new one fails the test
// until it is added here.
const httpStatus = {
  StatusBadRequest: 400, StatusUnauthorized: 401, StatusForbidden: 403, StatusNotFound: 404, StatusMethodNotAllowed: 405,
  StatusConflict: 409, StatusRequestEntityTooLarge: 413, StatusUnsupportedMediaType: 415, StatusMisdirectedRequest: 421,
  StatusTooManyRequests: 429, StatusInternalServerError: 500, StatusServiceUnavailable: 503, StatusInsufficientStorage: 507,
};

/** goTable parses problem.go: its Code constants and the table's entries. */
function goTable() {
  const src = readFileSync(goFile, "utf8");
  const codes = {};
  for (const m of src.matchAll(/^\s*(\w+)\s+Code = "([a-z_]+)"/gm)) codes[m[1]] = m[2];
  const body = src.slice(src.indexOf("var table = []Info{"));
  const entries = [];
  for (const m of body.matchAll(/^\s*\{(\w+),\s*(http\.\w+|\d+),\s*"[^"]*",\s*(Final|Later|Elsewhere),\s*\w+\},/gm)) {
    const status = m[2].startsWith("http.") ? httpStatus[m[2].slice(5)] : Number(m[2]);
    assert.ok(status, `status ${m[2]} of ${m[1]}: add it to httpStatus`);
    assert.ok(codes[m[1]], `table entry ${m[1]} names no Code constant`);
    entries.push({ code: codes[m[1]], status, retry: m[3].toLowerCase() });
  }
  return { codes, entries };
}

test("every code of problem/problem.go is known, with its status and retry class", () => {
  const { codes, entries } = goTable();
  assert.ok(entries.length >= 30, `parsed only ${entries.length} entries of the Go table`);
  assert.equal(entries.length, Object.keys(codes).length, "every Code constant has a table entry");
  for (const e of entries) {
    const info = problemCodes[e.code];
    assert.ok(info, `code ${e.code} is missing from problemCodes in src/errors.ts`);
    assert.equal(info.status, e.status, `status of ${e.code}`);
    assert.equal(info.retry, e.retry, `retry class of ${e.code}`);
    assert.ok(info.error.prototype instanceof BatonError, `the class of ${e.code}`);
  }
  assert.deepEqual(Object.keys(problemCodes).sort(), entries.map((e) => e.code).sort(), "no code the server does not have");
});

test("each code's class is distinct, and an answer decodes to it with its members", () => {
  const classes = new Set(Object.values(problemCodes).map((i) => i.error));
  assert.equal(classes.size, Object.keys(problemCodes).length);
  const holder = { name: "x", owner: "w1", token: 7, ttl: "30s", acquired_at: "", expires_at: "", metadata: {} };
  const held = errorFromProblem(409, JSON.stringify({ type: "urn:baton:problem:lock_held", title: "Lock held", status: 409, code: "lock_held", holder }), true, "3");
  assert.ok(held instanceof HeldError);
  assert.equal(held.holder.token, 7);
  assert.equal(held.retryAfter, 3000);
  assert.equal(held.placeKept, false, "no place_kept: false");
  const kept = errorFromProblem(409, JSON.stringify({ title: "t", status: 409, code: "lock_held", holder, place_kept: true }), true, null);
  assert.equal(kept.placeKept, true);
  const leader = { name: "e", candidate: "a", token: 9, term: 1, value: null, metadata: {} };
  const eh = errorFromProblem(409, JSON.stringify({ title: "t", status: 409, code: "election_held", leader }), true, null);
  assert.ok(eh instanceof ElectionHeldError);
  assert.equal(eh.leader.token, 9);
  assert.equal(eh.placeKept, false);
  assert.equal(errorFromProblem(409, JSON.stringify({ title: "t", status: 409, code: "semaphore_full", place_kept: true }), true, null).placeKept, true);
  assert.equal(errorFromProblem(502, "bad gateway", false, null).placeKept, false);
});

test("forbidden and quota_exceeded decode their role, prefixes and quota", () => {
  const fb = errorFromProblem(403, JSON.stringify({ type: "urn:baton:problem:forbidden", title: "Forbidden", status: 403, code: "forbidden", role: "write", prefixes: ["team-a.", "shared."] }), true, null);
  assert.ok(fb instanceof ForbiddenError);
  assert.equal(fb.role, "write");
  assert.deepEqual(fb.prefixes, ["team-a.", "shared."]);
  assert.equal(fb.quota, undefined);
  const q = errorFromProblem(429, JSON.stringify({ type: "urn:baton:problem:quota_exceeded", title: "Quota exceeded", status: 429, code: "quota_exceeded", quota: "holds", limit: 10, retry_after: 1 }), true, null);
  assert.ok(q instanceof QuotaExceededError);
  assert.equal(q.quota, "holds");
  assert.equal(q.limit, 10);
  assert.equal(q.retryAfter, 1000);
  assert.equal(problemCodes.quota_exceeded.retry, "later");
});

test("answers without a known code are classed by their status", () => {
  assert.ok(errorFromProblem(502, "<html>bad gateway</html>", false, null) instanceof UnavailableError);
  assert.ok(errorFromProblem(500, JSON.stringify({ code: "internal", title: "Internal error", status: 500 }), true, null) instanceof InternalError);
  assert.ok(errorFromProblem(500, "", false, null) instanceof UnavailableError, "any 5xx is unavailable");
  assert.ok(errorFromProblem(401, "", false, null) instanceof UnauthorizedError);
  assert.ok(errorFromProblem(403, "", false, null) instanceof ForbiddenError);
  const future = errorFromProblem(409, JSON.stringify({ code: "from_the_future", title: "New", status: 409 }), true, null);
  assert.equal(future.constructor, BatonError);
  assert.equal(future.code, "from_the_future");
});
