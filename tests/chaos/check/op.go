package check

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Op is one client operation as the workload saw it: one HTTP request,
// never retried, so that it happened at most once.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   int    `json:"node"`
	Kind   Kind   `json:"kind"`
	Lock   string `json:"lock"` // the lock; fput and fget use the fenced resource of the same name; a kv-put's fence
	// Election is the election of an election op; an fput or fget with
	// Election set (and Lock empty) is on the fenced resource named like
	// the election, and an fput names the election as its guard, so it
	// needs its token to lead. The workload keeps lock and election names
	// apart, so no resource is written under both.
	Election string `json:"election,omitempty"`
	// Semaphore is the semaphore of a semaphore op (Lock and Election
	// empty); Limit is the limit its acquire sent.
	Semaphore string `json:"semaphore,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	// RWLock is the read/write lock of an rw op (Lock, Election and
	// Semaphore empty), and Mode the mode its acquire asked for; an fput
	// or fget with RWLock set is on the fenced resource named like it,
	// and an fput names the rwlock as its guard, so it needs its token to
	// be the rwlock's write hold.
	RWLock string `json:"rwlock,omitempty"`
	Mode   string `json:"mode,omitempty"`
	// Set is a lock set op's names, in the order it sent them (Lock
	// empty). Pool is the pool of locks that lock sets share with single
	// locks, on every op of the clients that work in it (set ops, and
	// lock ops on its locks): its ops are LockSetModel's, not LockModel's,
	// as a set couples its locks.
	Set   []string `json:"set,omitempty"`
	Pool  string   `json:"pool,omitempty"`
	Owner string   `json:"owner,omitempty"` // acquire, sem-acquire: the owner; campaign: the candidate
	Token int64    `json:"token,omitempty"` // the token sent (renew, release, fput, proclaim, resign, renew-leader, sem-renew, sem-release, a fenced kv-put)
	Value string   `json:"value,omitempty"` // the value sent (fput, campaign, proclaim; a kv-put's JSON)
	// Wait is a waiting acquire's or campaign's wait ("" for none).
	Wait string `json:"wait,omitempty"`
	// MinHold is the at-least window an acquire asked for ("" for none):
	// package windowcheck holds the trail's grants against it.
	MinHold string `json:"min_hold,omitempty"`
	// Key is a key op's key (Lock empty but for a fenced kv-put, whose
	// fence Lock and Token are). Session is the session a kv-put binds
	// the key to, and a session op's; IfRevision a compare's if_revision
	// (nil: none; 0: create only). Key and session ops are the keys'
	// checkers' (tests/chaos/check/kvcheck).
	Key        string `json:"key,omitempty"`
	Session    string `json:"session,omitempty"`
	IfRevision *int64 `json:"if_revision,omitempty"`
	// Grace is a stream-session op's grace; Value names the stream of a
	// stream-open or stream-close op. Stream ops are package
	// streamcheck's (tests/chaos/check/streamcheck).
	Grace string `json:"grace,omitempty"`

	// Call and Return are nanoseconds since the run began. An Unknown
	// op's Return is when its client gave up; the checker treats it as
	// pending until the end of the history.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`

	Result   Result `json:"result"`
	OutToken int64  `json:"out_token,omitempty"` // acquire, campaign, sem-acquire ok: the token granted; get, leader, proclaim, renew-leader, sem-renew ok: the holder's; fget ok: the stored one
	OutOwner string `json:"out_owner,omitempty"` // get ok: the holder; leader ok: the candidate
	OutValue string `json:"out_value,omitempty"` // fget ok: the stored value; campaign, leader, proclaim ok: the leader's value (the workload writes strings)
	OutTerm  int64  `json:"out_term,omitempty"`  // campaign, leader, proclaim, renew-leader ok: the leadership's term
	// OutTokens and OutLimit are a sem-get OK's: the tokens of the
	// permits held, ascending, and the semaphore's limit; on a sem-acquire
	// refused, the holders its answer shows (read after the refusal, in
	// the same request) and their limit.
	OutTokens []int64 `json:"out_tokens,omitempty"`
	OutLimit  int     `json:"out_limit,omitempty"`
	// OutMode is an rw-get OK's mode of the holds (OutTokens their
	// tokens), and on an rw-acquire refused the mode of the holds its
	// answer shows.
	OutMode string `json:"out_mode,omitempty"`
	// OutWaiters is an rw-get OK's: the owners of the waiters it shows,
	// first to be served first.
	OutWaiters []string `json:"out_waiters,omitempty"`
	// OutHolders is a set-acquire refused's: the locks its answer shows
	// held by others (read after the refusal, in the same request).
	OutHolders []LockHolder `json:"out_holders,omitempty"`
	Status     int          `json:"status,omitempty"` // HTTP status; 0 when none came
	Code       string       `json:"code,omitempty"`   // problem+json code
	Err        string       `json:"err,omitempty"`    // transport error
	// RetryAfter is the Retry-After header of a 503.
	RetryAfter string `json:"retry_after,omitempty"`

	// OutRevision is a kv-put or kv-get OK's key revision; on a kv op
	// refused, the problem's revision: the key's on revision_mismatch (0:
	// it does not exist), the read's on key_not_found. OutCreated,
	// OutVersion and OutSession are a kv OK's created_revision, version
	// and session.
	OutRevision int64  `json:"out_revision,omitempty"`
	OutCreated  int64  `json:"out_created,omitempty"`
	OutVersion  int64  `json:"out_version,omitempty"`
	OutSession  string `json:"out_session,omitempty"`

	// mortal and strict are what ResolvePermits (ResolveRWLocks) learnt
	// from the trail for SemaphoreModel (RWLockModel); they are not part
	// of the history.
	mortal bool // sem-acquire, rw-acquire OK: the hold did not end by a release
	strict bool // sem-acquire, rw-acquire Rejected: no queue entry could have existed
}

