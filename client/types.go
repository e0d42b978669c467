package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// LockInfo describes a held lock.
type LockInfo struct {
	Name  string
	Owner string
	// Token is the fencing token: greater than every earlier token of
	// this lock, and never lower than any token granted before it, of any
	// lock (grants of other locks committed together may share it). Pass
	// it to whatever the lock protects.
	Token int64
	// Session is the session the lock lives in, empty when it has a lease
	// of its own.
	Session string
	// TTL is the lease's TTL as etcd granted it.
	TTL        time.Duration
	AcquiredAt time.Time
	// ExpiresAt is when the lease runs out unless renewed, by the server's
	// clock; it may be early, never late (docs/API.md says by how much).
	ExpiresAt time.Time
	LockDelay time.Duration
	// MinHold is the hold's at-least window (AcquireOptions.MinHold).
	MinHold  time.Duration
	Metadata map[string]string
	// Set, for a lock taken as part of a lock set (AcquireSet), names
	// every lock of the set, in the order the acquire gave them.
	Set []string
	// Waiters is the queue, first served first; only Get fills it in.
	Waiters []Waiter
}

// Waiter is an acquire queued for a lock.
type Waiter struct {
	Owner    string
	Session  string
	Position int
	Since    time.Time
	// Mode is a read/write lock's waiter's: Read or Write.
	Mode string
	// Set names every lock of the lock set a lock's waiter waits as
	// part of; empty for a single acquire.
	Set []string
}

// Session is a lease that many locks share.
type Session struct {
	ID        string
	Owner     string
	TTL       time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
	// Locks are the names of the locks held in the session, Elections
	// those of the elections it leads, Semaphores those of the
	// semaphores it holds permits of, and RWLocks those of the
	// read/write locks it holds.
	Locks      []string
	Elections  []string
	Semaphores []string
	RWLocks    []string
	// Bind is "stream" for a session that lives while its stream is open
	// (SessionOptions.Bind), and Grace how long after its stream closed
	// it ends; empty for a session that lives by its TTL.
	Bind  string
	Grace time.Duration
}

// Event is an entry of the audit trail.
type Event struct {
	// Revision is the etcd revision at which the event was recorded;
	// events of one transaction share it.
	Revision int64
	Time     time.Time
	// Type is acquired, released, expired, revoked, session_expired,
	// delay_cleared, fence_reset or yield_requested (elected, resigned
	// and proclaimed are an election's), or gap: events the trail could
	// not record.
	Type string
	// Kind is what the event is about (lock, election, semaphore, rwlock
	// or fence), and Name the thing's name; a lock's events have Lock too.
	Kind    string
	Name    string
	Lock    string
	Owner   string
	Token   int64
	Session string
	Detail  string
	// Credential is the ID of the credential whose request the event
	// records (the hold's, for an expiry); empty without authentication.
	Credential string
	// Term is an election's event's leadership term; Value the leader's
	// value on elected (what it campaigned with) and proclaimed (the new
	// one).
	Term  int64
	Value json.RawMessage
	// Limit, on a semaphore's acquired event, is the limit the permit was
	// granted under.
	Limit int
	// Mode, on a read/write lock's event, is the hold's: Read or Write.
	Mode string
	// CreatedRevision and Version, on a key's put, are the key's as the
	// put left it.
	CreatedRevision, Version int64
	// QueuedAt, on an acquired (or elected) event, is when the holder
	// began waiting in line; zero when it was granted at once.
	QueuedAt time.Time
	// Set, on an event of a lock of a lock set, names every lock of the
	// set.
	Set []string
	// FromRevision and ToRevision, on a gap (Type "gap", no Kind), are
	// the first and the last revision whose events the trail could not
	// record; Reason says why, and on a yield_requested why its asker
	// (Owner, Credential) asks the hold of Token to yield.
	FromRevision int64
	ToRevision   int64
	Reason       string
}

// FencedValue is a fenced register's content.
type FencedValue struct {
	Resource string
	// Token is the token of the write that stored Value.
	Token int64
	Value json.RawMessage
	// Revision is the etcd revision of that write.
	Revision int64
}

// ClusterInfo describes the etcd cluster behind the service.
type ClusterInfo struct {
	Members []Member
	// Leader is the leading member's ID.
	Leader   string
	RaftTerm uint64
	// Revision is etcd's current revision; tokens and event revisions
	// are on the same scale.
	Revision int64
}

// Member is an etcd member.
type Member struct {
	ID         string
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLeader   bool
}

// The wire types mirror the server's JSON. Durations travel as Go
// duration strings and times as RFC 3339 strings.

type wireDuration time.Duration

func (d *wireDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = wireDuration(v)
	return nil
}

type wireTime time.Time

