import type { Client } from "./client.js";
import { BatonError, errorFromProblem, refused, UnavailableError } from "./errors.js";
import type { Event, KeyEvent, LeaderChange, LeaderInfo } from "./types.js";
import { background, linked, sleep } from "./util.js";

/**
 * How long a stream may stay silent before it is taken for dead: the
 * server sends a comment every 15 s, so three missed ones mean a
 * connection that died without a word (a half-open TCP connection after a
 * partition never errors by itself).
 */
const defaultIdleTimeout = 45_000;
const maxRetryAfter = 30_000;

/**
 * SseSource is one kind of Server-Sent Events stream, which runStream
 * keeps connected: what to ask for, and what to do with each message.
 */
export interface SseSource {
  /** Readies the next connection: false when it cannot be made yet. A throw is why. */
  prepare(signal: AbortSignal): Promise<boolean>;
  /** The next connection's path, query and Last-Event-ID (0: none). */
  target(): { path: string; query: Record<string, string>; lastId: number };
  /** Takes one message; a throw ends the connection. */
  dispatch(id: string, type: string, data: string, signal: AbortSignal): Promise<void> | void;
}

/**
 * runStream keeps src connected until signal aborts (it then resolves) or
 * a node refuses the request itself, with a 4xx no reconnection can mend
 * (it then rejects with that error). It reconnects to the next endpoint,
 * after a backoff, whenever a connection breaks or cannot be made.
 */
export async function runStream(c: Client, what: string, src: SseSource, signal: AbortSignal, idle = defaultIdleTimeout): Promise<void> {
  let failures = 0;
  let endpoint = c.preferredEndpoint();
  for (;;) {
    let connected = false;
    let retryAfter = 0;
    let err: unknown;
    try {
      if (await src.prepare(signal)) ({ connected, retryAfter, err } = await connect(c, endpoint, what, src, signal, idle));
    } catch (e) {
      err = e;
    }
    if (signal.aborted) return;
    if (refused(err)) {
      // Unless the token file has a new token (a JWT renewed before the
      // old one expired, which ended the stream): then the same node, at once.
      if ((err as BatonError).status === 401 && c.reloadToken()) continue;
      throw (err as BatonError).setOp(what);
    }
    failures = connected ? 0 : failures + 1;
    endpoint = (endpoint + 1) % c.endpoints.length;
    // Even after a stream that worked there is a short pause: a node that
    // accepts and at once drops the stream must not make us spin.
    try {
      await sleep(Math.max(c.backoff(failures), Math.min(retryAfter, maxRetryAfter)), signal, true);
    } catch {
      return;
    }
  }
}

interface Connection {
  connected: boolean;
  retryAfter: number;
  err: unknown;
}

/** connect runs one connection until it breaks, and says why it ended. */
async function connect(c: Client, endpoint: number, what: string, src: SseSource, signal: AbortSignal, idle: number): Promise<Connection> {
  const { ctl, unlink } = linked(signal);
  const base = c.endpoints[endpoint];
  // The request timeout bounds the wait for the answer's head; then the
  // idle timer watches the stream.
  let watchdog = background(setTimeout(() => ctl.abort(unavailable(base, `${what}: no answer within the request timeout`)), c.timeoutMs));
  const rearm = (ms: number) => {
    clearTimeout(watchdog);
    watchdog = background(setTimeout(() => ctl.abort(unavailable(base, `${what}: silent for ${ms} ms`)), ms));
  };
  const { path, query, lastId } = src.target();
  const headers: Record<string, string> = { Accept: "text/event-stream", "Cache-Control": "no-cache", ...c.authHeaders() };
  if (lastId > 0) headers["Last-Event-ID"] = String(lastId);
  let connected = false;
  try {
    const res = await c.fetchImpl(c.url(base, path, query), { headers, signal: ctl.signal });
    if (res.status !== 200) {
      const e = errorFromProblem(res.status, await res.text(), isJSON(res.headers.get("Content-Type")), res.headers.get("Retry-After"));
      return { connected, retryAfter: e.retryAfter ?? 0, err: e };
    }
    if (!res.body) return { connected, retryAfter: 0, err: unavailable(base, `${what}: answer without a body`) };
    c.setPreferred(endpoint);
    connected = true;
    rearm(idle);
    await readMessages(res.body, src, ctl.signal, () => rearm(idle), () => clearTimeout(watchdog));
    return { connected, retryAfter: 0, err: unavailable(base, `${what} stream ended`) };
  } catch (e) {
    if (signal.aborted) return { connected, retryAfter: 0, err: signal.reason };
    // A source's own verdict (a session's stream saying it ended) stands as it is.
    const why = ctl.signal.aborted ? ctl.signal.reason : e instanceof BatonError ? e : unavailable(base, `${what} stream: ${String((e as Error)?.message ?? e)}`, e);
    return { connected, retryAfter: 0, err: why };
  } finally {
    clearTimeout(watchdog);
    unlink();
    ctl.abort(); // closes the connection, whatever state its body is in
  }
}

