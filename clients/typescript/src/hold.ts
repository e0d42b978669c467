import type { Client } from "./client.js";
import { LockLostError, NoLeaderError, NotHeldError, SessionNotFoundError, TokenMismatchError } from "./errors.js";
import { EventsSource, runStream } from "./sse.js";
import type { Event } from "./types.js";
import { background, linked, now, sleep } from "./util.js";

/** etcd's lease floor and the server's minimum TTL: it stands in for a TTL the server failed to report. */
const minTTL = 2000;
/** How many ends of holds nobody registered the watcher remembers. */
const maxEndedMemory = 1024;
/** yieldBuffer bounds the requests to yield a hold keeps until onYield is set; more are dropped: a holder with requests unread knows it is asked. */
const yieldBuffer = 16;

export const kindLock = "lock";
export const kindElection = "election";
export const kindSemaphore = "semaphore";
export const kindRWLock = "rwlock";
/** A lock set's holds are its locks (kind lock): this kind names the set as a whole, in errors, and is no event's. */
export const kindLockSet = "lockset";

/** What events are about: a kind ("lock", "election", "semaphore", "rwlock") and a name. */
interface Thing {
  kind: string;
  name: string;
}

/** HoldKey names a hold as its events do. */
interface HoldKey extends Thing {
  token: number;
}

const keyString = (k: HoldKey) => JSON.stringify([k.kind, k.name, k.token]);

/** The calls by which one kind of hold is kept, by its token. */
export interface HoldOps {
  /** Renews, each attempt bounded by timeout (ms); records what the answer says; returns the TTL it reports in ms (0: none). */
  renew(timeout: number, signal: AbortSignal): Promise<number>;
  /** Gives the hold back. */
  release(signal?: AbortSignal): Promise<void>;
}

/** What the answer that granted a hold says about its lease. */
export interface Grant {
  /** 201: granted now; 200: the session held it already. */
  status: number;
  /** When the request left, on the monotonic clock. */
  sent: number;
  /** As the server reported it, ms (0: unknown). */
  ttl: number;
  /** expires_at - acquired_at by the server's clock, ms. */
  left: number;
  inSession: boolean;
}

/** isLostAnswer reports whether a renew's error means the hold is over. */
export function isLostAnswer(err: unknown): boolean {
  return err instanceof NotHeldError || err instanceof NoLeaderError || err instanceof TokenMismatchError || err instanceof SessionNotFoundError;
}

/**
 * Hold is what every hold a Client keeps alive shares, whatever its kind
 * (a Lock, a Leadership, a Permit, an RWHold, a LockSet): the background renewal, the deadline by the
 * client's own clock, registration with the Client's event stream, and
 * how the hold ends (lost or given back). keys are the holds whose end,
 * as events record it, ends this one: its own key, or a lock set's locks.
 *
 * The client judges the lease by its own monotonic clock, erring on the
 * side of "lost": a lease of TTL d whose latest successful renew (or the
 * grant) was sent at t is taken to end at t+d, although the server granted
 * it a little later. The hold is lost then unless a renew succeeded.
 */
export class Hold {
  private readonly lostCtl = new AbortController();
  /** Aborts, with a LockLostError as its reason, when the hold is known lost. */
  readonly lost = this.lostCtl.signal;
  // Replaced when a refused handOn resumes the renewal.
  private stopCtl = new AbortController();
  private renewing: Promise<void> = Promise.resolve();
  private ttl = 0;
  private deadline = 0;
  private expiry?: ReturnType<typeof setTimeout>;
  private lastErr?: unknown;
  private err?: LockLostError;
  private finished = false;
  private releasing?: Promise<void>;
  private handing?: Promise<unknown>;
  private released = false;
  private releaseErr?: unknown;
  // Requests to yield: the callback onYield set, and those heard before
  // it was (at most yieldBuffer).
  private yieldCb?: (ev: Event) => void;
  private heardYields: Event[] = [];

  readonly keys: HoldKey[];

  constructor(
    readonly c: Client,
    readonly key: HoldKey,
    readonly ops: HoldOps,
    keys?: HoldKey[],
  ) {
    this.keys = keys && keys.length > 0 ? keys : [key];
  }

  /** The reason the hold was lost, or undefined. */
  get lostError(): LockLostError | undefined {
    return this.err;
  }

