package lock

import (
	"time"

	"github.com/baton-dev/baton/lock/internal/core"
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

// AcquireRequest asks for a lock (lock/internal/core/acquire.go documents
// its fields).
type AcquireRequest = core.AcquireRequest
