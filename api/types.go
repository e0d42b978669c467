package api

import (
	"encoding/json"
	"time"

	"github.com/baton-dev/baton/lock"
)

// Time renders as RFC 3339 in UTC with milliseconds.
type Time time.Time

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	return appendTime(make([]byte, 0, len(timeLayout)+2), t), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	*t = Time(v)
	return err
}

// Lock is a held lock.
type Lock struct {
	Name       string            `json:"name" example:"nightly-recon"`
	Owner      string            `json:"owner" example:"w1"`
	Token      int64             `json:"token" format:"int64" example:"4711"`
	Session    string            `json:"session,omitempty" example:"694d2279b4919071"`
	TTL        string            `json:"ttl" example:"30s"`
	AcquiredAt Time              `json:"acquired_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	ExpiresAt  Time              `json:"expires_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:43.881Z"`
	LockDelay  string            `json:"lock_delay,omitempty" example:"10s"`
	MinHold    string            `json:"min_hold,omitempty" example:"5m"`
	Metadata   map[string]string `json:"metadata"`
	// Set, on a lock of a lock set, names every lock of the set, in the
	// order the acquire gave them; they all have this lock's token.
	Set []string `json:"set,omitempty" example:"acct-1,acct-2"`
	// Waiters is the queue, first to be served first; only GET
	// /v1/locks/{name} fills it in.
	Waiters []Waiter `json:"waiters,omitempty"`
}

// Waiter is an acquire queued for a lock.
type Waiter struct {
	Owner    string `json:"owner" example:"w2"`
	Session  string `json:"session,omitempty" example:"694d2279b4919071"`
	Position int    `json:"position" example:"1"`
	Since    Time   `json:"since" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	// Mode is a read/write lock's waiter's.
	Mode string `json:"mode,omitempty" example:"write" enums:"read,write"`
	// Set is a lock set's waiter's: every lock of the set, in whose
	// queues it waits at once.
	Set []string `json:"set,omitempty" example:"acct-1,acct-2"`
}

