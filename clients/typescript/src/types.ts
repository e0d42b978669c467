// The API's documents, as the server sends them: field names as on the
// wire (snake_case), durations as Go duration strings ("30s", "1m30s"),
// times as RFC 3339 strings. test/openapi.test.mjs compares each
// interface here with its schema in openapi/openapi.json, field by field,
// required and optional alike: keep one field per line.
//
// Tokens and revisions are int64 on the server; they are JavaScript numbers
// here, exact up to 2^53, which an etcd revision does not reach.

/** A held lock (schema Lock). */
export interface LockInfo {
  name: string;
  owner: string;
  /** The fencing token: pass it with every write the lock protects. */
  token: number;
  /** The session the lock lives in; absent when it has a lease of its own. */
  session?: string;
  ttl: string;
  acquired_at: string;
  /** When the lease runs out unless renewed, by the server's clock. */
  expires_at: string;
  lock_delay?: string;
  /** The hold's at-least window: nobody else takes the lock before acquired_at plus this, however early the hold ends. */
  min_hold?: string;
  metadata: Record<string, string>;
  /** The queue, first served first; only Client.get fills it in. */
  waiters?: Waiter[];
  /** On a lock of a lock set: every lock of the set, in the order its acquire gave them; they all have this token. */
  set?: string[];
}

/** A lock set as the server grants and renews it (schema LockSet). */
export interface LockSetInfo {
  names: string[];
  /** The fencing token of every lock of the set. */
  token: number;
  /** The set's locks, in the order of names. */
  locks: LockInfo[];
}

/** An acquire queued for a lock, a semaphore or a read/write lock (schema Waiter). */
export interface Waiter {
  owner: string;
  session?: string;
  position: number;
  since: string;
  /** A read/write lock's waiters only: "read" or "write". */
  mode?: RWMode;
  /** A lock set's waiters only: every lock of the set, in whose queues it waits at once. */
  set?: string[];
}

/** An election's leadership (schema Leader). */
export interface LeaderInfo {
  name: string;
  candidate: string;
  /** What the leader published; null when it gave nothing. */
  value: unknown;
  /** The leadership's fencing token, from the same sequence as lock tokens. */
  token: number;
  /** The count of leaders the election has had, this one included. */
  term: number;
  session?: string;
  /** Absent on a change from observe(): it moves with every renewal. */
  ttl?: string;
  elected_at?: string;
  expires_at?: string;
  lock_delay?: string;
  /** The leadership's at-least window: nobody else leads before elected_at plus this. */
  min_hold?: string;
  metadata: Record<string, string>;
  /** Those waiting, in the order they would lead; only Client.leader fills it in. */
  candidates?: Candidate[];
}

/** A campaign waiting to lead (schema Candidate). */
export interface Candidate {
  candidate: string;
  session?: string;
  position: number;
  since: string;
}

/** A read/write lock hold's mode: readers share, a writer excludes everyone. */
export type RWMode = "read" | "write";

/** A semaphore's permit or a read/write lock's hold (schema Hold). */
export interface HoldInfo {
  name: string;
  owner: string;
  /** The hold's own fencing token, from the same sequence as lock tokens. */
  token: number;
  /** A permit's only: how many permits the semaphore has. */
  limit?: number;
  /** A read/write lock hold's only. */
  mode?: RWMode;
  session?: string;
  ttl: string;
  acquired_at: string;
  expires_at: string;
  /** The hold's at-least window: its seat stays taken until acquired_at plus this, however early the hold ends. */
  min_hold?: string;
  metadata: Record<string, string>;
}

/** One of a semaphore's permits: a Hold with its limit. */
export type PermitInfo = HoldInfo & { limit: number };

/** A read/write lock's hold: a Hold with its mode. */
export type RWHoldInfo = HoldInfo & { mode: RWMode };