  /**
   * start keeps the hold alive from its grant on: it works out the lease's
   * deadline, renews at once when the first renew is due already, then
   * starts the renewal, the expiry timer and the watch. On a throw nothing
   * runs, and a hold with a lease of its own whose deadline is unknown has
   * been given back.
   */
  async start(op: string, g: Grant, signal?: AbortSignal): Promise<void> {
    let ttl = g.ttl > 0 ? g.ttl : minTTL;
    let deadline = 0; // 0: unknown
    if (!g.inSession) {
      // The hold's own lease was granted with ttl after we sent the
      // request, so it runs out no sooner than sent+ttl.
      deadline = g.sent + ttl;
    } else if (g.status === 201) {
      // The session's lease is older than this request; the server
      // measured what was left of it when the hold began.
      deadline = g.sent + Math.min(ttl, g.left);
    } // 200: the session held it already; nothing says how much is left.
    if (deadline === 0 || deadline - now() < (2 * ttl) / 3) {
      // The first renew is due already (a long wait, a session lease that
      // ran down): renew before handing the hold over.
      const rsent = now();
      try {
        const rttl = await this.ops.renew(this.c.timeoutMs, signal ?? new AbortController().signal);
        if (rttl > 0) ttl = rttl;
        deadline = rsent + ttl;
      } catch (e) {
        if (isLostAnswer(e)) {
          throw new LockLostError(this.key.kind, this.key.name, this.key.token, `${op}: granted, then lost before its first renew: ${(e as Error).message}`, e);
        }
        if (deadline === 0 || deadline <= now()) {
          if (!g.inSession) await this.ops.release().catch(() => {});
          throw e;
        }
        // Still ours for a while: the background renewal keeps trying.
      }
    }
    this.ttl = ttl;
    this.deadline = deadline;
    this.expiry = background(setTimeout(() => this.checkExpiry(), deadline - now()));
    // keepAlive handles its own errors; anything else it throws ends the hold.
    this.renewing = this.keepAlive().catch((e) => this.lose(`renewal failed: ${(e as Error)?.message ?? e}`, e));
    this.c.watcher.register(this);
  }

  /**
   * keepAlive renews the hold until it stops: at a third of the TTL, and
   * again soon after a renew fails, until the deadline passes.
   */
  private async keepAlive(): Promise<void> {
    const stop = this.stopCtl.signal;
    let failures = 0;
    while (!stop.aborted) {
      let wait = this.deadline - (2 * this.ttl) / 3 - now();
      if (failures > 0) wait = Math.min(this.c.backoff(failures - 1), this.ttl / 6);
      try {
        await sleep(wait, stop, true);
      } catch {
        return;
      }
      const sent = now();
      // A renew that answers after the deadline is of no use: the hold is
      // lost by then. Each attempt gets a third of the TTL, so a hung node
      // leaves time to try another.
      const { ctl, unlink } = linked(stop);
      const t = background(setTimeout(() => ctl.abort(new Error("renew: the lease's deadline passed")), this.deadline - now()));
      let err: unknown;
      let rttl = 0;
      try {
        rttl = await this.ops.renew(Math.min(this.c.timeoutMs, Math.max(this.ttl / 3, 100)), ctl.signal);
      } catch (e) {
        err = e ?? new Error("renew failed");
      } finally {
        clearTimeout(t);
        unlink();
      }
      if (stop.aborted) return;
      if (err === undefined) {
        failures = 0;
        this.extend(sent, rttl);
      } else if (isLostAnswer(err)) {
        this.lose(`renew answered: ${(err as Error).message}`, err);
        return;
      } else {
        failures++;
        this.lastErr = err;
      }
    }
  }

  /**
   * renewNow renews at once, besides the background renewal, and moves
   * the deadline on. It rejects with the LockLostError when the hold was
   * lost before or the renew finds it lost; another error leaves the hold
   * as it was.
   */
  async renewNow(signal?: AbortSignal): Promise<void> {
    if (this.err) throw this.err;
    const sent = now();
    let rttl: number;
    try {
      rttl = await this.ops.renew(this.c.timeoutMs, signal ?? new AbortController().signal);
    } catch (e) {
      if (isLostAnswer(e)) {
        this.lose(`renew answered: ${(e as Error).message}`, e);
        if (this.err) throw this.err;
      }
      throw e;
    }
    this.extend(sent, rttl);
  }