// LockHolder is a lock and the token that holds it.
type LockHolder struct {
	Lock  string `json:"lock"`
	Token int64  `json:"token"`
}

// Kind is what an Op asked for.
type Kind string

// The kinds of Op.
const (
	Acquire Kind = "acquire" // POST /v1/locks/{name}, no wait
	Renew   Kind = "renew"   // POST /v1/locks/{name}/renew {"token":…}
	Release Kind = "release" // DELETE /v1/locks/{name}?token=
	Get     Kind = "get"     // GET /v1/locks/{name}
	FPut    Kind = "fput"    // PUT /v1/fenced/{name}
	FGet    Kind = "fget"    // GET /v1/fenced/{name}

	Campaign    Kind = "campaign"     // POST /v1/elections/{name}/campaign, with or without wait
	Proclaim    Kind = "proclaim"     // POST /v1/elections/{name}/proclaim {"token":…,"value":…}
	Resign      Kind = "resign"       // DELETE /v1/elections/{name}/leader?token=
	RenewLeader Kind = "renew-leader" // POST /v1/elections/{name}/renew {"token":…}
	Leader      Kind = "leader"       // GET /v1/elections/{name}

	SemAcquire Kind = "sem-acquire" // POST /v1/semaphores/{name}, with or without wait
	SemRenew   Kind = "sem-renew"   // POST /v1/semaphores/{name}/renew {"token":…}
	SemRelease Kind = "sem-release" // DELETE /v1/semaphores/{name}?token=
	SemGet     Kind = "sem-get"     // GET /v1/semaphores/{name}

	RWAcquire Kind = "rw-acquire" // POST /v1/rwlocks/{name} {"mode":…}, with or without wait
	RWRenew   Kind = "rw-renew"   // POST /v1/rwlocks/{name}/renew {"token":…}
	RWRelease Kind = "rw-release" // DELETE /v1/rwlocks/{name}?token=
	RWGet     Kind = "rw-get"     // GET /v1/rwlocks/{name}

	SetAcquire Kind = "set-acquire" // POST /v1/locksets {"names":…}, with or without wait
	SetRenew   Kind = "set-renew"   // POST /v1/locksets/renew {"names":…,"token":…}
	SetRelease Kind = "set-release" // POST /v1/locksets/release {"names":…,"token":…}

	KVPut    Kind = "kv-put"    // PUT /v1/kv/{key} {"value":…,"if_revision":…,"session":…,"lock":…,"token":…}
	KVGet    Kind = "kv-get"    // GET /v1/kv/{key}
	KVDelete Kind = "kv-delete" // DELETE /v1/kv/{key}?if_revision=

	SessionCreate Kind = "session-create" // POST /v1/sessions
	SessionRenew  Kind = "session-renew"  // POST /v1/sessions/{id}/renew
	SessionDelete Kind = "session-delete" // DELETE /v1/sessions/{id}

	StreamSession Kind = "stream-session" // POST /v1/sessions {"bind":"stream","grace":…}
	StreamOpen    Kind = "stream-open"    // GET /v1/sessions/{id}/stream, until its attached event
	StreamClose   Kind = "stream-close"   // its end: cancelled by the client (Code ""), or lost
	StreamAcquire Kind = "stream-acquire" // POST /v1/locks/{name} {"session":…}
)