/** A semaphore's state (schema Semaphore). */
export interface SemaphoreInfo {
  name: string;
  limit: number;
  /** The permits held, oldest first. */
  holders: PermitInfo[];
  /** The acquires waiting, first served first; only Client.semaphore fills it in. */
  waiters?: Waiter[];
}

/** A read/write lock's state (schema RWLock). */
export interface RWLockInfo {
  name: string;
  /** The mode of the holds: "read" (one or more readers) or "write" (one writer). */
  mode: RWMode;
  /** The holds, oldest first. */
  holders: RWHoldInfo[];
  /** The acquires waiting, each with its mode, in the order they will be served; only Client.rwlock fills it in. */
  waiters?: Waiter[];
}

/** A lease that many locks, leaderships, permits and read/write lock holds share (schema Session). */
export interface Session {
  id: string;
  owner: string;
  ttl: string;
  created_at: string;
  expires_at: string;
  locks: string[];
  /** The elections the session leads. */
  elections?: string[];
  /** The semaphores the session holds permits of. */
  semaphores?: string[];
  /** The read/write locks the session has holds of. */
  rwlocks?: string[];
  /** "stream" for a session that lives while its stream is open. */
  bind?: "stream";
  /** How long a stream-bound session outlives its stream's close. */
  grace?: string;
}

/** A session as a listing shows it (schema ListedSession). */
export interface ListedSession {
  id: string;
  owner: string;
  ttl: string;
  created_at: string;
  expires_at: string;
}

/** What a request to yield asked: the tokens of the holds asked, each of which got a yield_requested event at revision. */
export interface YieldRequested {
  kind: string;
  name: string;
  tokens: number[];
  /** Who asked. */
  owner: string;
  reason?: string;
  requested_at: string;
  revision: number;
}

/** An entry of the audit trail (schema Event). */
export interface Event {
  /** The etcd revision it was recorded at; events of one transaction share it. */
  revision: number;
  time: string;
  /** acquired, released, expired, revoked, session_expired, elected, resigned, proclaimed…, or gap. */
  type: string;
  /** What the event is about: lock, election, semaphore, rwlock or fence; "" on a gap, which is about no thing. */
  kind: string;
  name: string;
  /** A lock's events name it here too. */
  lock: string;
  owner: string;
  token?: number;
  session?: string;
  detail?: string;
  credential?: string;
  term?: number;
  value?: unknown;
  /** On a semaphore's acquired event: the limit the permit was granted under. */
  limit?: number;
  /** On a read/write lock's events: the hold's mode. */
  mode?: RWMode;
  /** On a key's put: the key's created_revision and version as the put left them. */
  created_revision?: number;
  version?: number;
  /** On the events of a lock of a lock set: every lock of the set. */
  set?: string[];
  queued_at?: string;
  /** On a gap: the first and the last revision whose events the trail could not record, and why. */
  from_revision?: number;
  to_revision?: number;
  reason?: string;
}

/** A fenced register's content (schema FencedValue). */
export interface FencedValue {
  resource: string;
  /** The token of the write that stored value. */
  token: number;
  value: unknown;
  revision: number;
}

/** A key of coordination data (schema Key). */
export interface Key {
  key: string;
  /** Any JSON value. */
  value: unknown;
  /** The revision of the key's last put. */
  revision: number;
  /** The revision of the put that created it. */
  created_revision: number;
  /** How many puts it has had since it was created: 1 for a new key. */
  version: number;
  /** The session the key is bound to: it is deleted when the session ends. */
  session?: string;
}

/**
 * A change of a key, as watchKeys() yields it: a put, with the key as
 * the put left it; a delete; or a gap, when the audit trail lost the
 * changes of revisions from_revision to to_revision (list the keys again).
 */
export interface KeyEvent {
  type: "put" | "delete" | "gap";
  /** The key; "" on a gap. */
  key: string;
  /** The revision of the change. */
  revision: number;
  /** A put's value. Absent from a put replayed from a revision etcd has compacted, of a key that changed since: getKey reads it. */
  value?: unknown;
  created_revision?: number;
  version?: number;
  /** A put's: the session the key is bound to. A delete's: the session whose end deleted it. */
  session?: string;
  from_revision?: number;
  to_revision?: number;
  reason?: string;
}