  /** extend records a successful renew sent at sent, which reported ttl. */
  private extend(sent: number, ttl: number): void {
    if (this.finished) return;
    if (ttl > 0) this.ttl = ttl;
    const d = sent + this.ttl;
    if (d > this.deadline) {
      this.deadline = d;
      clearTimeout(this.expiry);
      this.expiry = background(setTimeout(() => this.checkExpiry(), d - now()));
    }
    this.lastErr = undefined;
  }

  private checkExpiry(): void {
    if (this.finished) return;
    const left = this.deadline - now();
    if (left > 0) {
      this.expiry = background(setTimeout(() => this.checkExpiry(), left));
      return;
    }
    let why = `its ${this.ttl} ms lease ran out by this client's clock with no renew confirmed`;
    if (this.lastErr) why += `; last renew: ${(this.lastErr as Error).message ?? this.lastErr}`;
    this.lose(why, this.lastErr);
  }

  /** onYield sets cb for the requests to yield made of this hold, and passes it those heard before. */
  onYield(cb: (ev: Event) => void): void {
    this.yieldCb = cb;
    const heard = this.heardYields;
    this.heardYields = [];
    for (const ev of heard) cb(ev);
  }

  /** askedToYield passes ev, a yield_requested event of this hold's, to the callback, or keeps it for the callback to come. */
  askedToYield(ev: Event): void {
    if (this.finished) return;
    if (this.yieldCb) this.yieldCb(ev);
    else if (this.heardYields.length < yieldBuffer) this.heardYields.push(ev);
  }

  /** lose ends the hold as lost, once. */
  lose(why: string, cause?: unknown, event?: Event): void {
    if (this.err || this.finished) return;
    this.err = new LockLostError(this.key.kind, this.key.name, this.key.token, why, cause, event);
    this.finish();
    this.lostCtl.abort(this.err);
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.expiry);
    this.stopCtl.abort();
    this.c.watcher.unregister(this);
  }

  /**
   * release stops the renewal and gives the hold back with its token. It
   * resolves when it did, and rejects with the LockLostError when the hold
   * was lost before. Calling it again gives the same result. When it gets
   * no answer (UnavailableError), another call tries again.
   */
  release(signal?: AbortSignal): Promise<void> {
    // After a hand-on under way: if it ended the hold, this answers as a release repeated.
    if (this.handing) return this.handing.then(() => this.release(signal), () => this.release(signal));
    if (!this.releasing) {
      this.releasing = this.doRelease(signal).finally(() => {
        if (!this.released) this.releasing = undefined;
      });
    }
    return this.releasing;
  }

  /**
   * handOn ends the hold by call, a request that hands it to another (a
   * leadership's transfer), as release ends it by its release, and
   * resolves with what call does: the renewal and the watch stop first,
   * so its own end is no loss. A refusal that says the hold goes on
   * (CandidateNotWaitingError, ElectionHeldError), or no answer, resumes
   * them and rejects with it: if the hold did change hands unseen, the
   * next renew finds it lost. It rejects with the LockLostError when the
   * hold was lost before.
   */
  handOn<T>(call: (signal?: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const before = Promise.all([this.handing, this.releasing].map((p) => p?.catch(() => {})));
    const p = before.then(() => this.doHandOn(call, signal));
    const mine = p.finally(() => {
      if (this.handing === mine) this.handing = undefined;
    });
    mine.catch(() => {});
    this.handing = mine;
    return p;
  }

  private async doHandOn<T>(call: (signal?: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.released) throw this.releaseErr ?? new LockLostError(this.key.kind, this.key.name, this.key.token, "given up already");
    this.stopCtl.abort();
    await this.renewing;
    this.c.watcher.unregister(this);
    let result: T;
    try {
      result = await call(signal);
    } catch (e) {
      const lost = isLostAnswer(e);
      if (lost) this.lose(`answered: ${(e as Error).message}`, e);
      if (lost || this.finished) {
        this.released = true;
        this.finish();
        this.releaseErr = this.err;
        throw this.err ?? e;
      }
      this.stopCtl = new AbortController();
      this.renewing = this.keepAlive().catch((e) => this.lose(`renewal failed: ${(e as Error)?.message ?? e}`, e));
      this.c.watcher.register(this);
      throw e;
    }
    this.released = true;
    this.finish();
    if (this.err) {
      this.releaseErr = this.err;
      throw this.err;
    }
    return result;
  }

  private async doRelease(signal?: AbortSignal): Promise<void> {
    if (this.released) {
      if (this.releaseErr) throw this.releaseErr;
      return;
    }
    // Renewal stops first: a renew racing the release could only make a
    // lost hold look held for a moment.
    this.stopCtl.abort();
    await this.renewing;
    // Before the release: its own end's event is no loss.
    this.c.watcher.unregister(this);
    // Even a hold the client judged lost is given back: its clock errs
    // early, so the server may still have it, and others should not wait
    // for the lease to run out.
    let err: unknown;
    try {
      await this.ops.release(signal);
    } catch (e) {
      err = e;
    }
    if (err !== undefined && !isLostAnswer(err)) {
      // No answer: another call may try again. A hold already lost says
      // so first.
      throw this.err ?? err;
    }
    if (err !== undefined) this.lose(`release answered: ${(err as Error).message}`, err);
    this.released = true;
    this.finish();
    if (this.err) {
      this.releaseErr = this.err;
      throw this.err;
    }
  }
}

