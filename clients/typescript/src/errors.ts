import type { HoldInfo, LeaderInfo, LockInfo, PermitInfo, Problem } from "./types.js";

/**
 * What a caller may do about a problem, as package problem says:
 * "final" — the answer is about the request itself; "later" — a cap
 * refused it before it did anything, any request may be sent again after
 * Retry-After; "elsewhere" — this node could not serve it, the outcome may
 * be unknown, only idempotent requests are repeated.
 */
export type Retry = "final" | "later" | "elsewhere";

/**
 * An error answer of a baton node, or no answer at all (UnavailableError
 * with an empty code). Match with instanceof on the subclasses; code says
 * the server's code even for one this client does not know.
 */
export class BatonError extends Error {
  /** The call that got the answer: `acquire "x"`. */
  op = "";
  /** The HTTP status; 0 when no answer came. */
  status: number;
  /** The server's stable, machine-readable code ("lock_held"); "" when none. */
  code: string;
  title: string;
  detail: string;
  /** The request field at fault (invalid_request). */
  field?: string;
  /** The largest token the resource has seen (stale_token). */
  maxToken?: number;
  /**
   * The cap that was reached (too_many_waiters and the other caps), the
   * value of the credential's quota that was reached (quota_exceeded), or
   * the semaphore's limit (limit_mismatch).
   */
  limit?: number;
  /** The role the refused call needs (forbidden): "read", "write" or "admin". */
  role?: "read" | "write" | "admin";
  /**
   * The prefixes of the credential's rules, for a credential scoped to
   * name prefixes (forbidden): the names it may act on.
   */
  prefixes?: string[];
  /**
   * The credential's quota that was reached (quota_exceeded): "holds",
   * "waiters", "sessions", "streams" or "rate"; limit is its value (for
   * rate, requests a second, rounded up).
   */
  quota?: "holds" | "waiters" | "sessions" | "streams" | "rate";
  /** The key's revision (revision_mismatch; 0: it does not exist), or the revision the key was found missing at (key_not_found). */
  revision?: number;
  /** How long the server asks to wait, in milliseconds (lock-delay, 503, the caps). */
  retryAfter?: number;
  /**
   * A wait with keep_place ran out and the session keeps its place in the
   * queue (a HeldError, ElectionHeldError or SemaphoreFullError): its next
   * acquire waits from there. The client's own loop of requests for a
   * wait over ClientOptions.maxRequestWait handles these; false otherwise.
   */
  placeKept = false;
  /** The request's X-Request-ID: quote it when reporting a problem. */
  requestId?: string;
  /** The problem document as sent, when there was one. */
  problem?: Problem;

  constructor(status: number, code: string, title: string, detail: string, options?: { cause?: unknown }) {
    super(detail || title, options);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.message = this.describe();
  }

  /** setOp names the call that got the answer, in op and in the message. */
  setOp(op: string): this {
    if (!this.op) {
      this.op = op;
      this.message = this.describe();
    }
    return this;
  }

  // describe is one line: the call, what the server said, and its status
  // and code, as in `revoke "wlock": lock not held (404 not_held)`.
  private describe(): string {
    let msg = this.detail || this.title;
    if (this.op) msg = `${this.op}: ${msg.startsWith(this.op + ": ") ? msg.slice(this.op.length + 2) : msg}`;
    msg = msg.replace(/\s+/g, " ");
    const tail = this.status ? ` (${this.status}${this.code ? " " + this.code : ""})` : "";
    return msg + tail;
  }
}

// Requests the server cannot take as sent.
export class InvalidRequestError extends BatonError {}
export class BodyTooLargeError extends BatonError {}
export class ValueTooLargeError extends BatonError {}
export class UnsupportedMediaTypeError extends BatonError {}
export class RouteNotFoundError extends BatonError {}
export class MethodNotAllowedError extends BatonError {}

