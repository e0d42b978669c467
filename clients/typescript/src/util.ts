/**
 * A duration: milliseconds as a number, or a Go duration string ("30s",
 * "1m30s", "500ms") as the server reads and writes them.
 */
export type Duration = number | string;

const units: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** toMillis reads a Duration as milliseconds; it throws on a string that is no Go duration. */
export function toMillis(d: Duration): number {
  if (typeof d === "number") return d;
  const s = d.trim();
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let at = 0;
  let m: RegExpExecArray | null;
  const sign = s.startsWith("-") ? -1 : 1;
  const body = s.replace(/^[-+]/, "");
  while ((m = re.exec(body)) !== null) {
    total += Number(m[1]) * units[m[2]];
    at = re.lastIndex;
  }
  if (at === 0 || at !== body.length) throw new TypeError(`baton: invalid duration ${JSON.stringify(d)}`);
  return sign * total;
}

/** toWire is a Duration as the server reads it: a Go duration string. */
export function toWire(d: Duration): string {
  return typeof d === "string" ? d : `${Math.round(d)}ms`;
}

/** now is the monotonic clock, in milliseconds: leases are judged by it. */
export const now = (): number => performance.now();

/**
 * background makes a timer not keep Node's process alive (unref): the
 * client's own work (renewals, reconnections, watchdogs) must not hold a
 * program open that is done. A no-op in browsers.
 */
export function background<T>(t: T): T {
  (t as { unref?: () => void }).unref?.();
  return t;
}

/**
 * sleep waits ms, or until signal aborts (then it rejects with its
 * reason). A background sleep does not keep Node's process alive.
 */
export function sleep(ms: number, signal?: AbortSignal, inBackground = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(ms, 0));
    if (inBackground) background(t);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * linked returns a controller that aborts when any of signals does, and a
 * function that detaches it from them (AbortSignal.any is not in Node 18).
 */
export function linked(...signals: (AbortSignal | undefined)[]): { ctl: AbortController; unlink: () => void } {
  const ctl = new AbortController();
  const offs: (() => void)[] = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      ctl.abort(s.reason);
      break;
    }
    const f = () => ctl.abort(s.reason);
    s.addEventListener("abort", f, { once: true });
    offs.push(() => s.removeEventListener("abort", f));
  }
  return { ctl, unlink: () => offs.forEach((f) => f()) };
}

/** jitter is d/2 to d, so that clients cut off together do not come back in step. */
export function jitter(d: number): number {
  return d / 2 + Math.random() * (d / 2);
}

/** env reads an environment variable on Node (and Deno, Bun); undefined in browsers. */
export function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v && v.trim() ? v.trim() : undefined;
}
