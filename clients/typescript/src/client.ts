import { BatonError, errorFromProblem, InvalidRequestError, SessionNotFoundError } from "./errors.js";
import { Hold, HoldWatcher, kindElection, kindLock, kindLockSet, kindRWLock, kindSemaphore, type Grant } from "./hold.js";
import { Leadership, Lock, Permit, RWHold, type Kept } from "./lock.js";
import { LockSet } from "./lockset.js";
import { StreamSession, type StreamSessionOptions } from "./streamsession.js";
import { Channel, EventsSource, isJSON, KeysSource, ObserveSource, runStream, Stream, unavailable, type EventsOptions } from "./sse.js";
import type { Cluster, Event, FencedValue, Key, KeyEvent, LeaderChange, LeaderInfo, ListedSession, LockInfo, LockSetInfo, PermitInfo, RWHoldInfo, RWLockInfo, RWMode, SemaphoreInfo, Session, Whoami, YieldRequested } from "./types.js";
import { Bearer } from "./bearer.js";
import { env, jitter, linked, now, sleep, toMillis, toWire, type Duration } from "./util.js";

/** Where `baton` listens by default; the endpoint when BATON_ADDR is unset. */
export const defaultAddr = "http://127.0.0.1:8080";

const maxBackoff = 5000;
/** A misbehaving proxy must not park a call for an hour. */
const maxRetryAfter = 30_000;

/**
 * The longest wait one acquire request carries, in ms: the server's cap
 * (5 m), and ClientOptions.maxRequestWait's default. A longer wait, up to
 * waitForever, is a run of requests in the options' session: each that
 * runs out keeps the session's place in line (the server's keep_place),
 * and the next waits from there, on whichever node it reaches. A release
 * meanwhile grants the hold to the session, and the next request answers
 * with it.
 */
export const maxRequestWait = 300_000;

/**
 * waitForever as a wait waits in line until the hold is granted, the
 * session ends, or the signal aborts: as ZooKeeper's and etcd's election
 * recipes wait for as long as their session lives. It needs a session.
 */
export const waitForever: number = Infinity;

/** ClientOptions configure a Client. Every field is optional. */
export interface ClientOptions {
  /**
   * The bearer token of a node that runs with --auth-file, sent as
   * "Authorization: Bearer …"; default BATON_AUTH_TOKEN on Node. (Not a
   * fencing token.)
   */
  token?: string;
  /**
   * A file holding the bearer token, read when no token is given (neither
   * token nor BATON_AUTH_TOKEN); default BATON_TOKEN_FILE on Node. Its
   * content, trimmed, is the token; the constructor throws when it cannot
   * be read or is empty. It is read again after TOKEN_FILE_MAX_AGE and at
   * once when a node answers 401, so a token its issuer replaces in the
   * file (a Kubernetes projected service-account token, a JWT a sidecar
   * renews) is sent fresh; the refused call is then sent again, once. A
   * read that fails or finds the file empty keeps the last token. Node
   * only (≥ 20.16, which has process.getBuiltinModule).
   */
  tokenFile?: string;
  /** Bounds each attempt of a request; default 10 s. An acquire's attempt gets its wait on top. */
  timeout?: Duration;
  /** The first pause between rounds of retries; it doubles each round, up to 5 s. Default 200 ms. */
  retryBackoff?: Duration;
  /** How often a call that is safe to repeat is retried after its first attempt; default the endpoints plus 2; negative: never. */
  maxRetries?: number;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /**
   * The longest wait one acquire request carries, at most (and by
   * default) 5 m, the server's cap. A longer wait needs a session, and is
   * a run of requests that keep the session's place in line (see
   * maxRequestWait).
   */
  maxRequestWait?: Duration;
}

/** Options every call takes. */
export interface CallOptions {
  /** Abandons the call. */
  signal?: AbortSignal;
}

/** YieldOptions say who asks a hold to yield and why; every field is optional. */
export interface YieldOptions extends CallOptions {
  /** Names the asker; default the client's address. */
  owner?: string;
  /** Why, for the holders and the audit trail: at most 1,024 bytes. */
  reason?: string;
  /** Asks only the hold of this token (a permit, a read/write lock's hold); absent, every hold. */
  token?: number;
}

/** AcquireOptions say how to acquire a lock. */
export interface AcquireOptions extends CallOptions {
  /** The lease's TTL, 2 s to 24 h; default the server's (30 s). Not with session: the session's TTL applies. */
  ttl?: Duration;
  /**
   * Queue for the lock for up to this long, first come first served;
   * default: fail at once with HeldError. A wait over maxRequestWait (5 m),
   * up to waitForever, needs session.
   */
  wait?: Duration;
  /** Labels the hold for people and the audit trail; default the client's address as the server sees it. */
  owner?: string;
  /** Puts the lock in a session: it lives and dies with it. */
  session?: string;
  /** When this hold ends by expiry or revoke (not release), nobody may take the lock for this long. */
  lockDelay?: Duration;
  /**
   * The hold's at-least window, up to 24 h: however early it ends (a
   * release, an expiry, a revoke), nobody else is granted it before its
   * acquired_at plus minHold; their refusal carries retryAfter.
   */
  minHold?: Duration;
  /** Shown with the lock: at most 16 pairs, 4 KiB in all. */
  metadata?: Record<string, string>;
}

/** LockSetOptions say how to acquire a lock set. */
export interface LockSetOptions extends CallOptions {
  /** The lease the set's locks share, 2 s to 24 h; default the server's (30 s). Not with session: the session's TTL applies. */
  ttl?: Duration;
  /** Queue for every lock at once for up to this long (at most 5 m); default: fail at once with HeldError. */
  wait?: Duration;
  /** Labels every lock of the set; default the client's address as the server sees it. */
  owner?: string;
  /** Puts the set's locks in a session: they live and die with it. */
  session?: string;
  /** Each lock of the set's at-least window (AcquireOptions.minHold). */
  minHold?: Duration;
  /** Shown with every lock of the set: at most 16 pairs, 4 KiB in all. */
  metadata?: Record<string, string>;
}

/** CampaignOptions say how to campaign for an election. */
export interface CampaignOptions extends CallOptions {
  /** What the leader publishes (its address, say): any JSON value, at most 4 KiB. */
  value?: unknown;
  ttl?: Duration;
  /**
   * Wait in line to lead for up to this long; default: fail at once with
   * ElectionHeldError. A wait over maxRequestWait (5 m), up to
   * waitForever, needs session.
   */
  wait?: Duration;
  /** Labels the leader; default the client's address. */
  candidate?: string;
  session?: string;
  lockDelay?: Duration;
  /** The leadership's at-least window: nobody else leads before its elected_at plus minHold, however early it ends. */
  minHold?: Duration;
  metadata?: Record<string, string>;
}

/** PermitOptions say how to hold a semaphore's permit. */
export interface PermitOptions extends CallOptions {
  /** The lease's TTL, 2 s to 24 h; default the server's (30 s). Not with session. */
  ttl?: Duration;
  /**
   * Queue for a permit for up to this long, first come first served;
   * default: fail at once with SemaphoreFullError. A wait over
   * maxRequestWait (5 m), up to waitForever, needs session.
   */
  wait?: Duration;
  owner?: string;
  /** Puts the permit in a session: it lives and dies with it. */
  session?: string;
  /** The permit's at-least window: its seat stays taken until its acquired_at plus minHold, however early it ends. */
  minHold?: Duration;
  metadata?: Record<string, string>;
}

/** RWOptions say how to hold a read/write lock. */
export interface RWOptions extends CallOptions {
  /** The lease's TTL, 2 s to 24 h; default the server's (30 s). Not with session. */
  ttl?: Duration;
  /**
   * Queue for the hold for up to this long, first come first served;
   * default: fail at once with HeldError. A wait over maxRequestWait (5 m),
   * up to waitForever, needs session.
   */
  wait?: Duration;
  owner?: string;
  /** Puts the hold in a session: it lives and dies with it. */
  session?: string;
  /** The hold's at-least window, until its acquired_at plus minHold: a write hold's keeps everyone out, a read hold's writers. */
  minHold?: Duration;
  metadata?: Record<string, string>;
}

/** ListOptions select a page of a listing. */
export interface ListOptions extends CallOptions {
  prefix?: string;
  limit?: number;
  cursor?: string;
}

