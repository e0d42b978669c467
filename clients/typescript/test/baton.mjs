// A live baton for the tests: built once from this repository and run on
// free loopback ports in a temporary data directory; and a proxy in front
// of it that can refuse, break and count requests, so the client's retry
// and reconnection rules meet real failures.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** freePort asks the kernel for a port nobody listens on. */
export async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * waitFor polls cond until it returns a truthy value, or fails after
 * timeout ms: a condition under a deadline, never a fixed sleep.
 */
export async function waitFor(cond, timeout = 5000, what = "condition") {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * startBaton builds baton (or runs BATON_BIN, when set, as the Python
 * tests do) and starts one node; stop() kills it and removes its data.
 * auth, when given, is the content of its --auth-file, named authFile (a
 * name ending in .yaml makes it a policy file; its etcd client URL is then
 * the socket only, as --auth-file requires without client certificates).
 */
export async function startBaton({ auth, authFile = "auth" } = {}) {
  const dir = await mkdtemp(join(tmpdir(), "baton-ts-"));
  let bin = process.env.BATON_BIN;
  if (!bin) {
    bin = join(dir, "baton");
    await promisify(execFile)("go", ["build", "-o", bin, "."], { cwd: repoRoot, maxBuffer: 16 << 20 });
  }
  const [httpPort, peerPort, clientPort] = [await freePort(), await freePort(), await freePort()];
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    "--http-addr", `127.0.0.1:${httpPort}`, "--data-dir", join(dir, "data"),
    "--peer-url", peer, "--initial-cluster", `default=${peer}`,
  ];
  if (auth === undefined) {
    args.push("--client-url", `http://127.0.0.1:${clientPort}`);
  } else {
    const path = join(dir, authFile);
    await writeFile(path, auth, { mode: 0o600 });
    args.push("--client-url", "", "--auth-file", path);
  }
  const proc = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  proc.stderr.on("data", (b) => (log = (log + b).slice(-8000)));
  const exited = new Promise((r) => proc.once("exit", r));
  const addr = `http://127.0.0.1:${httpPort}`;
  try {
    await waitFor(async () => {
      if (proc.exitCode !== null) throw new Error(`baton exited with ${proc.exitCode}:\n${log}`);
      try {
        return (await fetch(addr + "/readyz")).ok;
      } catch {
        return false;
      }
    }, 30_000, "baton's /readyz");
  } catch (e) {
    proc.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    addr,
    dir,
    log: () => log,
    async stop() {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * startProxy forwards to target. rule(req) decides per request: "pass",
 * "503" (answered with a 503 unavailable problem and Retry-After:
 * retryAfter), or "drop" (the connection is destroyed once the request
 * has arrived, unanswered). seen lists every request as "METHOD /path".
 * cutStreams() breaks every open event stream.
 */
export async function startProxy(target) {
  const t = new URL(target);
  const streams = new Set();
  const proxy = {
    seen: [],
    /** Every request's full URL and Authorization header. */
    requests: [],
    rule: () => "pass",
    retryAfter: 0,
    cutStreams() {
      for (const s of streams) s.destroy();
      streams.clear();
    },
    count(prefix) {
      return this.seen.filter((s) => s.startsWith(prefix)).length;
    },
  };
  const srv = http.createServer((req, res) => {
    proxy.seen.push(`${req.method} ${req.url.split("?")[0]}`);
    proxy.requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    const what = proxy.rule(req);
    const body = [];
    req.on("data", (b) => body.push(b));
    req.on("end", () => {
      if (what === "drop") return req.socket.destroy();
      if (what === "503") {
        const p = JSON.stringify({ type: "urn:baton:problem:unavailable", title: "Service unavailable", status: 503, code: "unavailable", detail: "injected" });
        const h = { "Content-Type": "application/problem+json" };
        if (proxy.retryAfter) h["Retry-After"] = String(proxy.retryAfter);
        res.writeHead(503, h);
        return res.end(p);
      }
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        if ((ur.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          streams.add(res.socket);
          res.socket.once("close", () => streams.delete(res.socket));
          ur.on("error", () => {});
        }
        ur.pipe(res);
      });
      up.on("error", () => req.socket.destroy());
      res.on("close", () => up.destroy());
      up.end(Buffer.concat(body));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  proxy.addr = `http://127.0.0.1:${srv.address().port}`;
  proxy.close = () => {
    proxy.cutStreams();
    srv.closeAllConnections();
    return new Promise((r) => srv.close(r));
  };
  return proxy;
}

/** aborted resolves with signal's reason once it aborts, or rejects after timeout ms. */
export function aborted(signal, timeout, what = "the signal") {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason);
    const t = setTimeout(() => reject(new Error(`${what} did not abort within ${timeout} ms`)), timeout);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve(signal.reason);
    }, { once: true });
  });
}