/**
 * readMessages parses a text/event-stream body and hands each message to
 * src, until the body ends. alive is called on every chunk, pause before
 * a dispatch (a slow reader must not be taken for a dead stream).
 */
async function readMessages(body: ReadableStream<Uint8Array>, src: SseSource, signal: AbortSignal, alive: () => void, pause: () => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let data: string[] = [];
  let id = "";
  let type = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    alive();
    buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        // A blank line ends a message.
        if (data.length > 0) {
          pause();
          await src.dispatch(id, type, data.join("\n"), signal);
          alive();
        }
        data = [];
        id = type = "";
        continue;
      }
      if (line.startsWith(":")) continue; // a comment: heartbeat, or why the server ends the stream
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let v = colon < 0 ? "" : line.slice(colon + 1);
      if (v.startsWith(" ")) v = v.slice(1);
      if (field === "data") data.push(v);
      else if (field === "id") id = v;
      else if (field === "event") type = v;
    }
  }
}

export function isJSON(ct: string | null): boolean {
  const mt = (ct ?? "").split(";")[0].trim().toLowerCase();
  return mt === "application/json" || mt.endsWith("+json");
}

export function unavailable(base: string, what: string, cause?: unknown): UnavailableError {
  return new UnavailableError(0, "", "Service unavailable", `${base}: ${what}`, { cause });
}

/** EventsOptions select an event stream. */
export interface EventsOptions {
  /** Only this lock's events. */
  lock?: string;
  /** Only events about this kind of thing ("lock", "election", …) and, with name, the thing of that name. */
  kind?: string;
  name?: string;
  /** Replay the events recorded after this revision first; 0 or absent: the events from now on. */
  since?: number;
  /** Ends the stream. */
  signal?: AbortSignal;
  /** How long the stream may stay silent, heartbeats included, before it reconnects; default 45 s. */
  idleTimeout?: number;
}

/**
 * ResumingSource is the state of a stream of revisioned changes across
 * connections: where the next one resumes, and which items of the latest
 * revision were delivered, so that a reconnection delivers neither a gap
 * nor a repeat. Its kinds say where it is and how to read a message.
 */
abstract class ResumingSource<T extends { revision: number }> implements SseSource {
  private since: number;
  private haveBase: boolean;
  // last is the revision of the latest item delivered, and seen the
  // items of that revision delivered so far: a connection may break in
  // the middle of one revision's items (a session's end is one revision),
  // so a reconnection asks for that whole revision again and skips what
  // was delivered.
  private last = 0;
  private seen = new Set<string>();
  /** Resolves once the stream knows the revision it starts after. */
  readonly based: Promise<void>;
  private markBased!: () => void;