func (t *wireTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*t = wireTime{}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = wireTime(v)
	return nil
}

type wireLock struct {
	Name       string            `json:"name"`
	Owner      string            `json:"owner"`
	Token      int64             `json:"token"`
	Session    string            `json:"session"`
	TTL        wireDuration      `json:"ttl"`
	AcquiredAt wireTime          `json:"acquired_at"`
	ExpiresAt  wireTime          `json:"expires_at"`
	LockDelay  wireDuration      `json:"lock_delay"`
	MinHold    wireDuration      `json:"min_hold"`
	Metadata   map[string]string `json:"metadata"`
	Set        []string          `json:"set"`
	Waiters    []wireWaiter      `json:"waiters"`
}

func (w *wireLock) info() LockInfo {
	l := LockInfo{
		Name: w.Name, Owner: w.Owner, Token: w.Token, Session: w.Session, TTL: time.Duration(w.TTL),
		AcquiredAt: time.Time(w.AcquiredAt), ExpiresAt: time.Time(w.ExpiresAt), LockDelay: time.Duration(w.LockDelay),
		MinHold: time.Duration(w.MinHold), Metadata: w.Metadata, Set: w.Set,
	}
	for _, x := range w.Waiters {
		l.Waiters = append(l.Waiters, x.waiter())
	}
	return l
}

// wireWaiter is a waiter as the API sends it; Mode only a read/write
// lock's waiters have.
type wireWaiter struct {
	Owner    string   `json:"owner"`
	Session  string   `json:"session"`
	Position int      `json:"position"`
	Since    wireTime `json:"since"`
	Mode     string   `json:"mode"`
	Set      []string `json:"set"`
}

func (x wireWaiter) waiter() Waiter {
	return Waiter{Owner: x.Owner, Session: x.Session, Position: x.Position, Since: time.Time(x.Since), Mode: x.Mode, Set: x.Set}
}

type wireSession struct {
	ID         string       `json:"id"`
	Owner      string       `json:"owner"`
	TTL        wireDuration `json:"ttl"`
	CreatedAt  wireTime     `json:"created_at"`
	ExpiresAt  wireTime     `json:"expires_at"`
	Locks      []string     `json:"locks"`
	Elections  []string     `json:"elections"`
	Semaphores []string     `json:"semaphores"`
	RWLocks    []string     `json:"rwlocks"`
	Bind       string       `json:"bind"`
	Grace      wireDuration `json:"grace"`
}

func (w *wireSession) session() *Session {
	return &Session{
		ID: w.ID, Owner: w.Owner, TTL: time.Duration(w.TTL),
		CreatedAt: time.Time(w.CreatedAt), ExpiresAt: time.Time(w.ExpiresAt), Locks: w.Locks, Elections: w.Elections,
		Semaphores: w.Semaphores, RWLocks: w.RWLocks, Bind: w.Bind, Grace: time.Duration(w.Grace),
	}
}

type wireEvent struct {
	Revision   int64           `json:"revision"`
	Time       wireTime        `json:"time"`
	Type       string          `json:"type"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Lock       string          `json:"lock"`
	Owner      string          `json:"owner"`
	Token      int64           `json:"token"`
	Session    string          `json:"session"`
	Detail     string          `json:"detail"`
	Credential string          `json:"credential"`
	Term       int64           `json:"term"`
	Value      json.RawMessage `json:"value"`
	Limit      int             `json:"limit"`
	Mode       string          `json:"mode"`
	CreatedRev int64           `json:"created_revision"`
	Version    int64           `json:"version"`
	QueuedAt   *wireTime       `json:"queued_at"`
	Set        []string        `json:"set"`
	From       int64           `json:"from_revision"`
	To         int64           `json:"to_revision"`
	Reason     string          `json:"reason"`
}

func (w *wireEvent) event() Event {
	ev := Event{
		Revision: w.Revision, Time: time.Time(w.Time), Type: w.Type, Kind: w.Kind, Name: w.Name, Lock: w.Lock,
		Owner: w.Owner, Token: w.Token, Session: w.Session, Detail: w.Detail, Credential: w.Credential,
		Term: w.Term, Value: w.Value, Limit: w.Limit, Mode: w.Mode, Set: w.Set, CreatedRevision: w.CreatedRev, Version: w.Version,
		FromRevision: w.From, ToRevision: w.To, Reason: w.Reason,
	}
	if w.QueuedAt != nil {
		ev.QueuedAt = time.Time(*w.QueuedAt)
	}
	return ev
}

type wireFenced struct {
	Resource string          `json:"resource"`
	Token    int64           `json:"token"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

func (w *wireFenced) fenced() *FencedValue {
	return &FencedValue{Resource: w.Resource, Token: w.Token, Value: w.Value, Revision: w.Revision}
}
