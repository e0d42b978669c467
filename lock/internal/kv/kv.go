package kv

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/caps"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/fence"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Errors of keys; package lock re-exports each.
var (
	// ErrKeyNotFound means the key does not exist. The error is a
	// *NotFoundError.
	ErrKeyNotFound = errors.New("key not found")
	// ErrRevisionMismatch means a put's or a delete's IfRevision is not
	// the key's revision. The error is a *RevisionMismatchError.
	ErrRevisionMismatch = errors.New("revision mismatch")
	// ErrTooManyKeys means a put would make one key more than
	// Config.MaxKeys; the error is a *store.LimitError. Nothing was
	// written.
	ErrTooManyKeys = errors.New("too many keys")
	// ErrStaleHold means a fenced put or delete named a hold that its
	// token no longer holds (or never held). Nothing was written. It is
	// a fence.ErrStaleToken, as a fenced value's refusal is.
	ErrStaleHold = fmt.Errorf("%w: the token does not hold the named hold", fence.ErrStaleToken)
)

// NotFoundError is ErrKeyNotFound with the revision at which the key was
// read: a blocking read from it (Wait) returns at the key's next change.
type NotFoundError struct {
	Key      string
	Revision int64
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("key %q not found", e.Key) }

// Unwrap makes errors.Is(err, ErrKeyNotFound) hold.
func (e *NotFoundError) Unwrap() error { return ErrKeyNotFound }

// RevisionMismatchError is a compare that failed: Revision is the key's
// revision (0: the key does not exist), Want what the request asked.
type RevisionMismatchError struct {
	Key            string
	Revision, Want int64
}

func (e *RevisionMismatchError) Error() string {
	if e.Revision == 0 {
		return fmt.Sprintf("key %q does not exist (if_revision was %d)", e.Key, e.Want)
	}
	if e.Want == 0 {
		return fmt.Sprintf("key %q exists, at revision %d (if_revision 0 creates only)", e.Key, e.Revision)
	}
	return fmt.Sprintf("key %q is at revision %d, not %d", e.Key, e.Revision, e.Want)
}

// Unwrap makes errors.Is(err, ErrRevisionMismatch) hold.
func (e *RevisionMismatchError) Unwrap() error { return ErrRevisionMismatch }

// Entry is a key as a read or a write left it.
type Entry struct {
	Key   string
	Value json.RawMessage
	// Revision is the revision of the key's last put; CreatedRevision
	// that of the put that created it, and Version how many puts it has
	// had since.
	Revision, CreatedRevision, Version int64
	// Session is the session the key is bound to: it is deleted when
	// the session ends.
	Session string
	// Credential is the credential of the key's last writer (see
	// hold.Caller); empty without authentication.
	Credential string
}

// Fence names the hold a fenced write requires: the lock, the election's
// leadership, a semaphore's permit or a read/write lock's write hold
// named Name, held with Token. The zero Fence requires none.
type Fence struct {
	Kind  store.EventKind // store.KindLock, KindElection, KindSemaphore or KindRWLock
	Name  string
	Token int64
}

// Config is what the keys need of the engine they serve.
type Config struct {
	// MaxValueBytes bounds a value's JSON.
	MaxValueBytes int
	// MaxKeys caps the keys of the cluster (0: no cap).
	MaxKeys int
}

// Store is the keys of one engine.
type Store struct {
	core  *core.Engine
	cfg   Config
	tally *caps.Tally // MaxKeys, over kv/; nil without a cap
}

// New returns the keys of c, capped by cfg; tally counts them under
// cfg.MaxKeys (nil: no cap), kept fresh by its owner (caps.Keep).
func New(c *core.Engine, cfg Config, tally *caps.Tally) *Store {
	return &Store{core: c, cfg: cfg, tally: tally}
}

// entryOf is the entry of kv, a key's record read with its value.
func (s *Store) entryOf(key string, kv *mvccpb.KeyValue) (*Entry, error) {
	var rec store.KeyRecord
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return nil, fmt.Errorf("decode key %q: %w", key, err)
	}
	return &Entry{
		Key: key, Value: rec.Value, Revision: kv.ModRevision, CreatedRevision: kv.CreateRevision, Version: kv.Version,
		Session: rec.Session, Credential: rec.Credential,
	}, nil
}