  constructor(
    private readonly c: Client,
    since: number | undefined,
    private readonly deliver: (item: T, signal: AbortSignal) => Promise<void> | void,
  ) {
    this.since = since ?? 0;
    this.haveBase = this.since > 0;
    this.based = new Promise((r) => (this.markBased = r));
    if (this.haveBase) this.markBased();
  }

  /** The stream's path and query. */
  protected abstract where(): { path: string; query: Record<string, string> };

  /** The item of a message, and what tells it from the other items of its revision. A throw ends the connection. */
  protected abstract decode(id: string, type: string, data: string): { item: T; key: string };

  /** Without a revision to resume from a reconnection could not tell what it missed: ask a node first. */
  async prepare(signal: AbortSignal): Promise<boolean> {
    if (!this.haveBase) {
      const ci = await this.c.cluster({ signal });
      this.since = ci.revision;
      this.haveBase = true;
      this.markBased();
    }
    return true;
  }

  /** Called when the stream ends, so that nobody waits for a base forever. */
  end(): void {
    this.markBased();
  }

  target() {
    return { ...this.where(), lastId: this.last > 0 ? this.last - 1 : this.since };
  }

  async dispatch(id: string, type: string, data: string, signal: AbortSignal): Promise<void> {
    const { item, key } = this.decode(id, type, data);
    if (item.revision < this.last || (item.revision === this.last && this.seen.has(key)) || (this.last === 0 && item.revision <= this.since)) {
      return; // delivered already, or from before where we resumed
    }
    await this.deliver(item, signal);
    // Only now: an item not handed over must be asked for again.
    if (item.revision > this.last) {
      this.last = item.revision;
      this.seen = new Set();
    }
    this.seen.add(key);
  }
}

/** EventsSource is the state of an event stream (GET /v1/events) across connections. */
export class EventsSource extends ResumingSource<Event> {
  constructor(c: Client, private readonly o: EventsOptions, deliver: (ev: Event, signal: AbortSignal) => Promise<void> | void) {
    super(c, o.since, deliver);
  }

  protected where() {
    const query: Record<string, string> = {};
    if (this.o.lock) query.lock = this.o.lock;
    if (this.o.kind) query.kind = this.o.kind;
    if (this.o.name) query.name = this.o.name;
    return { path: "/v1/events", query };
  }

  protected decode(id: string, type: string, data: string) {
    let ev: Event;
    try {
      ev = JSON.parse(data) as Event;
    } catch (e) {
      throw new UnavailableError(0, "", "Service unavailable", `event stream: bad event ${JSON.stringify(data.slice(0, 100))}`, { cause: e });
    }
    if (!ev.revision) ev.revision = Number(id) || 0;
    if (!ev.type) ev.type = type;
    ev.kind ??= ""; // a gap has no kind
    return { item: ev, key: JSON.stringify([ev.type, ev.kind ?? "", ev.name ?? "", ev.lock ?? "", ev.session ?? "", ev.token ?? 0]) };
  }
}

/** KeysSource is the state of a watch of keys (GET /v1/kv/events) across connections. */
export class KeysSource extends ResumingSource<KeyEvent> {
  constructor(c: Client, private readonly prefix: string, since: number | undefined, deliver: (ev: KeyEvent, signal: AbortSignal) => Promise<void> | void) {
    super(c, since, deliver);
  }

  protected where() {
    const query: Record<string, string> = {};
    if (this.prefix) query.prefix = this.prefix;
    return { path: "/v1/kv/events", query };
  }

  protected decode(id: string, type: string, data: string) {
    let ev: KeyEvent;
    try {
      ev = JSON.parse(data) as KeyEvent;
    } catch (e) {
      throw new UnavailableError(0, "", "Service unavailable", `key stream: bad event ${JSON.stringify(data.slice(0, 100))}`, { cause: e });
    }
    if (!ev.revision) ev.revision = Number(id) || 0;
    // A put's and a delete's data say no type: the message's name does.
    ev.type = (type || ev.type) as KeyEvent["type"];
    ev.key ??= ""; // a gap is about no key
    return { item: ev, key: JSON.stringify([ev.type, ev.key]) };
  }
}

