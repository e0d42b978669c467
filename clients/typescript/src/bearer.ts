import { now } from "./util.js";

/**
 * How long, in milliseconds, the client sends a token read from its token
 * file (ClientOptions.tokenFile, BATON_TOKEN_FILE) before it reads the file
 * again. A node's 401 makes it read the file at once.
 */
export const TOKEN_FILE_MAX_AGE = 60_000;

/**
 * Bearer is the client's bearer token: one given as is, or the content of
 * a file. The tokens kept in files (a Kubernetes projected service-account
 * token, a JWT that a sidecar renews) are replaced in place before they
 * expire, so the file is read again after TOKEN_FILE_MAX_AGE, and when a
 * node refuses the token: a client that read it once would be refused
 * from its expiry on.
 * @internal
 */
export class Bearer {
  /** The token file; undefined for a token given as is. */
  readonly file?: string;
  private tok: string;
  /** When the file was last read, by now(); tests age it. */
  read = 0;

  /**
   * token, or the content of file when token is empty. It throws when
   * file cannot be read or holds nothing.
   */
  constructor(token = "", file?: string) {
    this.tok = token;
    if (token || !file) return;
    this.file = file;
    this.tok = this.load();
    this.read = now();
  }

  /** token is the token to send now, "" for none. */
  token(): string {
    if (this.file !== undefined && now() - this.read >= TOKEN_FILE_MAX_AGE) this.reread();
    return this.tok;
  }

  /**
   * reload reads the file again at once, and reports whether the token
   * changed: a request a node refused with 401 is then worth sending again.
   */
  reload(): boolean {
    if (this.file === undefined) return false;
    const old = this.tok;
    this.reread();
    return this.tok !== old;
  }

  // A read that fails or finds the file empty (one being replaced by a
  // writer that does not rename) keeps the last token until the next
  // read; it is not tried again before TOKEN_FILE_MAX_AGE, so a file gone
  // for good costs a read a minute, not one a request.
  private reread(): void {
    this.read = now();
    try {
      this.tok = this.load();
    } catch {
      // the last token stays
    }
  }

  private load(): string {
    let raw: string;
    try {
      raw = readFileSync(this.file!);
    } catch (e) {
      throw new Error(`baton client: read token file: ${(e as Error).message}`, { cause: e });
    }
    const tok = raw.trim();
    if (!tok) throw new Error(`baton client: token file ${this.file} is empty`);
    return tok;
  }
}

/**
 * readFileSync is node:fs's, reached through process.getBuiltinModule
 * (Node ≥ 20.16, Deno, Bun) so that the module imports nothing a browser
 * bundle would lack: there is no file to read in a browser.
 */
function readFileSync(path: string): string {
  const p = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const fs = p?.getBuiltinModule?.("node:fs") as { readFileSync(path: string, encoding: "utf8"): string } | undefined;
  if (!fs) throw new Error("a token file needs Node ≥ 20.16 (process.getBuiltinModule); elsewhere, give the token as a value");
  return fs.readFileSync(path, "utf8");
}
