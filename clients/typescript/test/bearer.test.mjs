// The bearer token without a server: a token file is read again after
// TOKEN_FILE_MAX_AGE and on reload; a read that fails keeps the last
// token; a token given as a value never changes. Run after `npm run build`.
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import { Bearer } from "../dist/bearer.js";
import { Client, TOKEN_FILE_MAX_AGE } from "../dist/index.js";

let dir;
let file;

// As a renewer does: a new file renamed over the old one.
function put(s) {
  writeFileSync(file + ".new", s);
  renameSync(file + ".new", file);
}

// As if the last read were TOKEN_FILE_MAX_AGE ago, without sleeping.
function age(b) {
  b.read -= TOKEN_FILE_MAX_AGE;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "baton-ts-bearer-"));
  file = join(dir, "token");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("token file", () => {
  test("TOKEN_FILE_MAX_AGE is a minute", () => {
    assert.equal(TOKEN_FILE_MAX_AGE, 60_000);
  });

  test("is read again when old, and a failed read keeps the last token", () => {
    put("one\n");
    const b = new Bearer("", file);
    put("two");
    assert.equal(b.token(), "one", "before TOKEN_FILE_MAX_AGE");
    age(b);
    assert.equal(b.token(), "two", "after TOKEN_FILE_MAX_AGE");
    put(" \n");
    age(b);
    assert.equal(b.token(), "two", "an empty file keeps the last token");
    unlinkSync(file);
    age(b);
    assert.equal(b.token(), "two", "a file gone keeps the last token");
    // The failed read counts as a read: none again before the max age.
    put("three");
    assert.equal(b.token(), "two", "read again before TOKEN_FILE_MAX_AGE");
    age(b);
    assert.equal(b.token(), "three");
  });

  test("reload reads at once and reports a change", () => {
    put("one");
    const b = new Bearer("", file);
    assert.equal(b.reload(), false, "the same token");
    put("two\n");
    assert.equal(b.reload(), true);
    assert.equal(b.token(), "two");
    unlinkSync(file);
    assert.equal(b.reload(), false, "a file gone keeps the last token");
    assert.equal(b.token(), "two");
    put("");
    assert.equal(b.reload(), false, "an empty file keeps the last token");
    assert.equal(b.token(), "two");
  });

  test("a token given as a value never changes, and its file is not read", () => {
    put("from-file");
    const b = new Bearer("value", file);
    age(b);
    assert.equal(b.token(), "value");
    assert.equal(b.reload(), false);
    assert.equal(b.token(), "value");
    const none = new Bearer();
    assert.equal(none.token(), "");
    assert.equal(none.reload(), false);
  });

  test("construction fails on a missing or empty file", () => {
    assert.throws(() => new Bearer("", join(dir, "missing")), /read token file/);
    put(" \n");
    assert.throws(() => new Bearer("", file), /token file .* is empty/);
    assert.throws(() => new Client("http://127.0.0.1:1", { tokenFile: file }), /is empty/);
    // A token given as a value wins: the file is not read.
    new Client("http://127.0.0.1:1", { token: "value", tokenFile: join(dir, "missing") });
  });
});