/**
 * HoldWatcher is a Client's one event stream for all the holds it keeps
 * (locks, leaderships, permits, read/write lock holds and lock sets), so that a hold is lost as soon as the audit
 * trail records its end (revoked, expired, session_expired, or released or
 * resigned by someone else), rather than at the next renew.
 *
 * One stream per Client, not one per lock: nodes cap event streams per
 * client address and per credential. While every hold is of one thing
 * (one lock, election, semaphore or read/write lock, the usual case) the stream asks for
 * that thing's events only (lock=NAME, or kind=KIND&name=NAME); holds of
 * several things widen it to every event, and it narrows again when they
 * end. A change of filter reconnects from where the old stream was, so no
 * event falls in between.
 *
 * The stream only ever makes a hold lost sooner: renewal stays the
 * liveness check. A stream that cannot connect, or that a node refuses,
 * changes nothing; the hold is then lost by a renew's answer or its TTL.
 */
export class HoldWatcher {
  // holds by kind, name and token (a lock set's under each of its
  // locks): several share a key when a session acquired the lock again
  // (a 200).
  private holds = new Map<string, { key: HoldKey; hs: Hold[] }>();
  // ended remembers ends of holds not (yet) registered, oldest first: a
  // revoke can be streamed between the grant's answer and registration.
  private ended = new Map<string, Event>();
  // The current stream: ctl is undefined when none runs. It delivers the
  // events after revision from, of filter (undefined: every event); pos
  // is the latest revision it delivered; gen tells a stream's events from
  // those of the stream it replaced.
  private ctl?: AbortController;
  private filter?: Thing;
  private from = 0;
  private pos = 0;
  private gen = 0;

  constructor(private readonly c: Client) {}

  /** streaming reports whether an event stream is running (for tests and diagnostics). */
  get streaming(): boolean {
    return this.ctl !== undefined;
  }

  register(h: Hold): void {
    for (const k of h.keys) {
      const ev = this.ended.get(keyString(k));
      if (ev) {
        h.lose(endedWhy(ev), undefined, ev);
        return;
      }
    }
    const f = this.filter;
    let covered = this.ctl !== undefined;
    for (const k of h.keys) {
      const ks = keyString(k);
      const e = this.holds.get(ks) ?? { key: k, hs: [] };
      e.hs.push(h);
      this.holds.set(ks, e);
      covered &&= (f === undefined || (f.kind === k.kind && f.name === k.name)) && this.from < k.token;
    }
    if (!covered) {
      // The events after token-1 include every end of this hold; the
      // events after pos, every event the other holds still wait for.
      this.restart(Math.min(this.resume(), ...h.keys.map((k) => k.token - 1)));
    }
  }