/** HistoryOptions filter the audit trail; they combine. */
export interface HistoryOptions extends CallOptions {
  lock?: string;
  /** lock, election, semaphore, rwlock or fence; with name, that one thing's events. */
  kind?: string;
  name?: string;
  owner?: string;
  /** acquired, released, expired, revoked, session_expired, elected, resigned, proclaimed… */
  types?: string[];
  from?: Date | string;
  to?: Date | string;
  /** Events recorded before this revision: the nextBefore of the previous page. */
  before?: number;
  limit?: number;
}

/** PutFencedOptions say what else a fenced write requires of its token; at most one. */
export interface PutFencedOptions extends CallOptions {
  /** The token must hold this lock (NotHolderError otherwise). */
  lock?: string;
  /** The token must lead this election, exactly that leadership (NotHolderError otherwise). */
  election?: string;
  /** The token must be this read/write lock's current write hold (NotHolderError otherwise, a reader's too). */
  rwlock?: string;
}

/**
 * Fence names the hold a key's write requires: kind "lock", "election",
 * "semaphore" (one of its permits) or "rwlock" (its write hold), the
 * thing's name, and the hold's token. The write happens only while that
 * hold is current; otherwise StaleTokenError.
 */
export interface Fence {
  kind: "lock" | "election" | "semaphore" | "rwlock";
  name: string;
  token: number;
}

/** PutKeyOptions say what a key's put compares, binds and requires. None: an unconditional put. */
export interface PutKeyOptions extends CallOptions {
  /**
   * Makes the put a compare-and-set: it happens only if the key's
   * revision is this one (0: the key must not exist). Otherwise
   * RevisionMismatchError, whose revision is the key's (0: absent).
   */
  ifRevision?: number;
  /** Binds the key to this session: it is deleted when the session ends. A put without it unbinds the key. */
  session?: string;
  /** The put happens only while this hold is current. */
  fence?: Fence;
}

/** DeleteKeyOptions say what a key's delete compares and requires. */
export interface DeleteKeyOptions extends CallOptions {
  /** Deletes the key only at this revision (RevisionMismatchError otherwise). */
  ifRevision?: number;
  /** Deletes it only while this hold is current. */
  fence?: Fence;
}

/** WaitKeyOptions say how long a blocking read of a key waits. */
export interface WaitKeyOptions extends CallOptions {
  /** At most 5 m; default the node's, a minute. */
  wait?: Duration;
}

/** WatchKeysOptions say from when a watch of keys starts. */
export interface WatchKeysOptions {
  /** Deliver the changes after this revision (a listing's revision); 0 or absent: from now on. */
  since?: number;
  /** Ends the watch. */
  signal?: AbortSignal;
  /** How long the stream may stay silent, heartbeats included, before it reconnects; default 45 s. */
  idleTimeout?: number;
}

/** How an acquire waits: up to wait, in session, until signal aborts. */
interface Waiting {
  wait?: Duration;
  session?: string;
  signal?: AbortSignal;
}

/** One acquire request's answer: the hold it granted, its status, and when it left, on the monotonic clock. */
interface Answer<I> {
  status: number;
  data: I;
  sent: number;
}

/** One API call. */
interface Req {
  op: string;
  method: string;
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  /**
   * Idempotent calls are retried on 503 and transport errors, on the next
   * endpoint. Others are retried only when the request provably never
   * left: the connection could not be made.
   */
  idempotent: boolean;
  /** Per attempt, ms; default the client's. */
  timeout?: number;
  signal?: AbortSignal;
}

/** Why one attempt failed. */
interface Failure {
  err: BatonError;
  /** A node's trouble, not an answer about the request. */
  retryable: boolean;
  /** The request may have reached the server. */
  sent: boolean;
  /** The server answered, and not with a 5xx: it says what happened. */
  settled: boolean;
  retryAfter: number;
}

// Node's fetch (undici) names the cause of a failure to connect with one
// of these: the request never left, so any call may go to another node.
const dialCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "UND_ERR_CONNECT_TIMEOUT"]);

function isDialError(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    const code = (c as { code?: string }).code;
    if (code && dialCodes.has(code)) return true;
    const errs = (c as { errors?: unknown[] }).errors; // AggregateError of each address tried
    if (Array.isArray(errs) && errs.length > 0 && errs.every((x) => dialCodes.has((x as { code?: string }).code ?? ""))) return true;
  }
  return false;
}

/**
 * Client talks to a baton cluster over HTTP with fetch, on Node ≥ 18 and
 * in browsers. It keeps the locks, leaderships, permits, read/write
 * lock holds and lock sets it grants alive in the background and, while it holds any,
 * one event stream that tells it of their loss.
 *
 * Calls go to the endpoint that answered last and move on when one is
 * unreachable or answers 503. Calls that are safe to repeat (reads,
 * renewals, releases by token, fenced writes, a key's put or delete with
 * ifRevision or a fence) are retried with backoff
 * honouring Retry-After; so is a permit's or a read/write lock hold's
 * revoke, which names its token. An acquire, acquireSet or campaign
 * outside a session, any acquirePermit (each request takes a permit of its own),
 * any read acquireRW (likewise), a session creation, a lock's or
 * leadership's revoke or an unconditional putKey or deleteKey is not
 * repeated once it may have reached a node: it
 * fails with UnavailableError and its outcome is unknown.
 */
export class Client {
  /** The endpoints' base URLs, without a trailing slash. */
  readonly endpoints: string[];
  private readonly bearer: Bearer;
  /** @internal */
  readonly timeoutMs: number;
  private readonly backoff0: number;
  private readonly retries: number;
  /** ClientOptions.maxRequestWait, ms. */
  private readonly maxWait: number;
  /** @internal */
  readonly fetchImpl: typeof fetch;
  // preferred is the endpoint that answered last: calls start there.
  private preferred = 0;
  /** @internal */
  readonly watcher: HoldWatcher;

  /**
   * new Client(addr) talks to addr: a base URL ("http://10.0.0.1:8080"),
   * "host:port" (http), several of them comma-separated or as an array.
   * Without addr: BATON_ADDR where there is a process environment, else
   * http://127.0.0.1:8080.
   */
  constructor(addr?: string | string[], options: ClientOptions = {}) {
    const list = addr ?? env("BATON_ADDR") ?? defaultAddr;
    const parts = (Array.isArray(list) ? list : list.split(",")).map((s) => s.trim()).filter((s) => s !== "");
    if (parts.length === 0) throw new TypeError("baton client: no endpoints");
    this.endpoints = parts.map(parseEndpoint);
    const token = options.token ?? env("BATON_AUTH_TOKEN");
    this.bearer = new Bearer(token, token ? undefined : options.tokenFile ?? env("BATON_TOKEN_FILE"));
    this.timeoutMs = toMillis(options.timeout ?? 10_000);
    this.backoff0 = toMillis(options.retryBackoff ?? 200);
    if (this.timeoutMs <= 0 || this.backoff0 < 0) throw new TypeError("baton client: timeout must be positive and retryBackoff not negative");
    this.maxWait = toMillis(options.maxRequestWait ?? maxRequestWait);
    if (!(this.maxWait >= 1 && this.maxWait <= maxRequestWait)) throw new TypeError("baton client: maxRequestWait must be between 1ms and 5m");
    const r = options.maxRetries ?? 0;
    this.retries = r < 0 ? 0 : r === 0 ? this.endpoints.length + 2 : r;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("baton client: no fetch: Node ≥ 18 or a browser is needed");
    this.fetchImpl = f.bind(globalThis);
    this.watcher = new HoldWatcher(this);
  }

  // ---- transport ----

  /** @internal */
  preferredEndpoint(): number {
    return this.preferred;
  }

  /** @internal */
  setPreferred(i: number): void {
    this.preferred = i;
  }

  /** @internal */
  authHeaders(): Record<string, string> {
    const token = this.bearer.token();
    return token ? { Authorization: `Bearer ${token}` } : {};
  }

  /**
   * @internal reloadToken reads the token file again at once (after a
   * 401), and reports whether it holds a new token.
   */
  reloadToken(): boolean {
    return this.bearer.reload();
  }