// lockKinds, electionKinds, semaphoreKinds, rwKinds and setKinds are the
// kinds of each model; fput and fget belong to the election model when
// they have Election set, to the rwlock model when they have RWLock set;
// lock ops with Pool set belong to the lock set model. kvKinds are the
// keys' checkers', streamKinds the stream-bound sessions' (streamcheck).
var (
	lockKinds      = []Kind{Acquire, Renew, Release, Get, FPut, FGet}
	electionKinds  = []Kind{Campaign, Proclaim, Resign, RenewLeader, Leader}
	semaphoreKinds = []Kind{SemAcquire, SemRenew, SemRelease, SemGet}
	rwKinds        = []Kind{RWAcquire, RWRenew, RWRelease, RWGet}
	setKinds       = []Kind{SetAcquire, SetRenew, SetRelease}
	kvKinds        = []Kind{KVPut, KVGet, KVDelete, SessionCreate, SessionRenew, SessionDelete}
	streamKinds    = []Kind{StreamSession, StreamOpen, StreamClose, StreamAcquire}
)

// allKinds are the kinds of every model.
func allKinds() []Kind {
	return slices.Concat(lockKinds, electionKinds, semaphoreKinds, rwKinds, setKinds, kvKinds, streamKinds)
}

// Name is what op is about: its key or session, its election, semaphore
// or rwlock if it has one, its set's names joined by commas for a set op,
// else its lock. For fput and fget it is also the fenced resource.
func (op Op) Name() string {
	switch {
	case op.Key != "":
		return op.Key
	case op.OnKV() || op.OnStream():
		return op.Session
	case len(op.Set) > 0:
		return strings.Join(op.Set, ",")
	case op.Election != "":
		return op.Election
	case op.Semaphore != "":
		return op.Semaphore
	case op.RWLock != "":
		return op.RWLock
	}
	return op.Lock
}

// onElection reports whether op belongs to ElectionModel.
func (op Op) onElection() bool {
	return op.Election != ""
}

// OnSemaphore reports whether op belongs to SemaphoreModel.
func (op Op) OnSemaphore() bool {
	return op.Semaphore != ""
}

// OnRWLock reports whether op belongs to RWLockModel.
func (op Op) OnRWLock() bool {
	return op.RWLock != ""
}

// onLock reports whether op is a lock op: LockModel's unless it is in a
// lock set pool (OnLockSet), and CheckAudit's either way.
func (op Op) onLock() bool {
	return !op.onElection() && !op.OnSemaphore() && !op.OnRWLock() && len(op.Set) == 0 && !op.OnKV() && !op.OnStream()
}

// OnStream reports whether op is a stream-bound session's op: package
// streamcheck's, and no model's here.
func (op Op) OnStream() bool { return slices.Contains(streamKinds, op.Kind) }

// OnKV reports whether op is a key op or a session op: the keys'
// checkers' (kvcheck), and no model's here.
func (op Op) OnKV() bool {
	return op.Key != "" || slices.Contains(kvKinds, op.Kind)
}

// OnLockSet reports whether op belongs to LockSetModel: a set op, or a
// lock op on a lock of a pool the sets take theirs from.
func (op Op) OnLockSet() bool {
	return op.Pool != ""
}

// Strict reports whether ResolvePermits (ResolveRWLocks) marked op, a
// refused sem-acquire (rw-acquire), strict: no waiter can have been
// ahead of it, so the model checks that something in its way was held.
func (op Op) Strict() bool { return op.strict }

// Result is what came of an Op.
type Result string