func toLock(l *lock.Lock) *Lock {
	if l == nil {
		return nil
	}
	out := &Lock{
		Name: l.Name, Owner: l.Owner, Token: l.Token, Session: l.Session, TTL: l.TTL.String(),
		AcquiredAt: Time(l.AcquiredAt), ExpiresAt: Time(l.ExpiresAt), Metadata: l.Metadata, Set: l.Set,
	}
	if l.LockDelay > 0 {
		out.LockDelay = l.LockDelay.String()
	}
	if l.MinHold > 0 {
		out.MinHold = l.MinHold.String()
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	return out
}

// LockList is a page of held locks.
type LockList struct {
	Locks []*Lock `json:"locks"`
	// Delayed are the free locks under lock-delay whose names fall in
	// this page's range, by name.
	Delayed    []Delay `json:"delayed,omitempty"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// Delay is a free lock that lock-delay keeps free for now.
type Delay struct {
	Name         string `json:"name" example:"nightly-recon"`
	DelayedUntil Time   `json:"delayed_until" swaggertype:"string" format:"date-time" example:"2026-11-29T15:25:13.886Z"`
	// RetryAfter is how many seconds are left, rounded up.
	RetryAfter int64 `json:"retry_after" example:"42"`
	// Cause is how the last hold ended: expired, session_expired or
	// revoked, or released inside its at-least window (min_hold).
	Cause string `json:"cause,omitempty" example:"revoked" enums:"expired,session_expired,revoked,released"`
}

// Session is a lease shared by locks.
type Session struct {
	ID        string   `json:"id" example:"694d2279b4919071"`
	Owner     string   `json:"owner" example:"worker-1"`
	TTL       string   `json:"ttl" example:"30s"`
	CreatedAt Time     `json:"created_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	ExpiresAt Time     `json:"expires_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:43.881Z"`
	Locks     []string `json:"locks"`
	// Elections are those the session leads.
	Elections []string `json:"elections,omitempty"`
	// Semaphores are those the session holds permits of, RWLocks the
	// read/write locks it holds.
	Semaphores []string `json:"semaphores,omitempty"`
	RWLocks    []string `json:"rwlocks,omitempty"`
	// Bind is "stream" for a session that lives while its stream is
	// open (GET /v1/sessions/{id}/stream), and Grace how long after its
	// last stream closed it ends; both absent for a session that lives
	// by its ttl.
	Bind  string `json:"bind,omitempty" example:"stream" enums:"stream"`
	Grace string `json:"grace,omitempty" example:"2s"`
}

func toSession(s *lock.Session) *Session {
	locks := s.Locks
	if locks == nil {
		locks = []string{}
	}
	out := &Session{ID: s.ID, Owner: s.Owner, TTL: s.TTL.String(), CreatedAt: Time(s.CreatedAt), ExpiresAt: Time(s.ExpiresAt), Locks: locks,
		Elections: s.Elections, Semaphores: s.Semaphores, RWLocks: s.RWLocks, Bind: s.Bind}
	if s.Grace > 0 {
		out.Grace = s.Grace.String()
	}
	return out
}

// Event is an entry of the audit trail.
type Event struct {
	Revision int64  `json:"revision" format:"int64" example:"4712"`
	Time     Time   `json:"time" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	Type     string `json:"type" example:"acquired" enums:"acquired,released,expired,revoked,session_expired,elected,resigned,proclaimed,fence_reset,delay_cleared,yield_requested,put,delete,gap"`
	// Kind and Name say what the event is about: a lock's events have
	// kind lock and the lock's name (lock says it too). A gap is about
	// no thing: it has no kind.
	Kind    string `json:"kind,omitempty" example:"lock" enums:"lock,election,semaphore,rwlock,fence,key"`
	Name    string `json:"name" example:"nightly-recon"`
	Lock    string `json:"lock" example:"nightly-recon"`
	Owner   string `json:"owner" example:"w1"`
	Token   int64  `json:"token,omitempty" format:"int64" example:"4711"`
	Session string `json:"session,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Credential is the ID of the credential whose request the event
	// records (never the token): the acquirer's for acquired, the
	// releaser's or revoker's for released and revoked, the hold's
	// acquirer's for expired and session_expired. Unlike owner, which the
	// client chooses, authentication proved it. Absent without
	// authentication.
	Credential string `json:"credential,omitempty" example:"cred-a66317b406f5"`
	// QueuedAt, on an acquired event, is when the acquirer began waiting
	// in the lock's queue; absent when the lock was granted at once.
	QueuedAt *Time `json:"queued_at,omitempty" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:12.401Z"`
	// Term is an election's event's leadership term; Value the leader's
	// value on elected (what it campaigned with) and proclaimed (the new
	// one).
	Term  int64           `json:"term,omitempty" format:"int64" example:"3"`
	Value json.RawMessage `json:"value,omitempty" swaggertype:"object"`
	// Limit, on a semaphore's acquired event, is the limit the permit
	// was granted under.
	Limit int `json:"limit,omitempty" example:"3"`
	// Mode, on a read/write lock's events, is the hold's.
	Mode string `json:"mode,omitempty" example:"read" enums:"read,write"`
	// CreatedRevision and Version, on a key's put, are the key's as the
	// put left it.
	CreatedRevision int64 `json:"created_revision,omitempty" format:"int64" example:"4650"`
	Version         int64 `json:"version,omitempty" format:"int64" example:"3"`
	// Set, on the events of a lock of a lock set, names every lock of
	// the set: they begin at one revision, and end at one unless one was
	// released or revoked on its own.
	Set []string `json:"set,omitempty" example:"acct-1,acct-2"`
	// FromRevision and ToRevision, on a gap, are the first and the last
	// etcd revision whose events the trail could not record (the gap's
	// revision is ToRevision); Reason says why, and on a yield_requested
	// why its asker (owner, credential) asks the hold of token to yield.
	FromRevision int64  `json:"from_revision,omitempty" format:"int64" example:"5120"`
	ToRevision   int64  `json:"to_revision,omitempty" format:"int64" example:"5377"`
	Reason       string `json:"reason,omitempty" example:"etcd's history was compacted before the audit trail read these revisions"`
}

func toEvent(e lock.Event) Event {
	ev := Event{
		Revision: e.Revision, Time: Time(e.Time), Type: string(e.Type), Kind: string(e.Kind), Name: e.Name, Lock: e.Lock,
		Owner: e.Owner, Token: e.Token, Session: e.Session, Detail: e.Detail, Credential: e.Credential,
		Term: e.Term, Value: e.Value, Limit: e.Limit, Mode: string(e.Mode), Set: e.Set, CreatedRevision: e.CreatedRevision, Version: e.Version,
		FromRevision: e.FromRevision, ToRevision: e.ToRevision, Reason: e.Reason,
	}
	if e.QueuedAt != nil {
		q := Time(*e.QueuedAt)
		ev.QueuedAt = &q
	}
	return ev
}

// History is a page of the audit trail, newest first.
type History struct {
	Events     []Event `json:"events"`
	NextBefore int64   `json:"next_before,omitempty" format:"int64"`
}

// FencedValue is a fenced register's content.
type FencedValue struct {
	Resource string          `json:"resource" example:"ledger"`
	Token    int64           `json:"token" format:"int64" example:"4711"`
	Value    json.RawMessage `json:"value" swaggertype:"object"`
	Revision int64           `json:"revision" format:"int64" example:"4713"`
}

func toFenced(f *lock.FencedValue) *FencedValue {
	return &FencedValue{Resource: f.Resource, Token: f.Token, Value: f.Value, Revision: f.Revision}
}

// Member is an etcd member.
type Member struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peer_urls"`
	ClientURLs []string `json:"client_urls"`
	IsLeader   bool     `json:"is_leader"`
}