  /** @internal */
  url(base: string, path: string, query?: Record<string, string | undefined>): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") q.set(k, v);
    const s = q.toString();
    return base + path + (s ? "?" + s : "");
  }

  /** @internal backoff is the pause after the given number of failed rounds, with jitter. */
  backoff(round: number): number {
    return jitter(Math.min(this.backoff0 * 2 ** Math.min(round, 10), maxBackoff));
  }

  /** waitTimeout bounds an attempt of a call that may wait in line for up to wait: the client's timeout, and the wait on top. */
  private waitTimeout(wait?: Duration): number {
    return this.timeoutMs + (wait !== undefined ? Math.max(toMillis(wait), 0) : 0);
  }

  /**
   * inLine runs an acquire that waits up to o.wait, by send, which asks
   * with wait and, when keep is set, keep_place. A wait that fits one
   * request (maxRequestWait) is one request, with o.wait as given. A
   * longer one needs o.session, which inLine renews until it returns
   * (once granted, the hold renews it); it ends at the first answer that
   * is not a kept place. If o.signal aborts between two requests, a last
   * one without keep_place gives the place up, and undo gives back what
   * that one may have been granted. An abort during a request ends the
   * wait on the server: a wait cut short keeps no place.
   */
  private async inLine<I>(
    op: string, o: Waiting,
    send: (wait: Duration | undefined, keep: boolean, signal?: AbortSignal) => Promise<Answer<I>>,
    undo: (granted: I) => Promise<unknown>,
  ): Promise<Answer<I>> {
    const total = o.wait === undefined ? 0 : toMillis(o.wait);
    if (!(total > this.maxWait)) return send(o.wait, false, o.signal);
    if (!o.session) {
      const e = new InvalidRequestError(0, "invalid_request", "Invalid request",
        `a wait over maxRequestWait (${this.maxWait} ms) needs a session, which keeps the place in line between requests`);
      e.field = "wait";
      throw e.setOp(op);
    }
    const stop = this.keepSession(o.session, o.signal);
    try {
      const deadline = now() + total; // Infinity for waitForever
      for (;;) {
        const left = deadline - now();
        const keep = left > this.maxWait;
        const wait = keep ? this.maxWait : Math.max(left, 1);
        try {
          return await send(wait, keep, o.signal);
        } catch (e) {
          if (!keep || !(e instanceof BatonError) || !e.placeKept) throw e;
        }
        if (o.signal?.aborted) {
          // Given up between two requests, with the place still in line:
          // one more request without keep_place ends it, and whatever
          // that one is granted (a release meanwhile) goes back.
          await send(1, false).then((a) => undo(a.data)).catch(() => {});
          throw o.signal.reason;
        }
      }
    } finally {
      await stop();
    }
  }

  /**
   * keepSession renews the session id about every third of its TTL (at
   * most once a second) until the returned stop is called or signal
   * aborts. A renewal that fails is tried again at the next turn; a
   * session that is gone stops the renewals, and the acquire answers
   * session_not_found by itself.
   */
  private keepSession(id: string, signal?: AbortSignal): () => Promise<void> {
    const { ctl, unlink } = linked(signal);
    const renewing = (async () => {
      let every = 1000;
      while (!ctl.signal.aborted) {
        try {
          const s = await this.renewSession(id, { signal: ctl.signal });
          every = Math.max(toMillis(s.ttl) / 3, 1000);
        } catch (e) {
          if (e instanceof SessionNotFoundError) return;
        }
        await sleep(every, ctl.signal, true);
      }
    })().catch(() => {});
    return async () => {
      ctl.abort();
      unlink();
      await renewing;
    };
  }

  /** call runs r, retrying as its idempotency allows, and returns the answer's status and body. */
  private async call<T>(r: Req): Promise<{ status: number; data: T }> {
    const payload = r.body === undefined ? undefined : JSON.stringify(r.body);
    const n = this.endpoints.length;
    const start = this.preferred;
    // unsettled records that an earlier attempt may have taken effect
    // unseen, so that a later answer such as not_held can say so.
    let unsettled = false;
    let reread = false; // the token file was read again after a 401
    for (let attempt = 0; ; attempt++) {
      const i = (start + attempt) % n;
      const res = await this.attempt<T>(this.endpoints[i], r, payload);
      if ("data" in res) {
        this.preferred = i;
        return res;
      }
      const f = res;
      // A 401 did nothing: with a new token from the file, the same node
      // is asked again, once, whatever the call.
      if (f.err.status === 401 && !reread && this.bearer.reload()) {
        reread = true;
        attempt--;
        continue;
      }
      const err = f.err.setOp(r.op);
      if (unsettled && f.settled) err.message += " (an earlier attempt got no answer and may have taken effect)";
      if (!r.idempotent && f.sent && !f.settled) {
        err.message += "; the outcome is unknown: the request may have taken effect";
        throw err;
      }
      // A node's answer is the outcome even when the caller gave up
      // meanwhile: an acquire's kept place, say, is then to be given up.
      if (r.signal?.aborted && !f.settled) throw r.signal.reason;
      if (!f.retryable) throw err;
      // The next call starts on the next node: this one is in trouble.
      if (this.preferred === i) this.preferred = (i + 1) % n;
      if (!r.idempotent && attempt + 1 >= n) throw err; // every node refused the connection
      if (r.idempotent && attempt >= this.retries) {
        err.message += ` (gave up after ${attempt + 1} attempts)`;
        throw err;
      }
      unsettled ||= f.sent;
      // A node not yet tried in this round is tried at once; a full round
      // of failures earns a pause, so a cluster without a leader is not
      // hammered.
      if ((attempt + 1) % n === 0) {
        const round = (attempt + 1) / n;
        await sleep(Math.max(this.backoff(round - 1), Math.min(f.retryAfter, maxRetryAfter)), r.signal);
      }
    }
  }

  private async attempt<T>(base: string, r: Req, payload: string | undefined): Promise<{ status: number; data: T } | Failure> {
    const { ctl, unlink } = linked(r.signal);
    const timeout = r.timeout ?? this.timeoutMs;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new Error(`no answer within the request timeout (${timeout} ms)`));
    }, timeout);
    const headers: Record<string, string> = { Accept: "application/json, application/problem+json", ...this.authHeaders() };
    if (payload !== undefined) headers["Content-Type"] = "application/json";
    const u = this.url(base, r.path, r.query);
    try {
      let res: Response;
      try {
        // Only reads follow redirects: fetch turns a redirected POST or
        // DELETE into a GET, which would read where a write was asked for.
        const redirect = r.method === "GET" ? "follow" : "manual";
        res = await this.fetchImpl(u, { method: r.method, headers, body: payload, signal: ctl.signal, redirect });
      } catch (e) {
        return this.transportFailure(base, r, e, timedOut);
      }
      let text: string;
      try {
        text = await res.text();
      } catch (e) {
        // Cut mid-answer: the node's trouble, and it may have done it.
        const f = this.transportFailure(base, r, e, timedOut);
        return { ...f, sent: true };
      }
      if (res.status < 200 || res.status > 299) {
        const e = errorFromProblem(res.status, text, isJSON(res.headers.get("Content-Type")), res.headers.get("Retry-After"));
        if (res.status === 0 || (res.status >= 300 && res.status < 400)) {
          e.detail = `redirected${res.headers.get("Location") ? " to " + res.headers.get("Location") : ""}, which this client follows only for reads; use that URL as the endpoint`;
          e.message = e.detail;
        }
        const st = res.status;
        return { err: e, retryAfter: e.retryAfter ?? 0, sent: true, settled: st > 0 && st < 500, retryable: st === 502 || st === 503 || st === 504 };
      }
      if (res.status === 204 || text === "") return { status: res.status, data: undefined as T };
      try {
        return { status: res.status, data: JSON.parse(text) as T };
      } catch {
        const e = new BatonError(res.status, "", "Bad answer", `${base} answered ${res.status} with a body that is not what the API describes`);
        return { err: e, retryAfter: 0, sent: true, settled: true, retryable: false };
      }
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  /** transportFailure classifies a failure to get an answer at all. */
  private transportFailure(base: string, r: Req, e: unknown, timedOut: boolean): Failure {
    const dial = isDialError(e);
    if (r.signal?.aborted) {
      // The caller gave up; not the node's fault.
      const err = new BatonError(0, "", "Aborted", String((r.signal.reason as Error)?.message ?? r.signal.reason), { cause: r.signal.reason });
      return { err, retryable: false, sent: !dial, settled: false, retryAfter: 0 };
    }
    const why = timedOut ? `no answer within the request timeout` : describeFetchError(e);
    return { err: unavailable(base, why, e), retryable: true, sent: !dial, settled: false, retryAfter: 0 };
  }

  // ---- locks ----

  /**
   * acquire takes the lock name, waiting up to o.wait for it, and returns
   * it held, renewing itself in the background until release(). It
   * rejects with HeldError, whose holder is the holder, when the wait runs
   * out. A wait over maxRequestWait (5 m), up to waitForever, needs
   * o.session: it is a run of requests that keep the session's place in
   * line, while the client renews the session (InvalidRequestError,
   * before any request, without one). So are campaign's, acquirePermit's
   * and acquireRW's.
   *
   * Not retried after a 503 or a broken connection (it is when the
   * connection could not be made at all): a repeat could take a second
   * hold. The error is then an UnavailableError and the outcome unknown;
   * a lock taken that way expires after its TTL. In a session it is
   * idempotent on the server and retried.
   */
  async acquire(name: string, o: AcquireOptions = {}): Promise<Lock> {
    const op = `acquire ${JSON.stringify(name)}`;
    const { data: info, status, sent } = await this.acquireRaw(op, name, o);
    let lock: Lock | undefined;
    const hold = new Hold(this, { kind: kindLock, name: info.name, token: info.token }, {
      renew: async (timeout, signal) => lock!.record(await this.renewLock(name, info.token, { signal, timeout })),
      release: (signal) => this.release(name, info.token, { signal }),
    });
    lock = new Lock(hold, info);
    await hold.start(op, grantOf(status, sent, info.ttl, info.acquired_at, info.expires_at, o.session), o.signal);
    return lock;
  }

  /**
   * withLock acquires the lock, runs fn with it, and releases it whatever
   * fn does; it returns fn's value. Stop the work when lk.lost aborts. A
   * lock lost during fn makes withLock reject with the LockLostError once
   * fn has returned, unless fn threw.
   */
  async withLock<T>(name: string, o: AcquireOptions, fn: (lk: Lock) => Promise<T> | T): Promise<T> {
    return using(await this.acquire(name, o), (lk) => lk.release(), fn);
  }

  /**
   * acquireOnce takes the lock as acquire does and returns it as the
   * server describes it: nothing renews it. For holders that keep the
   * token rather than a Lock. Retried as acquire is.
   */
  async acquireOnce(name: string, o: AcquireOptions = {}): Promise<LockInfo> {
    return (await this.acquireRaw(`acquire ${JSON.stringify(name)}`, name, o)).data;
  }

  /** acquireRaw sends the acquire, over as many requests as o.wait takes (inLine). */
  private async acquireRaw(op: string, name: string, o: AcquireOptions): Promise<Answer<LockInfo>> {
    const terms = { ...holdTerms(o), lock_delay: o.lockDelay !== undefined ? toWire(o.lockDelay) : undefined };
    return this.inLine<LockInfo>(op, o, async (wait, keep, signal) => {
      const sent = now();
      const { status, data } = await this.call<LockInfo>({
        op, method: "POST", path: lockPath(name), body: { ...terms, ...waitTerms(wait, keep) },
        // In a session the server hands a lock the session holds back (200),
        // so a repeat cannot take a second hold.
        idempotent: !!o.session,
        timeout: this.waitTimeout(wait),
        signal,
      });
      return { status, data, sent };
    }, (info) => this.release(name, info.token));
  }

  /** get returns the lock's holder and its queue. NotHeldError when nobody holds it. Retried. */
  async get(name: string, o: CallOptions = {}): Promise<LockInfo> {
    return (await this.call<LockInfo>({ op: `get lock ${JSON.stringify(name)}`, method: "GET", path: lockPath(name), idempotent: true, signal: o.signal })).data;
  }

  /** locks returns a page of held locks sorted by name, and the next page's cursor ("" on the last). Retried. */
  async locks(o: ListOptions = {}): Promise<{ locks: LockInfo[]; nextCursor: string }> {
    const { data } = await this.call<{ locks: LockInfo[]; next_cursor?: string }>({ op: "list locks", method: "GET", path: "/v1/locks", query: listQuery(o), idempotent: true, signal: o.signal });
    return { locks: data.locks ?? [], nextCursor: data.next_cursor ?? "" };
  }

  /**
   * renewLock extends the lease of the lock token holds. NotHeldError or
   * TokenMismatchError when token no longer holds it. Retried. A Lock
   * renews itself: this is for holders that keep the token only.
   */
  async renewLock(name: string, token: number, o: CallOptions & { timeout?: number } = {}): Promise<LockInfo> {
    return (await this.call<LockInfo>({
      op: `renew ${JSON.stringify(name)}`, method: "POST", path: lockPath(name) + "/renew", body: { token }, idempotent: true, timeout: o.timeout, signal: o.signal,
    })).data;
  }

  /**
   * release ends the hold of token on name. A stale token never touches a
   * newer holder: TokenMismatchError, and NotHeldError when nobody holds
   * it. Retried: it names the token.
   */
  async release(name: string, token: number, o: CallOptions = {}): Promise<void> {
    await this.call({ op: `release ${JSON.stringify(name)}`, method: "DELETE", path: lockPath(name), query: { token: String(token) }, idempotent: true, signal: o.signal });
  }

  /**
   * revoke forcibly ends whatever hold the lock has (an operator's
   * action). NotHeldError when nobody holds it. Not retried: it names no
   * token, so a repeat could revoke the next holder.
   */
  async revoke(name: string, reason = "", o: CallOptions = {}): Promise<void> {
    await this.call({ op: `revoke ${JSON.stringify(name)}`, method: "POST", path: lockPath(name) + "/revoke", body: reason ? { reason } : undefined, idempotent: false, signal: o.signal });
  }

  // ---- requests to yield ----

  /**
   * yield asks whoever holds the lock name to release it; the holder,
   * told by its onYield callback, decides. o.owner names the asker (default:
   * the client's address). NotHeldError when nobody holds it. Not
   * retried: a repeat would ask twice.
   */
  async yield(name: string, o: YieldOptions = {}): Promise<YieldRequested> {
    return this.askToYield(`ask lock ${JSON.stringify(name)} to yield`, lockPath(name), o);
  }

  /** yieldLeadership asks the leader of name to resign, as yield asks a holder. NoLeaderError when nobody leads. */
  async yieldLeadership(name: string, o: YieldOptions = {}): Promise<YieldRequested> {
    return this.askToYield(`ask the leader of ${JSON.stringify(name)} to yield`, electionPath(name), o);
  }

  /** yieldPermits asks the holders of the semaphore's permits (with o.token, that permit's alone) to give them back. NotHeldError when none is held. */
  async yieldPermits(name: string, o: YieldOptions = {}): Promise<YieldRequested> {
    return this.askToYield(`ask the permits of ${JSON.stringify(name)} to yield`, heldPath(semaphores, name), o);
  }

  /** yieldRW asks the holds of the read/write lock (with o.token, that hold alone) to release. NotHeldError when nothing holds it. */
  async yieldRW(name: string, o: YieldOptions = {}): Promise<YieldRequested> {
    return this.askToYield(`ask the holds of rwlock ${JSON.stringify(name)} to yield`, heldPath(rwlocks, name), o);
  }

  private async askToYield(op: string, path: string, o: YieldOptions): Promise<YieldRequested> {
    const body = { owner: o.owner || undefined, reason: o.reason || undefined, token: o.token || undefined };
    return (await this.call<YieldRequested>({ op, method: "POST", path: path + "/yield", body, idempotent: false, signal: o.signal })).data;
  }

  // ---- lock sets ----

  /**
   * acquireSet takes every lock of names (2 to 64 distinct lock names, in
   * any order) at once, all with one fencing token, or none of them, and
   * returns the LockSet, renewing itself in the background until
   * release(). With o.wait the set queues for all of them at once and is
   * granted when it heads every queue: sets and single locks are served in
   * one order, so two sets never deadlock whatever order they name their
   * locks in. It rejects with HeldError, whose holders are the locks held
   * by others, when the wait runs out, having taken nothing; with
   * InvalidRequestError (field "names") for fewer than 2 or more than 64
   * names, a repeated or an invalid one.
   *
   * Retried as acquire is: not once it may have reached a node outside a
   * session (UnavailableError, the outcome unknown; a set taken that way
   * expires after its TTL); in a session the server hands back the set
   * the session holds, so it is.
   */
  async acquireSet(names: string[], o: LockSetOptions = {}): Promise<LockSet> {
    if (!Array.isArray(names)) throw new TypeError("acquireSet: names is an array of lock names");
    const op = `acquire lock set ${JSON.stringify(names.join(","))}`;
    const body = { names, ...holdTerms(o) };
    const sent = now();
    const { status, data: info } = await this.call<LockSetInfo>({
      op, method: "POST", path: "/v1/locksets", body, idempotent: !!o.session, timeout: this.waitTimeout(o.wait), signal: o.signal,
    });
    const ns = [...info.names];
    let set: LockSet | undefined;
    const hold = new Hold(this, { kind: kindLockSet, name: ns.join(","), token: info.token }, {
      renew: async (timeout, signal) => set!.record(await this.renewSet(ns, info.token, { signal, timeout })),
      release: (signal) => this.releaseSet(ns, info.token, { signal }),
    }, ns.map((name) => ({ kind: kindLock, name, token: info.token })));
    set = new LockSet(hold, info);
    const first = info.locks?.[0];
    await hold.start(op, grantOf(status, sent, first?.ttl, first?.acquired_at, first?.expires_at, o.session), o.signal);
    return set;
  }

  /**
   * withLockSet acquires the set, runs fn with it, and releases it
   * whatever fn does; it returns fn's value. A set lost during fn makes it
   * reject with the LockLostError once fn has returned, unless fn threw.
   */
  async withLockSet<T>(names: string[], o: LockSetOptions, fn: (s: LockSet) => Promise<T> | T): Promise<T> {
    return using(await this.acquireSet(names, o), (s) => s.release(), fn);
  }

  /**
   * renewSet extends the lease the set's locks share (in a session: the
   * session's) if token still holds every lock of names: NotHeldError or
   * TokenMismatchError, naming the lock, when one was lost. Retried. A
   * LockSet renews itself: this is for holders that keep the token only.
   */
  async renewSet(names: string[], token: number, o: CallOptions & { timeout?: number } = {}): Promise<LockSetInfo> {
    return (await this.call<LockSetInfo>({
      op: `renew lock set ${JSON.stringify(names.join(","))}`, method: "POST", path: "/v1/locksets/renew", body: { names, token }, idempotent: true, timeout: o.timeout, signal: o.signal,
    })).data;
  }

  /**
   * releaseSet ends every lock of names still held with token, in one
   * transaction, each handed to its oldest waiter; a lock of the set
   * released or revoked on its own before is left alone. NotHeldError
   * when none is held, TokenMismatchError when they are held, none with
   * token. Retried: it names the token.
   */
  async releaseSet(names: string[], token: number, o: CallOptions = {}): Promise<void> {
    await this.call({ op: `release lock set ${JSON.stringify(names.join(","))}`, method: "POST", path: "/v1/locksets/release", body: { names, token }, idempotent: true, signal: o.signal });
  }

  // ---- sessions ----

  /**
   * createSession makes a session: one lease (ttl, default 30 s) that many
   * locks and leaderships share. Keep it alive with renewSession, or by
   * holding a Lock in it (whose renewals renew the session). With bind
   * "stream" (and grace, default 2 s; ttl absent) it lives while its stream
   * is held open instead: openStreamSession does that. Not retried: a
   * repeat would make a second session.
   */
  async createSession(o: CallOptions & { ttl?: Duration; owner?: string; bind?: "stream"; grace?: Duration } = {}): Promise<Session> {
    const body = {
      ttl: o.ttl !== undefined ? toWire(o.ttl) : undefined, owner: o.owner || undefined,
      bind: o.bind, grace: o.grace !== undefined ? toWire(o.grace) : undefined,
    };
    return (await this.call<Session>({ op: "create session", method: "POST", path: "/v1/sessions", body, idempotent: false, signal: o.signal })).data;
  }

  /**
   * openStreamSession makes a session bound to a stream (grace from 500 ms
   * to 1 m, default 2 s), opens its stream and holds it open in the
   * background until close(), or until the session ends (done). It
   * resolves once the stream is open, within the client's timeout, else
   * it deletes the session and rejects. Not retried, as createSession is
   * not: a session made by a request whose answer was lost ends by itself
   * after its grace.
   */
  async openStreamSession(o: StreamSessionOptions = {}): Promise<StreamSession> {
    const info = await this.createSession({ owner: o.owner, bind: "stream", grace: o.grace, signal: o.signal });
    return new StreamSession(this, info, sessionPath(info.id) + "/stream").open(o.signal);
  }

  /** getSession returns the session with its locks, or SessionNotFoundError. Retried. */
  async getSession(id: string, o: CallOptions = {}): Promise<Session> {
    return (await this.call<Session>({ op: `get session ${id}`, method: "GET", path: sessionPath(id), idempotent: true, signal: o.signal })).data;
  }

  /** renewSession extends the session, and every lock in it, by its TTL. Retried. */
  async renewSession(id: string, o: CallOptions = {}): Promise<Session> {
    return (await this.call<Session>({ op: `renew session ${id}`, method: "POST", path: sessionPath(id) + "/renew", idempotent: true, signal: o.signal })).data;
  }

  /** deleteSession ends the session and releases every lock in it. Retried. */
  async deleteSession(id: string, o: CallOptions = {}): Promise<void> {
    await this.call({ op: `delete session ${id}`, method: "DELETE", path: sessionPath(id), idempotent: true, signal: o.signal });
  }

  /** sessions returns a page of live sessions sorted by owner, then ID. Retried. */
  async sessions(o: ListOptions = {}): Promise<{ sessions: ListedSession[]; nextCursor: string }> {
    const { data } = await this.call<{ sessions: ListedSession[]; next_cursor?: string }>({ op: "list sessions", method: "GET", path: "/v1/sessions", query: listQuery(o), idempotent: true, signal: o.signal });
    return { sessions: data.sessions ?? [], nextCursor: data.next_cursor ?? "" };
  }

  // ---- fenced values, history, events ----

  /**
   * putFenced writes value (any JSON value) to the fenced register
   * resource, unless token is below the largest token an earlier write
   * carried: then StaleTokenError, whose maxToken is that token. With
   * o.lock the token must hold that lock, with o.election lead that
   * election, with o.rwlock be that read/write lock's write hold
   * (NotHolderError otherwise). Retried: a repeat carries the
   * same token.
   */
  async putFenced(resource: string, token: number, value: unknown, o: PutFencedOptions = {}): Promise<FencedValue> {
    const body = { token, value: value === undefined ? null : value, lock: o.lock || undefined, election: o.election || undefined, rwlock: o.rwlock || undefined };
    return (await this.call<FencedValue>({ op: `put fenced ${JSON.stringify(resource)}`, method: "PUT", path: "/v1/fenced/" + enc(resource), body, idempotent: true, signal: o.signal })).data;
  }

  /** getFenced reads a fenced register, or NotFoundError. Retried. */
  async getFenced(resource: string, o: CallOptions = {}): Promise<FencedValue> {
    return (await this.call<FencedValue>({ op: `get fenced ${JSON.stringify(resource)}`, method: "GET", path: "/v1/fenced/" + enc(resource), idempotent: true, signal: o.signal })).data;
  }

  /** history returns a page of the audit trail, newest first, and the before of the next page (0 on the last). Retried. */
  async history(o: HistoryOptions = {}): Promise<{ events: Event[]; nextBefore: number }> {
    const time = (t?: Date | string) => (t === undefined ? undefined : typeof t === "string" ? t : t.toISOString());
    const query = {
      lock: o.lock, kind: o.kind, name: o.name, owner: o.owner, type: o.types?.join(","), from: time(o.from), to: time(o.to),
      before: o.before ? String(o.before) : undefined, limit: o.limit ? String(o.limit) : undefined,
    };
    const { data } = await this.call<{ events: Event[]; next_before?: number }>({ op: "history", method: "GET", path: "/v1/history", query, idempotent: true, signal: o.signal });
    const events = (data.events ?? []).map((ev) => ({ ...ev, kind: ev.kind ?? "" })); // a gap has no kind
    return { events, nextBefore: data.next_before ?? 0 };
  }

  /** cluster returns the etcd members, the leader, the raft term and the current revision. Retried. */
  async cluster(o: CallOptions = {}): Promise<Cluster> {
    return (await this.call<Cluster>({ op: "cluster", method: "GET", path: "/v1/cluster", idempotent: true, signal: o.signal })).data;
  }

  /**
   * whoami returns who the client's token speaks for, its rules and its
   * quotas with what they count now (any credential may ask). Retried.
   */
  async whoami(o: CallOptions = {}): Promise<Whoami> {
    return (await this.call<Whoami>({ op: "whoami", method: "GET", path: "/v1/whoami", idempotent: true, signal: o.signal })).data;
  }

  /**
   * events streams the audit trail (GET /v1/events): events in revision
   * order, each exactly once. When the stream breaks it reconnects by
   * itself, to the next endpoint, with Last-Event-ID, and resumes without
   * a gap or a repeat. Without since it starts from the current revision:
   * every event recorded after `await stream.ready` is delivered.
   *
   * The iterator ends when o.signal aborts or the loop is left, and throws
   * when a node refuses the request itself (a 4xx no reconnection mends).
   */
  events(o: EventsOptions = {}): Stream<Event> {
    const ch = new Channel<Event>();
    const { ctl } = linked(o.signal);
    const src = new EventsSource(this, o, (ev, signal) => ch.put(ev, signal));
    runStream(this, "events", src, ctl.signal, o.idleTimeout)
      .then(() => ch.close(), (e) => ch.close(e))
      .finally(() => src.end());
    return new Stream(ch, ctl, src.based);
  }

  // ---- keys ----

  /**
   * putKey writes value (any JSON value) under key, in one transaction
   * with what o compares, and returns the key as written. With
   * o.ifRevision it is a compare-and-set (0: create only), rejecting with
   * RevisionMismatchError; with o.session the key is deleted when the
   * session ends (SessionNotFoundError); with o.fence it happens only
   * while that hold is current (StaleTokenError). Also ValueTooLargeError
   * and TooManyKeysError.
   *
   * Retried only with o.ifRevision or o.fence, which make a repeat refuse
   * what the first attempt did: an unconditional put that may have
   * reached a node fails with UnavailableError, its outcome unknown.
   */
  async putKey(key: string, value: unknown, o: PutKeyOptions = {}): Promise<Key> {
    const body = { value: value === undefined ? null : value, if_revision: o.ifRevision, session: o.session || undefined, ...fenceBody(o.fence) };
    return (await this.call<Key>({
      op: `put key ${JSON.stringify(key)}`, method: "PUT", path: keyPath(key), body, idempotent: o.ifRevision !== undefined || o.fence !== undefined, signal: o.signal,
    })).data;
  }

  /** getKey reads a key, linearizably. KeyNotFoundError, whose revision is the revision it was found missing at. Retried. */
  async getKey(key: string, o: CallOptions = {}): Promise<Key> {
    return (await this.call<Key>({ op: `get key ${JSON.stringify(key)}`, method: "GET", path: keyPath(key), idempotent: true, signal: o.signal })).data;
  }

  /**
   * waitKey is a blocking read: it resolves with the key once its
   * revision passes after, at once if it has already, else at its next
   * put; it rejects with KeyNotFoundError at its delete; when o.wait runs
   * out it resolves with the key as it is then. To follow a key, pass the
   * last revision seen, a missing key's KeyNotFoundError.revision
   * included. It may resolve early with the key unchanged: ask again.
   * Retried.
   */
  async waitKey(key: string, after: number, o: WaitKeyOptions = {}): Promise<Key> {
    const wait = o.wait !== undefined ? toMillis(o.wait) : 0;
    return (await this.call<Key>({
      op: `wait key ${JSON.stringify(key)}`, method: "GET", path: keyPath(key),
      query: { wait_revision: String(after), wait: o.wait !== undefined ? toWire(o.wait) : undefined },
      idempotent: true, timeout: this.timeoutMs + Math.max(wait, defaultKeyWait), signal: o.signal,
    })).data;
  }

  /** deleteKey deletes a key. KeyNotFoundError, RevisionMismatchError, StaleTokenError. Retried only with o.ifRevision or o.fence, as putKey is. */
  async deleteKey(key: string, o: DeleteKeyOptions = {}): Promise<void> {
    await this.call({
      op: `delete key ${JSON.stringify(key)}`, method: "DELETE", path: keyPath(key),
      query: { if_revision: o.ifRevision !== undefined ? String(o.ifRevision) : undefined },
      body: o.fence ? fenceBody(o.fence) : undefined, idempotent: o.ifRevision !== undefined || o.fence !== undefined, signal: o.signal,
    });
  }

  /**
   * keys returns a page of the keys that start with o.prefix ("config/":
   * those under config), in key order, with their values; the next
   * page's cursor ("" on the last); and the revision the page was read
   * at, which watchKeys takes as since. Retried.
   */
  async keys(o: ListOptions = {}): Promise<{ keys: Key[]; nextCursor: string; revision: number }> {
    const { data } = await this.call<{ keys: Key[]; next_cursor?: string; revision: number }>({ op: "list keys", method: "GET", path: "/v1/kv", query: listQuery(o), idempotent: true, signal: o.signal });
    return { keys: data.keys ?? [], nextCursor: data.next_cursor ?? "", revision: data.revision };
  }

  /**
   * watchKeys streams the changes of the keys under prefix (GET
   * /v1/kv/events) after o.since, in revision order, each once. When the
   * stream breaks it reconnects by itself, to the next endpoint, with
   * Last-Event-ID, and resumes without a gap or a repeat. Pass a
   * listing's revision to watch from it; without o.since it starts from
   * the current revision: every change after `await stream.ready` is
   * delivered.
   *
   * The iterator ends when o.signal aborts or the loop is left, and throws
   * when a node refuses the request itself (a bad prefix, no valid token).
   */
  watchKeys(prefix: string, o: WatchKeysOptions = {}): Stream<KeyEvent> {
    const ch = new Channel<KeyEvent>();
    const { ctl } = linked(o.signal);
    const src = new KeysSource(this, prefix, o.since, (ev, signal) => ch.put(ev, signal));
    runStream(this, "key events", src, ctl.signal, o.idleTimeout)
      .then(() => ch.close(), (e) => ch.close(e))
      .finally(() => src.end());
    return new Stream(ch, ctl, src.based);
  }

  // ---- elections ----

  /**
   * campaign makes the caller the leader of the election name, waiting in
   * line up to o.wait, and returns its leadership, renewing itself until
   * resign(). It rejects with ElectionHeldError, whose leader is the
   * leader, when the wait runs out. Retried as acquire is.
   */
  async campaign(name: string, o: CampaignOptions = {}): Promise<Leadership> {
    const op = `campaign for ${JSON.stringify(name)}`;
    const terms = {
      candidate: o.candidate || undefined,
      value: o.value,
      ttl: o.ttl !== undefined ? toWire(o.ttl) : undefined,
      session: o.session || undefined,
      lock_delay: o.lockDelay !== undefined ? toWire(o.lockDelay) : undefined,
      min_hold: o.minHold !== undefined ? toWire(o.minHold) : undefined,
      metadata: o.metadata,
    };
    const { status, data: info, sent } = await this.inLine<LeaderInfo>(op, o, async (wait, keep, signal) => {
      const sent = now();
      const { status, data } = await this.call<LeaderInfo>({
        op, method: "POST", path: electionPath(name) + "/campaign", body: { ...terms, ...waitTerms(wait, keep) },
        // In a session the server answers a leadership the session holds (200).
        idempotent: !!o.session,
        timeout: this.waitTimeout(wait),
        signal,
      });
      return { status, data, sent };
    }, (info) => this.resignLeadership(name, info.token));
    let ld: Leadership | undefined;
    const hold = new Hold(this, { kind: kindElection, name: info.name, token: info.token }, {
      renew: (timeout, signal) => ld!.renew(timeout, signal),
      release: (signal) => this.resignLeadership(name, info.token, { signal }),
    });
    ld = new Leadership(hold, this, info);
    await hold.start(op, grantOf(status, sent, info.ttl, info.elected_at, info.expires_at, o.session), o.signal);
    return ld;
  }

  /** withLeadership campaigns, runs fn as the leader, and resigns whatever fn does; it returns fn's value. */
  async withLeadership<T>(name: string, o: CampaignOptions, fn: (ld: Leadership) => Promise<T> | T): Promise<T> {
    return using(await this.campaign(name, o), (ld) => ld.resign(), fn);
  }

  /** leader returns who leads the election, with the candidates in line. NoLeaderError when nobody does. Retried. */
  async leader(name: string, o: CallOptions = {}): Promise<LeaderInfo> {
    return (await this.call<LeaderInfo>({ op: `get election ${JSON.stringify(name)}`, method: "GET", path: electionPath(name), idempotent: true, signal: o.signal })).data;
  }

  /** elections returns a page of the elections that have a leader, sorted by name. Retried. */
  async elections(o: ListOptions = {}): Promise<{ elections: LeaderInfo[]; nextCursor: string }> {
    const { data } = await this.call<{ elections: LeaderInfo[]; next_cursor?: string }>({ op: "list elections", method: "GET", path: "/v1/elections", query: listQuery(o), idempotent: true, signal: o.signal });
    return { elections: data.elections ?? [], nextCursor: data.next_cursor ?? "" };
  }

  /** proclaim sets the value of the leadership token holds, keeping token and term. Retried. */
  async proclaim(name: string, token: number, value: unknown, o: CallOptions = {}): Promise<LeaderInfo> {
    return (await this.call<LeaderInfo>({
      op: `proclaim in ${JSON.stringify(name)}`, method: "POST", path: electionPath(name) + "/proclaim", body: { token, value: value === undefined ? null : value }, idempotent: true, signal: o.signal,
    })).data;
  }

  /**
   * transferLeadership ends the leadership token holds in favour of the
   * candidate to, waiting in line: in one transaction to leads, ahead of
   * the line, with the next term, and its campaign resolves with that
   * leadership. It returns the new leadership. CandidateNotWaitingError
   * when no campaign of to waits (the leader still leads);
   * ElectionHeldError, with retryAfter, inside the leadership's at-least
   * window; NoLeaderError or TokenMismatchError when token no longer
   * leads. Retried: a repeat after it applied answers TokenMismatchError.
   * A Leadership transfers itself (Leadership.transfer).
   */
  async transferLeadership(name: string, token: number, to: string, o: CallOptions = {}): Promise<LeaderInfo> {
    return (await this.call<LeaderInfo>({
      op: `transfer leadership of ${JSON.stringify(name)} to ${JSON.stringify(to)}`, method: "POST", path: electionPath(name) + "/leader/transfer", body: { token, to }, idempotent: true, signal: o.signal,
    })).data;
  }

  /** renewLeadership extends the lease of the leadership token holds. Retried. */
  async renewLeadership(name: string, token: number, o: CallOptions & { timeout?: number } = {}): Promise<LeaderInfo> {
    return (await this.call<LeaderInfo>({
      op: `renew leadership of ${JSON.stringify(name)}`, method: "POST", path: electionPath(name) + "/renew", body: { token }, idempotent: true, timeout: o.timeout, signal: o.signal,
    })).data;
  }

  /** resignLeadership ends the leadership token holds; the next candidate leads. Retried. */
  async resignLeadership(name: string, token: number, o: CallOptions = {}): Promise<void> {
    await this.call({ op: `resign from ${JSON.stringify(name)}`, method: "DELETE", path: electionPath(name) + "/leader", query: { token: String(token) }, idempotent: true, signal: o.signal });
  }

  /** revokeLeadership deposes whoever leads (an operator's action). Not retried. */
  async revokeLeadership(name: string, reason = "", o: CallOptions = {}): Promise<void> {
    await this.call({ op: `revoke leadership of ${JSON.stringify(name)}`, method: "POST", path: electionPath(name) + "/revoke", body: reason ? { reason } : undefined, idempotent: false, signal: o.signal });
  }

  /**
   * observe streams the changes of the election name: first the state it
   * is in now, then each change in order (a leader elected, a value
   * proclaimed, nobody leading), leader null when nobody leads. It
   * reconnects by itself with Last-Event-ID and resumes after the last
   * change delivered, without a gap or a repeat.
   */
  observe(name: string, o: CallOptions = {}): Stream<LeaderChange> {
    const ch = new Channel<LeaderChange>();
    const { ctl } = linked(o.signal);
    const src = new ObserveSource(electionPath(name) + "/observe", (c, signal) => ch.put(c, signal));
    runStream(this, `observe ${JSON.stringify(name)}`, src, ctl.signal).then(() => ch.close(), (e) => ch.close(e));
    return new Stream(ch, ctl, Promise.resolve());
  }

  // ---- semaphores ----

  /**
   * acquirePermit takes one of the limit permits of the semaphore name,
   * waiting in line up to o.wait, and returns it, renewing itself in the
   * background until release(). Every client of a semaphore must ask with
   * the same limit: LimitMismatchError, whose limit is the semaphore's,
   * while its permits are held or waited for under another. It rejects
   * with SemaphoreFullError, whose holders are the permits held, when the
   * wait runs out.
   *
   * Each request takes a permit of its own, in a session too, so it is
   * never repeated once it may have reached a node: UnavailableError, the
   * outcome unknown; a permit taken that way expires after its TTL.
   */
  async acquirePermit(name: string, limit: number, o: PermitOptions = {}): Promise<Permit> {
    return this.acquireHeld<PermitInfo, Permit>(semaphores, `acquire a permit of ${JSON.stringify(name)}`, name, limit, o, false, (hold, info) => new Permit(hold, info));
  }

  /**
   * withPermit takes a permit, runs fn with it, and releases it whatever
   * fn does; it returns fn's value. A permit lost during fn makes it
   * reject with the LockLostError once fn has returned, unless fn threw.
   */
  async withPermit<T>(name: string, limit: number, o: PermitOptions, fn: (p: Permit) => Promise<T> | T): Promise<T> {
    return using(await this.acquirePermit(name, limit, o), (p) => p.release(), fn);
  }

  /** semaphore returns the semaphore's limit, permits held (oldest first) and waiters. NotHeldError when no permit is held. Retried. */
  async semaphore(name: string, o: CallOptions = {}): Promise<SemaphoreInfo> {
    return this.getHeld<SemaphoreInfo>(semaphores, name, o);
  }

  /** semaphores returns a page of the semaphores with permits held, sorted by name, each with its permits; a page may hold fewer than limit. Retried. */
  async semaphores(o: ListOptions = {}): Promise<{ semaphores: SemaphoreInfo[]; nextCursor: string }> {
    const { things, nextCursor } = await this.listHeld<SemaphoreInfo>(semaphores, o);
    return { semaphores: things, nextCursor };
  }

  /** renewPermit extends the lease of the permit token holds; NotHeldError when it holds none. Retried. A Permit renews itself. */
  async renewPermit(name: string, token: number, o: CallOptions & { timeout?: number } = {}): Promise<PermitInfo> {
    return this.renewHeld<PermitInfo>(semaphores, name, token, o);
  }

  /** releasePermit gives back the permit token holds; the oldest waiter gets it. NotHeldError when it holds none. Retried: it names the token. */
  async releasePermit(name: string, token: number, o: CallOptions = {}): Promise<void> {
    await this.releaseHeld(semaphores, name, token, o);
  }

  /**
   * revokePermit ends the permit token holds (an operator's action, role
   * admin), audited as revoked. NotHeldError when it holds none. Retried:
   * unlike a lock's revoke it names the token, so a repeat can never end
   * another permit.
   */
  async revokePermit(name: string, token: number, reason = "", o: CallOptions = {}): Promise<void> {
    await this.revokeHeld(semaphores, name, token, reason, o);
  }

  // ---- read/write locks ----

  /**
   * acquireRW takes a hold of the read/write lock name in mode "read"
   * (shared with other readers) or "write" (alone), waiting in line up to
   * o.wait, and returns it, renewing itself in the background until
   * release(). The line is first come, first served: a reader behind a
   * waiting writer waits for it. It rejects with HeldError, whose holders
   * are the holds in the way, when the wait runs out.
   *
   * Every read request takes a hold of its own, so a read is never
   * repeated once it may have reached a node, nor is a write outside a
   * session: UnavailableError, the outcome unknown; a hold taken that way
   * expires after its TTL. A write in a session is retried: the server
   * hands back the write hold the session has.
   */
  async acquireRW(name: string, mode: RWMode, o: RWOptions = {}): Promise<RWHold> {
    // In a session the server hands back the write hold the session has (200).
    return this.acquireHeld<RWHoldInfo, RWHold>(rwlocks, `acquire a ${mode} hold of ${JSON.stringify(name)}`, name, mode, o, !!o.session && mode === "write", (hold, info) => new RWHold(hold, info));
  }

  /**
   * withRW takes a hold, runs fn with it, and releases it whatever fn
   * does; it returns fn's value. A hold lost during fn makes it reject
   * with the LockLostError once fn has returned, unless fn threw.
   */
  async withRW<T>(name: string, mode: RWMode, o: RWOptions, fn: (h: RWHold) => Promise<T> | T): Promise<T> {
    return using(await this.acquireRW(name, mode, o), (h) => h.release(), fn);
  }

  /** rwlock returns the read/write lock's mode, holds (oldest first) and waiters (first served first, each with its mode). NotHeldError when nothing holds it. Retried. */
  async rwlock(name: string, o: CallOptions = {}): Promise<RWLockInfo> {
    return this.getHeld<RWLockInfo>(rwlocks, name, o);
  }

  /** rwlocks returns a page of the held read/write locks, sorted by name, each with its holds (not its waiters). Retried. */
  async rwlocks(o: ListOptions = {}): Promise<{ rwlocks: RWLockInfo[]; nextCursor: string }> {
    const { things, nextCursor } = await this.listHeld<RWLockInfo>(rwlocks, o);
    return { rwlocks: things, nextCursor };
  }

  /** renewRW extends the lease of the hold token has; NotHeldError when no hold of the lock has it. Retried. An RWHold renews itself. */
  async renewRW(name: string, token: number, o: CallOptions & { timeout?: number } = {}): Promise<RWHoldInfo> {
    return this.renewHeld<RWHoldInfo>(rwlocks, name, token, o);
  }

  /** releaseRW gives back the hold token has; the oldest waiters that can then hold are granted. NotHeldError when no hold has it. Retried: it names the token. */
  async releaseRW(name: string, token: number, o: CallOptions = {}): Promise<void> {
    await this.releaseHeld(rwlocks, name, token, o);
  }

  /** revokeRW ends the hold token has (an operator's action, role admin), audited as revoked. NotHeldError when no hold has it. Retried: it names the token. */
  async revokeRW(name: string, token: number, reason = "", o: CallOptions = {}): Promise<void> {
    await this.revokeHeld(rwlocks, name, token, reason, o);
  }

  // ---- permits and read/write lock holds alike: the API's Hold, by token, under the kind's path ----

  private async acquireHeld<I extends PermitInfo | RWHoldInfo, K extends Kept<I>>(
    k: HoldKind, op: string, name: string, extra: number | RWMode, o: PermitOptions | RWOptions, idempotent: boolean,
    make: (hold: Hold, info: I) => K,
  ): Promise<K> {
    const terms = { [k.extra]: extra, ...holdTerms(o) };
    const { status, data: info, sent } = await this.inLine<I>(op, o, async (wait, keep, signal) => {
      const sent = now();
      const { status, data } = await this.call<I>({
        op, method: "POST", path: heldPath(k, name), body: { ...terms, ...waitTerms(wait, keep) }, idempotent, timeout: this.waitTimeout(wait), signal,
      });
      return { status, data, sent };
    }, (info) => this.releaseHeld(k, name, info.token, {}));
    let kept: K | undefined;
    const hold = new Hold(this, { kind: k.kind, name: info.name, token: info.token }, {
      renew: async (timeout, signal) => kept!.record(await this.renewHeld<I>(k, name, info.token, { signal, timeout })),
      release: (signal) => this.releaseHeld(k, name, info.token, { signal }),
    });
    kept = make(hold, info);
    await hold.start(op, grantOf(status, sent, info.ttl, info.acquired_at, info.expires_at, o.session), o.signal);
    return kept;
  }

  private async getHeld<S>(k: HoldKind, name: string, o: CallOptions): Promise<S> {
    return (await this.call<S>({ op: `get ${k.kind} ${JSON.stringify(name)}`, method: "GET", path: heldPath(k, name), idempotent: true, signal: o.signal })).data;
  }

  private async listHeld<S>(k: HoldKind, o: ListOptions): Promise<{ things: S[]; nextCursor: string }> {
    const { data } = await this.call<Record<string, S[] | undefined> & { next_cursor?: string }>({ op: `list ${k.path}`, method: "GET", path: "/v1/" + k.path, query: listQuery(o), idempotent: true, signal: o.signal });
    return { things: data[k.path] ?? [], nextCursor: data.next_cursor ?? "" };
  }

  private async renewHeld<I>(k: HoldKind, name: string, token: number, o: CallOptions & { timeout?: number }): Promise<I> {
    return (await this.call<I>({
      op: `renew ${k.noun} of ${JSON.stringify(name)}`, method: "POST", path: heldPath(k, name) + "/renew", body: { token }, idempotent: true, timeout: o.timeout, signal: o.signal,
    })).data;
  }

  private async releaseHeld(k: HoldKind, name: string, token: number, o: CallOptions): Promise<void> {
    await this.call({ op: `release ${k.noun} of ${JSON.stringify(name)}`, method: "DELETE", path: heldPath(k, name), query: { token: String(token) }, idempotent: true, signal: o.signal });
  }

  private async revokeHeld(k: HoldKind, name: string, token: number, reason: string, o: CallOptions): Promise<void> {
    await this.call({ op: `revoke ${k.noun} of ${JSON.stringify(name)}`, method: "POST", path: heldPath(k, name) + "/revoke", body: { token, reason: reason || undefined }, idempotent: true, signal: o.signal });
  }
}

