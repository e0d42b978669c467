package lock

import (
	"encoding/json"
	"regexp"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"
)

// Lock describes a held lock.
type Lock struct {
	Name  string
	Owner string
	// Token is the fencing token: the etcd revision at which this hold
	// began. It is greater than every earlier token of this lock (so
	// unique to the hold among the lock's), and never lower than any token
	// granted before it, of any lock: grants of other locks committed in
	// the same etcd transaction share its value.
	Token int64
	// Session is the session's ID when the lock lives in a session, and
	// empty when the lock has a lease of its own.
	Session string
	// TTL is the lease's TTL as etcd granted it (etcd may raise it).
	TTL        time.Duration
	AcquiredAt time.Time
	// ExpiresAt is when the lease runs out unless renewed. etcd reports
	// remaining TTLs in whole seconds, rounded down, so it may be up to a
	// second early: never late.
	ExpiresAt time.Time
	LockDelay time.Duration
	Metadata  map[string]string
	// Credential is the ID of the credential that acquired the hold, when
	// the caller had one (see Caller). The HTTP API does not show it.
	Credential string
	// Term and Value are an election's (see Leader): how many leaders
	// it has had, this one included, and this leader's value.
	Term  int64
	Value json.RawMessage
	// Limit is a semaphore permit's: the semaphore's limit, under which
	// it was granted.
	Limit int
	// Mode is a read/write lock hold's.
	Mode RWMode
	// Set is a lock set's member's: the names of every lock of the set,
	// in the order the acquire gave them. Every member has the set's
	// token.
	Set []string
}

// Session is a lease that many locks can share: when it ends, they all do.
type Session struct {
	ID        string
	Owner     string
	TTL       time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
	// Locks are the names of the locks held in the session, sorted,
	// Elections those of the elections it leads, Semaphores those of the
	// semaphores it holds permits of and RWLocks those of the read/write
	// locks it holds (each once).
	Locks      []string
	Elections  []string
	Semaphores []string
	RWLocks    []string
	// seats are the key names of the holds in seats (kinds.go).
	seats []string
	// Credential is the ID of the credential that created the session,
	// when the caller had one (see Caller).
	Credential string
}

// EventType names what happened.
type EventType string

// The event types of the audit trail. elected, resigned and proclaimed
// are an election's; fence_reset a fenced register's; delay_cleared a
// lock's, as are the first five.
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
	// EventGap stands for the events of a stretch of revisions that the
	// trail could not record: etcd compacted them before the history
	// index read them. It is about no thing (no Kind or Name).
	EventGap EventType = "gap"
)

// EventKind names what an event is about: a lock, an election, a
// semaphore, a read/write lock or a fenced register.
type EventKind string

// The kinds of the audit trail.
const (
	KindLock      EventKind = "lock"
	KindElection  EventKind = "election"
	KindSemaphore EventKind = "semaphore"
	KindRWLock    EventKind = "rwlock"
	KindFence     EventKind = "fence"
)

// EventKinds lists every kind, for validation and documentation.
var EventKinds = []EventKind{KindLock, KindElection, KindSemaphore, KindRWLock, KindFence}

func checkKind(k EventKind) error {
	if k != "" && !slices.Contains(EventKinds, k) {
		return invalid("kind", "%q is not a kind (want lock, election, semaphore, rwlock or fence)", k)
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
	// ToRevision. Reason says why they were lost.
	FromRevision int64  `json:"from_revision,omitempty"`
	ToRevision   int64  `json:"to_revision,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// FencedValue is the content of a fenced register.
type FencedValue struct {
	Resource string
	// Token is the token of the write that stored Value.
	Token int64
	Value json.RawMessage
	// Revision is the etcd revision of that write.
	Revision int64
}

// AcquireRequest asks for a lock.
type AcquireRequest struct {
	Name  string
	Owner string
	// TTL of the lock's own lease; zero means Config.DefaultTTL. Must be
	// zero when Session is set: the lock then lives as long as the session.
	TTL     time.Duration
	Session string
	// Wait is how long to queue for the lock; zero fails at once.
	Wait time.Duration
	// LockDelay forbids acquiring the lock for this long after this hold
	// ends by expiry or revoke (not by a clean release).
	LockDelay time.Duration
	Metadata  map[string]string
	// value is the value an election's candidate campaigns with
	// (CampaignRequest).
	value json.RawMessage
	// limit is a semaphore's limit (PermitRequest), mode a read/write
	// lock's hold's (RWRequest).
	limit int
	mode  RWMode
	// members are a lock set's names (LockSetRequest); Name is the first.
	members []string
}

// Limits of the request contract (docs/API.md, Locks).
const (
	MaxNameLen       = 128
	MaxOwnerLen      = 128
	MaxMetadataPairs = 16
	MaxMetadataBytes = 4096
	MaxReasonLen     = 1024
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidName reports whether s is a valid lock or resource name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

func checkName(field, s string) error {
	if s == "" {
		return invalid(field, "must not be empty")
	}
	if !ValidName(s) {
		return invalid(field, "must be 1-128 characters from A-Z a-z 0-9 . _ : -")
	}
	return nil
}

func checkOwner(s string) error {
	if s == "" {
		return invalid("owner", "must not be empty")
	}
	if !utf8.ValidString(s) {
		return invalid("owner", "must be valid UTF-8")
	}
	if utf8.RuneCountInString(s) > MaxOwnerLen {
		return invalid("owner", "must be at most %d characters", MaxOwnerLen)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return invalid("owner", "must contain only printable characters")
		}
	}
	return nil
}

func checkMetadata(md map[string]string) error {
	if len(md) > MaxMetadataPairs {
		return invalid("metadata", "at most %d pairs allowed, got %d", MaxMetadataPairs, len(md))
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return invalid("metadata", "keys must not be empty")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalid("metadata", "keys and values must be valid UTF-8")
		}
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return invalid("metadata", "at most %d bytes of keys and values allowed, got %d", MaxMetadataBytes, n)
	}
	return nil
}