  unregister(h: Hold): void {
    let removed = false;
    for (const k of h.keys) {
      const ks = keyString(k);
      const e = this.holds.get(ks);
      const i = e ? e.hs.indexOf(h) : -1;
      if (!e || i < 0) continue;
      e.hs.splice(i, 1);
      removed = true;
      if (e.hs.length === 0) this.holds.delete(ks);
    }
    if (!removed) return;
    if (this.holds.size === 0) {
      this.stop();
      this.ended.clear();
    } else if (this.filter === undefined && this.wantFilter() !== undefined) {
      this.restart(this.resume());
    }
  }

  /** wantFilter is the holds' thing when they are all of the same, else undefined (every event). */
  private wantFilter(): Thing | undefined {
    let t: Thing | undefined;
    for (const { key: k } of this.holds.values()) {
      if (t && (t.kind !== k.kind || t.name !== k.name)) return undefined;
      t = { kind: k.kind, name: k.name };
    }
    return t;
  }

  /**
   * resume is where a new stream must start so the current one's holds
   * miss nothing: the latest revision it delivered, again (the stream may
   * have been cut in the middle of that revision's events), or where it
   * started; with no stream running, where the oldest hold began.
   */
  private resume(): number {
    if (this.ctl) return Math.max(this.from, this.pos - 1);
    let from = Number.MAX_SAFE_INTEGER;
    for (const { key } of this.holds.values()) from = Math.min(from, key.token - 1);
    return from;
  }

  private stop(): void {
    this.ctl?.abort();
    this.ctl = undefined;
    this.gen++;
  }

  private restart(since: number): void {
    this.stop();
    const ctl = new AbortController();
    this.ctl = ctl;
    this.filter = this.wantFilter();
    this.from = Math.max(since, 0);
    this.pos = 0;
    const gen = this.gen;
    const f = this.filter;
    const o = f === undefined ? {} : f.kind === kindLock ? { lock: f.name } : { kind: f.kind, name: f.name };
    // Since 0 would mean "from now"; revision 0 holds no event anyway.
    const src = new EventsSource(this.c, { ...o, since: Math.max(since, 1) }, (ev) => this.handle(gen, ev));
    // A refused stream (a 4xx: no credential for events, say) is not
    // retried here; renewals go on, and the next registration tries again.
    runStream(this.c, "hold watch", src, ctl.signal)
      .catch(() => {})
      .finally(() => {
        if (this.gen === gen) this.ctl = undefined;
      });
  }

  private handle(gen: number, ev: Event): void {
    if (this.gen !== gen) return; // a replaced stream's: its successor delivers it again
    this.pos = Math.max(this.pos, ev.revision);
    const k = eventHold(ev);
    if (ev.type === "yield_requested") {
      for (const h of [...(this.holds.get(keyString(k))?.hs ?? [])]) h.askedToYield(ev);
      return;
    }
    if (!endsHold(k.kind, ev.type)) return;
    const ks = keyString(k);
    const e = this.holds.get(ks);
    if (e) {
      // A released or resigned event for a registered hold is someone
      // else's doing: the hold's own release unregisters it first.
      for (const h of [...e.hs]) h.lose(endedWhy(ev), undefined, ev);
    } else if (!this.ended.has(ks)) {
      this.ended.set(ks, ev);
      if (this.ended.size > maxEndedMemory) this.ended.delete(this.ended.keys().next().value!);
    }
  }
}

/** eventHold is the hold ev is about; a lock's events name it in lock too. */
function eventHold(ev: Event): HoldKey {
  const kind = ev.kind || kindLock;
  let name = ev.name ?? "";
  if (kind === kindLock && ev.lock) name = ev.lock;
  return { kind, name, token: ev.token ?? 0 };
}

/** endsHold reports whether an event of type typ ends a hold of kind. */
function endsHold(kind: string, typ: string): boolean {
  switch (typ) {
    case "revoked":
    case "expired":
    case "session_expired":
      return true;
    case "released":
      return kind === kindLock || kind === kindSemaphore || kind === kindRWLock;
    case "resigned":
      return kind === kindElection;
  }
  return false;
}

function endedWhy(ev: Event): string {
  const why = `${ev.type} at revision ${ev.revision}${ev.detail ? ": " + ev.detail : ""}`;
  // One lock of a set: say which, since it ends the whole set.
  return ev.set?.length ? `lock "${ev.lock || ev.name}" ${why}` : why;
}