/**
 * HoldKind tells apart the things whose holds are the API's Hold: a
 * semaphore's permits and a read/write lock's holds are granted, got,
 * listed, renewed, released and revoked by token alike, under their own
 * path.
 */
interface HoldKind {
  /** The events' kind; a get's op names it. */
  kind: string;
  /** Under /v1/; a listing's op and member name it. */
  path: string;
  /** One hold, as the ops name it. */
  noun: string;
  /** The acquire's member that only this kind asks with. */
  extra: "limit" | "mode";
}

const semaphores: HoldKind = { kind: kindSemaphore, path: "semaphores", noun: "permit", extra: "limit" };
const rwlocks: HoldKind = { kind: kindRWLock, path: "rwlocks", noun: "rwlock hold", extra: "mode" };

/** using runs fn with a hold and then ends it, whatever fn does: quietly when fn threw, so that fn's error is the one seen. */
async function using<H, T>(h: H, end: (h: H) => Promise<void>, fn: (h: H) => Promise<T> | T): Promise<T> {
  let value: T;
  try {
    value = await fn(h);
  } catch (e) {
    await end(h).catch(() => {});
    throw e;
  }
  await end(h);
  return value;
}

/** grantOf reads a granting answer's lease: its ttl, and what was left of it from began to expires (0: unknown). */
function grantOf(status: number, sent: number, ttl: string | undefined, began: string | undefined, expires: string | undefined, session?: string): Grant {
  const left = began && expires ? Date.parse(expires) - Date.parse(began) : NaN;
  return { status, sent, ttl: ttl ? toMillis(ttl) : 0, left: Number.isFinite(left) ? left : 0, inSession: !!session };
}