// Locks, sessions, fenced values, elections, semaphores.
/** Someone else holds the lock (or lock-delay forbids taking it: retryAfter). */
export class HeldError extends BatonError {
  /** The current holder, when the server said (a lock's lock_held). */
  holder?: LockInfo;
  /**
   * The holds in the way, oldest first: a read/write lock's holds (each
   * with its mode), or the locks of a lock set held by others.
   */
  holders?: HoldInfo[];
}
/** Nobody holds the lock (with this token). */
export class NotHeldError extends BatonError {}
/** The lock is held, but by another token. */
export class TokenMismatchError extends BatonError {}
/** A fenced write carried a token below one already seen: maxToken. */
export class StaleTokenError extends BatonError {}
/** A fenced write named a lock or election its token does not hold. */
export class NotHolderError extends BatonError {}
/** A fenced write carried a token greater than any issued. */
export class UnknownTokenError extends BatonError {}
export class SessionNotFoundError extends BatonError {}
/** No such fenced value. */
export class NotFoundError extends BatonError {}
export class NotDelayedError extends BatonError {}
/** The election has a leader and the campaign did not get to lead. */
export class ElectionHeldError extends BatonError {
  /** The current leader, when the server said. */
  leader?: LeaderInfo;
}
/** Nobody leads the election (with this token). */
export class NoLeaderError extends BatonError {}
/** A leadership transfer named a candidate with no campaign waiting in line; the leader still leads. */
export class CandidateNotWaitingError extends BatonError {}
/** Every permit of the semaphore is taken and the acquire did not get one. */
export class SemaphoreFullError extends BatonError {
  /** The permits held, oldest first, when the server said. */
  holders?: PermitInfo[];
}
/** The semaphore's permits are held or waited for under another limit: limit is the semaphore's. */
export class LimitMismatchError extends BatonError {}
/** The key does not exist; revision is the revision it was found missing at. */
export class KeyNotFoundError extends BatonError {}
/** A compare-and-set lost: revision is the key's (0: it does not exist). */
export class RevisionMismatchError extends BatonError {}

// Caps: nothing was done; limit is the cap, retryAfter when to try again.
export class TooManyWaitersError extends BatonError {}
export class TooManyLocksInSessionError extends BatonError {}
export class TooManySessionsError extends BatonError {}
export class TooManyLocksError extends BatonError {}
export class TooManyFencedValuesError extends BatonError {}
export class TooManyKeysError extends BatonError {}
export class TooManyStreamsError extends BatonError {}
export class RateLimitedError extends BatonError {}
/** The credential reached one of its quotas: quota says which, limit its value. */
export class QuotaExceededError extends BatonError {}

// Who may call. Any 401 is an UnauthorizedError and any 403 a
// ForbiddenError: a proxy may answer them without a problem body.
export class UnauthorizedError extends BatonError {}
/**
 * The credential's role does not allow the call (role: the one it needs),
 * the name is outside the credential's prefixes (prefixes), or the hold
 * belongs to another credential.
 */
export class ForbiddenError extends BatonError {}
export class CrossOriginError extends ForbiddenError {}
export class HostNotAllowedError extends BatonError {}

/**
 * No node could serve the call: no etcd quorum, a node shutting down or
 * unreachable, any 5xx. For a call that is not idempotent the outcome is
 * unknown: it may have taken effect.
 */
export class UnavailableError extends BatonError {}
export class ShuttingDownError extends UnavailableError {}
export class InsufficientStorageError extends UnavailableError {}
export class NoSpaceError extends UnavailableError {}
export class StillFullError extends BatonError {}
export class ClientClosedRequestError extends BatonError {}
export class InternalError extends UnavailableError {}

type ErrorClass = new (status: number, code: string, title: string, detail: string, options?: { cause?: unknown }) => BatonError;

/** What this client knows of a problem code: package problem's table. */
export interface CodeInfo {
  status: number;
  retry: Retry;
  error: ErrorClass;
}

