package store

import (
	"encoding/json"
	"regexp"
	"slices"
	"time"
)

// EventType names what happened.
type EventType string

// The event types of the audit trail. elected, resigned and proclaimed
// are an election's; fence_reset a fenced register's; put and delete a
// key's; delay_cleared a lock's, as are the first five; yield_requested
// any kind's with holds (a lock's, an election's, a semaphore's, a
// read/write lock's).
const (
	EventAcquired       EventType = "acquired"
	EventReleased       EventType = "released"
	EventExpired        EventType = "expired"
	EventRevoked        EventType = "revoked"
	EventSessionExpired EventType = "session_expired"
	EventElected        EventType = "elected"
	EventResigned       EventType = "resigned"
	EventProclaimed     EventType = "proclaimed"
	EventFenceReset     EventType = "fence_reset"
	EventDelayCleared   EventType = "delay_cleared"
	// EventYieldRequested asks the hold of Token to give way; it ends
	// nothing. Owner and Credential are the asker's, Reason its reason;
	// Term and Mode are the hold's.
	EventYieldRequested EventType = "yield_requested"
	EventPut            EventType = "put"
	EventDelete         EventType = "delete"
	// EventGap stands for the events of a stretch of revisions that the
	// trail could not record: etcd compacted them before the history
	// index read them. It is about no thing (no Kind or Name).
	EventGap EventType = "gap"
)

// EventKind names what an event is about: a lock, an election, a
// semaphore, a read/write lock, a fenced register or a key.
type EventKind string

// The kinds of the audit trail.
const (
	KindLock      EventKind = "lock"
	KindElection  EventKind = "election"
	KindSemaphore EventKind = "semaphore"
	KindRWLock    EventKind = "rwlock"
	KindFence     EventKind = "fence"
	KindKey       EventKind = "key"
)

// EventKinds lists every kind, for validation and documentation.
var EventKinds = []EventKind{KindLock, KindElection, KindSemaphore, KindRWLock, KindFence, KindKey}

// CheckKind validates a kind filter: empty, or one of EventKinds.
func CheckKind(k EventKind) error {
	if k != "" && !slices.Contains(EventKinds, k) {
		return Invalid("kind", "%q is not a kind (want lock, election, semaphore, rwlock, fence or key)", k)
	}
	return nil
}

// Event is one entry of the audit trail.
type Event struct {
	// Revision is the etcd revision at which the event was recorded. For
	// acquired, released and revoked it is the revision of the change
	// itself; an expiry is recorded shortly after etcd deleted the key.
	Revision int64     `json:"-"`
	Time     time.Time `json:"time"`
	Type     EventType `json:"type"`
	// Kind and Name say what the event is about: for a lock's events,
	// KindLock and the lock's name (Lock says it too). Records that do not
	// store them are a lock's.
	Kind    EventKind `json:"kind,omitempty"`
	Name    string    `json:"name,omitempty"`
	Lock    string    `json:"lock"`
	Owner   string    `json:"owner"`
	Token   int64     `json:"token,omitempty"`
	Session string    `json:"session,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	// Credential is the ID of the credential (see Caller; never a token)
	// whose request the event records: the acquirer's for acquired (also
	// when a release hands the lock over), the releaser's or revoker's for
	// released and revoked, and for expired and session_expired, which no
	// request causes, the credential that acquired the hold. Owner is a
	// label the client chose; Credential is what authentication proved.
	// Empty without authentication.
	Credential string `json:"credential,omitempty"`
	// Term and Value are an election's: the leadership's term on each of
	// its events, and the leader's value on elected (the candidate's) and
	// proclaimed (the new one).
	Term  int64           `json:"term,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Limit, on a semaphore's acquired event, is the limit the permit
	// was granted under.
	Limit int `json:"limit,omitempty"`
	// Mode, on a read/write lock's events, is the hold's.
	Mode RWMode `json:"mode,omitempty"`
	// CreatedRevision and Version, on a key's put, are the key's as the
	// put left it (internal/store/kv.go). A key's put carries its Value
	// to the event streams, but the history keeps events without it.
	CreatedRevision int64 `json:"created_revision,omitempty"`
	Version         int64 `json:"version,omitempty"`
	// QueuedAt, on an acquired event, is when the acquirer joined the
	// lock's queue: the hold was granted after waiting from then. Nil
	// when the lock was free at the first attempt.
	QueuedAt *time.Time `json:"queued_at,omitempty"`
	// Set, on the events of a lock set's member, names every lock of the
	// set: its members begin in one revision, and end in one unless one
	// was released or revoked on its own.
	Set []string `json:"set,omitempty"`
	// FromRevision and ToRevision, on a gap, are the first and the last
	// revision whose events the trail lost; the gap is recorded at
	// ToRevision. Reason says why they were lost, or on a
	// yield_requested why the asker asks.
	FromRevision int64  `json:"from_revision,omitempty"`
	ToRevision   int64  `json:"to_revision,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// RWMode is how a read/write lock is held: shared, or exclusive.
type RWMode string

// The modes of a read/write lock's holds.
const (
	ModeRead  RWMode = "read"
	ModeWrite RWMode = "write"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidName reports whether s is a valid lock or resource name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// CheckName validates s, the value of the request field field, as a name.
func CheckName(field, s string) error {
	if s == "" {
		return Invalid(field, "must not be empty")
	}
	if !ValidName(s) {
		return Invalid(field, "must be 1-128 characters from A-Z a-z 0-9 . _ : -")
	}
	return nil
}
