package lock

import (
	"time"
)

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
	// seats are the key names of the holds in seats (internal/store/kinds.go).
	seats []string
	// Credential is the ID of the credential that created the session,
	// when the caller had one (see Caller).
	Credential string
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
	// KeepPlace, with a Session and a Wait, keeps the session's place in
	// the queue when the wait runs out (see PlaceKept).
	KeepPlace bool
	// LockDelay forbids acquiring the lock for this long after this hold
	// ends by expiry or revoke (not by a clean release).
	LockDelay time.Duration
	Metadata  map[string]string
}