// Cluster describes the etcd cluster.
type Cluster struct {
	Members []Member `json:"members"`
	// ID of the leader as this node's member sees it; empty while it knows
	// none (an election, or this node is cut off from the majority).
	Leader   string `json:"leader"`
	RaftTerm uint64 `json:"raft_term" format:"int64"`
	Revision int64  `json:"revision" format:"int64"`
}

// Status is the body of /healthz and /readyz.
type Status struct {
	Status string `json:"status" example:"ok"`
}

// AcquireRequest is the body of POST /v1/locks/{name}. Every field is optional.
type AcquireRequest struct {
	// Owner labels the hold for people and the audit trail: 1-128
	// printable characters. Absent, it is the client's address.
	Owner *string `json:"owner,omitempty" minLength:"1" maxLength:"128" example:"w1"`
	// TTL is the lease of a hold without session: a duration from 2s to
	// 24h, 30s when absent. It must be absent with session.
	TTL     *string `json:"ttl,omitempty" example:"30s"`
	Session *string `json:"session,omitempty" example:"694d2279b4919071"`
	// Wait is how long to queue while others hold it: a duration up to 5m.
	// Absent or 0s, a held one answers 409 at once.
	Wait *string `json:"wait,omitempty" example:"10s"`
	// KeepPlace, with session and wait, keeps the session's place in the
	// queue when the wait runs out (409 with place_kept): the session's
	// next acquire waits from there, or finds the hold granted. A wait
	// longer than 5m is a run of such acquires.
	KeepPlace *bool `json:"keep_place,omitempty" example:"true"`
	// LockDelay keeps the lock free for this long after the hold ends by
	// expiry or revoke (not by a release): a duration up to 1h.
	LockDelay *string `json:"lock_delay,omitempty" example:"0s"`
	// MinHold is the hold's at-least window (ShedLock's lockAtLeastFor):
	// a duration up to 24h. However early the hold ends, by release,
	// expiry or revoke, nobody acquires it before acquired_at + min_hold.
	MinHold *string `json:"min_hold,omitempty" example:"5m"`
	// Metadata is for people and the dashboard: at most 16 string pairs,
	// with keys not empty and keys and values 4 KiB (4,096 bytes) in all.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RenewRequest is the body of POST /v1/locks/{name}/renew.
type RenewRequest struct {
	Token *int64 `json:"token" format:"int64" example:"4711"`
}

// RevokeRequest is the body of POST /v1/locks/{name}/revoke.
type RevokeRequest struct {
	// Reason says why, for the audit trail: at most 1,024 bytes.
	Reason string `json:"reason,omitempty" maxLength:"1024" example:"holder wedged"`
}

// SessionRequest is the body of POST /v1/sessions.
type SessionRequest struct {
	// TTL is the session's lease: a duration from 2s to 24h, 30s when
	// absent.
	TTL *string `json:"ttl,omitempty" example:"30s"`
	// Owner labels the session for people and the audit trail: 1-128
	// printable characters. Absent, it is the client's address.
	Owner *string `json:"owner,omitempty" minLength:"1" maxLength:"128" example:"worker-1"`
	// Bind "stream" makes a session that lives while its stream (GET
	// /v1/sessions/{id}/stream) is open on some node, instead of by its
	// ttl, which must then be absent.
	Bind *string `json:"bind,omitempty" example:"stream" enums:"stream"`
	// Grace is how long a stream-bound session outlives its last
	// stream's close (and how long its first stream has to attach): a
	// duration from 500ms to 1m, 2s when absent. Only with bind.
	Grace *string `json:"grace,omitempty" example:"2s"`
}

// FencedRequest is the body of PUT /v1/fenced/{resource}.
type FencedRequest struct {
	Token *int64          `json:"token" format:"int64" example:"4711"`
	Value json.RawMessage `json:"value" swaggertype:"object"`
	Lock  string          `json:"lock,omitempty" example:"nightly-recon"`
	// Election, instead of lock, requires that token leads this
	// election at that moment.
	Election string `json:"election,omitempty" example:"billing"`
	// RWLock, instead of lock, requires that token is this read/write
	// lock's write hold at that moment.
	RWLock string `json:"rwlock,omitempty" example:"catalog"`
}
