import type { Client } from "./client.js";
import type { LockLostError } from "./errors.js";
import { Hold } from "./hold.js";
import type { Event, HoldInfo, LeaderInfo, LockInfo, PermitInfo, RWHoldInfo, RWMode } from "./types.js";
import { toMillis } from "./util.js";

/**
 * Kept is what a Lock, a Permit and an RWHold share: the Hold that renews
 * it until release() or until it is lost, and what the latest acquire or
 * renew said of it. Their info differs; their handling does not.
 */
export abstract class Kept<I extends KeptInfo> {
  protected current: I;

  /** @internal */
  constructor(
    private readonly hold: Hold,
    info: I,
  ) {
    this.current = info;
  }

  /** The name of what is held: the lock, the semaphore, the read/write lock. */
  get name(): string {
    return this.hold.key.name;
  }

  /** The fencing token: pass it with every write the hold protects. It never changes while the hold lasts. */
  get token(): number {
    return this.hold.key.token;
  }

  /** The hold as the latest acquire or renew described it. */
  get info(): I {
    return { ...this.current, metadata: { ...this.current.metadata } };
  }

  /** Aborts when the hold is known lost; its reason is a LockLostError. A clean release does not abort it. */
  get lost(): AbortSignal {
    return this.hold.lost;
  }

  /** Why the hold was lost, or undefined while it is held or after a clean release. */
  get err(): LockLostError | undefined {
    return this.hold.lostError;
  }

  /**
   * onYield calls cb(event) for each request that this hold give way
   * (Client.yield and its kin), within milliseconds of it, from the
   * Client's event stream: event is the yield_requested Event, whose
   * owner, credential and reason are the asker's. Requests heard before
   * the call are passed at once. The hold stays held: release it if you
   * choose to.
   */
  onYield(cb: (event: Event) => void): void {
    this.hold.onYield(cb);
  }

  /**
   * release stops the renewal and gives the hold back with its token; for
   * a permit the oldest waiter gets it, for a read/write lock's hold the
   * oldest waiters that can then hold. It resolves when it did, and
   * rejects with the LockLostError when the hold was lost before. Calling
   * it again gives the same result. When it gets no answer
   * (UnavailableError) the outcome is unknown and another call tries
   * again; without one the lease runs out after its TTL.
   */
  release(signal?: AbortSignal): Promise<void> {
    return this.hold.release(signal);
  }

  /** @internal record takes a renew's answer, keeping the metadata it leaves out; it returns the TTL reported, ms (0: none). */
  record(info: I): number {
    this.current = { ...info, metadata: info.metadata ?? this.current.metadata };
    return info.ttl ? toMillis(info.ttl) : 0;
  }
}

/** What every kept hold's info has: a Lock's, a permit's, a read/write lock hold's. */
type KeptInfo = LockInfo | HoldInfo;

/**
 * Lock is a held lock that renews itself, at about a third of its TTL,
 * until release() or until it is lost.
 *
 * `lost` aborts as soon as the lock is known lost: the audit trail
 * recorded the hold's end (revoked, expired, its session expired, or
 * released by its token from elsewhere), which the Client's one event
 * stream delivers within milliseconds; a renew was answered not_held or
 * token_mismatch; or the TTL ran out by this client's clock with no renew
 * confirmed. Its reason is a LockLostError saying which. Pass it to fetch
 * and timers, or check `lost.aborted`, and stop the protected work.
 *
 * `lost` can only fire after the fact: only work checked against `token`,
 * by whatever the lock protects, is safe from a holder that lost its lock
 * without knowing (see Client.putFenced).
 */
export class Lock extends Kept<LockInfo> {}

/**
 * Leadership is an election won: it renews itself until resign() or until
 * it is lost, by the same machinery as a Lock (client clock, renewals, the
 * Client's event stream). `lost` aborts within a second of a revoke, an
 * expiry or a resignation elsewhere. Its token fences the leader's writes:
 * `c.putFenced(resource, ld.token, value, { election: ld.name })`.
 */
export class Leadership {
  private current: LeaderInfo;
  // proclaims counts proclaim calls begun, so that a renew answered
  // before a proclaim does not bring an older value back.
  private proclaims = 0;

  /** @internal */
  constructor(
    private readonly hold: Hold,
    private readonly c: Client,
    info: LeaderInfo,
  ) {
    this.current = info;
  }

  /** The election's name. */
  get name(): string {
    return this.hold.key.name;
  }

