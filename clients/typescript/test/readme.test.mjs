// Every TypeScript example of the READMEs (this package's and the
// project's) compiles under tsc --strict against the built package, as a
// user's project imports it: an example that no longer compiles fails here
// rather than in a reader's editor. CI compiles them once more against the
// npm pack tarball, installed (.ci/run).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { module, snippets } from "../scripts/readme-snippets.mjs";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const readmes = [join(pkg, "README.md"), join(pkg, "..", "..", "README.md")];

test("every TypeScript example of the READMEs compiles under --strict", (t) => {
  for (const f of readmes) {
    assert.ok(snippets(readFileSync(f, "utf8")).length > 0, `${f} has TypeScript examples`);
  }
  const dir = mkdtempSync(join(tmpdir(), "baton-readme-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(pkg, join(dir, "node_modules", "baton-client"), "dir");
  writeFileSync(join(dir, "package.json"), '{"type":"module"}\n');
  writeFileSync(join(dir, "readme.ts"), module(readmes));
  const tsc = join(pkg, "node_modules", ".bin", "tsc");
  const r = spawnSync(tsc, ["--strict", "--noEmit", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
    "--lib", "es2022,dom", "--types", "", "readme.ts"], { cwd: dir, encoding: "utf8" });
  assert.equal(r.status, 0, `tsc --strict on the READMEs' examples:\n${r.stdout}${r.stderr}`);
});