function parseEndpoint(s: string): string {
  const withScheme = s.includes("://") ? s : "http://" + s;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new TypeError(`baton client: endpoint ${JSON.stringify(s)}: want http(s)://host:port`);
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.host || u.search || u.hash || u.username) {
    throw new TypeError(`baton client: endpoint ${JSON.stringify(s)}: want http(s)://host:port, optionally with a path`);
  }
  return u.toString().replace(/\/+$/, "");
}

function describeFetchError(e: unknown): string {
  const parts: string[] = [];
  for (let c: unknown = e, i = 0; c && i < 4; c = (c as { cause?: unknown }).cause, i++) {
    const m = (c as Error).message ?? String(c);
    if (m && !parts.includes(m)) parts.push(m);
  }
  return parts.join(": ") || "fetch failed";
}

const enc = encodeURIComponent;
const lockPath = (name: string) => "/v1/locks/" + enc(name);
const sessionPath = (id: string) => "/v1/sessions/" + enc(id);
const electionPath = (name: string) => "/v1/elections/" + enc(name);
const heldPath = (k: HoldKind, name: string) => `/v1/${k.path}/` + enc(name);
// A key's "/"s are escaped too: the key is one path parameter, as the
// OpenAPI document has it (a node takes them unescaped as well).
const keyPath = (key: string) => "/v1/kv/" + enc(key);