  /** The leadership's fencing token. It never changes while the leadership lasts. */
  get token(): number {
    return this.hold.key.token;
  }

  /** The leadership's term: the count of leaders the election has had, this one included. */
  get term(): number {
    return this.current.term;
  }

  /** The leader's value as the latest campaign, renew or proclaim answer described it. */
  get value(): unknown {
    return this.current.value;
  }

  /** The leadership as the latest campaign, renew or proclaim described it. */
  get info(): LeaderInfo {
    return { ...this.current, metadata: { ...this.current.metadata } };
  }

  /** Aborts when the leadership is known lost; its reason is a LockLostError. */
  get lost(): AbortSignal {
    return this.hold.lost;
  }

  /** Why the leadership was lost, or undefined. */
  get err(): LockLostError | undefined {
    return this.hold.lostError;
  }

  /** onYield calls cb(event) for each request that the leader resign (Client.yieldLeadership), as Lock.onYield does. */
  onYield(cb: (event: Event) => void): void {
    this.hold.onYield(cb);
  }

  /**
   * proclaim sets the leader's value, keeping token and term; observers
   * are told. It rejects with NoLeaderError or TokenMismatchError when the
   * leadership is over (lost aborts soon after).
   */
  async proclaim(value: unknown, signal?: AbortSignal): Promise<void> {
    this.proclaims++;
    const info = await this.c.proclaim(this.name, this.token, value, { signal });
    this.set(info);
  }

  /**
   * resign stops the renewal and ends the leadership with its token; the
   * first candidate in line leads next. It resolves when it resigned, and
   * rejects with the LockLostError when the leadership was lost before.
   * Calling it again gives the same result.
   */
  resign(signal?: AbortSignal): Promise<void> {
    return this.hold.release(signal);
  }

  /**
   * transfer hands the leadership to the candidate to, which must be
   * waiting in line, ahead of the others (Client.transferLeadership), and
   * resolves with the new leader's. The leadership is then over, as after
   * resign(): lost does not abort. When the transfer is refused and the
   * leadership goes on (CandidateNotWaitingError, ElectionHeldError inside
   * its at-least window) or gets no answer, it keeps renewing itself and
   * the promise rejects with that error; with the LockLostError when the
   * leadership was lost before.
   */
  transfer(to: string, signal?: AbortSignal): Promise<LeaderInfo> {
    return this.hold.handOn((s) => this.c.transferLeadership(this.name, this.token, to, { signal: s }), signal);
  }

  /** @internal */
  async renew(timeout: number, signal: AbortSignal): Promise<number> {
    const seq = this.proclaims;
    const info = await this.c.renewLeadership(this.name, this.token, { signal, timeout });
    if (this.proclaims !== seq) info.value = this.current.value;
    this.set(info);
    return info.ttl ? toMillis(info.ttl) : 0;
  }

  private set(info: LeaderInfo): void {
    const old = this.current;
    this.current = { ...info, candidates: undefined, metadata: info.metadata ?? old.metadata, elected_at: info.elected_at ?? old.elected_at };
  }
}

/**
 * Permit is one of a semaphore's permits: it renews itself until release()
 * or until it is lost, by the same machinery as a Lock (client clock,
 * renewals, the Client's event stream). `lost` aborts within a second of a
 * revoke, an expiry, its session's end or a release by its token from
 * elsewhere. Its token is the permit's own fencing token; limit is the
 * semaphore's.
 */
export class Permit extends Kept<PermitInfo> {
  /** How many permits the semaphore has. */
  get limit(): number {
    return this.current.limit;
  }
}

/**
 * RWHold is a read/write lock's hold, a reader's or the writer's: it renews
 * itself until release() or until it is lost, by the same machinery as a
 * Lock (client clock, renewals, the Client's event stream). `lost` aborts
 * within a second of a revoke, an expiry, its session's end or a release
 * by its token from elsewhere. Its token is the hold's own fencing token;
 * a write hold's is greater than that of every hold that ended before it,
 * and a fenced write naming the rwlock accepts the current write hold's
 * token only.
 */
export class RWHold extends Kept<RWHoldInfo> {
  /** "read" or "write". */
  get mode(): RWMode {
    return this.current.mode;
  }

  /** @internal */
  override record(info: RWHoldInfo): number {
    return super.record({ ...info, mode: info.mode ?? this.current.mode });
  }
}