/**
 * Every code of package problem (problem/problem.go), with the status the
 * server answers it with and its retry class. test/errors.test.mjs reads
 * the Go table and fails on a code missing here or differing.
 */
export const problemCodes: Readonly<Record<string, CodeInfo>> = {
  invalid_request: { status: 400, retry: "final", error: InvalidRequestError },
  body_too_large: { status: 413, retry: "final", error: BodyTooLargeError },
  value_too_large: { status: 413, retry: "final", error: ValueTooLargeError },
  unsupported_media_type: { status: 415, retry: "final", error: UnsupportedMediaTypeError },
  route_not_found: { status: 404, retry: "final", error: RouteNotFoundError },
  method_not_allowed: { status: 405, retry: "final", error: MethodNotAllowedError },

  lock_held: { status: 409, retry: "final", error: HeldError },
  not_held: { status: 404, retry: "final", error: NotHeldError },
  token_mismatch: { status: 409, retry: "final", error: TokenMismatchError },
  stale_token: { status: 409, retry: "final", error: StaleTokenError },
  not_holder: { status: 409, retry: "final", error: NotHolderError },
  unknown_token: { status: 409, retry: "final", error: UnknownTokenError },
  session_not_found: { status: 404, retry: "final", error: SessionNotFoundError },
  not_found: { status: 404, retry: "final", error: NotFoundError },
  not_delayed: { status: 404, retry: "final", error: NotDelayedError },
  election_held: { status: 409, retry: "final", error: ElectionHeldError },
  no_leader: { status: 404, retry: "final", error: NoLeaderError },
  candidate_not_waiting: { status: 409, retry: "final", error: CandidateNotWaitingError },
  semaphore_full: { status: 409, retry: "final", error: SemaphoreFullError },
  limit_mismatch: { status: 409, retry: "final", error: LimitMismatchError },
  key_not_found: { status: 404, retry: "final", error: KeyNotFoundError },
  revision_mismatch: { status: 409, retry: "final", error: RevisionMismatchError },

  too_many_waiters: { status: 429, retry: "later", error: TooManyWaitersError },
  too_many_locks_in_session: { status: 409, retry: "final", error: TooManyLocksInSessionError },
  too_many_sessions: { status: 429, retry: "later", error: TooManySessionsError },
  too_many_locks: { status: 429, retry: "later", error: TooManyLocksError },
  too_many_fenced_values: { status: 429, retry: "later", error: TooManyFencedValuesError },
  too_many_keys: { status: 507, retry: "final", error: TooManyKeysError },
  too_many_streams: { status: 429, retry: "later", error: TooManyStreamsError },
  rate_limited: { status: 429, retry: "later", error: RateLimitedError },
  quota_exceeded: { status: 429, retry: "later", error: QuotaExceededError },

  unauthorized: { status: 401, retry: "final", error: UnauthorizedError },
  forbidden: { status: 403, retry: "final", error: ForbiddenError },
  cross_origin: { status: 403, retry: "final", error: CrossOriginError },
  host_not_allowed: { status: 421, retry: "final", error: HostNotAllowedError },

  unavailable: { status: 503, retry: "elsewhere", error: UnavailableError },
  shutting_down: { status: 503, retry: "elsewhere", error: ShuttingDownError },
  insufficient_storage: { status: 507, retry: "final", error: InsufficientStorageError },
  still_full: { status: 409, retry: "final", error: StillFullError },
  nospace: { status: 503, retry: "final", error: NoSpaceError },
  client_closed_request: { status: 499, retry: "final", error: ClientClosedRequestError },
  internal: { status: 500, retry: "final", error: InternalError },
};

/** The class of an answer without a code this client knows, by its status. */
function classOfStatus(status: number): ErrorClass {
  if (status >= 500) return UnavailableError;
  if (status === 401) return UnauthorizedError;
  if (status === 403) return ForbiddenError;
  return BatonError;
}