/** A blocking read's wait when it gives none: the node's default, ms. */
const defaultKeyWait = 60_000;

const fenceKinds = new Set(["lock", "election", "semaphore", "rwlock"]);

/** fenceBody is a fence as a request body's members. */
function fenceBody(f?: Fence): Record<string, string | number> {
  if (!f) return {};
  if (!fenceKinds.has(f.kind)) throw new TypeError(`baton client: a fence's kind is lock, election, semaphore or rwlock, not ${JSON.stringify(f.kind)}`);
  return { [f.kind]: f.name, token: f.token };
}

function listQuery(o: ListOptions): Record<string, string | undefined> {
  return { prefix: o.prefix, limit: o.limit ? String(o.limit) : undefined, cursor: o.cursor };
}

/** The members of an acquire's body that say how long one request waits, and whether it keeps the session's place when that runs out. */
function waitTerms(wait: Duration | undefined, keep: boolean) {
  return { wait: wait !== undefined ? toWire(wait) : undefined, keep_place: keep || undefined };
}

/** The members of an acquire's body that every hold takes: who, how it lives, how long to wait. */
function holdTerms(o: { owner?: string; ttl?: Duration; session?: string; wait?: Duration; minHold?: Duration; metadata?: Record<string, string> }) {
  return {
    owner: o.owner || undefined,
    ttl: o.ttl !== undefined ? toWire(o.ttl) : undefined,
    session: o.session || undefined,
    wait: o.wait !== undefined ? toWire(o.wait) : undefined,
    min_hold: o.minHold !== undefined ? toWire(o.minHold) : undefined,
    metadata: o.metadata,
  };
}
