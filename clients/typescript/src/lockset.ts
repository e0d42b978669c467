import type { LockLostError } from "./errors.js";
import type { Hold } from "./hold.js";
import type { Event, LockInfo, LockSetInfo } from "./types.js";
import { toMillis } from "./util.js";

/**
 * LockSet is several locks held together, granted all at once with one
 * fencing token, that renews itself (one lease, or the session, for all
 * of them) at about a third of its TTL until release() or until it is
 * lost, by the same machinery as a Lock (client clock, renewals, the
 * Client's event stream).
 *
 * Each lock of a set is an ordinary lock that can be renewed, released
 * and revoked on its own, and the set is whole only while every one is
 * held: `lost` aborts as soon as any of them is known lost (revoked,
 * expired, released by its token elsewhere, its session ended, a renew of
 * the set refused, or the lease run out by this client's clock). Its
 * reason is a LockLostError naming the lock.
 */
export class LockSet {
  private current: LockSetInfo;
  private readonly ns: string[];

  /** @internal */
  constructor(
    private readonly hold: Hold,
    info: LockSetInfo,
  ) {
    this.current = info;
    this.ns = [...info.names];
  }

  /** The set's locks, in the order the acquire gave them. */
  get names(): string[] {
    return [...this.ns];
  }

  /** The fencing token of every lock of the set. It never changes while the set is held. */
  get token(): number {
    return this.hold.key.token;
  }

  /** The set's locks as the latest acquire or renew described them, in the order of names. */
  get locks(): LockInfo[] {
    return this.current.locks.map(copyLock);
  }

  /** The set as the latest acquire or renew described it. */
  get info(): LockSetInfo {
    return { ...this.current, names: [...this.current.names], locks: this.current.locks.map(copyLock) };
  }

  /** Aborts when any lock of the set is known lost; its reason is a LockLostError. A clean release does not abort it. */
  get lost(): AbortSignal {
    return this.hold.lost;
  }

  /** Why the set was lost, or undefined while it is held or after a clean release. */
  get err(): LockLostError | undefined {
    return this.hold.lostError;
  }

  /** onYield calls cb(event) for each request that one of the set's locks give way (event.lock says which), as Lock.onYield does. */
  onYield(cb: (event: Event) => void): void {
    this.hold.onYield(cb);
  }

  /**
   * renew renews the set now, besides the background renewal, and
   * resolves with it as the answer describes it. It rejects with the
   * LockLostError when the set was lost before, or when a lock of it is
   * found lost.
   */
  async renew(signal?: AbortSignal): Promise<LockSetInfo> {
    await this.hold.renewNow(signal);
    return this.info;
  }

  /**
   * release stops the renewal and ends every lock of the set still held
   * with its token, in one transaction, each handed to its next waiter.
   * It rejects with the LockLostError when the set was lost before (the
   * locks still held are released all the same). Calling it again gives
   * the same result. When it gets no answer (UnavailableError) the
   * outcome is unknown and another call tries again; without one the
   * lease runs out after its TTL.
   */
  release(signal?: AbortSignal): Promise<void> {
    return this.hold.release(signal);
  }

  /** @internal record takes a renew's answer, keeping the metadata it leaves out; it returns the TTL reported, ms (0: none). */
  record(info: LockSetInfo): number {
    const old = new Map(this.current.locks.map((l) => [l.name, l.metadata]));
    const locks = (info.locks ?? []).map((l) => ({ ...l, metadata: l.metadata ?? old.get(l.name) ?? {} }));
    this.current = { ...info, locks };
    const ttl = locks[0]?.ttl;
    return ttl ? toMillis(ttl) : 0;
  }
}

function copyLock(l: LockInfo): LockInfo {
  return { ...l, metadata: { ...l.metadata }, ...(l.set ? { set: [...l.set] } : {}) };
}