/**
 * errorFromProblem builds the error of an answer: the class of its code,
 * or of its status for a code this client does not know. A body that is
 * no problem document is quoted, briefly, as the detail.
 */
export function errorFromProblem(status: number, body: string, isJSON: boolean, retryAfterHeader: string | null): BatonError {
  let p: Problem | undefined;
  if (isJSON) {
    try {
      const v = JSON.parse(body);
      if (v && typeof v === "object" && typeof v.code === "string" && v.code !== "") p = v as Problem;
    } catch {
      // Not JSON after all: quoted below.
    }
  }
  const info = p ? problemCodes[p.code] : undefined;
  const cls = info?.error ?? classOfStatus(status);
  if (!p) {
    let detail = body.trim();
    if (detail.length > 200) detail = detail.slice(0, 200) + "…";
    return new cls(status, "", `HTTP ${status}`, detail);
  }
  const e = new cls(status, p.code, p.title ?? "", p.detail ?? "");
  e.problem = p;
  e.field = p.field;
  e.maxToken = p.max_token;
  e.revision = p.revision;
  e.limit = p.limit;
  e.role = p.role;
  e.prefixes = p.prefixes;
  e.quota = p.quota;
  e.placeKept = p.place_kept === true;
  e.requestId = p.request_id;
  e.retryAfter = parseRetryAfter(retryAfterHeader) ?? (p.retry_after && p.retry_after > 0 ? p.retry_after * 1000 : undefined);
  if (e instanceof HeldError) {
    e.holder = p.holder;
    e.holders = p.holders;
  }
  if (e instanceof ElectionHeldError) e.leader = p.leader;
  if (e instanceof SemaphoreFullError) e.holders = p.holders as PermitInfo[] | undefined;
  return e;
}

/** parseRetryAfter reads a Retry-After header (seconds or an HTTP date) as milliseconds. */
export function parseRetryAfter(h: string | null): number | undefined {
  if (!h || !h.trim()) return undefined;
  const s = h.trim();
  if (/^\d+$/.test(s)) {
    const n = Number(s);
    return n > 0 ? n * 1000 : undefined;
  }
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(t - Date.now(), 0);
}

/**
 * @internal
 * refused reports whether err is a node's answer about the request itself
 * (a 4xx whose code is final), which no reconnection of a stream can mend;
 * a cap that clears by itself, or a 408, is waited out.
 */
export function refused(err: unknown): boolean {
  if (!(err instanceof BatonError) || err.status < 400 || err.status >= 500 || err.status === 408) return false;
  const info = problemCodes[err.code];
  if (info) return info.retry === "final";
  return err.status !== 429;
}

/**
 * LockLostError is why a Lock, a Leadership, a Permit, an RWHold or a LockSet was lost: the reason of its
 * lost signal. cause says how the loss became known: the audit trail's
 * event (an Event), a renew's answer (a BatonError), or the TTL running
 * out by this client's clock.
 */
export class LockLostError extends Error {
  /** "lock", "election", "semaphore", "rwlock" or "lockset" (lockName: the set's names, comma-separated). */
  readonly kind: string;
  readonly lockName: string;
  readonly token: number;
  /** The event that recorded the hold's end, when that is how it was learned. */
  readonly event?: import("./types.js").Event;

  constructor(kind: string, name: string, token: number, why: string, cause?: unknown, event?: import("./types.js").Event) {
    const what =
      kind === "election" ? `leadership of "${name}"`
      : kind === "semaphore" ? `permit of semaphore "${name}"`
      : kind === "rwlock" ? `hold of read/write lock "${name}"`
      : kind === "lockset" ? `lock set "${name}"`
      : `lock "${name}"`;
    super(`baton: ${what} (token ${token}) lost: ${why}`, { cause });
    this.kind = kind;
    this.lockName = name;
    this.token = token;
    this.event = event;
    this.name = "LockLostError";
  }
}
