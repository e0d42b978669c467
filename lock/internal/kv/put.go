package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/fence"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PutRequest is a put of a key.
type PutRequest struct {
	Key   string
	Value json.RawMessage
	// IfRevision, when set, makes the put a compare-and-set: it happens
	// only if the key's revision is *IfRevision, 0 meaning that the key
	// does not exist (create only).
	IfRevision *int64
	// Session binds the key to that session: the key is deleted when the
	// session ends. A put without it unbinds a bound key.
	Session string
	// Fence, when set, makes the put happen only while its hold is
	// current.
	Fence Fence
}

// Put writes a key in one etcd txn that also compares what req asks
// (its revision, its session, its fence), and returns the key as written.
// Errors, each leaving the key as it was: *store.InvalidError for bad
// input; *RevisionMismatchError; ErrStaleHold; hold.ErrSessionNotFound,
// and hold.ErrNotOwner for a session another credential created; a
// *store.LimitError for a value above Config.MaxValueBytes
// (ErrValueTooLarge) or a new key past Config.MaxKeys (ErrTooManyKeys).
func (s *Store) Put(ctx context.Context, req PutRequest) (*Entry, error) {
	if err := s.checkPut(req); err != nil {
		return nil, err
	}
	w := write{key: req.Key, ifRevision: req.IfRevision, fence: req.Fence}
	if err := s.prepare(ctx, &w, req.Session); err != nil {
		return nil, err
	}
	rec := store.KeyRecord{Value: req.Value, Time: store.NowUTC(), Credential: hold.CredentialOf(ctx)}
	if w.session != 0 {
		rec.Session = store.LeaseHex(w.session) // as the session's ID is spelt everywhere
	}
	var opts []clientv3.OpOption
	if w.session != 0 {
		opts = append(opts, clientv3.WithLease(w.session))
	}
	put := clientv3.OpPut(s.core.Keys.KV(req.Key), store.MustJSON(rec), opts...)

	// A put that may create the key takes a slot under MaxKeys; at the
	// cap it is tried as an update only, which creates nothing.
	created := false
	if req.IfRevision == nil || *req.IfRevision == 0 {
		ok, err := s.tally.Reserve(ctx, 1)
		if err != nil {
			return nil, err
		}
		if ok {
			defer func() { s.tally.Finish(1, created) }()
		} else if req.IfRevision != nil {
			return nil, s.tooManyKeys()
		} else {
			w.updateOnly = true
		}
	}
	resp, t, err := s.commit(ctx, &w, put)
	if err != nil {
		created = errors.Is(err, store.ErrUnavailable) // it may have been applied
		return nil, err
	}
	if !resp.Succeeded {
		return nil, s.refusal(resp, t, &w)
	}
	kv := t.after.KVs(resp)[0]
	created = kv.Version == 1
	return &Entry{
		Key: req.Key, Value: req.Value, Revision: kv.ModRevision, CreatedRevision: kv.CreateRevision, Version: kv.Version,
		Session: rec.Session, Credential: rec.Credential,
	}, nil
}

// checkPut validates a put's request.
func (s *Store) checkPut(req PutRequest) error {
	if err := store.CheckKey("key", req.Key); err != nil {
		return err
	}
	if len(req.Value) == 0 {
		return store.Invalid("value", "is required")
	}
	if !json.Valid(req.Value) {
		return store.Invalid("value", "must be valid JSON")
	}
	if len(req.Value) > s.cfg.MaxValueBytes {
		return &store.LimitError{
			Err: fence.ErrValueTooLarge, Limit: s.cfg.MaxValueBytes, Field: "value",
			Reason: fmt.Sprintf("value is %d bytes of JSON, more than the maximum of %d", len(req.Value), s.cfg.MaxValueBytes),
		}
	}
	if req.IfRevision != nil && *req.IfRevision < 0 {
		return store.Invalid("if_revision", "must be a revision, or 0 to create only")
	}
	if req.Session != "" {
		if _, ok := store.ParseLeaseHex(req.Session); !ok {
			return store.Invalid("session", "is not a session ID")
		}
	}
	return checkFence(req.Fence)
}

// checkFence validates a write's fence.
func checkFence(f Fence) error {
	switch f.Kind {
	case "":
		if f.Name != "" || f.Token != 0 {
			return store.Invalid("token", "a token fences a write only with the hold it holds: give lock, election, semaphore or rwlock")
		}
		return nil
	case store.KindLock, store.KindElection, store.KindSemaphore, store.KindRWLock:
	default:
		return store.Invalid(string(f.Kind), "a write can be fenced by a lock, an election, a semaphore or a read/write lock, not a %s", f.Kind)
	}
	if err := store.CheckName(string(f.Kind), f.Name); err != nil {
		return err
	}
	if f.Token <= 0 {
		return store.Invalid("token", "must be the positive fencing token of the %s's hold", f.Kind)
	}
	return nil
}

func (s *Store) tooManyKeys() error {
	return &store.LimitError{
		Err: ErrTooManyKeys, Limit: s.cfg.MaxKeys,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d keys; delete keys that are no longer needed, or ask an operator to raise the cap", s.cfg.MaxKeys),
	}
}