/** ObserveSource is the state of an election's observation across connections. */
export class ObserveSource implements SseSource {
  // last is the revision of the latest change delivered: a connection
  // resumes after it. 0 until the first, so that the first connection
  // that delivers anything starts with the state.
  private last = 0;

  constructor(
    private readonly path: string,
    private readonly deliver: (ch: LeaderChange, signal: AbortSignal) => Promise<void>,
  ) {}

  async prepare(): Promise<boolean> {
    return true;
  }

  target() {
    return { path: this.path, query: {}, lastId: this.last };
  }

  async dispatch(id: string, type: string, data: string, signal: AbortSignal): Promise<void> {
    const revision = Number(id);
    if (!Number.isInteger(revision)) throw new UnavailableError(0, "", "Service unavailable", `observe: bad id ${JSON.stringify(id.slice(0, 40))}`);
    let leader: LeaderInfo | null = null;
    if (type === "leader") {
      try {
        leader = JSON.parse(data) as LeaderInfo;
      } catch (e) {
        throw new UnavailableError(0, "", "Service unavailable", `observe: bad leader ${JSON.stringify(data.slice(0, 100))}`, { cause: e });
      }
    } else if (type !== "vacant") {
      return; // a kind of message this client does not know
    }
    if (this.last > 0 && revision <= this.last) return; // delivered already
    await this.deliver({ revision, leader }, signal);
    this.last = revision;
  }
}

/**
 * Channel hands values from a stream to an async iterator, holding at
 * most cap of them: a reader that falls behind slows the stream down,
 * and the server disconnects it if it falls far behind (it then resumes).
 */
export class Channel<T> {
  private queue: T[] = [];
  private takers: ((r: IteratorResult<T>) => void)[] = [];
  private failers: ((e: unknown) => void)[] = [];
  private space: (() => void)[] = [];
  private closed = false;
  private err: unknown;

  constructor(private readonly cap = 16) {}

  async put(v: T, signal: AbortSignal): Promise<void> {
    while (this.queue.length >= this.cap && !this.closed) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        if (signal.aborted) return onAbort();
        signal.addEventListener("abort", onAbort, { once: true });
        this.space.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
    if (this.closed) return;
    const t = this.takers.shift();
    this.failers.shift();
    if (t) t({ value: v, done: false });
    else this.queue.push(v);
  }

  take(): Promise<IteratorResult<T>> {
    if (this.queue.length > 0) {
      const v = this.queue.shift()!;
      this.space.shift()?.();
      return Promise.resolve({ value: v, done: false });
    }
    if (this.closed) return this.err !== undefined ? Promise.reject(this.err) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.takers.push(resolve);
      this.failers.push(reject);
    });
  }

  /** close ends the channel; readers get what is queued, then err (if any) or the end. */
  close(err?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.err = err;
    for (const f of this.space.splice(0)) f();
    const takers = this.takers.splice(0);
    const failers = this.failers.splice(0);
    takers.forEach((t, i) => (err !== undefined ? failers[i](err) : t({ value: undefined, done: true })));
  }
}

/**
 * Stream is an async iterator over a live stream that runs in the
 * background from its creation: leave a for-await loop (or call close) to
 * end it.
 */
export class Stream<T> implements AsyncIterableIterator<T> {
  /** @internal */
  constructor(
    private readonly ch: Channel<T>,
    private readonly ctl: AbortController,
    /** Resolves once the stream is set up: for events() without since, when it knows the revision it starts after. */
    readonly ready: Promise<void>,
  ) {}

  next(): Promise<IteratorResult<T>> {
    return this.ch.take();
  }

  async return(): Promise<IteratorResult<T>> {
    this.close();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** close ends the stream. */
  close(): void {
    this.ctl.abort();
    this.ch.close();
  }
}