// The results of an Op.
const (
	// OK is a 2xx: it took effect (for get and fget: it read that).
	OK Result = "ok"
	// Rejected is a definite refusal that changed nothing: 409 lock_held
	// for acquire, 409 election_held for campaign; 404 not_held (no_leader)
	// or 409 token_mismatch for renew and release (proclaim, resign and
	// renew-leader); 409 stale_token for fput, and not_holder for an fput
	// under an election; 404 not_held, no_leader or not_found for get,
	// leader and fget (nothing there); 409 semaphore_full for sem-acquire,
	// 404 not_held for sem-renew, sem-release and sem-get; 409 lock_held
	// for rw-acquire, 404 not_held for rw-renew, rw-release and rw-get,
	// and not_holder for an fput under an rwlock; 409 lock_held for
	// set-acquire, 404 not_held or 409 token_mismatch for set-renew and
	// set-release; 409 revision_mismatch or stale_token, or 404
	// session_not_found, for kv-put; 404 key_not_found for kv-get, and
	// with 409 revision_mismatch for kv-delete; 404 session_not_found
	// for session-renew and session-delete.
	Rejected Result = "rejected"
	// Unknown is an op that may or may not have taken effect: no answer
	// before the client's timeout, a connection cut after the request
	// was sent, or a 503 (an etcd timeout can come after a commit).
	Unknown Result = "unknown"
	// Failed is an op that certainly did not reach etcd: the connection
	// was refused. The checker leaves it out.
	Failed Result = "failed"
)

// AuditEvent is one event of GET /v1/history. Kind and Name say what it
// is about: a lock's events have Lock set too (and Kind "lock", or none in
// hand-made trails), an election's have Kind "election", Term, and on
// elected and proclaimed the leader's Value.
type AuditEvent struct {
	Revision int64 `json:"revision"`
	// Time is when the event happened by the node's clock, to the
	// millisecond: an acquired event's is the hold's acquired_at.
	Time  time.Time       `json:"time"`
	Type  string          `json:"type"`
	Kind  string          `json:"kind,omitempty"`
	Name  string          `json:"name,omitempty"`
	Lock  string          `json:"lock"`
	Owner string          `json:"owner"`
	Token int64           `json:"token"`
	Term  int64           `json:"term,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Limit is a semaphore's acquired event's: the limit the permit was
	// granted under. Detail says, on an expiry the recorder wrote, at
	// which revision etcd deleted the hold.
	Limit  int    `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Mode is a read/write lock's event's: the hold's mode. QueuedAt is
	// an acquired event's: when its acquirer first joined the queue (the
	// node's clock, read before the txn that put its entry); nil when it
	// was granted without waiting.
	Mode     string     `json:"mode,omitempty"`
	QueuedAt *time.Time `json:"queued_at,omitempty"`
	// FromRevision and Reason are a gap event's: the first revision the
	// trail lost (through Revision), and why.
	FromRevision int64  `json:"from_revision,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// Set is a lock set member's event's: every name of the set, in the
	// order its acquire gave them.
	Set []string `json:"set,omitempty"`
	// Session, CreatedRevision and Version are a key's event's (Kind
	// "key", Type "put" or "delete"): the session a put bound the key to,
	// or whose end deleted it, and a put's created_revision and version.
	Session         string `json:"session,omitempty"`
	CreatedRevision int64  `json:"created_revision,omitempty"`
	Version         int64  `json:"version,omitempty"`
	// Credential is the credential whose request the event records (the
	// hold's acquirer's for an expiry): package scopecheck's.
	Credential string `json:"credential,omitempty"`
}

// isLock reports whether ev is a lock's event, a set member's or not.
func (ev AuditEvent) isLock() bool { return ev.Kind == "" || ev.Kind == "lock" }

// isSetMember reports whether ev is the event of a lock set's member.
func (ev AuditEvent) isSetMember() bool { return ev.isLock() && len(ev.Set) > 0 }

// isElection reports whether ev is an election's event.
func (ev AuditEvent) isElection() bool { return ev.Kind == "election" }

// isSemaphore reports whether ev is a semaphore's event.
func (ev AuditEvent) isSemaphore() bool { return ev.Kind == "semaphore" }

// isRWLock reports whether ev is a read/write lock's event.
func (ev AuditEvent) isRWLock() bool { return ev.Kind == "rwlock" }

// IsLockEnd reports whether ev ends a hold of a single lock (not a lock
// set's member): one of the end events of endEventTypes.
func (ev AuditEvent) IsLockEnd() bool {
	return ev.isLock() && !ev.isSetMember() && slices.Contains(endEventTypes, ev.Type)
}