/** An RFC 9457 problem document, the body of every error answer (schema Problem). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  /** Stable and machine-readable: "lock_held". */
  code: string;
  detail?: string;
  field?: string;
  holder?: LockInfo;
  /** The holds in the way: a semaphore's permits (semaphore_full), a read/write lock's holds (its lock_held), the locks held by others (a lock set's lock_held). */
  holders?: HoldInfo[];
  leader?: LeaderInfo;
  max_token?: number;
  /** A wait with keep_place ran out and the session keeps its place in the queue (lock_held, election_held, semaphore_full). */
  place_kept?: boolean;
  /** Seconds. */
  retry_after?: number;
  /** The cap reached, the credential's quota (quota_exceeded), or the semaphore's limit (limit_mismatch). */
  limit?: number;
  /** The key's revision (revision_mismatch; 0: it does not exist), or the revision the key was found missing at (key_not_found). */
  revision?: number;
  request_id?: string;
  delayed_until?: string;
  /** The role the refused call needs (forbidden): "read", "write" or "admin". */
  role?: "read" | "write" | "admin";
  /** The prefixes of the credential's rules, for a credential scoped to name prefixes (forbidden): the names it may act on. */
  prefixes?: string[];
  /** The credential's quota that was reached (quota_exceeded); limit is its value (for rate, requests a second, rounded up). */
  quota?: "holds" | "waiters" | "sessions" | "streams" | "rate";
}

/** The etcd cluster behind the service (schema Cluster). */
export interface Cluster {
  members: Member[];
  leader: string;
  raft_term: number;
  /** etcd's current revision: tokens and event revisions are on this scale. */
  revision: number;
}

/** An etcd member (schema Member). */
export interface Member {
  id: string;
  name: string;
  peer_urls: string[];
  client_urls: string[];
  is_leader: boolean;
}

/** Who the client's token speaks for and what it may do (schema Whoami). */
export interface Whoami {
  /** False when the node checks no token: every request may then do everything (rules is one rule "": admin). */
  authentication: boolean;
  /** The credential's ID: its name in the node's policy file, or "cred-…" for a line of the line format; never the token. Absent without authentication. */
  credential?: string;
  /** A role on the names under each prefix, sorted by prefix: of those a name starts with, the longest decides; a name none covers may be neither touched nor seen. */
  rules: Rule[];
  /** The credential's quotas that are set; absent when none is. */
  quotas?: Quotas;
  /** What the quotas of holds, sessions and waiters count now, each only when that quota is set; absent when none of them is. */
  usage?: QuotaUsage;
}

/** A role on the names that start with prefix ("": every name) (schema Rule). */
export interface Rule {
  prefix: string;
  role: "read" | "write" | "admin";
}

/**
 * What a credential may use (schema Quotas): its holds and sessions
 * across the cluster, its waiting acquires and event streams on each
 * node, and its requests a second (rate, on average; burst, at once). A
 * quota that is not set is absent.
 */
export interface Quotas {
  holds?: number;
  sessions?: number;
  waiters?: number;
  streams?: number;
  rate?: number;
  burst?: number;
}

/**
 * What a credential's quotas count now (schema QuotaUsage): its holds and
 * sessions across the cluster (a waiting acquire's hold included), its
 * acquires waiting on the node asked. A count is absent when its quota is
 * not set.
 */
export interface QuotaUsage {
  holds?: number;
  sessions?: number;
  waiters?: number;
}

/** A change of an election's state, as observe() yields it. */
export interface LeaderChange {
  /** The etcd revision of the change. */
  revision: number;
  /** Who leads from then on, or null when nobody does. */
  leader: LeaderInfo | null;
}
